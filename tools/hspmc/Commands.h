// Commands.h - hspmc's subcommands, one file each (CheckCommand.cpp, IrCommands.cpp,
// LintCommand.cpp, TrainCommands.cpp, PlanCommand.cpp), called by main.cpp, which only wires
// the command line to them; and what they share to print diagnostics (Report.cpp) and to
// compile a plan for training (TrainingBuild).
#pragma once

#include "frontend/Compilation.h"
#include "passes/Pipeline.h"
#include "planner/Cluster.h"
#include "planner/driver/Driver.h"
#include "planner/driver/ModelInfo.h"
#include "planner/driver/PlanModel.h"
#include "runtime/Run.h"

#include <optional>
#include <string>
#include <vector>

namespace hspmd::cli {

/// Why an hspmc without CUDA cannot run or build for GPUs (hspmc train --device gpu, hspmc
/// build --target cuda).
inline constexpr const char *kWithoutCuda =
    "this hspmc was built without the CUDA toolkit (CMake found no nvcc; docs/gpu.md says what it needs)";

using frontend::CollectingSink;
using frontend::Compilation;
using frontend::DiagnosticEngine;
using frontend::SourceManager;

// Prints what was collected, as text (stderr) or JSON (stdout). Returns the exit code.
int finish(const CollectingSink &sink, const SourceManager &sources, bool json, int errors);

// What train, simulate and build share: FILE under its plan, compiled for training into
// DevicePrograms, with the diagnostics collected for finish().
struct TrainingBuild {
  SourceManager sources;
  CollectingSink sink;
  DiagnosticEngine diags{sink};
  Compilation compilation{sources, diags};
  std::optional<driver::Build> build;
  std::optional<passes::PipelineResult> result;
  bool checked = false; // the plan passed the gate (driver::checkPlan)
  /// The training programs the gate compiled, on the links of the cluster it checked against
  /// (FILE's plan's, or `clusterFile`): what compileOn takes instead of compiling them again.
  passes::PipelineResult checkedPrograms;
  /// `--precision` of the running command (train, build, simulate; nothing: each plan's own
  /// `precision`): every plan it compiles, the run's first and those it switches or recovers
  /// to, stores activations in bf16 or not (PipelineOptions::bf16), and the gate checks those
  /// programs (their memory included).
  static inline std::optional<bool> bf16;

  /// The cluster file that overrides the plans' own in the checks and the links (none: each
  /// plan's).
  std::string clusterOverride;

