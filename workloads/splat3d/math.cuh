// Small vector, camera and spherical-harmonics helpers of the Gaussian
// splatting workload, shared by host and device code.
#pragma once

#include <cuda_runtime.h>

#include <cmath>

namespace atomsim::workload::splat {

#define SPLAT_HD __host__ __device__ __forceinline__

SPLAT_HD float3 add(float3 a, float3 b) { return make_float3(a.x + b.x, a.y + b.y, a.z + b.z); }
SPLAT_HD float3 sub(float3 a, float3 b) { return make_float3(a.x - b.x, a.y - b.y, a.z - b.z); }
SPLAT_HD float3 scale(float3 a, float s) { return make_float3(a.x * s, a.y * s, a.z * s); }
SPLAT_HD float dot(float3 a, float3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
SPLAT_HD float3 cross(float3 a, float3 b) { return make_float3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x); }
SPLAT_HD float3 normalize(float3 a) { return scale(a, 1.f / sqrtf(dot(a, a))); }

// A pinhole camera: view = R * world + t (rows of R: right, down, forward), pixels u = fx X/Z + cx.
struct Camera {
  float R[9];
  float3 t;
  float3 position;
  float fx, fy, cx, cy;
  float tan_half_fov_x, tan_half_fov_y;
  int width, height;
};

SPLAT_HD float3 to_view(const Camera& c, float3 p) {
  return make_float3(c.R[0] * p.x + c.R[1] * p.y + c.R[2] * p.z + c.t.x, c.R[3] * p.x + c.R[4] * p.y + c.R[5] * p.z + c.t.y,
                     c.R[6] * p.x + c.R[7] * p.y + c.R[8] * p.z + c.t.z);
}

inline Camera look_at(float3 eye, float3 target, float3 up, int width, int height, float fov_x) {
  Camera c{};
  const float3 f = normalize(sub(target, eye)), r = normalize(cross(f, up)), d = cross(f, r);
  const float rows[9] = {r.x, r.y, r.z, d.x, d.y, d.z, f.x, f.y, f.z};
  for (int i = 0; i < 9; ++i) c.R[i] = rows[i];
  c.t = make_float3(-dot(r, eye), -dot(d, eye), -dot(f, eye));
  c.position = eye;
  c.width = width;
  c.height = height;
  c.tan_half_fov_x = std::tan(fov_x / 2);
  c.tan_half_fov_y = c.tan_half_fov_x * height / width;
  c.fx = width / (2 * c.tan_half_fov_x);
  c.fy = height / (2 * c.tan_half_fov_y);
  c.cx = width / 2.f;
  c.cy = height / 2.f;
  return c;
}

// The ground truth's procedural texture: coloured bands times a 3D checker,
// lit by a directional light (both faces).
SPLAT_HD float3 surface_colour(float3 p, float3 normal) {
  const float3 band = make_float3(0.5f + 0.5f * sinf(6.f * p.x), 0.5f + 0.5f * sinf(6.f * p.y + 2.f), 0.5f + 0.5f * sinf(6.f * p.z + 4.f));
  const int cell = static_cast<int>(floorf(5.f * p.x) + floorf(5.f * p.y) + floorf(5.f * p.z));
  const float checker = (cell & 1) ? 1.f : 0.55f;
  const float light = 0.35f + 0.65f * fabsf(dot(normal, normalize(make_float3(0.4f, -0.8f, 0.45f))));
  return scale(band, checker * light);
}

// The normalisation constants of the real spherical harmonics, as 3D Gaussian
// splatting uses them (a local of this type works in host and device code).
constexpr float kShC0 = 0.28209479177387814f;
struct ShConstants {
  float c1 = 0.4886025119029199f;
  float c2[5] = {1.0925484305920792f, -1.0925484305920792f, 0.31539156525252005f, -1.0925484305920792f, 0.5462742152960396f};
  float c3[7] = {-0.5900435899266435f, 2.890611442640554f, -0.4570457994644658f, 0.3731763325901154f,
                 -0.4570457994644658f, 1.445305721320277f, -0.5900435899266435f};
};

// Real spherical harmonics up to degree 3, as 3D Gaussian splatting evaluates
// them (16 coefficients per colour channel).
constexpr int kShCoeffs = 16;
SPLAT_HD void sh_basis(float3 d, int degree, float* b) {
  const ShConstants K;
  for (int k = 0; k < kShCoeffs; ++k) b[k] = 0.f;
  b[0] = kShC0;
  if (degree < 1) return;
  const float x = d.x, y = d.y, z = d.z;
  b[1] = -K.c1 * y;
  b[2] = K.c1 * z;
  b[3] = -K.c1 * x;
  if (degree < 2) return;
  const float xx = x * x, yy = y * y, zz = z * z, xy = x * y, yz = y * z, xz = x * z;
  b[4] = K.c2[0] * xy;
  b[5] = K.c2[1] * yz;
  b[6] = K.c2[2] * (2.f * zz - xx - yy);
  b[7] = K.c2[3] * xz;
  b[8] = K.c2[4] * (xx - yy);
  if (degree < 3) return;
  b[9] = K.c3[0] * y * (3.f * xx - yy);
  b[10] = K.c3[1] * xy * z;
  b[11] = K.c3[2] * y * (4.f * zz - xx - yy);
  b[12] = K.c3[3] * z * (2.f * zz - 3.f * xx - 3.f * yy);
  b[13] = K.c3[4] * x * (4.f * zz - xx - yy);
  b[14] = K.c3[5] * z * (xx - yy);
  b[15] = K.c3[6] * x * (xx - 3.f * yy);
}

// The derivative of each coefficient of sh_basis with respect to the direction
// (before normalisation is undone), for the colour's gradient into the mean.
SPLAT_HD void sh_basis_gradient(float3 d, int degree, float3* g) {
  const ShConstants K;
  for (int k = 0; k < kShCoeffs; ++k) g[k] = make_float3(0.f, 0.f, 0.f);
  if (degree < 1) return;
  const float x = d.x, y = d.y, z = d.z;
  g[1] = make_float3(0.f, -K.c1, 0.f);
  g[2] = make_float3(0.f, 0.f, K.c1);
  g[3] = make_float3(-K.c1, 0.f, 0.f);
  if (degree < 2) return;
  const float xx = x * x, yy = y * y, zz = z * z;
  g[4] = make_float3(K.c2[0] * y, K.c2[0] * x, 0.f);
  g[5] = make_float3(0.f, K.c2[1] * z, K.c2[1] * y);
  g[6] = make_float3(-2.f * K.c2[2] * x, -2.f * K.c2[2] * y, 4.f * K.c2[2] * z);
  g[7] = make_float3(K.c2[3] * z, 0.f, K.c2[3] * x);
  g[8] = make_float3(2.f * K.c2[4] * x, -2.f * K.c2[4] * y, 0.f);
  if (degree < 3) return;
  g[9] = make_float3(6.f * K.c3[0] * x * y, K.c3[0] * (3.f * xx - 3.f * yy), 0.f);
  g[10] = make_float3(K.c3[1] * y * z, K.c3[1] * x * z, K.c3[1] * x * y);
  g[11] = make_float3(-2.f * K.c3[2] * x * y, K.c3[2] * (4.f * zz - xx - 3.f * yy), 8.f * K.c3[2] * y * z);
  g[12] = make_float3(-6.f * K.c3[3] * x * z, -6.f * K.c3[3] * y * z, K.c3[3] * (6.f * zz - 3.f * xx - 3.f * yy));
  g[13] = make_float3(K.c3[4] * (4.f * zz - 3.f * xx - yy), -2.f * K.c3[4] * x * y, 8.f * K.c3[4] * x * z);
  g[14] = make_float3(2.f * K.c3[5] * x * z, -2.f * K.c3[5] * y * z, K.c3[5] * (xx - yy));
  g[15] = make_float3(K.c3[6] * (3.f * xx - 3.f * yy), -6.f * K.c3[6] * x * y, 0.f);
}

// The 11-tap Gaussian window (sigma 1.5) of SSIM, normalised.
constexpr int kSsimRadius = 5;
SPLAT_HD float ssim_window(int offset) {
  const float w[kSsimRadius + 1] = {0.26601172f, 0.21300554f, 0.10936069f, 0.03600077f, 0.00759876f, 0.00102838f};
  return w[offset < 0 ? -offset : offset];
}

// SSIM of one pixel channel from its windowed moments (means mx, my; raw
// second moments exx, eyy, exy), with the partial derivatives of SSIM with
// respect to mx, exx and exy (those of the rendered image).
struct SsimTerms {
  float ssim, d_mx, d_exx, d_exy;
};
SPLAT_HD SsimTerms ssim_terms(float mx, float my, float exx, float eyy, float exy) {
  const float C1 = 0.01f * 0.01f, C2 = 0.03f * 0.03f;
  const float a1 = 2.f * mx * my + C1, a2 = 2.f * (exy - mx * my) + C2;
  const float b1 = mx * mx + my * my + C1, b2 = (exx - mx * mx) + (eyy - my * my) + C2;
  const float s = a1 * a2 / (b1 * b2);
  SsimTerms t;
  t.ssim = s;
  t.d_mx = 2.f * my * (a2 - a1) / (b1 * b2) - 2.f * mx * s / b1 + 2.f * mx * s / b2;
  t.d_exx = -s / b2;
  t.d_exy = 2.f * a1 / (b1 * b2);
  return t;
}


}  // namespace atomsim::workload::splat
