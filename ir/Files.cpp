// Files.cpp - what an input path is (ir/Files.h).
#include "ir/Files.h"

#include <filesystem>

namespace hspmd::ir {

std::string notAFile(const std::string &path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec); // follows links
  if (ec || !fs::exists(status) || fs::is_regular_file(status))
    return "";
  if (fs::is_directory(status))
    return "it is a directory";
  return "it is not a regular file (a device or a pipe: inputs are read whole, from files)";
}

} // namespace hspmd::ir
