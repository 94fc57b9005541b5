// Pipeline.h - the compiler after elaboration, as one list of passes (read Pipeline.cpp).
#pragma once

#include "ir/DeviceProgram.h"
#include "passes/Communication.h"
#include "passes/LoweredPlan.h"
#include "passes/PassSupport.h"

#include <ostream>
#include <string>
#include <vector>

namespace hspmd::passes {

struct PipelineOptions {
  std::string dumpAfter;             // print the IR after this pass ("" for none)
  std::ostream *dump = nullptr;      // where --after prints
  std::ostream *timing = nullptr;    // --time-passes: one line per pass
  std::vector<LinkModel> links = {}; // per plan (from its cluster); uniform links when missing
  bool train = false;                // differentiate the loss (the autodiff pass) first
};

struct PipelineResult {
  bool ok = false;
  std::vector<LoweredPlan> plans;
  std::vector<std::map<int, ir::DeviceProgram>> programs; // per plan: device -> its program
};

/// The passes in order, for --after and --help.
const std::vector<std::string> &passNames();

/// Runs every pass on `graph` for `plans` (one entry per plan of the build).
PipelineResult runPipeline(ir::Graph &graph, const std::vector<ir::PlanSpec> &plans, const PipelineOptions &options,
                           const ReportFn &report);

} // namespace hspmd::passes
