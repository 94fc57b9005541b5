// The MPI backend's entry points in a build without MPI: a clear error.
#include "runtime/MpiRun.h"

namespace hspmd::runtime {

bool mpiAvailable() {
  return false;
}
int launcherRank() {
  return -1;
}
RunResult runMpi(const std::map<int, ir::DeviceProgram> &, const ModelInfo &, const RunOptions &) {
  throw RunError("this hspmc was built without MPI (apt-get install libopenmpi-dev, then rebuild)");
}

RunResult runMpi(const RunPlans &, const ModelInfo &, const RunOptions &) {
  throw RunError("this hspmc was built without MPI (apt-get install libopenmpi-dev, then rebuild)");
}

} // namespace hspmd::runtime
