// MpiLaunch.cpp - hspmc train --backend mpi started without mpirun: it starts mpirun itself
// and gives the run's exit status (runtime/MpiRun.h).
#include "runtime/MpiRun.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <spawn.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

extern char **environ;

namespace hspmd::runtime {

namespace {
constexpr const char *kStatusDirectory = "HSPMD_STATUS_DIR";
} // namespace

int launchUnderMpirun(const std::vector<std::string> &command, int processes, bool elastic) {
  char pattern[] = "/tmp/hspmd-run-XXXXXX";
  if (!mkdtemp(pattern)) {
    std::fprintf(stderr, "hspmc train: error: cannot make a directory under /tmp: %s\n", std::strerror(errno));
    return 1;
  }
  const std::string statuses = pattern;
  setenv(kStatusDirectory, statuses.c_str(), 1);
  std::vector<std::string> args = {"mpirun", "--oversubscribe", "-x", kStatusDirectory};
  if (geteuid() == 0)
    args.emplace_back("--allow-run-as-root");
  if (elastic) // without it mpirun ends every process when one dies
    args.emplace_back("--enable-recovery");
  args.insert(args.end(), {"-np", std::to_string(processes)});
  args.insert(args.end(), command.begin(), command.end());
  std::vector<char *> argv;
  for (std::string &arg : args)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t child = 0;
  if (int error = posix_spawnp(&child, "mpirun", nullptr, nullptr, argv.data(), environ); error != 0) {
    std::fprintf(stderr, "hspmc train: error: cannot start mpirun (%s): install libopenmpi-dev's openmpi-bin\n",
                 std::strerror(error));
    std::filesystem::remove_all(statuses);
    return 1;
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  const int launcher = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  // Each process wrote "CODE REPORTED" (a killed one nothing): the status is that of the one
  // that reported the run, else the first non-zero, else mpirun's.
  int code = -1, failed = 0;
  std::error_code ignored;
  for (const auto &entry : std::filesystem::directory_iterator(statuses, ignored)) {
    std::ifstream in(entry.path());
    int exitCode = 1, reported = 0;
    if (!(in >> exitCode >> reported))
      continue;
    if (reported)
      code = exitCode;
    if (exitCode != 0 && failed == 0)
      failed = exitCode;
  }
  std::filesystem::remove_all(statuses, ignored);
  if (code >= 0)
    return failed != 0 && code == 0 ? 0 : code;
  return failed != 0 ? failed : (launcher != 0 ? launcher : 1);
}

void recordExit(int code, bool reported) {
  const char *directory = std::getenv(kStatusDirectory);
  const int rank = launcherRank();
  if (!directory || rank < 0)
    return;
  std::ofstream(std::string(directory) + "/rank." + std::to_string(rank)) << code << " " << (reported ? 1 : 0) << "\n";
}

} // namespace hspmd::runtime
