// Words.h - counts in messages: "1 device", "2 devices", "1 micro-batch".
#pragma once

#include <cstdint>
#include <string>

namespace hspmd::ir {

/// `n` and the noun for it: `one` for 1, else `many` (default: `one` + "s").
inline std::string counted(int64_t n, const std::string &one, const std::string &many = "") {
  return std::to_string(n) + " " + (n == 1 ? one : many.empty() ? one + "s" : many);
}

} // namespace hspmd::ir
