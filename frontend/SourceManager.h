// SourceManager.h - owns the text of every file a compilation reads, by name.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hspmd::frontend {

class SourceManager {
public:
  /// Reads a file from disk; nullopt when it cannot be read. A file is read once.
  const std::string *load(const std::string &path);
  /// Registers text under a name (tests, the command line).
  const std::string &addBuffer(const std::string &name, std::string text);
  const std::string *text(const std::string &name) const;
  /// The name of every text held: the paths of the files read, and the buffers' names.
  std::vector<std::string> names() const;
  /// The text of a 1-based line without its newline, or nullopt.
  std::optional<std::string_view> line(const std::string &name, uint32_t line) const;

private:
  std::map<std::string, std::string> buffers_;
};

} // namespace hspmd::frontend
