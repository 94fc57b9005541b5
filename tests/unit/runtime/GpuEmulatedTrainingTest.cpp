// A plan trained through runtime/gpu/GpuOffload.cpp (the run hspmc build --target cuda makes) on
// an emulated GPU (tests/unit/support/EmulatedGpu.cpp: the GPU's dispatch and kernels on CPU
// threads, a reference GEMM for cuBLAS), against the CPU executor: GpuTraining.*'s checks, on any
// machine, fewer steps. What it cannot check is cuBLAS, the CUDA runtime and the GPU itself:
// GpuTraining.* does that on a GPU.
#include "passes/Pipeline.h"
#include "planner/driver/ModelInfo.h"
#include "runtime/Run.h"
#include "runtime/gpu/Emulation.h"
#include "runtime/gpu/GpuOffload.h"
#include "tests/unit/support/EmulatedGpu.h"
#include "tests/unit/support/ExampleBuild.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

using namespace hspmd;

namespace {

// The sanitizer build runs the emulated GPU's blocks on std::threads (runtime/gpu/Emulation.h),
// too slow for a training run; the normal build runs these.
#ifdef HSPMD_SANITIZED
#define SKIP_WHEN_SANITIZED() GTEST_SKIP() << "the sanitizer build emulates a GPU on std::threads: too slow to train"
#else
#define SKIP_WHEN_SANITIZED() (void)0
#endif

// The offload a run makes, kept to read what it did before the run ends it: the parameter copies
// it made, and the products it fused with the instructions they fold (by op).
struct Seen {
  int64_t copies = -1;
  int fused = -1;
  std::multiset<std::string> folded;
};
struct Watched : runtime::gpu::GpuOffload {
  Seen &seen;
  const ir::DeviceProgram &program;
  Watched(const ir::DeviceProgram &p, Seen &s) : GpuOffload(p), seen(s), program(p) {}
  ~Watched() override {
    seen.copies = parameterCopiesMade();
    seen.fused = fusion().fused;
    seen.folded.clear();
    for (size_t i = 0; i < program.body.size(); ++i)
      if (fusion().skipped[i])
        seen.folded.insert(program.body[i].op);
  }
};
// The kernels' waits for the GPU and copies of host memory (runtime/gpu/Emulation.h) from its
// making to expectNoneSince.
struct HostTraffic {
  int64_t waits = runtime::gpu::emulation::hostWaits, copies = runtime::gpu::emulation::hostCopies;
  void expectNoneSince() const {
    EXPECT_EQ(runtime::gpu::emulation::hostWaits - waits, 0) << "waits for the GPU in a kernel's host code";
    EXPECT_EQ(runtime::gpu::emulation::hostCopies - copies, 0) << "copies of host memory in a kernel's host code";
  }
};

// The tiny GPT on one device (examples/gpt/plans/single.hspmd) compiled for training, and a run
// of 2 steps (the second after an update) on the GPL.
struct TinyGpt {
  std::unique_ptr<hspmd::testing::ExampleBuild> build;
  passes::PipelineResult result;
  std::optional<runtime::ModelInfo> model;
  runtime::RunOptions run;
  std::vector<double> losses() const { return runtime::runThreads(result.programs[0], *model, run).losses; }
};

void compileTinyGpt(TinyGpt &gpt) {
  const char *plan = "examples/gpt/plans/single.hspmd";
  gpt.build = hspmd::testing::buildExample(plan, {plan});
  ASSERT_TRUE(gpt.build->build);
  gpt.result = hspmd::testing::compileForTraining(*gpt.build);
  ASSERT_TRUE(gpt.result.ok);
  gpt.model = driver::modelInfo(*gpt.build->build->graph);
  gpt.run.data = "examples/data/gpl-3.txt";
  gpt.run.steps = 2;
}

void expectNearEach(const std::vector<double> &got, const std::vector<double> &want, double bound) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], bound * std::fabs(want[i])) << "step " << i + 1;
}

runtime::OffloadFactory watched(Seen &seen) {
  return [&seen](const runtime::OffloadSite &site) { return std::make_unique<Watched>(site.program, seen); };
}

} // namespace

