// Heavy.h - the tests the sanitizer run leaves to the normal build.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

// The tests that take half a minute or more under the sanitizers and whose code the sanitizer
// run covers through smaller tests (the planner on large models, the cluster-scale examples,
// the MPI elastic cases beside their threads twins, every shipped plan compiled or trained
// several ways) are skipped where HSPMD_SKIP_HEAVY is set: scripts/test.sh sets it for the
// sanitizer build only, to keep the whole suite short on 2 cores (it is not yet under the
// half hour it aims at: README.md). The
// normal build runs them.
namespace hspmd::testing {

/// Whether HSPMD_SKIP_HEAVY is set (the sanitizer run): a test may also leave out only its
/// heaviest part there, e.g. the run it compares losses with.
inline bool heavyRunsAreOff() {
  const char *skip = std::getenv("HSPMD_SKIP_HEAVY");
  return skip && *skip && std::string(skip) != "0";
}

} // namespace hspmd::testing

#define HSPMD_SKIP_IF_HEAVY_RUNS_ARE_OFF()                                                                             \
  do {                                                                                                                 \
    if (hspmd::testing::heavyRunsAreOff())                                                                             \
      GTEST_SKIP() << "HSPMD_SKIP_HEAVY is set (the sanitizer run): this test runs in the normal build";               \
  } while (false)
