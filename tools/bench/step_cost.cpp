// What one engine step costs a host before any unit's work: N threads start
// a step together and the caller waits for all to finish it, the way the wake
// calendar runs a round (each thread's finish in a cache line of its own,
// gathered by the caller), or with one shared counter instead. Each thread
// may spin `work` time-stamp counter ticks in the step, standing for its units.
// Usage: atomsim-step-cost THREADS [lines|counter] [WORK_TICKS]
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace {
void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}
std::uint64_t ticks() {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#else
  return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}
struct alignas(64) Finish {
  std::atomic<std::uint64_t> step{0};
};
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: atomsim-step-cost THREADS [lines|counter] [WORK_TICKS]\n");
    return 2;
  }
  const unsigned threads = static_cast<unsigned>(std::atoi(argv[1]));
  const bool counter = argc > 2 && std::strcmp(argv[2], "counter") == 0;
  const std::uint64_t work = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 0;
  if (threads < 2) {
    std::fprintf(stderr, "atomsim-step-cost: THREADS must be at least 2\n");
    return 2;
  }
  constexpr std::uint64_t kSteps = 200000;
  std::atomic<std::uint64_t> step{0};
  std::vector<Finish> finishes(threads);
  alignas(64) std::atomic<unsigned> finished{0};
  auto job = [&] {
    for (const std::uint64_t begun = ticks(); ticks() - begun < work;) spin_pause();
  };
  std::vector<std::thread> helpers;
  for (unsigned t = 1; t < threads; ++t)
    helpers.emplace_back([&, t] {
      for (std::uint64_t seen = 0;;) {
        std::uint64_t s;
        while ((s = step.load(std::memory_order_acquire)) == seen) spin_pause();
        if (s > kSteps) return;
        seen = s;
        job();
        if (counter) finished.fetch_add(1, std::memory_order_acq_rel);
        else finishes[t].step.store(s, std::memory_order_release);
      }
    });
  const auto begun = std::chrono::steady_clock::now();
  for (std::uint64_t s = 1; s <= kSteps; ++s) {
    if (counter) finished.store(0, std::memory_order_relaxed);
    step.store(s, std::memory_order_release);
    job();
    if (counter) {
      while (finished.load(std::memory_order_acquire) != threads - 1) spin_pause();
    } else {
      for (unsigned t = 1; t < threads; ++t)
        while (finishes[t].step.load(std::memory_order_acquire) != s) spin_pause();
    }
  }
  const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - begun).count() / kSteps;
  step.store(kSteps + 1, std::memory_order_release);
  for (std::thread& t : helpers) t.join();
  std::printf("%u threads, %s, %llu ticks of work: %.0f ns a step\n", threads, counter ? "one shared counter" : "a line each",
              static_cast<unsigned long long>(work), ns);
  return 0;
}