// A device whose memory plan does not fit on its GPU: the run stops before it trains, saying how
// much the device needs and how much the GPU has, not only CUDA's "out of memory".
TEST(GpuOffload, AnArenaThatDoesNotFitSaysHowMuchItNeedsAndTheGpuHas) {
  EXPECT_EQ(runtime::gpu::arenaDoesNotFit(3, (int64_t{13} << 28) + 5, 1, "NVIDIA A100-SXM4-40GB", int64_t{5} << 29,
                                          int64_t{40} << 30, "cudaMalloc: out of memory"),
            "device 3 needs 3.25 GiB of GPU memory (its memory plan's peak), and GPU 1 (NVIDIA A100-SXM4-40GB) has "
            "2.50 GiB free of 40.00 GiB (cudaMalloc: out of memory); hspmc lint checks a plan's memory against its "
            "cluster file's device types (HS111)");
  EXPECT_EQ(runtime::gpu::arenaDoesNotFit(0, 3 << 19, 0, "emulated GPU (CPU threads)", 1 << 20, 1 << 20, "why"),
            "device 0 needs 1.5 MiB of GPU memory (its memory plan's peak), and GPU 0 (emulated GPU (CPU threads)) "
            "has 1.0 MiB free of 1.0 MiB (why); hspmc lint checks a plan's memory against its cluster file's device "
            "types (HS111)");
  TinyGpt gpt;
  ASSERT_NO_FATAL_FAILURE(compileTinyGpt(gpt));
  const ir::DeviceProgram &program = gpt.result.programs[0].at(0);
  const int64_t needs = runtime::offloadBytes(program), inUse = hspmd::testing::emulatedGpuInUse();
  hspmd::testing::emulatedGpuMemory = inUse + needs - 1;
  const std::string want = runtime::gpu::arenaDoesNotFit(0, needs, 0, "emulated GPU (CPU threads)", needs - 1,
                                                         inUse + needs - 1, "cudaMalloc: out of memory");
  try {
    runtime::gpu::GpuOffload offload(program);
    ADD_FAILURE() << "the arena was allocated";
  } catch (const runtime::KernelError &e) {
    EXPECT_EQ(e.what(), want);
  }
  gpt.run.offload = runtime::gpu::gpuOffload; // as hspmc train --device gpu runs: an error, before any step
  try {
    gpt.losses();
    ADD_FAILURE() << "the run trained";
  } catch (const runtime::RunError &e) {
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
  }
  hspmd::testing::emulatedGpuMemory = inUse + needs; // just enough
  EXPECT_NO_THROW(runtime::gpu::GpuOffload{program});
  hspmd::testing::emulatedGpuMemory = 0;
}

// The bf16 copies of the parameters that bf16 products read are allocated with the offload,
// beside its arena, in buffer order, while the GPU keeps kParameterCopyReserve free for what
// comes after (NCCL's buffers, scratch); those that do not fit are left out, with a warning (their
// products round the parameter each time, as without copies: Bf16PlanStaysNearTheCpuExecutor).
TEST(GpuOffload, ParameterCopiesThatDoNotFitAreLeftOutWithAWarning) {
  EXPECT_EQ(runtime::gpu::copiesDoNotFit(0, 0, 1, 32, 1 << 15),
            "hspmd: warning: device 0: no room on GPU 0 beside its arena for the bf16 copies of 1 of the 32 "
            "parameters its bf16 products read (32.0 KiB): those products round the parameter each time they read "
            "it (slower, the same results; docs/gpu.md)");
  EXPECT_EQ(runtime::gpu::copiesDoNotFit(2, 1, 3, 12, 3 << 19),
            "hspmd: warning: device 2: no room on GPU 1 beside its arena for the bf16 copies of 3 of the 12 "
            "parameters its bf16 products read (1.5 MiB): those products round the parameter each time they read it "
            "(slower, the same results; docs/gpu.md)");
  TinyGpt gpt;
  ASSERT_NO_FATAL_FAILURE(compileTinyGpt(gpt));
  const passes::PipelineResult half = hspmd::testing::compileForTraining(*gpt.build, true);
  ASSERT_TRUE(half.ok);
  const ir::DeviceProgram &program = half.programs[0].at(0);
  // The f32 parameters its products read: 2 bytes of copy an element each.
  std::set<int> read;
  for (const ir::Instruction &in : program.body)
    if (in.op == "matmul")
      for (int id : in.inputs)
        if (const ir::Buffer &p = program.buffers[static_cast<size_t>(id)];
            p.role == ir::BufferRole::Parameter && p.dtype == ir::DType::F32)
          read.insert(id);
  ASSERT_GT(read.size(), 1u);
  int64_t copies = 0;
  for (int id : read)
    copies += program.buffers[static_cast<size_t>(id)].bytes() / 2;
  const int64_t last = program.buffers[static_cast<size_t>(*read.rbegin())].bytes() / 2;
  const int64_t inUse = hspmd::testing::emulatedGpuInUse(), arena = runtime::offloadBytes(program);
  {
    ::testing::internal::CaptureStderr();
    runtime::gpu::GpuOffload room(program);
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
    EXPECT_EQ(room.parameterCopiesLeftOut(), 0);
    EXPECT_EQ(hspmd::testing::emulatedGpuInUse() - inUse, arena + copies); // all of them, at once
  }
  // The last does not fit beside the reserve the copies leave free (the reserve is a count, not
  // allocated here).
  hspmd::testing::emulatedGpuMemory = inUse + arena + copies - 1 + runtime::kParameterCopyReserve;
  ::testing::internal::CaptureStderr();
  {
    runtime::gpu::GpuOffload tight(program);
    EXPECT_EQ(tight.parameterCopiesLeftOut(), 1);
  }
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            runtime::gpu::copiesDoNotFit(0, 0, 1, static_cast<int>(read.size()), last) + "\n");
  hspmd::testing::emulatedGpuMemory = 0;
}

