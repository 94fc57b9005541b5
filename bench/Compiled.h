// Compiled.h - a plan file compiled for training, as the benchmarks use it: its DevicePrograms,
// the model's parameters, and how long compiling took.
#pragma once

#include "passes/Pipeline.h"
#include "planner/driver/Driver.h"
#include "planner/driver/ModelInfo.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

namespace hspmd::bench {

struct Compiled {
  frontend::SourceManager sources;
  frontend::CollectingSink sink;
  frontend::DiagnosticEngine diags{sink};
  frontend::Compilation compilation{sources, diags};
  std::optional<driver::Build> build;
  passes::PipelineResult result;
  runtime::ModelInfo model;
  double seconds = 0; // elaboration and the passes
  const std::map<int, ir::DeviceProgram> &programs() const { return result.programs[0]; }
};

/// The plan file at `path` compiled for training (`bf16`: --precision bf16); exits with a
/// message if it does not compile.
inline std::unique_ptr<Compiled> compilePlan(const std::string &path, bool bf16 = false) {
  auto c = std::make_unique<Compiled>();
  const auto start = std::chrono::steady_clock::now();
  c->build = driver::elaborateBuild(c->compilation, path, {path}, "");
  if (!c->build || c->build->plans.empty()) {
    std::fprintf(stderr, "bench: %s does not elaborate\n", path.c_str());
    std::exit(1);
  }
  passes::PipelineOptions options;
  options.train = true;
  options.bf16 = bf16;
  c->result = passes::runPipeline(*c->build->graph, c->build->plans, options, [](const passes::Problem &) {});
  if (!c->result.ok) {
    std::fprintf(stderr, "bench: %s does not compile\n", path.c_str());
    std::exit(1);
  }
  c->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  c->model = driver::modelInfo(*c->build->graph);
  return c;
}

} // namespace hspmd::bench
