// Replan.h - hspmc train --recover auto: after a death the planner plans the run's model
// anew for the devices alive (the run's cluster file without the dead ones: each node keeps
// its live devices), and the plan, its devices numbered back to the run's ids and its
// optimizer the run's, is written for the run to compile and go on under (docs/elastic.md).
// Where the planner chose ZeRO and the plan fits without it, the plan keeps a whole copy of the
// optimizer state on each device: a later death then loses no part.
#pragma once

#include "frontend/Compilation.h"
#include "ir/Plan.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace hspmd::driver {

/// Why a run under `plan` cannot re-plan ("" when it can): the plan names no cluster file, or
/// gives its model arguments (the planner plans the model as its file defines it), or $TMPDIR
/// (where the plans are written) is not a folder.
/// `compilation` has the plan's files loaded.
std::string replanProblem(const ir::PlanSpec &plan, const frontend::Compilation &compilation,
                          const std::string &option = "--recover auto");

struct SurvivorPlan {
  std::string path, name, strategy; // DIRECTORY/auto_<ids>.hspmd, auto_<ids>, the planner's words
  std::string speedsCluster;        // with `speeds`: the run's whole cluster at those speeds
  std::string error;                // why there is none
};
/// The planner's plan for the `live` devices (increasing) of the cluster of `plan`, for a
/// batch of `batch` sequences of `sequence` positions, written to `directory` with its
/// survivors' cluster file beside it. `speeds` (hspmc train --stragglers): devices measured
/// slower (or faster) than their type, as a fraction of its speed; each is planned as a type
/// of its own at that speed (the plan is named auto_<ids>_slow_<those devices>).
SurvivorPlan planForSurvivors(const ir::PlanSpec &plan, const frontend::Compilation &compilation, int64_t batch,
                              int64_t sequence, const std::vector<int> &live, const std::string &directory,
                              const std::map<int, double> &speeds = {});

} // namespace hspmd::driver
