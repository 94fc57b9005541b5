// bench_gpu - the GPU half, measured on a GPU (scripts/gpu-check.sh runs it): cuBLAS fp32
// matrix products (TFLOP/s); causal attention of the 1.2B GPT's shape, in f32 forward and
// backward in the tiled kernels against the row kernels (runtime/gpu/AttentionKernels.cuh), and in
// bf16 on tensor cores (TensorCoreAttention.cuh) against the f32 tiles on widened copies, each
// pair in the same run;
// and training steps of the single-device example plans on the GPU (runtime/gpu/GpuOffload.h,
// what hspmc build --target cuda runs) against the CPU executor in the same run (tokens/s and
// their ratio). Without a GPU it says so and exits 0.
//
// bench_gpu --mfu: the GPT of 1.2B parameters of bench/plans/gpt1b.hspmd (sequence 2048) on
// the GPU: tokens/s, model FLOP/s and their share of the GPU's dense bf16 peak
// (stdlib/devices.toml), the MFU, in fp32 and under --precision bf16 (activations stored
// in bf16, the matrix products and attention on tensor cores, the elementwise kernels and norms
// on bf16 as stored, the others computing in fp32 on widened copies), in the same run.
#include "Compiled.h"
#include "planner/Cluster.h"
#include "runtime/Data.h"
#include "runtime/gpu/DeviceTypes.h"
#include "runtime/gpu/GpuOffload.h"

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

using namespace hspmd;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void matrixProducts() {
  for (int64_t n : {1024, 4096}) {
    runtime::gpu::GpuStream stream;
    runtime::gpu::DeviceBuffer a(n * n * 4), b(n * n * 4), c(n * n * 4);
    runtime::gpu::zeroBytes(a.data(), n * n * 4, stream);
    runtime::gpu::zeroBytes(b.data(), n * n * 4, stream);
    const std::vector<runtime::TensorView> in{{a.data(), ir::DType::F32, {n, n}}, {b.data(), ir::DType::F32, {n, n}}};
    const std::vector<runtime::TensorView> out{{c.data(), ir::DType::F32, {n, n}}};
    auto run = [&](int times) {
      for (int i = 0; i < times; ++i)
        runtime::gpu::runKernel("matmul", {}, in, out, {}, stream);
      stream.synchronize();
    };
    run(2);
    const int times = n >= 4096 ? 20 : 100;
    const auto start = Clock::now();
    run(times);
    const double seconds = since(start);
    std::printf("matmul fp32 %lld^3: %.1f TFLOP/s (cuBLAS, no TF32)\n", static_cast<long long>(n),
                2.0 * static_cast<double>(n * n * n) * times / seconds / 1e12);
  }
}

// Causal attention of bench/plans/gpt1b.hspmd's shape (4 x 2048 tokens, 16 heads of 128), forward
// and backward, in f32 or in bf16 (what the tensor-core kernels take). Which kernels
// run is HSPMD_GPU_ATTENTION's (read once, by the first launch): each comparison below runs its
// second side in a child process of its own.
double attentionSeconds(bool bf16) {
  const int64_t B = 4, S = 2048, H = 16, D = 128, elements = B * S * H * D;
  const int64_t bytes = elements * (bf16 ? 2 : 4);
  runtime::gpu::GpuStream stream;
  std::vector<std::unique_ptr<runtime::gpu::DeviceBuffer>> memory;
  std::vector<runtime::TensorView> tensors;
  for (int i = 0; i < 8; ++i) { // q, k, v, dy, y, dq, dk, dv
    memory.push_back(std::make_unique<runtime::gpu::DeviceBuffer>(bytes));
    runtime::gpu::zeroBytes(memory.back()->data(), bytes, stream);
    tensors.push_back({memory.back()->data(), bf16 ? ir::DType::BF16 : ir::DType::F32, {B, S, H, D}});
  }
  const ir::AttrMap attrs{{"causal", true}};
  auto step = [&] {
    runtime::gpu::runKernel("attention", attrs, {tensors.data(), 3}, {tensors.data() + 4, 1}, {}, stream);
    runtime::gpu::runKernel("attention_grad", attrs, {tensors.data(), 4}, {tensors.data() + 5, 3}, {}, stream);
  };
  step();
  stream.synchronize();
  const int times = 3;
  const auto start = Clock::now();
  for (int i = 0; i < times; ++i)
    step();
  stream.synchronize();
  return since(start) / times;
}

