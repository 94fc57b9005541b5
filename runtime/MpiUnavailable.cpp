// The MPI backend's entry points in a build without MPI: a clear error.
#include "runtime/MpiRun.h"

#include <iostream>

namespace hspmd::runtime {

bool mpiAvailable() {
  return false;
}
int launcherRank() {
  return -1;
}
void reportRunError(const std::string &program, const std::exception &error) {
  const std::string line = program + ": error: " + error.what() + "\n";
  std::cerr << line; // one write; std::cout, tied to it, is flushed first
}

RunResult runMpi(const std::map<int, ir::DeviceProgram> &, const ModelInfo &, const RunOptions &) {
  throw RunError("this hspmc was built without MPI (apt-get install libopenmpi-dev, then rebuild)");
}

RunResult runMpi(const RunPlans &, const ModelInfo &, const RunOptions &) {
  throw RunError("this hspmc was built without MPI (apt-get install libopenmpi-dev, then rebuild)");
}

} // namespace hspmd::runtime
