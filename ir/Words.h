// Words.h - words in messages: counts ("1 device", "2 devices", "1 micro-batch") and text
// from a user's file quoted safely.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace hspmd::ir {

/// `n` and the noun for it: `one` for 1, else `many` (default: `one` + "s").
inline std::string counted(int64_t n, const std::string &one, const std::string &many = "") {
  return std::to_string(n) + " " + (n == 1 ? one : many.empty() ? one + "s" : many);
}

/// `text` with every byte that is not printable ASCII (controls, ill-formed UTF-8) written as
/// \xNN, and cut after `most` bytes ("..." then), for quoting a file's bytes in a message.
inline std::string printable(const std::string &text, size_t most = std::string::npos) {
  std::string out;
  for (size_t k = 0; k < text.size() && k < most; ++k) {
    const auto byte = static_cast<unsigned char>(text[k]);
    if (byte >= 0x20 && byte < 0x7f) {
      out += text[k];
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", byte);
      out += hex;
    }
  }
  return text.size() > most ? out + "..." : out;
}

/// `text` as a name of the language (a plan's, a pipeline's: [A-Za-z_][A-Za-z0-9_]*): every
/// other byte '_', and "p" before a leading digit or for "" (a device type "my.gpu" or "4090"
/// naming the planner's pipelines). Keywords are the caller's to avoid.
inline std::string identifierFrom(std::string text) {
  for (char &c : text)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
      c = '_';
  return text.empty() || (text[0] >= '0' && text[0] <= '9') ? "p" + text : text;
}

} // namespace hspmd::ir