// fp32: the losses of 2 steps (the second after an update) within 1e-5 of the CPU executor's. The
// GPU fuses the products the CPU executor fuses (runtime/Fusion.h: dX = dY W^T reading W, a weight's
// gradient as one product), and within the same bound of its unfused run (HSPMD_FUSION=0). No
// kernel waits for the GPU (the cross-entropy's target check goes to the stream's fault word) or
// copies host memory: the host waits only where the offload moves memory or the step ends.
TEST(GpuEmulatedTraining, PlanMatchesTheCpuExecutor) {
  SKIP_WHEN_SANITIZED();
  TinyGpt gpt;
  ASSERT_NO_FATAL_FAILURE(compileTinyGpt(gpt));
  const std::vector<double> want = gpt.losses();
  Seen seen;
  gpt.run.offload = watched(seen);
  const HostTraffic before;
  const std::vector<double> got = gpt.losses();
  before.expectNoneSince();
  expectNearEach(got, want, 1e-5);
  EXPECT_EQ(seen.fused, runtime::fuseMatmuls(gpt.result.programs[0].begin()->second).fused);
  EXPECT_GT(seen.folded.count("transpose"), 0u);
  EXPECT_GT(seen.folded.count("sum"), 0u);
  ::setenv("HSPMD_FUSION", "0", 1);
  const std::vector<double> unfused = gpt.losses();
  ::unsetenv("HSPMD_FUSION");
  EXPECT_EQ(seen.fused, 0);
  expectNearEach(unfused, got, 1e-5);
}

// Documents (--documents: attention masked to each document, only real tokens scored): the losses
// of 2 steps within 1e-5 of the CPU executor's. Attention reads the step's block starts from the
// offload's copy of them, made once a step, not from host memory in each call.
TEST(GpuEmulatedTraining, DocumentsMatchTheCpuExecutor) {
  SKIP_WHEN_SANITIZED();
  TinyGpt gpt;
  ASSERT_NO_FATAL_FAILURE(compileTinyGpt(gpt));
  gpt.run.documents = true;
  const std::vector<double> want = gpt.losses();
  gpt.run.offload = runtime::gpu::gpuOffload;
  const HostTraffic before;
  const std::vector<double> got = gpt.losses();
  before.expectNoneSince();
  expectNearEach(got, want, 1e-5);
}

