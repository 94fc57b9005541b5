// Location.h - a position in a source file, carried by every IR op and diagnostic.
#pragma once

#include <cstdint>
#include <string>

namespace hspmd::ir {

/// A source file's name, interned: every op, instruction and diagnostic carries one, so a
/// copy is a pointer's and two names are equal when their pointers are. The names live as
/// long as the process (a handful per compilation).
class FileName {
public:
  FileName() = default;
  FileName(const std::string &name);                          // NOLINT: implicit on purpose, names are strings
  FileName(const char *name) : FileName(std::string(name)) {} // NOLINT
  const std::string &str() const { return *name_; }
  operator const std::string &() const { return *name_; } // NOLINT
  bool empty() const { return name_->empty(); }
  bool operator==(const FileName &other) const { return name_ == other.name_; }

private:
  const std::string *name_ = &none_;
  static const std::string none_;
};

/// A 1-based line and column in a named file; `length` is the width to underline.
struct Location {
  FileName file;
  uint32_t line = 0;
  uint32_t col = 0;
  uint32_t length = 1;

  bool isKnown() const { return line != 0; }
  /// "file:line:col"; only "file" for a whole file (line 0: a file that cannot be read), and
  /// "<unknown>" when not even the file is known.
  std::string str() const {
    if (!isKnown())
      return file.empty() ? "<unknown>" : file.str();
    return file.str() + ":" + std::to_string(line) + ":" + std::to_string(col);
  }
};

} // namespace hspmd::ir
