// IrCommands.cpp - hspmc passes, dump-ir and dump-program: the compiler's passes and what
// they make.
#include "runtime/gpu/NcclPlan.h"
#include "tools/hspmc/Commands.h"

#include <algorithm>
#include <iostream>
#include <limits>
#include <sstream>

namespace hspmd::cli {

// The pass table (passes/Pipeline.cpp): name, summary, and what --after prints.
int runPasses() {
  size_t width = 0;
  for (const auto &pass : passes::passTable())
    width = std::max(width, pass.name.size());
  for (const auto &pass : passes::passTable())
    std::cout << pass.name << std::string(width + 2 - pass.name.size(), ' ') << pass.summary
              << (pass.programs ? " [--after prints the DevicePrograms]" : "") << "\n";
  return 0;
}

int runDumpIr(const std::string &file, const std::vector<std::string> &planFiles, const std::string &modelName,
              const std::string &after, bool timePasses, bool train) {
  SourceManager sources;
  CollectingSink sink;
  DiagnosticEngine diags(sink);
  Compilation compilation(sources, diags);
  auto build = driver::elaborateBuild(compilation, file, planFiles, modelName);
  std::ostringstream dump, timing;
  if (build && (!after.empty() || timePasses)) {
    if (build->plans.empty()) {
      diags.error(ir::Location{file, 0, 0, 1}, "--after and --time-passes need a plan (--plan PLAN)");
    } else if (driver::checkPlan(compilation, file, planFiles, "", /*memory=*/false)) { // the gate
      passes::PipelineOptions options{after, &dump, timePasses ? &timing : nullptr};
      options.train = train;
      options.links = driver::planLinks(compilation, build->plans);
      passes::runPipeline(*build->graph, build->plans, options,
                          [&](const passes::Problem &problem) { driver::reportProblem(diags, problem); });
    }
  } else if (build && !build->plans.empty()) {
    // Without --after: the elaborated graph with the plan's own `annotate` lines.
    build->graph->setNumPlans(1);
    for (const auto &pinned : build->plans[0].annotations)
      build->graph->findValue(pinned.value)->annotations[0] = pinned.annotation;
    dump << ir::printGraph(*build->graph);
  } else if (build) {
    dump << ir::printGraph(*build->graph);
  }
  int code = finish(sink, sources, false, diags.errorCount());
  std::cerr << timing.str();
  std::cout << dump.str(); // also when a later pass fails: the IR up to --after is what one debugs with
  return build ? code : 1;
}

int runDumpProgram(const std::string &file, const std::vector<std::string> &planFiles, int64_t device, bool train,
                   bool nccl, std::optional<bool> bf16) {
  SourceManager sources;
  CollectingSink sink;
  DiagnosticEngine diags(sink);
  Compilation compilation(sources, diags);
  auto build = driver::elaborateBuild(compilation, file, planFiles, "");
  std::string text;
  if (build && build->plans.empty())
    diags.error(ir::Location{file, 0, 0, 1}, "dump-program needs a plan (--plan PLAN)");
  else if (build && driver::checkPlan(compilation, file, planFiles, "", /*memory=*/false, nullptr, bf16)) {
    passes::PipelineOptions options;
    options.train = train;
    options.bf16 = bf16;
    options.links = driver::planLinks(compilation, build->plans);
    auto result = passes::runPipeline(*build->graph, build->plans, options,
                                      [&](const passes::Problem &problem) { driver::reportProblem(diags, problem); });
    if (result.ok) {
      const auto &programs = result.programs[0];
      auto it = device >= 0 && device <= std::numeric_limits<int>::max() ? programs.find(static_cast<int>(device))
                                                                         : programs.end();
      if (it == programs.end())
        diags.error(ir::Location{file, 0, 0, 1},
                    "device " + std::to_string(device) + " takes no part in plan '" + build->plans[0].name + "'");
      else if (!nccl)
        text = ir::printProgram(it->second);
      else { // the NCCL calls of one step (docs/gpu.md)
        std::string error;
        if (auto calls = runtime::gpu::planNcclCalls(result.programs[0], &error)) {
          text = runtime::gpu::printNcclCalls(*calls, it->first);
          if (text.empty())
            text = "device " + std::to_string(device) + " makes no NCCL calls\n";
        } else
          diags.error(ir::Location{planFiles.empty() ? file : planFiles[0], 0, 0, 1},
                      "plan '" + build->plans[0].name + "' cannot run on NCCL: " + error);
      }
    }
  }
  int code = finish(sink, sources, false, diags.errorCount());
  if (code == 0)
    std::cout << text;
  return code;
}

} // namespace hspmd::cli