// --precision bf16: within 2e-2 of fp32 and 1e-2 of the CPU's bf16 run (GpuTraining.Bf16*'s
// bounds; the GPU's products round their f32 parameter to bf16, the CPU's do not). The products
// read bf16 copies of the parameters (GpuOffload.h), each rounded once a step, for every product
// of every micro-batch: bit for bit the losses of products that round the parameters themselves
// (HSPMD_GPU_PARAMETER_COPIES=0), the second step's after the update changed every parameter.
TEST(GpuEmulatedTraining, Bf16PlanStaysNearTheCpuExecutor) {
  SKIP_WHEN_SANITIZED();
  // tiny_llama_single in 2 micro-batches (the products of each read the parameters).
  const std::string plan = ::testing::TempDir() + "tiny_llama_single_microbatches2.hspmd";
  std::ofstream(plan) << "import \"" HSPMD_SOURCE_DIR "/examples/llama/tiny_llama.hspmd\"\n"
                      << "plan tiny_single_mb2 for TinyLLaMA {\n"
                      << "  cluster \"" HSPMD_SOURCE_DIR "/examples/clusters/cpu4.toml\"\n"
                      << "  bind B = 8, S = 64\n  optimizer adamw(lr = 1e-3)\n"
                      << "  pipeline main share 1 microbatches 2 {\n"
                      << "    stage devices [0] layers blocks with embed, norm, head\n  }\n}\n";
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
  Seen seen;
  run.offload = watched(seen);
  const std::vector<double> got = runtime::runThreads(half.programs[0], model, run).losses;
  ASSERT_EQ(got.size(), fp32.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], fp32[i], 2e-2 * std::fabs(fp32[i])) << "step " << i + 1;
    EXPECT_NEAR(got[i], bf16[i], 1e-2 * std::fabs(bf16[i])) << "step " << i + 1;
  }
  // Every f32 parameter a bf16 product reads, copied once a step; the products read them more
  // often than that (every micro-batch, forward and backward).
  const ir::DeviceProgram &program = half.programs[0].begin()->second;
  std::set<int> copied;
  int64_t reads = 0;
  for (const ir::Instruction &in : program.body)
    if (in.op == "matmul")
      for (int id : in.inputs)
        if (const ir::Buffer &p = program.buffers[static_cast<size_t>(id)];
            p.role == ir::BufferRole::Parameter && p.dtype == ir::DType::F32) {
          copied.insert(id);
          ++reads;
        }
  ASSERT_FALSE(copied.empty());
  EXPECT_EQ(seen.copies, static_cast<int64_t>(copied.size()) * run.steps);
  EXPECT_GT(reads * program.microbatches, static_cast<int64_t>(copied.size()));
  // The products fused on bf16 tensors (the CPU's sgemm fuses f32 ones alone): every transpose of
  // a parameter folded, so the backward products read its copy too.
  EXPECT_EQ(runtime::fuseMatmuls(program).fused, 0);
  EXPECT_GT(seen.fused, 0);
  EXPECT_GT(seen.folded.count("sum"), 0u);
  int parameterTransposes = 0;
  for (const ir::Instruction &in : program.body)
    if (in.op == "transpose" && program.buffers[static_cast<size_t>(in.inputs[0])].role == ir::BufferRole::Parameter)
      ++parameterTransposes;
  EXPECT_GT(parameterTransposes, 0);
  EXPECT_GE(static_cast<int>(seen.folded.count("transpose")), parameterTransposes);
  ::setenv("HSPMD_GPU_PARAMETER_COPIES", "0", 1);
  const std::vector<double> rounding = runtime::runThreads(half.programs[0], model, run).losses;
  ::unsetenv("HSPMD_GPU_PARAMETER_COPIES");
  EXPECT_EQ(seen.copies, 0);
  EXPECT_EQ(rounding, got);
  // Unfused (HSPMD_FUSION=0): the same first loss (the forward pass fuses nothing), the second
  // near it (a weight's gradient as one product sums in another order, without rounding the
  // batch of products to bf16).
  ::setenv("HSPMD_FUSION", "0", 1);
  const std::vector<double> unfused = runtime::runThreads(half.programs[0], model, run).losses;
  ::unsetenv("HSPMD_FUSION");
  EXPECT_EQ(seen.fused, 0);
  ASSERT_EQ(unfused.size(), got.size());
  EXPECT_EQ(unfused[0], got[0]);
  EXPECT_NEAR(unfused[1], got[1], 1e-4 * std::fabs(got[1])); // seen: 8e-6
}

