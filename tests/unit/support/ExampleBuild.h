// ExampleBuild.h - test support: elaborate a model with its plans the way hspmc does, keeping
// the sources and diagnostics alive for as long as the graph.
#pragma once

#include "../frontend/TestSupport.h"
#include "passes/Pipeline.h"
#include "planner/driver/Driver.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>

namespace hspmd::testing {

struct ExampleBuild : Compiled {
  std::optional<driver::Build> build;
};

inline std::unique_ptr<ExampleBuild> buildExample(const std::string &model, const std::vector<std::string> &plans) {
  auto b = std::make_unique<ExampleBuild>();
  b->build = driver::elaborateBuild(b->compilation, model, plans, "");
  EXPECT_TRUE(b->build) << (b->sink.diagnostics.empty() ? "" : b->sink.diagnostics[0].message);
  return b;
}

/// The example's DevicePrograms for training (in bf16 with `bf16`); errors fail the test.
inline passes::PipelineResult compileForTraining(const ExampleBuild &b, bool bf16 = false) {
  passes::PipelineOptions options;
  options.train = true;
  options.bf16 = bf16;
  return passes::runPipeline(*b.build->graph, b.build->plans, options, [](const passes::Problem &p) {
    if (p.severity == passes::Severity::Error)
      ADD_FAILURE() << p.message;
  });
}

} // namespace hspmd::testing
