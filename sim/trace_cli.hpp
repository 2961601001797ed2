// `atomsim trace info | validate | dump`.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

namespace atomsim {

void trace_info(const std::string& path, std::ostream& out);
void trace_validate(const std::string& path, std::ostream& out);
void trace_dump(const std::string& path, std::size_t kernel, std::uint64_t warp, std::uint64_t limit, std::ostream& out);

}  // namespace atomsim
