// Corpus.h - test support for the corpora of broken inputs (tests/diagnostics, tests/lint):
// each file starts with `// expect: ...` lines stating the exact messages it must produce.
#pragma once

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace hspmd::testing {

/// The `// expect: ` lines at the top of `file`, without the prefix.
inline std::vector<std::string> expectations(const std::filesystem::path &file) {
  std::ifstream in(file);
  std::vector<std::string> expected;
  for (std::string line; std::getline(in, line) && line.rfind("// expect: ", 0) == 0;)
    expected.push_back(line.substr(11));
  return expected;
}

/// The .hspmd files of `folder` (relative to the source tree, since test discovery may run
/// in another folder), sorted by name.
inline std::vector<std::string> corpusFiles(const std::string &folder) {
  std::vector<std::string> names;
  for (const auto &entry : std::filesystem::directory_iterator(std::filesystem::path(HSPMD_SOURCE_DIR) / folder))
    if (entry.path().extension() == ".hspmd")
      names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

} // namespace hspmd::testing
