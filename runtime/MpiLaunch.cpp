// MpiLaunch.cpp - hspmc train --backend mpi started without mpirun: it starts mpirun itself
// and gives the run's exit status (runtime/MpiRun.h).
#include "runtime/MpiRun.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

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

// The status directories of launches that were killed (SIGKILL: nothing of hspmc's ran after
// it; mpirun and the run's processes end by the parent-death signal): hspmd-run-PID-* whose
// launcher PID is gone. A PID taken again by another process keeps its directory, harmlessly.
void removeStatusesOfTheKilled() {
  std::error_code ignored;
  for (const auto &entry : std::filesystem::directory_iterator("/tmp", ignored)) {
    const std::string name = entry.path().filename().string(), prefix = "hspmd-run-";
    if (name.rfind(prefix, 0) != 0)
      continue;
    const size_t dash = name.find('-', prefix.size());
    const std::string pid = name.substr(prefix.size(), dash == std::string::npos ? 0 : dash - prefix.size());
    if (pid.empty() || pid.size() > 9 || pid.find_first_not_of("0123456789") != std::string::npos)
      continue; // not one of these (older directories had no PID)
    if (::kill(static_cast<pid_t>(std::stol(pid)), 0) != 0 && errno == ESRCH)
      std::filesystem::remove_all(entry.path(), ignored);
  }
}

// Starts mpirun with SIGTERM as its parent-death signal: a SIGKILL of hspmc, which no handler
// sees, still ends mpirun and so the run's processes. Returns mpirun's pid, or -1 with errno
// (execvp's, sent back through a pipe that the exec closes).
pid_t startMpirun(char *const argv[]) {
  int reply[2];
  if (pipe2(reply, O_CLOEXEC) != 0)
    return -1;
  const pid_t parent = getpid();
  const pid_t child = fork();
  if (child == 0) { // only async-signal-safe calls until the exec
    close(reply[0]);
    for (int signal : kForwarded) // the parent's handler would keep a signal from ending mpirun
      ::signal(signal, SIG_DFL);
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent) // it died before the prctl
      _exit(1);
    execvp(argv[0], argv);
    const int error = errno;
    [[maybe_unused]] ssize_t written = write(reply[1], &error, sizeof error);
    _exit(127);
  }
  const int forkError = errno;
  close(reply[1]);
  if (child < 0) {
    close(reply[0]);
    errno = forkError;
    return -1;
  }
  int error = 0;
  ssize_t got = 0;
  while ((got = read(reply[0], &error, sizeof error)) < 0 && errno == EINTR) {
  }
  close(reply[0]);
  if (got == static_cast<ssize_t>(sizeof error)) { // the exec failed: the child has exited
    while (waitpid(child, nullptr, 0) < 0 && errno == EINTR) {
    }
    errno = error;
    return -1;
  }
  return child;
}
} // namespace

int launchUnderMpirun(const std::vector<std::string> &command, int processes, bool elastic) {
  removeStatusesOfTheKilled();
  std::string named = "/tmp/hspmd-run-" + std::to_string(getpid()) + "-XXXXXX";
  char *pattern = named.data();
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
  const pid_t child = startMpirun(argv.data());
  if (child < 0) {
    const int error = errno;
    restore();
    std::fprintf(stderr, "hspmc train: error: cannot start mpirun (%s): install libopenmpi-dev's openmpi-bin\n",
                 std::strerror(error));
    std::error_code ignored;
    std::filesystem::remove_all(statuses, ignored);
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
  std::set<std::string> wrote; // "rank.R" of the processes that recorded their exit
  for (const auto &entry : std::filesystem::directory_iterator(statuses, ignored)) {
    std::ifstream in(entry.path());
    int exitCode = 1, reported = 0;
    if (!(in >> exitCode >> reported))
      continue;
    wrote.insert(entry.path().filename().string());
    if (reported)
      code = exitCode;
    if (exitCode != 0 && failed == 0)
      failed = exitCode;
  }
  std::filesystem::remove_all(statuses, ignored);
  if (code >= 0)
    return failed != 0 && code == 0 ? 0 : code;
  if (failed != 0) // that process said why
    return failed;
  // No process finished or said why: each was killed (from outside, by the system, or by mpirun
  // when another died), or mpirun could not start them. Say so rather than end in mpirun's words.
  std::string silent;
  int count = 0;
  for (int rank = 0; rank < processes; ++rank)
    if (!wrote.count("rank." + std::to_string(rank)))
      silent += (count++ ? ", " : "") + std::to_string(rank);
  std::fprintf(stderr,
               "hspmc train: error: the run ended before it finished: %s %s of %d ended without an exit status (a "
               "process killed from outside or by the system; mpirun ends the others when one dies: see its "
               "messages above); mpirun exited with status %d. To go on after a death, give --recover "
               "(docs/elastic.md)\n",
               count == 1 ? "process" : "processes", silent.c_str(), processes, launcher);
  return launcher != 0 ? launcher : 1;
}

void recordExit(int code, bool reported) {
  const char *directory = std::getenv(kStatusDirectory);
  const int rank = launcherRank();
  if (!directory || rank < 0)
    return;
  std::ofstream(std::string(directory) + "/rank." + std::to_string(rank)) << code << " " << (reported ? 1 : 0) << "\n";
}

} // namespace hspmd::runtime
