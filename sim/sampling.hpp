// Sampled simulation by CTA waves: a kernel of many waves is simulated in
// detail for a warm-up and a measured window, then the CTAs of several waves
// are not started at all and the next ones take their places at once, so the
// GPU never runs emptier than it would; the skipped CTAs' time and statistics
// are the window's, scaled by the warp instructions they hold. The last waves
// are always simulated, so the kernel's tail is. docs/architecture.md,
// "Sampled simulation", gives the assumptions and when it refuses.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/engine/cycle.hpp"
#include "sim/engine/params.hpp"

namespace atomsim {

enum class SampleMode : std::uint8_t { Off, Waves };
inline constexpr std::array<std::pair<const char*, SampleMode>, 2> kSampleModeNames{
    {{"off", SampleMode::Off}, {"waves", SampleMode::Waves}}};

// What `--sample` sets: the sampled simulation with the configuration's waves.
inline constexpr const char* kSampleOverride = "sample.mode=waves";

struct SampleParams {
  SampleMode mode = SampleMode::Off;
  double warmup_waves = 1;
  double window_waves = 1;
  double skip_waves = 8;
  double tail_waves = 2;
  void declare(ParamBinder b) {
    b.choice("mode", mode, kSampleModeNames,
             "off: every CTA simulated; waves: a kernel of many CTA waves simulated in detail only in measured windows "
             "and its last waves, the CTAs between the windows skipped and their time and statistics extrapolated from "
             "the window before them (docs/architecture.md, \"Sampled simulation\")");
    b.real("warmup_waves", warmup_waves, 0, 1000,
           "CTA waves (CTAs one GPU holds at once) that finish after the kernel's start, or after a skip, before a window opens");
    b.real("window_waves", window_waves, 0.25, 1000, "CTA waves that finish within a measured window");
    b.real("skip_waves", skip_waves, 1, 1000000, "most CTA waves skipped after each window");
    b.real("tail_waves", tail_waves, 0, 1000, "CTA waves at the kernel's end always simulated in detail");
  }
};

// What sampling did to one kernel (KernelRun::sampling).
struct SamplingOutcome {
  bool requested = false;
  bool sampled = false;
  std::string refused;  // why a requested kernel was simulated in full
  std::uint64_t windows = 0;
  std::uint64_t ctas_skipped = 0;
  std::uint64_t warp_instructions_skipped = 0;
  double cycles_extrapolated = 0;  // of the kernel's cycles, those the skipped CTAs were given
  double error_estimate = 0;       // relative, of the kernel's cycles (two standard errors of the windows' rates)
};

// Decides, between stretches of simulation, when a window opens and closes
// and how many CTAs to skip; it owns no units and sees the GPU only through
// the figures the caller passes it.
class WaveSampler {
 public:
  // `wave`: CTAs the GPU holds at once; `ctas`: the kernel's.
  WaveSampler(const SampleParams& p, std::uint64_t wave, std::uint64_t ctas);
  bool active() const { return phase_ != Phase::Done; }
  // Why it will not sample this kernel; empty when it will.
  const std::string& refused() const { return refused_; }

  struct Progress {
    Cycle cycle;
    std::uint64_t completed;        // CTAs the simulation ran to completion
    std::uint64_t dispatched;       // CTAs started or skipped
    std::uint64_t warp_instructions;  // issued so far
  };
  enum class Action { None, OpenWindow, CloseWindow };
  // Called after each stretch; says whether to snapshot for a window's start or end.
  Action observe(const Progress& now);
  // After CloseWindow: CTAs to skip now (0: none, and sampling ends).
  std::uint64_t ctas_to_skip(const Progress& now) const;
  // The window just closed and the skip taken: the factor its statistics are
  // added with, skipped instructions over the window's.
  double account_skip(std::uint64_t ctas, std::uint64_t warp_instructions);
  // After a refusal found during the run (e.g. loads that wait for stores).
  void refuse(std::string why);
  SamplingOutcome outcome() const;

 private:
  enum class Phase { Warmup, Window, Done };
  SampleParams p_;
  std::uint64_t wave_ = 1, ctas_ = 0;
  Phase phase_ = Phase::Done;
  std::string refused_;
  std::uint64_t completed_mark_ = 0;
  Progress window_start_{}, window_middle_{}, window_end_{};
  bool middle_seen_ = false;
  std::vector<double> cycles_per_instruction_;  // of each half window
  SamplingOutcome outcome_;
};

}  // namespace atomsim
