// JsonText.h - JSON as hspmc prints and writes it (--format json, --losses, traces,
// checkpoint headers).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace hspmd::ir {

/// `value` as text, `indent` spaces deep (-1: one line). A string that is not UTF-8 (a file
/// name of other bytes, a file's bytes quoted in a message) has each bad byte written as
/// U+FFFD, where nlohmann's plain dump() throws.
inline std::string jsonText(const nlohmann::json &value, int indent = -1) {
  return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace hspmd::ir