  /// Elaborates, checks the plan, and unless `later`, compiles (later: the caller calls
  /// compile()). `clusterFile` overrides the plan's cluster in the checks. `command` is the
  /// subcommand, followed by what named FILE where that is not the command's own FILE ("train
  /// --switch", "train a plan set", "explain-switch explain-switch" for its two plans): a file
  /// without a plan is then an error that names it.
  TrainingBuild(const std::string &file, const std::vector<std::string> &planFiles, const std::string &command,
                bool later = false, const std::string &clusterFile = "")
      : clusterOverride(clusterFile) {
    build = driver::elaborateBuild(compilation, file, planFiles, "");
    const std::string verb = command.substr(0, command.find(' '));
    if (build && build->plans.empty())
      diags.error(ir::Location{file, 0, 0, 1},
                  verb == command ? command + " needs a plan (--plan PLAN)"
                                  : command.substr(verb.size() + 1) + " takes a plan file; this file defines no plan");
    checked = hasPlan() && driver::checkPlan(compilation, file, planFiles, clusterFile, true, &checkedPrograms, bf16);
    if (checked && (verb == "train" || verb == "build"))
      checked = driver::checkTrainable(*build->graph, verb == "train" ? "hspmc train" : "a program hspmc build writes",
                                       diags);
    if (!later && checked)
      takeCheckedOrCompile();
  }
  TrainingBuild(const TrainingBuild &) = delete;
  TrainingBuild &operator=(const TrainingBuild &) = delete;
  ~TrainingBuild() { // the programs freed on the cores (a large plan's take a thread tens of ms)
    if (result)
      passes::releasePrograms(*result);
    passes::releasePrograms(checkedPrograms);
  }
  bool hasPlan() const { return build && !build->plans.empty(); }
  /// Compiles on `links`, else on each plan's cluster's (driver::planLinks).
  void compile(const std::optional<passes::LinkModel> &links = {}) {
    if (!checked)
      return;
    passes::PipelineOptions options;
    options.train = true;
    options.bf16 = bf16;
    if (links)
      options.links.assign(build->plans.size(), *links);
    else
      options.links = driver::planLinks(compilation, build->plans, clusterOverride);
    result = passes::runPipeline(*build->graph, build->plans, options,
                                 [&](const passes::Problem &problem) { driver::reportProblem(diags, problem); });
  }
  /// The programs the gate compiled (on the links of the plan's cluster, default links where it
  /// names none) where it kept them, else compiled now: a run trains what lint checked, and a
  /// large plan is not compiled twice (a recovery's fixed cost).
  void takeCheckedOrCompile() {
    if (checked && checkedPrograms.ok && !checkedPrograms.programs.empty()) {
      result = std::move(checkedPrograms);
      result->plans.clear(); // they point into the gate's graph, which is gone
    } else {
      compile();
    }
  }
  /// Prints the diagnostics; 0 when the programs are there, else the exit code.
  int report(bool json = false) {
    const int code = finish(sink, sources, json, diags.errorCount());
    return code != 0 ? code : (!result || !result->ok) ? 1 : 0;
  }
  const std::map<int, ir::DeviceProgram> &programs() const { return result->programs[0]; }
  const ir::PlanSpec &plan() const { return build->plans[0]; }
  /// For simulation (TrainCommands.cpp): the cluster `clusterFile` names, else the plan's; an
  /// error in the diagnostics where neither names one or it does not load.
  std::optional<planner::Cluster> simulationCluster(const std::string &clusterFile);
  /// Compiles on the cluster's links; an error at the plan for each device of the programs
  /// that the cluster lacks.
  void compileOn(const planner::Cluster &cluster);
};

int runCheck(const std::vector<std::string> &files, bool json);

// The pass table (passes/Pipeline.cpp): name, summary, and what --after prints.
int runPasses();

int runDumpIr(const std::string &file, const std::vector<std::string> &planFiles, const std::string &modelName,
              const std::string &after, bool timePasses, bool train);

int runDumpProgram(const std::string &file, const std::vector<std::string> &planFiles, int64_t device, bool train,
                   bool nccl, std::optional<bool> bf16 = std::nullopt);

int runLint(const std::string &planFile, const std::string &modelFile, const std::string &clusterFile, bool json,
            bool werror, std::optional<bool> bf16 = std::nullopt);

// Compiles FILE under its plan for training and runs every device's program on a thread (or
// an MPI process). `switches` ("STEP:PLAN") change the plan before those steps; `failures`
// ("STEP:DEVICE[@PHASE]") and the lines of `faultTrace` kill devices, after which the
// survivors go on under the first of `recoverPlans` whose devices are all alive. On MPI
// outside mpirun it starts mpirun with `arguments` (this program's own).
int runTrain(const std::string &file, const std::vector<std::string> &planFiles, const runtime::RunOptions &run,
             const std::string &lossesPath, const std::string &backend, const std::vector<std::string> &switches,
             const std::vector<std::string> &failures, const std::string &faultTrace,
             const std::vector<std::string> &recoverPlans, const std::vector<std::string> &arguments);

// hspmc explain-switch FROM TO: what moving the state from one plan's layout to another's
// takes (runtime/Switch.h).
int runExplainSwitch(const std::string &from, const std::string &to, const std::string &clusterFile, bool json);

// hspmc simulate --fault-trace: a run of `steps` steps over a trace of failures and returns
// on the cluster, priced on the simulated steps of the plan and of the --recover plans, with
// in-place recovery against checkpoint-and-restart every K steps (docs/elastic.md).
struct FaultReplay {
  std::string trace; // "" for none
  int64_t steps = 100;
  std::vector<std::string> recoverPlans;
  std::vector<int64_t> checkpointEvery = {10, 50};
  double heartbeatSeconds = 1; // detection
  double restartSeconds = 60;  // checkpoint-and-restart: relaunch every process, rebuild communicators
  double checkpointGBps = 5;   // each device writes and reads its own state at this rate, all at once
};

// Compiles FILE under its plan for training and simulates one step on the cluster; with a
// fault trace, a whole run over it.
int runSimulate(const std::string &file, const std::vector<std::string> &planFiles, const std::string &clusterFile,
                const std::string &tracePath, bool json, const FaultReplay &replay = {});

// hspmc simulate PLAN|SET --documents LENGTHS: a pass over documents of these lengths,
// priced by strategy (padded, packed, a plan per step), with `tokens` real tokens per step at
// most (0: each plan's B x S), a step's documents given rows by `balanced` the scheduler's
// way (runtime::DocumentSchedule), else in corpus order.
int runSimulateDocuments(const std::string &file, const std::string &clusterFile, const std::string &lengthsPath,
                         int64_t tokens, bool balanced = true);

int runPlan(const driver::PlanFiles &files, bool report);

// hspmc plan: the planner's search, its finalists simulated, the fastest written
// (planner/driver/PlanModel.h).
// hspmc plan --length-distribution: one plan per length bucket, and what switching between
// them gains over padding every sequence to --seq.
int runPlanForLengths(const driver::PlanFiles &files, const std::string &lengths);

// Compiles FILE under its plan for training and writes (and builds) the generated C++.
int runBuild(const std::string &file, const std::vector<std::string> &planFiles, const std::string &target,
             const std::string &outDir, bool compile, const std::vector<std::string> &also);

} // namespace hspmd::cli
