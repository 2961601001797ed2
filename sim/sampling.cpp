#include "sim/sampling.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace atomsim {

namespace {
std::uint64_t waves_of(double waves, std::uint64_t wave) {
  return static_cast<std::uint64_t>(std::ceil(waves * static_cast<double>(wave)));
}
}  // namespace

WaveSampler::WaveSampler(const SampleParams& p, std::uint64_t wave, std::uint64_t ctas)
    : p_(p), wave_(std::max<std::uint64_t>(1, wave)), ctas_(ctas) {
  outcome_.requested = p.mode != SampleMode::Off;
  if (!outcome_.requested) return;
  // A window only measures a steady GPU if warm-up, window, one wave skipped
  // and the tail all fit.
  const double needed = p.warmup_waves + p.window_waves + 1 + p.tail_waves;
  const double waves = static_cast<double>(ctas) / static_cast<double>(wave_);
  if (waves < needed) {
    refuse(fmt::format("{:.1f} CTA waves, fewer than the {:.1f} sampling needs", waves, needed));
    return;
  }
  phase_ = Phase::Warmup;
}

void WaveSampler::refuse(std::string why) {
  refused_ = std::move(why);
  phase_ = Phase::Done;
}

WaveSampler::Action WaveSampler::observe(const Progress& now) {
  switch (phase_) {
    case Phase::Warmup:
      if (now.completed < completed_mark_ + waves_of(p_.warmup_waves, wave_)) return Action::None;
      phase_ = Phase::Window;
      window_start_ = now;
      middle_seen_ = false;
      return Action::OpenWindow;
    case Phase::Window: {
      const std::uint64_t span = waves_of(p_.window_waves, wave_);
      if (!middle_seen_ && now.completed >= window_start_.completed + span / 2) {
        window_middle_ = now;
        middle_seen_ = true;
      }
      if (now.completed < window_start_.completed + span || now.warp_instructions == window_start_.warp_instructions)
        return Action::None;
      window_end_ = now;
      return Action::CloseWindow;
    }
    case Phase::Done: break;
  }
  return Action::None;
}

std::uint64_t WaveSampler::ctas_to_skip(const Progress& now) const {
  const std::uint64_t left = ctas_ - std::min(ctas_, now.dispatched);
  const std::uint64_t kept = waves_of(p_.tail_waves, wave_);
  const std::uint64_t can = left > kept ? left - kept : 0;
  const std::uint64_t n = std::min(can, waves_of(p_.skip_waves, wave_));
  // Less than a quarter wave saves less than the next warm-up costs.
  return n * 4 < wave_ ? 0 : n;
}

double WaveSampler::account_skip(std::uint64_t ctas, std::uint64_t warp_instructions) {
  if (ctas == 0) {
    phase_ = Phase::Done;
    return 0;
  }
  const auto rate = [](const Progress& a, const Progress& b) {
    return static_cast<double>(b.cycle - a.cycle) / static_cast<double>(b.warp_instructions - a.warp_instructions);
  };
  if (middle_seen_ && window_middle_.warp_instructions > window_start_.warp_instructions &&
      window_end_.warp_instructions > window_middle_.warp_instructions) {
    cycles_per_instruction_.push_back(rate(window_start_, window_middle_));
    cycles_per_instruction_.push_back(rate(window_middle_, window_end_));
  }
  const double factor = static_cast<double>(warp_instructions) /
                        static_cast<double>(window_end_.warp_instructions - window_start_.warp_instructions);
  ++outcome_.windows;
  outcome_.ctas_skipped += ctas;
  outcome_.warp_instructions_skipped += warp_instructions;
  outcome_.cycles_extrapolated += factor * static_cast<double>(window_end_.cycle - window_start_.cycle);
  completed_mark_ = window_end_.completed;
  phase_ = Phase::Warmup;
  return factor;
}

SamplingOutcome WaveSampler::outcome() const {
  SamplingOutcome o = outcome_;
  o.sampled = o.windows > 0;
  o.refused = refused_;
  const std::size_t n = cycles_per_instruction_.size();
  if (n >= 2) {
    double mean = 0, spread = 0;
    for (double c : cycles_per_instruction_) mean += c;
    mean /= static_cast<double>(n);
    for (double c : cycles_per_instruction_) spread += (c - mean) * (c - mean);
    const double deviation = std::sqrt(spread / static_cast<double>(n - 1));
    // Relative to the extrapolated cycles here; the caller scales it to the kernel's.
    o.error_estimate = 2 * deviation / mean / std::sqrt(static_cast<double>(n));
  }
  return o;
}

}  // namespace atomsim
