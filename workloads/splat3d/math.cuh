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

// Real spherical harmonics up to degree 3, as 3D Gaussian splatting evaluates
// them (16 coefficients per colour channel).
constexpr int kShCoeffs = 16;
SPLAT_HD void sh_basis(float3 d, int degree, float* b) {
  const float C0 = 0.28209479177387814f, C1 = 0.4886025119029199f;
  const float C2[5] = {1.0925484305920792f, -1.0925484305920792f, 0.31539156525252005f, -1.0925484305920792f, 0.5462742152960396f};
  const float C3[7] = {-0.5900435899266435f, 2.890611442640554f, -0.4570457994644658f, 0.3731763325901154f,
                       -0.4570457994644658f, 1.445305721320277f, -0.5900435899266435f};
  for (int k = 0; k < kShCoeffs; ++k) b[k] = 0.f;
  b[0] = C0;
  if (degree < 1) return;
  const float x = d.x, y = d.y, z = d.z;
  b[1] = -C1 * y;
  b[2] = C1 * z;
  b[3] = -C1 * x;
  if (degree < 2) return;
  const float xx = x * x, yy = y * y, zz = z * z, xy = x * y, yz = y * z, xz = x * z;
  b[4] = C2[0] * xy;
  b[5] = C2[1] * yz;
  b[6] = C2[2] * (2.f * zz - xx - yy);
  b[7] = C2[3] * xz;
  b[8] = C2[4] * (xx - yy);
  if (degree < 3) return;
  b[9] = C3[0] * y * (3.f * xx - yy);
  b[10] = C3[1] * xy * z;
  b[11] = C3[2] * y * (4.f * zz - xx - yy);
  b[12] = C3[3] * z * (2.f * zz - 3.f * xx - 3.f * yy);
  b[13] = C3[4] * x * (4.f * zz - xx - yy);
  b[14] = C3[5] * z * (xx - yy);
  b[15] = C3[6] * x * (xx - 3.f * yy);
}

constexpr float kShC0 = 0.28209479177387814f;

}  // namespace atomsim::workload::splat
