// `atomsim trace info | validate | dump | rejoin`.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

namespace atomsim {

void trace_info(const std::string& path, std::ostream& out);
void trace_validate(const std::string& path, std::ostream& out);
void trace_dump(const std::string& path, std::size_t kernel, std::uint64_t warp, std::uint64_t limit, std::ostream& out);
// Runs the trace pass's join again on the input it saved when it failed;
// `show_warp` prints that warp's joined stream as it is made.
void trace_rejoin(const std::string& path, std::optional<std::uint64_t> show_warp, unsigned threads, std::ostream& out);

}  // namespace atomsim