// A parameter's bf16 copy follows every way the parameter can change: a product reads what it
// would read without copies (an offload with HSPMD_GPU_PARAMETER_COPIES=0, the same calls) after
// an upload over the parameter, a zero, a kernel writing it (the optimizer's update), a write
// the offload is told of (changed: an offload around it that communicates), and a step's start.
TEST(GpuEmulatedTraining, ParameterCopiesFollowEveryWrite) {
  const char *plan = "examples/llama/plans/tiny_llama_single.hspmd";
  auto b = hspmd::testing::buildExample(plan, {plan});
  ASSERT_TRUE(b->build);
  const passes::PipelineResult half = hspmd::testing::compileForTraining(*b, true);
  ASSERT_TRUE(half.ok);
  const ir::DeviceProgram &program = half.programs[0].begin()->second;
  auto buffer = [&](int id) -> const ir::Buffer & { return program.buffers[static_cast<size_t>(id)]; };
  // A bf16 product reading an f32 parameter, and the update that writes the parameter.
  const ir::Instruction *product = nullptr, *update = nullptr;
  int parameter = -1;
  for (const ir::Instruction &in : program.body)
    for (int id : in.inputs)
      if (!product && in.op == "matmul" && buffer(id).role == ir::BufferRole::Parameter &&
          buffer(id).dtype == ir::DType::F32) {
        product = &in;
        parameter = id;
      }
  ASSERT_TRUE(product);
  for (const ir::Instruction &in : program.body)
    if (in.op == "adamw" && std::count(in.outputs.begin(), in.outputs.end(), parameter))
      update = &in;
  ASSERT_TRUE(update);
  ::setenv("HSPMD_GPU_PARAMETER_COPIES", "0", 1);
  runtime::gpu::GpuOffload rounding(program);
  ::unsetenv("HSPMD_GPU_PARAMETER_COPIES");
  runtime::gpu::GpuOffload copying(program);
  std::mt19937 random(5);
  auto fill = [&](int id, float lo, float hi) { // the same values into both
    const ir::Buffer &target = buffer(id);
    std::uniform_real_distribution<float> values(lo, hi);
    std::vector<char> bytes(static_cast<size_t>(target.bytes()));
    for (size_t at = 0; at + 4 <= bytes.size(); at += 4) {
      const float value = values(random);
      std::memcpy(bytes.data() + at, &value, 4); // bf16 buffers get a float's halves: any bits will do
    }
    return bytes;
  };
  auto upload = [&](int id, float lo, float hi) {
    const std::vector<char> bytes = fill(id, lo, hi);
    for (runtime::gpu::GpuOffload *o : {&rounding, &copying})
      o->upload(buffer(id).offset, bytes.data(), static_cast<int64_t>(bytes.size()));
  };
  auto behind = [&](int id) { // written where the offloads do not see it
    const std::vector<char> bytes = fill(id, -1, 1);
    for (runtime::gpu::GpuOffload *o : {&rounding, &copying})
      std::memcpy(o->memory() + buffer(id).offset, bytes.data(), bytes.size());
  };
  auto productsAgree = [&](const std::string &after) {
    std::vector<std::vector<char>> results;
    for (runtime::gpu::GpuOffload *o : {&rounding, &copying}) {
      o->execute(*product, 0, {});
      const ir::Buffer &y = buffer(product->outputs.at(0));
      results.emplace_back(static_cast<size_t>(y.bytes()));
      o->download(y.offset, results.back().data(), y.bytes());
    }
    EXPECT_EQ(results[0], results[1]) << "after " << after;
  };
  for (int id : product->inputs)
    if (id != parameter)
      upload(id, -1, 1);
  upload(parameter, -1, 1);
  productsAgree("the first upload");
  upload(parameter, -1, 1);
  productsAgree("an upload over the parameter");
  for (runtime::gpu::GpuOffload *o : {&rounding, &copying})
    o->zero(buffer(parameter).offset, buffer(parameter).bytes());
  productsAgree("a zero over the parameter");
  for (int id : update->inputs)
    if (id != parameter)
      upload(id, 0.5f, 1); // the gradient and the moments (v > 0)
  upload(parameter, -1, 1);
  productsAgree("the upload before the update");
  for (runtime::gpu::GpuOffload *o : {&rounding, &copying})
    o->execute(*update, 0, {});
  productsAgree("the update");
  behind(parameter);
  for (runtime::gpu::GpuOffload *o : {&rounding, &copying})
    o->changed(*update);
  productsAgree("a write it was told of");
  behind(parameter);
  for (runtime::gpu::GpuOffload *o : {&rounding, &copying})
    o->beginStep({});
  productsAgree("a step's start");
  EXPECT_EQ(rounding.parameterCopiesMade(), 0);
  EXPECT_EQ(copying.parameterCopiesMade(), 7);
}
