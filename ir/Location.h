// Location.h - a position in a source file, carried by every IR op and diagnostic.
#pragma once

#include <cstdint>
#include <string>

namespace hspmd::ir {

/// A 1-based line and column in a named file; `length` is the width to underline.
struct Location {
  std::string file;
  uint32_t line = 0;
  uint32_t col = 0;
  uint32_t length = 1;

  bool isKnown() const { return line != 0; }
  /// "file:line:col", or "<unknown>" when the location is not known.
  std::string str() const {
    if (!isKnown())
      return "<unknown>";
    return file + ":" + std::to_string(line) + ":" + std::to_string(col);
  }
};

} // namespace hspmd::ir
