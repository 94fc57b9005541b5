// MpiLaunch.cpp - hspmc train --backend mpi started without mpirun: it starts mpirun itself
// and gives the run's exit status (runtime/MpiRun.h).
#include "runtime/MpiRun.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <spawn.h>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

extern char **environ;

namespace hspmd::runtime {

namespace {
constexpr const char *kStatusDirectory = "HSPMD_STATUS_DIR";

// A SIGTERM, SIGINT or SIGHUP to the launching hspmc (a scheduler's kill, a closed terminal) is
// passed on to mpirun, which ends its processes: before, they went on training without it.
volatile sig_atomic_t mpirunPid = 0, stoppedBy = 0;
constexpr int kForwarded[] = {SIGTERM, SIGINT, SIGHUP};

extern "C" void forwardToMpirun(int signal) {
  stoppedBy = signal;
  if (mpirunPid > 0)
    ::kill(static_cast<pid_t>(mpirunPid), signal);
}
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
  struct sigaction forward {
  }, before[std::size(kForwarded)];
  forward.sa_handler = forwardToMpirun;
  sigemptyset(&forward.sa_mask);
  for (size_t i = 0; i < std::size(kForwarded); ++i)
    sigaction(kForwarded[i], &forward, &before[i]);
  auto restore = [&] {
    for (size_t i = 0; i < std::size(kForwarded); ++i)
      sigaction(kForwarded[i], &before[i], nullptr);
  };
  pid_t child = 0;
  if (int error = posix_spawnp(&child, "mpirun", nullptr, nullptr, argv.data(), environ); error != 0) {
    restore();
    std::fprintf(stderr, "hspmc train: error: cannot start mpirun (%s): install libopenmpi-dev's openmpi-bin\n",
                 std::strerror(error));
    std::filesystem::remove_all(statuses);
    return 1;
  }
  mpirunPid = child;
  if (stoppedBy != 0) // it came before mpirun's pid was known
    ::kill(child, stoppedBy);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  mpirunPid = 0;
  restore();
  if (stoppedBy != 0) {
    std::error_code ignored;
    std::filesystem::remove_all(statuses, ignored);
    std::fprintf(stderr, "hspmc train: error: stopped by %s; mpirun and the run's processes were ended\n",
                 sigabbrev_np(stoppedBy) ? (std::string("SIG") + sigabbrev_np(stoppedBy)).c_str() : "a signal");
    return 128 + stoppedBy;
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
