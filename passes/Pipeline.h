// Pipeline.h - the compiler after elaboration, as one table of passes (read Pipeline.cpp).
#pragma once

#include "ir/DeviceProgram.h"
#include "passes/Communication.h"
#include "passes/LoweredPlan.h"
#include "passes/PassSupport.h"

#include <atomic>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace hspmd::passes {

struct PipelineOptions {
  std::string dumpAfter;             // print the IR (or the DevicePrograms) after this pass ("" for none)
  std::ostream *dump = nullptr;      // where --after prints
  std::ostream *timing = nullptr;    // --time-passes: one line per pass
  std::vector<LinkModel> links = {}; // per plan (from its cluster); uniform links when missing
  bool train = false;                // differentiate the loss (the autodiff pass) first
  /// Called once the graph passes are done (after `verify`), before any DeviceProgram is
  /// built: lint's plan checks, so that a plan they reject costs no programs. False stops the
  /// pipeline (the result is not ok).
  std::function<bool(const ir::Graph &, const std::vector<LoweredPlan> &)> checkPlans = {};
  /// Once set (by another thread), the pipeline stops before its next pass, reporting nothing
  /// (the result is not ok): the planner's compiles of finalists it no longer needs.
  const std::atomic<bool> *cancelled = nullptr;
  /// Threads for the program passes' per-device work (recompute, schedule-pipeline,
  /// plan-memory): 0 the machine's cores, 1 the calling thread only (the planner, which
  /// compiles several finalists at once).
  int threads = 0;
  /// Mixed precision (`--precision bf16`, or a plan's `precision bf16`): activations, their
  /// gradients and the messages that carry them are stored in bf16; parameters, their
  /// gradients, the optimizer's state and the loss stay f32 (ProgramBuilder::storageType).
  /// False: everything f32; nothing: each plan's own (PlanSpec::bf16).
  std::optional<bool> bf16 = std::nullopt;
  /// Specialize stamps ops that emit alike (identical layers) from the first of them
  /// (ProgramBuilder::classifyOps); false emits every op (the same programs: the tests'
  /// reference).
  bool stamp = true;
};

struct PipelineResult {
  bool ok = false;
  std::vector<LoweredPlan> plans;
  std::vector<std::map<int, ir::DeviceProgram>> programs; // per plan: device -> its program
  /// Specialize's ops (with instructions to emit) on each of its parts' devices: how many
  /// were stamped from an op alike, of how many, summed over plans and parts.
  size_t stampedOps = 0, stampableOps = 0;
  /// The same for optimizer-step's parameter updates.
  size_t stampedUpdates = 0, stampableUpdates = 0;
};

/// One row of the pass table: what `hspmc passes` prints, `--after` accepts and docs/cli.md lists.
struct PassInfo {
  std::string name;    // "deduce-annotations"
  std::string summary; // one line
  bool programs;       // --after prints the DevicePrograms (the graph otherwise)
};

/// Every pass in the order the compiler runs them.
const std::vector<PassInfo> &passTable();
/// The passes' names in order, for --after and --help.
const std::vector<std::string> &passNames();

/// Runs every pass on `graph` for `plans` (one entry per plan of the build).
PipelineResult runPipeline(ir::Graph &graph, const std::vector<ir::PlanSpec> &plans, const PipelineOptions &options,
                           const ReportFn &report);

/// Frees the result's programs on up to `threads` threads (0: the machine's cores): a large
/// plan's are hundreds of thousands of instructions and buffers, whose freeing one thread
/// takes tens of milliseconds over.
void releasePrograms(PipelineResult &result, int threads = 0);

} // namespace hspmd::passes
