// Driver.h - what the hspmc subcommands, tests and benches share: elaborating a
// model under its plans, and the lint driver.
#pragma once

#include "frontend/Compilation.h"
#include "passes/PassSupport.h"

#include <optional>

namespace hspmd::driver {

/// The model of FILE under the plans of `planFiles` (or FILE's own last plan when FILE holds
/// plans and no model): one graph for all plans, which must agree on the model's arguments
/// and symbol bindings. Without plans: the model `modelName`, or FILE's last model.
struct Build {
  std::unique_ptr<ir::Graph> graph;
  std::vector<ir::PlanSpec> plans;
};
std::optional<Build> elaborateBuild(frontend::Compilation &compilation, const std::string &file,
                                    const std::vector<std::string> &planFiles, const std::string &modelName);

/// Forwards a pass's problem to the diagnostics engine.
void reportProblem(frontend::DiagnosticEngine &diags, const passes::Problem &problem);

/// `hspmc lint`: loads `modelFile` (optional) and `planFile`, runs the passes and the lint
/// checks, reporting everything to the compilation's diagnostics. `clusterFile` overrides the
/// plan's cluster.
void lintFile(frontend::Compilation &compilation, const std::string &planFile, const std::string &modelFile,
              const std::string &clusterFile, bool warnings = true);

/// The gate every command that compiles a plan passes first (train, simulate, build,
/// dump-program): lint's checks of the plan (its errors; its warnings are lint's to print),
/// reported to the compilation's diagnostics. FILE and `planFiles` as elaborateBuild takes
/// them; `clusterFile` overrides the plan's cluster. Returns whether the plan passed.
bool checkPlan(frontend::Compilation &compilation, const std::string &file, const std::vector<std::string> &planFiles,
               const std::string &clusterFile = "");

/// `hspmc explain-reshard`: the communication plan of one layout change, as text or JSON.
/// Returns false (after printing to `error`) when an argument is malformed.
bool explainReshard(const std::string &shape, const std::string &from, const std::string &to,
                    const std::string &clusterFile, const std::string &dtype, bool json, std::ostream &out,
                    std::ostream &error);

} // namespace hspmd::driver
