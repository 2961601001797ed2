// The helper threads that run a simulation's windows beside the calendar's
// thread (sim/engine/unit.cpp), and the host clock that weighs evaluations.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "sim/engine/unit.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace atomsim::detail {

// Spins briefly, then gives the core away: with more threads than cores
// (several simulations at once, a busy machine) the thread waited for may be
// the one that needs it.
inline void wait_a_little(unsigned spins) {
  if (spins < 1024) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  } else {
    std::this_thread::yield();
  }
}

// Helper threads that work beside the calendar's thread, one pool per process
// (SystemC runs one simulation per process at a time). Each step runs a job
// once on every thread and returns when all have finished it. A thread marks
// its finish, with two numbers the job left for the caller, in a cache line of
// its own: the caller gathers the lines in parallel instead of every thread
// taking turns on one shared counter.
class EvaluationWorkers {
 public:
  using Job = void (*)(void* context, unsigned thread);
  struct alignas(64) Finish {
    std::atomic<std::uint64_t> step{0};  // the last step this thread finished
    std::uint64_t report[3] = {0, 0, 0};  // what its part of that step left for the caller
  };

  explicit EvaluationWorkers(unsigned helpers) : staged_(helpers + 1), finishes_(helpers + 1) {
    for (auto& s : staged_) s.effects_for.resize(2 * (helpers + 1));
    for (unsigned t = 0; t < helpers; ++t) threads_.emplace_back([this, t] { serve(t + 1); });
  }
  ~EvaluationWorkers() {
    stopping_ = true;
    step_.fetch_add(1);
    step_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  unsigned threads() const { return static_cast<unsigned>(threads_.size() + 1); }
  std::vector<detail::StagedEffects>& staged() { return staged_; }
  // Thread `thread`'s report of the step it is in (written by its job), or of
  // the step just run (read by the caller once run_on_all returns).
  std::uint64_t* report(unsigned thread) { return finishes_[thread].report; }

  void run_on_all(Job job, void* context) {
    job_ = job;
    context_ = context;
    const std::uint64_t step = step_.fetch_add(1) + 1;
    if (sleepers_.load() > 0) step_.notify_all();
    job(context, 0);
    for (std::size_t t = 1; t < finishes_.size(); ++t)
      for (unsigned spins = 0; finishes_[t].step.load(std::memory_order_acquire) != step; ++spins) wait_a_little(spins);
  }

 private:
  void serve(unsigned thread) {
    std::uint64_t seen = 0;
    for (;;) {
      std::uint64_t step = step_.load(std::memory_order_acquire);
      // Steps follow each other within microseconds while a kernel runs;
      // between kernels a helper sleeps.
      for (unsigned spins = 0; step == seen && spins < 20000; ++spins) {
        wait_a_little(spins);
        step = step_.load(std::memory_order_acquire);
      }
      if (step == seen) {
        ++sleepers_;
        step_.wait(step);
        --sleepers_;
        continue;
      }
      if (stopping_) return;
      seen = step;
      job_(context_, thread);
      finishes_[thread].step.store(step, std::memory_order_release);
    }
  }

  std::vector<detail::StagedEffects> staged_;  // one per thread; the calendar's is [0]
  std::vector<Finish> finishes_;               // one per thread; [0] is the caller's, not waited on
  std::vector<std::thread> threads_;
  std::atomic<std::uint64_t> step_{0};
  std::atomic<unsigned> sleepers_{0};
  std::atomic<bool> stopping_{false};
  Job job_ = nullptr;
  void* context_ = nullptr;
};

// The process's pool of `threads` threads, the caller's among them: made
// anew when the number asked for changes.
EvaluationWorkers& evaluation_workers(unsigned threads);

// A cheap host clock for weighing evaluations (its unit does not matter: only
// comparisons between units).
inline std::uint64_t host_ticks() {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#else
  return static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}

}  // namespace atomsim::detail
