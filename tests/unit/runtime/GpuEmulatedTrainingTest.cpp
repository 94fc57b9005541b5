// A plan trained through runtime/gpu/GpuOffload.cpp (the run hspmc build --target cuda makes) on
// an emulated GPU (tests/unit/support/EmulatedGpu.cpp: the GPU's dispatch and kernels on CPU
// threads, a reference GEMM for cuBLAS), against the CPU executor: GpuTraining.*'s checks, on any
// machine, fewer steps. What it cannot check is cuBLAS, the CUDA runtime and the GPU itself:
// GpuTraining.* does that on a GPU.
#include "passes/Pipeline.h"
#include "planner/driver/ModelInfo.h"
#include "runtime/Run.h"
#include "runtime/gpu/GpuOffload.h"
#include "tests/unit/support/ExampleBuild.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace hspmd;

namespace {

// The sanitizer build runs the emulated GPU's blocks on std::threads (runtime/gpu/Emulation.h),
// too slow for a training run; the normal build runs these.
#ifdef HSPMD_SANITIZED
#define SKIP_WHEN_SANITIZED() GTEST_SKIP() << "the sanitizer build emulates a GPU on std::threads: too slow to train"
#else
#define SKIP_WHEN_SANITIZED() (void)0
#endif

} // namespace

// fp32: the losses of 2 steps (the second after an update) within 1e-5 of the CPU executor's.
TEST(GpuEmulatedTraining, PlanMatchesTheCpuExecutor) {
  SKIP_WHEN_SANITIZED();
  const char *plan = "examples/gpt/plans/single.hspmd";
  auto b = hspmd::testing::buildExample(plan, {plan});
  ASSERT_TRUE(b->build);
  const passes::PipelineResult result = hspmd::testing::compileForTraining(*b);
  ASSERT_TRUE(result.ok);
  const runtime::ModelInfo model = driver::modelInfo(*b->build->graph);
  runtime::RunOptions run;
  run.data = "examples/data/gpl-3.txt";
  run.steps = 2;
  const std::vector<double> want = runtime::runThreads(result.programs[0], model, run).losses;
  run.offload = runtime::gpu::gpuOffload;
  const std::vector<double> got = runtime::runThreads(result.programs[0], model, run).losses;
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-5 * std::fabs(want[i])) << "step " << i + 1;
}

// --precision bf16: within 2e-2 of fp32 and 1e-2 of the CPU's bf16 run (GpuTraining.Bf16*'s
// bounds; the GPU's products round their f32 parameter to bf16, the CPU's do not).
TEST(GpuEmulatedTraining, Bf16PlanStaysNearTheCpuExecutor) {
  SKIP_WHEN_SANITIZED();
  const char *plan = "examples/llama/plans/tiny_llama_single.hspmd";
  auto b = hspmd::testing::buildExample(plan, {plan});
  ASSERT_TRUE(b->build);
  const passes::PipelineResult full = hspmd::testing::compileForTraining(*b),
                               half = hspmd::testing::compileForTraining(*b, true);
  ASSERT_TRUE(full.ok && half.ok);
  const runtime::ModelInfo model = driver::modelInfo(*b->build->graph);
  runtime::RunOptions run;
  run.data = "examples/data/gpl-3.txt";
  run.steps = 2;
  const std::vector<double> fp32 = runtime::runThreads(full.programs[0], model, run).losses;
  const std::vector<double> bf16 = runtime::runThreads(half.programs[0], model, run).losses;
  run.offload = runtime::gpu::gpuOffload;
  const std::vector<double> got = runtime::runThreads(half.programs[0], model, run).losses;
  ASSERT_EQ(got.size(), fp32.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], fp32[i], 2e-2 * std::fabs(fp32[i])) << "step " << i + 1;
    EXPECT_NEAR(got[i], bf16[i], 1e-2 * std::fabs(bf16[i])) << "step " << i + 1;
  }
}