// The same attention in a child process under HSPMD_GPU_ATTENTION=`kind`; 0 where it failed.
double childAttentionSeconds(const char *self, const char *kind, bool bf16) {
  double seconds = 0;
  const std::string command =
      std::string("HSPMD_GPU_ATTENTION=") + kind + " '" + self + "' --attention-seconds " + (bf16 ? "bf16" : "f32");
  if (FILE *child = popen(command.c_str(), "r")) {
    if (std::fscanf(child, "%lf", &seconds) != 1)
      seconds = 0;
    pclose(child);
  }
  return seconds;
}

void training(const std::string &path) {
  auto compiled = bench::compilePlan(path);
  const ir::DeviceProgram &program = compiled->programs().at(0);
  const runtime::ModelInfo &model = compiled->model;
  const runtime::ParameterStore store =
      runtime::ParameterStore::initial(runtime::ParameterStore::fingerprint(model.name, model.params), model.params, 1);
  const runtime::Dataset data = runtime::Dataset::load(HSPMD_SOURCE_DIR "/examples/data/gpl-3.txt", model.vocab);
  runtime::ThreadsWorld world({0});
  runtime::DeviceExecutor cpu(program, world.communicator(0));
  runtime::DeviceExecutor gpu(program, world.communicator(0));
  gpu.offloadTo(std::make_unique<runtime::gpu::GpuOffload>(program));
  cpu.load(store);
  gpu.load(store);
  const int warm = 2, steps = 10;
  double cpuSeconds = 0, gpuSeconds = 0, cpuLoss = 0, gpuLoss = 0;
  for (int64_t step = 1; step <= warm + steps; ++step) {
    const runtime::Batch batch = data.batchFor(step - 1, model.batch, model.seq);
    auto start = Clock::now();
    cpuLoss = cpu.step(batch, step);
    if (step > warm)
      cpuSeconds += since(start);
    start = Clock::now();
    gpuLoss = gpu.step(batch, step);
    if (step > warm)
      gpuSeconds += since(start);
  }
  const double tokens = static_cast<double>(model.batch * model.seq) * steps;
  std::printf("%s: GPU %.0f tokens/s, CPU %.0f tokens/s (%.2fx); loss after %d steps GPU %.6f CPU %.6f\n", path.c_str(),
              tokens / gpuSeconds, tokens / cpuSeconds, cpuSeconds / gpuSeconds, warm + steps, gpuLoss, cpuLoss);
}

