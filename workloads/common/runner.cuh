// What every native workload runner shares: one-line errors, a small option
// parser, kernel timing with CUDA events (warm-up, then the median of repeated
// runs, as docs/capture.md's method asks) and the device block of the JSON
// each runner prints.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace atomsim::workload {

inline const char*& program_name() {
  static const char* name = "workload";
  return name;
}

[[noreturn]] inline void fail(int status, const char* format, ...) {
  std::fprintf(stderr, "%s: ", program_name());
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
  std::fprintf(stderr, "\n");
  std::exit(status);
}

#define WORKLOAD_CHECK(call)                                                                  \
  do {                                                                                        \
    cudaError_t err_ = (call);                                                                \
    if (err_ != cudaSuccess) ::atomsim::workload::fail(1, "%s failed: %s", #call, cudaGetErrorString(err_)); \
  } while (0)

// "--key value" options with defaults; anything else is an error naming it.
class Options {
 public:
  Options(int argc, char** argv, std::map<std::string, std::string> defaults, const char* usage)
      : values_(std::move(defaults)) {
    program_name() = argv[0] ? std::strrchr(argv[0], '/') ? std::strrchr(argv[0], '/') + 1 : argv[0] : "workload";
    for (int i = 1; i < argc; ++i) {
      std::string key = argv[i];
      if (key == "--help" || key == "-h") {
        std::printf("usage: %s %s\noptions (default):\n", program_name(), usage);
        for (const auto& [k, v] : values_) std::printf("  --%s (%s)\n", k.c_str(), v.c_str());
        std::exit(0);
      }
      if (key.rfind("--", 0) != 0 || !values_.count(key.substr(2))) fail(2, "unknown option %s (see --help)", key.c_str());
      if (i + 1 >= argc) fail(2, "option %s needs a value", key.c_str());
      values_[key.substr(2)] = argv[++i];
    }
  }
  const std::string& str(const std::string& key) const { return values_.at(key); }
  long long integer(const std::string& key, long long lo, long long hi) const {
    char* end = nullptr;
    long long v = std::strtoll(str(key).c_str(), &end, 10);
    if (!end || *end || v < lo || v > hi) fail(2, "--%s must be an integer in [%lld, %lld] (got '%s')", key.c_str(), lo, hi, str(key).c_str());
    return v;
  }
  double real(const std::string& key, double lo, double hi) const {
    char* end = nullptr;
    double v = std::strtod(str(key).c_str(), &end);
    if (!end || *end || !(v >= lo && v <= hi)) fail(2, "--%s must be a number in [%g, %g] (got '%s')", key.c_str(), lo, hi, str(key).c_str());
    return v;
  }
  const std::string& choice(const std::string& key, const std::vector<std::string>& allowed) const {
    for (const auto& a : allowed)
      if (a == str(key)) return str(key);
    std::string list;
    for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
    fail(2, "--%s must be one of %s (got '%s')", key.c_str(), list.c_str(), str(key).c_str());
  }

 private:
  std::map<std::string, std::string> values_;
};

// Fails in one line where there is no usable GPU, before any work.
inline void require_gpu() {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) fail(1, "no usable CUDA device: %s", cudaGetErrorString(err));
  if (count == 0) fail(1, "no CUDA device");
}

struct Timing {
  double median_ms = 0, min_ms = 0, max_ms = 0;
  int runs = 0;
};

// Milliseconds `launch` (one or more kernels on the default stream) takes between two events.
template <class Launch>
float event_milliseconds(Launch launch) {
  cudaEvent_t start, stop;
  WORKLOAD_CHECK(cudaEventCreate(&start));
  WORKLOAD_CHECK(cudaEventCreate(&stop));
  WORKLOAD_CHECK(cudaEventRecord(start));
  launch();
  WORKLOAD_CHECK(cudaGetLastError());
  WORKLOAD_CHECK(cudaEventRecord(stop));
  WORKLOAD_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  WORKLOAD_CHECK(cudaEventElapsedTime(&ms, start, stop));
  WORKLOAD_CHECK(cudaEventDestroy(start));
  WORKLOAD_CHECK(cudaEventDestroy(stop));
  return ms;
}

// Per-kernel times collected over repeated runs of a whole step.
class KernelTimes {
 public:
  // Times `launch` (one or more kernels on the default stream) under `name`;
  // samples are kept only when `keep` (warm-up runs are discarded).
  template <class Launch>
  void time(const std::string& name, bool keep, Launch launch) {
    const float ms = event_milliseconds(launch);
    if (!keep) return;
    if (!samples_.count(name)) order_.push_back(name);
    samples_[name].push_back(ms);
  }
  Timing summary(const std::string& name) const {
    std::vector<float> s = samples_.at(name);
    std::sort(s.begin(), s.end());
    return {s[s.size() / 2], s.front(), s.back(), static_cast<int>(s.size())};
  }
  // {"name":{"median_ms":..,"min_ms":..,"max_ms":..,"runs":..},...}
  std::string json() const {
    std::string out = "{";
    for (const auto& name : order_) {
      Timing t = summary(name);
      char buf[256];
      std::snprintf(buf, sizeof buf, "%s\"%s\":{\"median_ms\":%.6f,\"min_ms\":%.6f,\"max_ms\":%.6f,\"runs\":%d}",
                    out.size() > 1 ? "," : "", name.c_str(), t.median_ms, t.min_ms, t.max_ms, t.runs);
      out += buf;
    }
    return out + "}";
  }

 private:
  std::vector<std::string> order_;
  std::map<std::string, std::vector<float>> samples_;
};

// "device":{...}: which GPU, driver and clocks produced the figures.
inline std::string device_json() {
  int dev = 0, sms = 0, clock_khz = 0, mem_clock_khz = 0, driver = 0;
  cudaDeviceProp prop{};
  WORKLOAD_CHECK(cudaGetDevice(&dev));
  WORKLOAD_CHECK(cudaGetDeviceProperties(&prop, dev));
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev);
  cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, dev);
  cudaDriverGetVersion(&driver);
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "\"device\":{\"name\":\"%s\",\"sm_count\":%d,\"compute_capability\":\"%d.%d\",\"max_sm_clock_khz\":%d,"
                "\"memory_clock_khz\":%d,\"driver\":%d}",
                prop.name, sms, prop.major, prop.minor, clock_khz, mem_clock_khz, driver);
  return buf;
}

}  // namespace atomsim::workload
