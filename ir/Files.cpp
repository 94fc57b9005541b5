// Files.cpp - what a path is (ir/Files.h).
#include "ir/Files.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <fcntl.h>
#include <unistd.h>

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

std::string readByTheCommand(const std::string &path, const std::vector<ReadFile> &inputs) {
  std::error_code ec;
  for (const ReadFile &input : inputs)
    if (!input.path.empty() && std::filesystem::equivalent(path, input.path, ec))
      return "it is " + input.what + ", which the command reads";
  return "";
}

std::string unwritable(const std::string &path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (path.empty())
    return "the path is empty";
  if (fs::is_directory(path, ec))
    return "it is a directory";
  const fs::path dir = fs::path(path).has_parent_path() ? fs::path(path).parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec))
    return fs::exists(dir, ec) ? "'" + dir.string() + "' is not a directory"
                               : "the directory '" + dir.string() + "' does not exist";
  // One look at the path: another process of an MPI run may create and remove its probe of
  // the same path meanwhile.
  if (const fs::file_status status = fs::status(path, ec); fs::exists(status)) {
    if (!fs::is_regular_file(status)) // a device or a pipe: opening one may block or act
      return ::access(path.c_str(), W_OK) == 0 ? "" : "it is not writable";
    const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd >= 0) {
      ::close(fd);
      return "";
    }
    if (errno != ENOENT) // (ENOENT: such a probe, gone meanwhile)
      return std::string("it is not writable (") + std::strerror(errno) + ")";
  }
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0 && errno == EEXIST)
    return ""; // made meanwhile (another process of the run checking the same path)
  if (fd < 0)
    return "a file cannot be created in '" + dir.string() + "' (" + std::strerror(errno) + ")";
  ::close(fd);
  fs::remove(path, ec);
  return "";
}

std::string writeWhole(const std::string &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return std::strerror(errno);
  errno = 0;
  out << text;
  out.close(); // flushes: the error of the last write shows here
  if (!out) {
    const std::string why = errno ? std::strerror(errno) : "the write failed";
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) // cut short: not left to be read as whole
      std::filesystem::remove(path, ec);
    return why;
  }
  return "";
}

std::string unflushedOutput() {
  errno = 0;
  std::cout.flush();
  if (std::fflush(stdout) != 0 || std::ferror(stdout) || !std::cout) // (errno is the last write's)
    return errno ? std::strerror(errno) : "an earlier write to it failed";
  return "";
}

} // namespace hspmd::ir