// The 1.2B GPT: its step's model FLOPs per token (the matmuls of forward and backward, 6 x
// the weights' multiply-adds, plus attention's 12 x layers x S x d, as bench/
// train_vs_pytorch.py counts them), for the shape bench/plans/gpt1b.hspmd declares.
void modelFlopUtilisation(const std::optional<double> &peakTflops, bool bf16) {
  const double d = 2048, layers = 24, ffn = 8192, vocab = 256, seq = 2048;
  const double flopsPerToken = 6 * (layers * (4 * d * d + 2 * d * ffn) + d * vocab) + 12 * layers * seq * d;
  auto start = Clock::now();
  auto compiled = bench::compilePlan(HSPMD_SOURCE_DIR "/bench/plans/gpt1b.hspmd", bf16);
  const ir::DeviceProgram &program = compiled->programs().at(0);
  const runtime::ModelInfo &model = compiled->model;
  std::printf("gpt1b (%s): compiled in %.2f s (arena %.1f GiB)\n", bf16 ? "bf16" : "fp32", since(start),
              static_cast<double>(program.peakBytes) / (1 << 30));
  start = Clock::now();
  const runtime::ParameterStore store =
      runtime::ParameterStore::initial(runtime::ParameterStore::fingerprint(model.name, model.params), model.params, 1);
  const runtime::Dataset data = runtime::Dataset::load(HSPMD_SOURCE_DIR "/examples/data/gpl-3.txt", model.vocab);
  runtime::ThreadsWorld world({0});
  runtime::DeviceExecutor gpu(program, world.communicator(0));
  gpu.offloadTo(std::make_unique<runtime::gpu::GpuOffload>(program));
  gpu.load(store);
  std::printf("gpt1b: parameters made and loaded in %.1f s\n", since(start));
  const int warm = 1, steps = 3;
  double seconds = 0, loss = 0;
  for (int64_t step = 1; step <= warm + steps; ++step) {
    const runtime::Batch batch = data.batchFor(step - 1, model.batch, model.seq);
    start = Clock::now();
    loss = gpu.step(batch, step); // ends with the stream synchronised
    if (step > warm)
      seconds += since(start);
  }
  const double tokens = static_cast<double>(model.batch * model.seq) * steps;
  const double tflops = tokens * flopsPerToken / seconds / 1e12;
  std::printf("gpt1b (1.2B parameters, 4 x 2048 tokens a step, %s): %.0f tokens/s, %.1f model TFLOP/s",
              bf16 ? "bf16" : "fp32", tokens / seconds, tflops);
  if (peakTflops)
    std::printf(", MFU %.1f%% of the %.0f TFLOP/s dense bf16 peak", 100 * tflops / *peakTflops, *peakTflops);
  std::printf("; loss after %d steps %.4f\n", warm + steps, loss);
}

} // namespace

int main(int argc, char **argv) {
  std::string why;
  if (!runtime::gpu::gpuAvailable(&why)) {
    std::printf("bench_gpu: skipped, no GPU (%s)\n", why.c_str());
    return 0;
  }
  if (argc > 2 && std::string(argv[1]) == "--attention-seconds") { // a child of the comparisons below
    std::printf("%.6f\n", attentionSeconds(std::string(argv[2]) == "bf16"));
    return 0;
  }
  // Which device type of stdlib/devices.toml this GPU is (what a cluster file would call it).
  std::vector<planner::ClusterError> errors;
  std::vector<std::string> types;
  const auto known = planner::loadDeviceTypes(HSPMD_SOURCE_DIR "/stdlib/devices.toml", errors);
  if (known)
    for (const auto &[name, type] : *known)
      types.push_back(name);
  const std::string name = runtime::gpu::gpuName(0);
  const auto type = runtime::gpu::deviceTypeOf(name, types);
  std::printf("GPU 0: %s (device type %s)\n", name.c_str(), type ? type->c_str() : "unknown to stdlib/devices.toml");
  if (argc > 1 && std::string(argv[1]) == "--mfu") {
    std::optional<double> peak;
    if (type)
      peak = known->at(*type).bf16Tflops;
    modelFlopUtilisation(peak, false);
    modelFlopUtilisation(peak, true);
    return 0;
  }
  matrixProducts();
  {
    const double tiled = attentionSeconds(false), rows = childAttentionSeconds(argv[0], "rows", false);
    std::printf("attention 4 x 2048 x 16 heads of 128, causal, f32 forward + backward: tiled %.1f ms, row kernels "
                "%.1f ms (%.1fx)\n",
                tiled * 1e3, rows * 1e3, tiled > 0 ? rows / tiled : 0.0);
    const double tensor = attentionSeconds(true), widened = childAttentionSeconds(argv[0], "tiles", true);
    std::printf("attention 4 x 2048 x 16 heads of 128, causal, bf16 forward + backward: tensor cores %.1f ms, "
                "f32 tiles on widened copies %.1f ms (%.1fx)\n",
                tensor * 1e3, widened * 1e3, tensor > 0 ? widened / tensor : 0.0);
  }
  for (const char *plan : {"examples/gpt/plans/single.hspmd", "examples/llama/plans/tiny_llama_single.hspmd"})
    training(std::string(HSPMD_SOURCE_DIR "/") + plan);
  return 0;
}
