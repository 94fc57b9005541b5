// Single-device example plans trained on the GPU (runtime/gpu/GpuExecutor.h) against the CPU
// executor, 20 steps from the same parameters and data: losses within 1e-5 relative (label
// `gpu`; skipped with the reason where there is no GPU).
#include "../unit/support/ExampleBuild.h"
#include "passes/Pipeline.h"
#include "planner/driver/ModelInfo.h"
#include "runtime/Data.h"
#include "runtime/gpu/GpuExecutor.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace hspmd;

TEST(GpuTraining, SingleDevicePlansMatchTheCpuExecutor) {
  std::string why;
  if (!runtime::gpu::gpuAvailable(&why))
    GTEST_SKIP() << "no GPU here (" << why << "): scripts/gpu-check.sh runs this on a GPU";
  for (const char *plan : {"examples/gpt/plans/single.hspmd", "examples/llama/plans/tiny_llama_single.hspmd"}) {
    auto b = hspmd::testing::buildExample(plan, {plan});
    ASSERT_TRUE(b->build) << plan;
    passes::PipelineOptions options;
    options.train = true;
    auto result = passes::runPipeline(*b->build->graph, b->build->plans, options, [](const passes::Problem &p) {
      if (p.severity == passes::Severity::Error)
        ADD_FAILURE() << p.message;
    });
    ASSERT_TRUE(result.ok) << plan;
    const ir::DeviceProgram &program = result.programs[0].at(0);
    const runtime::ModelInfo model = driver::modelInfo(*b->build->graph);
    const runtime::ParameterStore store = runtime::ParameterStore::initial(
        runtime::ParameterStore::fingerprint(model.name, model.params), model.params, 1);
    const runtime::Dataset data = runtime::Dataset::load("examples/data/gpl-3.txt", model.vocab);
    runtime::ThreadsWorld world({0});
    runtime::DeviceExecutor cpu(program, world.communicator(0));
    runtime::gpu::GpuExecutor gpu(program);
    cpu.load(store);
    gpu.load(store);
    for (int64_t step = 1; step <= 20; ++step) {
      const runtime::Batch batch = data.batchFor(step - 1, model.batch, model.seq);
      const double want = cpu.step(batch, step), got = gpu.step(batch, step);
      EXPECT_NEAR(got, want, 1e-5 * std::fabs(want)) << plan << " step " << step;
    }
  }
}
