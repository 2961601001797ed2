// Sampled simulation. A kernel is simulated in detail for a warm-up and a
// measured window, then part of it is skipped and given the window's time and
// statistics, scaled by the warp instructions skipped:
// - by CTA waves: the CTAs of several waves are not started at all and the
//   next ones take their places at once, so the GPU never runs emptier than
//   it would; the last waves are always simulated, so the kernel's tail is;
// - by loop trips, for kernels of few waves: every warp on the GPU moves on
//   by whole trips of the loop it is in, all by the same time at each one's
//   rate since it started, the warps of a CTA past the same barriers, and
//   only while no warp would reach its end.
// docs/architecture.md, "Sampled simulation", gives the assumptions and when
// it refuses.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/engine/cycle.hpp"
#include "sim/engine/params.hpp"

namespace atomsim {

enum class SampleMode : std::uint8_t { Off, Waves, Loops, Auto };
inline constexpr std::array<std::pair<const char*, SampleMode>, 4> kSampleModeNames{
    {{"off", SampleMode::Off}, {"waves", SampleMode::Waves}, {"loops", SampleMode::Loops}, {"auto", SampleMode::Auto}}};

// What `--sample` sets: by CTA waves, the validated method (by loop trips is
// chosen by name: docs/performance.md, "Sampled simulation", has its figures).
inline constexpr const char* kSampleOverride = "sample.mode=waves";

struct SampleParams {
  SampleMode mode = SampleMode::Off;
  double warmup_waves = 1;
  double window_waves = 1;
  double skip_waves = 8;
  double tail_waves = 2;
  double window_share = 0.02;
  double skip_windows = 16;
  double steady_tolerance = 0.05;
  void declare(ParamBinder b) {
    b.choice("mode", mode, kSampleModeNames,
             "off: every CTA simulated; waves: a kernel of many CTA waves simulated in detail only in measured windows "
             "and its last waves, the CTAs between the windows skipped and their time and statistics extrapolated from "
             "the windows before and after them; loops: after each window every warp moves on by whole trips of its loop; auto: "
             "waves where a kernel has enough, else loops (docs/architecture.md, \"Sampled simulation\")");
    b.real("warmup_waves", warmup_waves, 0, 1000,
           "CTA waves (CTAs one GPU holds at once) that finish after the kernel's start, or after a skip, before a window "
           "opens; a skip lies between two windows, its CTAs given the mean of their rates");
    b.real("window_waves", window_waves, 0.25, 1000, "CTA waves that finish within a measured window");
    b.real("skip_waves", skip_waves, 1, 1000000, "most CTA waves skipped after each window");
    b.real("tail_waves", tail_waves, 0, 1000, "CTA waves at the kernel's end always simulated in detail");
    b.real("window_share", window_share, 0.001, 0.5,
           "by loop trips: share of the kernel's warp instructions issued in a warm-up, and in a measured window");
    b.real("skip_windows", skip_windows, 1, 100000,
           "by loop trips: most windows' worth of trips each warp skips after a window");
    b.real("steady_tolerance", steady_tolerance, 0.001, 1,
           "a window counts only if the cycles per warp instruction of its two halves differ by at most this share "
           "of their mean; otherwise it was warm-up and the next one begins");
  }
};

// What sampling did to one kernel (KernelRun::sampling).
struct SamplingOutcome {
  bool requested = false;
  bool sampled = false;
  SampleMode mode = SampleMode::Off;  // waves or loops, once chosen
  std::string refused;  // why a requested kernel was simulated in full
  std::uint64_t windows = 0;
  std::uint64_t ctas_skipped = 0;
  std::uint64_t warp_instructions_skipped = 0;
  double cycles_extrapolated = 0;  // of the kernel's cycles, those the skipped CTAs were given
  double error_estimate = 0;       // relative, of the kernel's cycles (two standard errors of the windows' rates)
  std::uint64_t ctas_not_moved = 0;  // by loops: CTAs left in place since their warps' trips passed barriers unalike
};

// Decides, between stretches of simulation, when a window opens and closes
// and how much to skip; it owns no units and sees the GPU only through the
// figures the caller passes it.
class Sampler {
 public:
  // `wave`: CTAs the GPU holds at once; `ctas` and `instructions`: the kernel's.
  Sampler(const SampleParams& p, std::uint64_t wave, std::uint64_t ctas, std::uint64_t instructions);
  SampleMode mode() const { return outcome_.mode; }
  // By loops, the warp instructions a window spans (by waves, an estimate: a wave's share).
  double window_instructions() const;
  bool active() const { return phase_ != Phase::Done; }

  struct Progress {
    Cycle cycle;
    std::uint64_t completed;        // CTAs the simulation ran to completion
    std::uint64_t dispatched;       // CTAs started or skipped
    std::uint64_t warp_instructions;  // issued so far
  };
  enum class Action { None, OpenWindow, CloseWindow };
  // Called after each stretch; says whether to snapshot for a window's start or end.
  Action observe(const Progress& now);
  // After CloseWindow, by waves: CTAs to skip now (0: none, and sampling ends).
  std::uint64_t ctas_to_skip(const Progress& now) const;
  // After CloseWindow, by loops: most windows' worth of trips to skip.
  double skip_windows() const { return p_.skip_windows; }
  // The window just closed and the skip taken (0 instructions: none, and
  // sampling ends by waves; by loops it goes on): the factor the window's
  // statistics are added with, skipped instructions over the window's.
  double account_skip(std::uint64_t ctas, std::uint64_t warp_instructions);
  // By waves, a skip's CTAs get half the window before them and half the one
  // after: at a window's close (`window_after`), or at the kernel's end with
  // the window before again, the factor that window's statistics are added
  // with for the last skip's other half; 0 when none waits.
  double settle_pending(bool window_after);
  void note_unaligned_cta() { ++outcome_.ctas_not_moved; }
  // After a refusal found during the run (e.g. loads that wait for stores).
  void refuse(std::string why);
  SamplingOutcome outcome() const;

 private:
  enum class Phase { Warmup, Window, Done };
  bool warmed_up(const Progress& now) const;
  bool steady(const Progress& end) const;
  bool halves_measured(const Progress& end) const;
  static double cycles_per_instruction(const Progress& a, const Progress& b);
  bool window_done(const Progress& now, bool half) const;
  SampleParams p_;
  std::uint64_t wave_ = 1, ctas_ = 0, instructions_ = 0;
  std::uint64_t issued_mark_ = 0;
  std::uint64_t pending_instructions_ = 0;  // by waves: the last skip's, half given
  Progress pending_window_start_{}, pending_window_end_{};  // the window before it
  Phase phase_ = Phase::Done;
  std::uint64_t completed_mark_ = 0;
  Progress window_start_{}, window_middle_{}, window_end_{};
  bool middle_seen_ = false;
  std::vector<double> cycles_per_instruction_;  // of each half window
  SamplingOutcome outcome_;
};

}  // namespace atomsim
