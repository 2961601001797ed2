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

Sampler::Sampler(const SampleParams& p, std::uint64_t wave, std::uint64_t ctas, std::uint64_t instructions)
    : p_(p), wave_(std::max<std::uint64_t>(1, wave)), ctas_(ctas), instructions_(instructions) {
  outcome_.requested = p.mode != SampleMode::Off;
  if (!outcome_.requested) return;
  // By waves, a skip lies between two windows (its CTAs get the mean of the
  // rates before and after them), and the tail follows.
  const double needed = 2 * (p.warmup_waves + p.window_waves) + 1 + p.tail_waves;
  const double waves = static_cast<double>(ctas) / static_cast<double>(wave_);
  if (p.mode == SampleMode::Waves && waves < needed) {
    refuse(fmt::format("{:.1f} CTA waves, fewer than the {:.1f} sampling by waves needs", waves, needed));
    return;
  }
  outcome_.mode = p.mode == SampleMode::Auto ? (waves >= needed ? SampleMode::Waves : SampleMode::Loops) : p.mode;
  // By loops, warm-up, window and a skip of one window take 3 windows' share.
  if (outcome_.mode == SampleMode::Loops && 3 * p.window_share >= 1) {
    refuse(fmt::format("windows of {:.0f}% of the instructions leave nothing to skip", 100 * p.window_share));
    return;
  }
  phase_ = Phase::Warmup;
}

double Sampler::window_instructions() const {
  const double share = outcome_.mode == SampleMode::Loops
                           ? p_.window_share
                           : p_.window_waves * static_cast<double>(wave_) / static_cast<double>(std::max<std::uint64_t>(1, ctas_));
  return share * static_cast<double>(instructions_);
}

void Sampler::refuse(std::string why) {
  outcome_.refused = std::move(why);
  phase_ = Phase::Done;
}

bool Sampler::warmed_up(const Progress& now) const {
  if (outcome_.mode == SampleMode::Waves) return now.completed >= completed_mark_ + waves_of(p_.warmup_waves, wave_);
  return static_cast<double>(now.warp_instructions - issued_mark_) >= p_.window_share * static_cast<double>(instructions_);
}

bool Sampler::window_done(const Progress& now, bool half) const {
  if (outcome_.mode == SampleMode::Waves) {
    const std::uint64_t span = waves_of(p_.window_waves, wave_);
    return now.completed >= window_start_.completed + (half ? span / 2 : span);
  }
  const double span = p_.window_share * static_cast<double>(instructions_) / (half ? 2 : 1);
  return static_cast<double>(now.warp_instructions - window_start_.warp_instructions) >= span;
}

bool Sampler::halves_measured(const Progress& end) const {
  return middle_seen_ && window_middle_.warp_instructions > window_start_.warp_instructions &&
         end.warp_instructions > window_middle_.warp_instructions;
}

double Sampler::cycles_per_instruction(const Progress& a, const Progress& b) {
  return static_cast<double>(b.cycle - a.cycle) / static_cast<double>(b.warp_instructions - a.warp_instructions);
}

bool Sampler::steady(const Progress& end) const {
  if (!halves_measured(end)) return false;
  const double first = cycles_per_instruction(window_start_, window_middle_), second = cycles_per_instruction(window_middle_, end);
  return std::abs(first - second) <= p_.steady_tolerance * 0.5 * (first + second);
}

Sampler::Action Sampler::observe(const Progress& now) {
  switch (phase_) {
    case Phase::Warmup:
      if (!warmed_up(now)) return Action::None;
      phase_ = Phase::Window;
      window_start_ = now;
      middle_seen_ = false;
      return Action::OpenWindow;
    case Phase::Window:
      if (!middle_seen_ && window_done(now, true)) {
        window_middle_ = now;
        middle_seen_ = true;
      }
      if (!window_done(now, false) || now.warp_instructions == window_start_.warp_instructions) return Action::None;
      // A window measures a steady GPU only if its halves ran at one rate;
      // otherwise it was warm-up, and the next begins.
      if (!steady(now)) {
        window_start_ = now;
        middle_seen_ = false;
        return Action::OpenWindow;
      }
      window_end_ = now;
      return Action::CloseWindow;
    case Phase::Done: break;
  }
  return Action::None;
}

std::uint64_t Sampler::ctas_to_skip(const Progress& now) const {
  const std::uint64_t left = ctas_ - std::min(ctas_, now.dispatched);
  // What follows a skip: a warm-up, a window and the tail.
  const std::uint64_t kept = waves_of(p_.warmup_waves + p_.window_waves + p_.tail_waves, wave_);
  const std::uint64_t can = left > kept ? left - kept : 0;
  const std::uint64_t n = std::min(can, waves_of(p_.skip_waves, wave_));
  // Less than a quarter wave saves less than the next warm-up costs.
  return n * 4 < wave_ ? 0 : n;
}

double Sampler::account_skip(std::uint64_t ctas, std::uint64_t warp_instructions) {
  if (warp_instructions == 0) {
    // By waves nothing is left to skip; by loops the next window may find room.
    if (outcome_.mode == SampleMode::Waves) phase_ = Phase::Done;
    else phase_ = Phase::Warmup, completed_mark_ = window_end_.completed, issued_mark_ = window_end_.warp_instructions;
    return 0;
  }
  if (halves_measured(window_end_)) {
    cycles_per_instruction_.push_back(cycles_per_instruction(window_start_, window_middle_));
    cycles_per_instruction_.push_back(cycles_per_instruction(window_middle_, window_end_));
  }
  // By waves the window before gives half, the window after the other half (settle_pending).
  const double share = outcome_.mode == SampleMode::Waves ? 0.5 : 1.0;
  const double factor = share * static_cast<double>(warp_instructions) /
                        static_cast<double>(window_end_.warp_instructions - window_start_.warp_instructions);
  if (outcome_.mode == SampleMode::Waves) {
    pending_instructions_ = warp_instructions;
    pending_window_start_ = window_start_;
    pending_window_end_ = window_end_;
  }
  ++outcome_.windows;
  outcome_.ctas_skipped += ctas;
  outcome_.warp_instructions_skipped += warp_instructions;
  outcome_.cycles_extrapolated += factor * static_cast<double>(window_end_.cycle - window_start_.cycle);
  completed_mark_ = window_end_.completed;
  issued_mark_ = window_end_.warp_instructions;
  phase_ = Phase::Warmup;
  return factor;
}

double Sampler::settle_pending(bool window_after) {
  if (pending_instructions_ == 0) return 0;
  const Progress& from = window_after ? window_start_ : pending_window_start_;
  const Progress& to = window_after ? window_end_ : pending_window_end_;
  const double factor = 0.5 * static_cast<double>(pending_instructions_) / static_cast<double>(to.warp_instructions - from.warp_instructions);
  outcome_.cycles_extrapolated += factor * static_cast<double>(to.cycle - from.cycle);
  pending_instructions_ = 0;
  return factor;
}

SamplingOutcome Sampler::outcome() const {
  SamplingOutcome o = outcome_;
  o.sampled = o.windows > 0;
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
