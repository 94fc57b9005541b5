// Driver.h - what the hspmc subcommands, tests and benches share: elaborating a
// model under its plans, and the lint driver.
#pragma once

#include "frontend/Compilation.h"
#include "passes/PassSupport.h"
#include "passes/Pipeline.h"
#include "planner/Cluster.h"

#include <atomic>
#include <functional>
#include <optional>

namespace hspmd::driver {

/// The model of FILE under the plans of `planFiles` (or FILE's own last plan when FILE holds
/// a plan, with or without the model): one graph for all plans, which must agree on the model's arguments
/// and symbol bindings. Without plans: the model `modelName`, or FILE's last model.
struct Build {
  std::unique_ptr<ir::Graph> graph;
  std::vector<ir::PlanSpec> plans;
};
std::optional<Build> elaborateBuild(frontend::Compilation &compilation, const std::string &file,
                                    const std::vector<std::string> &planFiles, const std::string &modelName);

/// Forwards a pass's problem to the diagnostics engine.
void reportProblem(frontend::DiagnosticEngine &diags, const passes::Problem &problem);

/// Lint's checks of the plan of what `make` builds (called once for a plan that compiles
/// clean, where the checks read the training build's forward ops; else again, for an inference
/// build and a training build: autodiff extends a build's graph), reported to `diags` (its warnings only when
/// `warnings`): the passes' problems, the cross-device verifier's on the training programs, and the plan checks of
/// planner/Lint.h (against `cluster` when given). `training`, when given, receives the training build's programs.
/// Without `memory`, HS111 (a device over its memory) is left to the caller. `threads`: PipelineOptions::threads.
/// `bf16`: PipelineOptions::bf16 of the training build (nothing: the plan's own precision), whose arenas HS111 weighs.
void lintBuild(frontend::DiagnosticEngine &diags, const std::function<std::optional<Build>()> &make,
               const planner::Cluster *cluster, bool warnings, passes::PipelineResult *training = nullptr,
               bool memory = true, const std::atomic<bool> *cancelled = nullptr, int threads = 0,
               std::optional<bool> bf16 = std::nullopt);

/// `hspmc lint`: loads `modelFile` (optional) and `planFile`, runs the passes and the lint
/// checks, reporting everything to the compilation's diagnostics. `clusterFile` overrides the
/// plan's cluster.
/// `training`, when given, receives the training build's programs (compiled on the cluster's links).
/// `bf16`: lintBuild's.
void lintFile(frontend::Compilation &compilation, const std::string &planFile, const std::string &modelFile,
              const std::string &clusterFile, bool warnings = true, bool memory = true,
              passes::PipelineResult *training = nullptr, std::optional<bool> bf16 = std::nullopt);

/// The gate every command that compiles a plan passes first (train, simulate, build,
/// dump-program, dump-ir --after): lint's checks of the plan (its errors; its warnings are
/// lint's to print), reported to the compilation's diagnostics. FILE and `planFiles` as
/// elaborateBuild takes them; `clusterFile` overrides the plan's cluster. Without `memory`
/// (the commands that only print programs, which is how one looks at a plan over memory), HS111
/// does not stop it. Returns whether the plan passed. With one plan, `training` (when given)
/// receives the programs the check compiled for training, on the links of the cluster it
/// checked against: `hspmc simulate` uses them instead of compiling them again. `bf16`: the
/// command's --precision (lintBuild's; nothing: the plan's), so that the programs checked are
/// those it runs.
bool checkPlan(frontend::Compilation &compilation, const std::string &file, const std::vector<std::string> &planFiles,
               const std::string &clusterFile = "", bool memory = true, passes::PipelineResult *training = nullptr,
               std::optional<bool> bf16 = std::nullopt);

/// The links each plan is compiled on: its cluster's (`clusterFile` overrides it; lint and the
/// gate check on them, and train, build, simulate, dump-ir and dump-program compile on them),
/// uniform links for a plan that names none or whose cluster does not load (the gate says why).
std::vector<passes::LinkModel> planLinks(frontend::Compilation &compilation, const std::vector<ir::PlanSpec> &plans,
                                         const std::string &clusterFile = "");

/// The gate for a plan in memory (the planner's finalists): lint's checks of `spec` (errors
/// only, memory aside: the planner weighs each finalist's memory plan itself) on `cluster`; the model `spec` names must
/// be loaded in `compilation`. `training` receives the training build's programs. Returns whether the plan passed.
/// Setting `cancelled` stops it between passes (the result is then not ok).
bool checkSpec(frontend::Compilation &compilation, const ir::PlanSpec &spec, const planner::Cluster &cluster,
               passes::PipelineResult *training, const std::atomic<bool> *cancelled = nullptr);

/// `hspmc explain-reshard`: the communication plan of one layout change, as text or JSON.
/// Returns false (after printing to `error`) when an argument is malformed.
bool explainReshard(const std::string &shape, const std::string &from, const std::string &to,
                    const std::string &clusterFile, const std::string &dtype, bool json, std::ostream &out,
                    std::ostream &error);

} // namespace hspmd::driver
