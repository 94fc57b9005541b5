// CliSupport.h - running hspmc as a user does, for the command-line tests (cli_tests).
#pragma once

#include "../support/Heavy.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <sys/wait.h>
#include <vector>

namespace hspmd::testing {

struct CliRun {
  int code;
  std::string output; // stdout and stderr
};

// Runs a shell command line, collecting stdout and stderr.
inline CliRun shell(const std::string &line) {
  std::string command = line + " 2>&1";
  FILE *pipe = popen(command.c_str(), "r");
  std::string output;
  std::array<char, 4096> buffer;
  while (size_t n = fread(buffer.data(), 1, buffer.size(), pipe))
    output.append(buffer.data(), n);
  int status = pclose(pipe);
  return CliRun{WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

inline CliRun hspmc(const std::string &args) {
  return shell(std::string(HSPMC_PATH) + " " + args);
}

// hspmc under mpirun with `processes` processes (as root, more processes than cores), and
// mpirun's `options`. OpenMPI's own allocations would fail a run under LeakSanitizer: leaks
// are not checked there.
inline CliRun hspmcUnderMpirun(int processes, const std::string &args, const std::string &options = "") {
  return shell("timeout 120 mpirun --allow-run-as-root --oversubscribe " + options +
               " -x ASAN_OPTIONS=detect_leaks=0 -np " + std::to_string(processes) + " " + HSPMC_PATH + " " + args);
}

// hspmc train --backend mpi started as a user would, without mpirun (hspmc starts it), with
// a deadline. Leaks are not checked there either.
inline CliRun hspmcStartingMpirun(const std::string &args) {
  return shell("ASAN_OPTIONS=detect_leaks=0 timeout 120 " + std::string(HSPMC_PATH) + " " + args);
}

// The losses `--losses FILE` wrote.
inline std::vector<double> lossesOf(const std::string &path) {
  std::ifstream in(path);
  const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<double> losses;
  size_t at = json.find("\"losses\": [");
  if (at == std::string::npos)
    return losses;
  at = json.find('[', at) + 1;
  const size_t end = json.find(']', at);
  while (at < end) {
    size_t used = 0;
    losses.push_back(std::stod(json.substr(at), &used));
    at = json.find_first_not_of(", \n", at + used);
  }
  return losses;
}

// The losses of two runs' --losses files agree step for step within 1e-5 relative, and each
// has `steps` of them.
inline void expectSameLosses(const std::string &got, const std::string &want, size_t steps, const std::string &what) {
  const std::vector<double> a = lossesOf(got), b = lossesOf(want);
  ASSERT_EQ(a.size(), steps) << what;
  ASSERT_EQ(b.size(), steps) << what;
  for (size_t i = 0; i < steps; ++i)
    EXPECT_NEAR(a[i], b[i], 1e-5 * b[i]) << what << ", step " << i + 1;
}

// The text of a file.
inline std::string readText(const std::string &path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The hspmc arguments of the first "$ hspmc ..." line of a ```TAG block of docs/FILE.
inline std::string docsCommand(const std::string &file, const std::string &tag) {
  const std::string docs = readText("docs/" + file), opening = "```" + tag + "\n$ hspmc ";
  const size_t block = docs.find(opening);
  if (block == std::string::npos)
    return "";
  const size_t at = block + opening.size();
  return docs.substr(at, docs.find('\n', at) - at);
}

} // namespace hspmd::testing
