// StopReport.cpp - the message of a signal that stops a threads run (runtime/StopReport.h).
// The handler only writes text made beforehand (write(2) is async-signal-safe; formatting is
// not) and raises the signal again with its default action.
#include "runtime/StopReport.h"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstring>
#include <unistd.h>

namespace hspmd::runtime {

namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
constexpr size_t kMost = 4096;

char prefix[kMost];           // "PROGRAM: error: stopped by "
char kept[2][kMost];          // "; the last checkpoint is ...\n", or "\n": two, written in turn
std::atomic<int> current{0};  // which of `kept` the handler prints
struct sigaction previous[3]; // the actions put back
bool installed[3] = {false, false, false};

void copy(char *to, std::string text) {
  if (text.size() >= kMost) // a path of thousands of bytes: cut, the line still ended
    text = text.substr(0, kMost - 5) + "...\n";
  std::memcpy(to, text.data(), text.size());
  to[text.size()] = '\0';
}

void put(const char *text) {
  for (size_t left = std::strlen(text); left > 0;) {
    const ssize_t wrote = ::write(STDERR_FILENO, text, left);
    if (wrote <= 0)
      return;
    text += wrote;
    left -= static_cast<size_t>(wrote);
  }
}

extern "C" void reportStop(int signal) {
  put(prefix);
  put(signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "SIGHUP");
  put(kept[current.load()]);
  ::signal(signal, SIG_DFL);
  ::raise(signal);
}

} // namespace

StopReport::StopReport(const std::string &program) {
  copy(prefix, program + ": error: stopped by ");
  copy(kept[0], "\n");
  current = 0;
  for (size_t k = 0; k < std::size(kSignals); ++k) {
    struct sigaction now {};
    if (sigaction(kSignals[k], nullptr, &now) != 0 || now.sa_handler != SIG_DFL)
      continue; // ignored or handled by someone else: theirs
    struct sigaction action {};
    action.sa_handler = reportStop;
    sigemptyset(&action.sa_mask);
    installed[k] = sigaction(kSignals[k], &action, &previous[k]) == 0;
  }
}

StopReport::~StopReport() {
  for (size_t k = 0; k < std::size(kSignals); ++k)
    if (installed[k]) {
      sigaction(kSignals[k], &previous[k], nullptr);
      installed[k] = false;
    }
}

void StopReport::saved(const std::string &path, int64_t step) {
  const int next = 1 - current.load();
  copy(kept[next],
       "; the last checkpoint is " + path + ", saved after step " + std::to_string(step) + " (--load it to go on)\n");
  current = next;
}

} // namespace hspmd::runtime
