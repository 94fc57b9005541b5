// bench_runtime: the CPU runtime against its own building blocks, measured in one run.
//   1. cblas_sgemm peak on this machine (1024^3, all cores): the reference for FLOP/s.
//   2. Our matmul kernel vs plain cblas_sgemm on the tiny GPT's matmul shapes (ratio).
//   3. Our transpose kernel (last two dimensions) vs memcpy of the same bytes (ratio).
//   4. The threads backend's all-reduce bandwidth vs memcpy bandwidth (ratio).
//   5. The tiny GPT's training step on one device: tokens/s and its model FLOP/s as a
//      fraction of the sgemm peak (the model FLOPs: 6 x parameters x tokens for the
//      matmuls, plus the causal attention's 6 x layers x B x S^2 x d).
//   6. --precision bf16 against fp32 on the same plans (single, tp2), same run: step time and
//      the arena of device 0 (bf16 stores activations in half the bytes; the kernels widen them
//      to f32, which costs time on a CPU).
// Usage: bench_runtime [steps]
#include "passes/Pipeline.h"
#include "planner/driver/Driver.h"
#include "planner/driver/ModelInfo.h"
#include "runtime/Kernels.h"
#include "runtime/Run.h"

#include <cblas.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

using namespace hspmd;
using Clock = std::chrono::steady_clock;

namespace {

double seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Best of `repeat` timings of f.
template <typename F> double best(int repeat, F f) {
  double fastest = 1e300;
  for (int i = 0; i < repeat; ++i) {
    const auto start = Clock::now();
    f();
    fastest = std::min(fastest, seconds(start));
  }
  return fastest;
}

double sgemmPeak() {
  const int n = 1024;
  std::vector<float> a(n * n, 1.0f), b(n * n, 0.5f), c(n * n);
  const double t = best(5, [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a.data(), n, b.data(), n, 0, c.data(), n);
  });
  return 2.0 * n * n * n / t;
}

void matmulPath() {
  std::printf("matmul: our kernel vs plain cblas_sgemm on the tiny GPT's shapes (best of 20)\n");
  struct Shape {
    int64_t rows, k, n;
  };
  for (Shape s : {Shape{512, 64, 192}, Shape{512, 64, 256}, Shape{512, 256, 64}, Shape{512, 64, 256 * 1}}) {
    std::vector<float> a(static_cast<size_t>(s.rows * s.k), 0.1f), b(static_cast<size_t>(s.k * s.n), 0.2f),
        c(static_cast<size_t>(s.rows * s.n));
    const std::vector<runtime::TensorView> inputs = {{a.data(), ir::DType::F32, {8, s.rows / 8, s.k}},
                                                     {b.data(), ir::DType::F32, {s.k, s.n}}},
                                           outputs = {{c.data(), ir::DType::F32, {8, s.rows / 8, s.n}}};
    const double ours = best(20, [&] { runtime::runKernel("matmul", {}, inputs, outputs); });
    const double plain = best(20, [&] {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(s.rows), static_cast<int>(s.n),
                  static_cast<int>(s.k), 1, a.data(), static_cast<int>(s.k), b.data(), static_cast<int>(s.n), 0,
                  c.data(), static_cast<int>(s.n));
    });
    std::printf("  [8, %lld, %lld] @ [%lld, %lld]: ours %.1f us, sgemm %.1f us, ratio %.2f\n",
                static_cast<long long>(s.rows / 8), static_cast<long long>(s.k), static_cast<long long>(s.k),
                static_cast<long long>(s.n), ours * 1e6, plain * 1e6, plain / ours);
  }
}

void transposePath() {
  std::printf("transpose: our kernel vs memcpy of the same bytes on the tiny GPT's shapes (best of 50)\n");
  for (const std::vector<int64_t> &shape :
       {std::vector<int64_t>{8, 64, 256}, {8, 64, 64}, {2, 64, 256}, {256, 64}, {64, 192}}) {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    std::vector<float> a(static_cast<size_t>(n), 0.1f), c(static_cast<size_t>(n));
    std::vector<int64_t> swapped = shape;
    std::swap(swapped[swapped.size() - 1], swapped[swapped.size() - 2]);
    const std::vector<runtime::TensorView> inputs = {{a.data(), ir::DType::F32, shape}},
                                           outputs = {{c.data(), ir::DType::F32, swapped}};
    const ir::AttrMap attrs = {{"dim0", static_cast<int64_t>(shape.size() - 2)},
                               {"dim1", static_cast<int64_t>(shape.size() - 1)}};
    const double ours = best(50, [&] { runtime::runKernel("transpose", attrs, inputs, outputs); });
    const double copy = best(50, [&] { std::memcpy(c.data(), a.data(), static_cast<size_t>(n) * 4); });
    std::string text;
    for (int64_t d : shape)
      text += (text.empty() ? "" : ", ") + std::to_string(d);
    std::printf("  [%s]: ours %.1f us, memcpy %.1f us, ratio %.2f\n", text.c_str(), ours * 1e6, copy * 1e6,
                copy / ours);
  }
}

void allReduceBandwidth() {
  const int devices = 2;
  const int64_t floats = 4 << 20; // 16 MiB per device
  std::vector<std::vector<float>> in(devices, std::vector<float>(floats, 1.0f)), out(in);
  runtime::ThreadsWorld world({0, 1});
  auto once = [&] {
    std::vector<std::thread> threads;
    for (int d = 0; d < devices; ++d)
      threads.emplace_back([&, d] {
        runtime::Piece mine;
        mine.data = in[static_cast<size_t>(d)].data();
        static int64_t tag = 0;
        world.communicator(d).exchange({0, 1}, tag, mine, floats * 4, [&](const std::vector<runtime::Piece> &pieces) {
          float *y = out[static_cast<size_t>(d)].data();
          const float *a = static_cast<const float *>(pieces[0].data), *b = static_cast<const float *>(pieces[1].data);
          for (int64_t i = 0; i < floats; ++i)
            y[i] = a[i] + b[i];
        });
      });
    for (auto &t : threads)
      t.join();
  };
  std::vector<float> copy(floats);
  const double reduce = best(5, once);
  const double memcpyTime = best(5, [&] { std::memcpy(copy.data(), in[0].data(), floats * 4); });
  const double bytes = floats * 4.0;
  std::printf("threads all-reduce of 16 MiB over 2 devices: %.2f GB/s per device (bytes / time); memcpy %.2f GB/s; "
              "ratio %.2f\n",
              bytes / reduce / 1e9, bytes / memcpyTime / 1e9, memcpyTime / reduce);
}

} // namespace

int main(int argc, char **argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 20;
  const double peak = sgemmPeak();
  std::printf("cblas_sgemm peak (1024^3, %u cores): %.1f GFLOP/s\n", std::thread::hardware_concurrency(), peak / 1e9);
  matmulPath();
  transposePath();
  allReduceBandwidth();

  frontend::SourceManager sources;
  frontend::CollectingSink sink;
  frontend::DiagnosticEngine diags(sink);
  frontend::Compilation compilation(sources, diags);
  const std::string plan = std::string(HSPMD_SOURCE_DIR) + "/examples/gpt/plans/single.hspmd";
  auto build = driver::elaborateBuild(compilation, plan, {plan}, "");
  if (!build) {
    std::fprintf(stderr, "cannot build %s\n", plan.c_str());
    return 1;
  }
  passes::PipelineOptions options;
  options.train = true;
  auto result = passes::runPipeline(*build->graph, build->plans, options, [](const passes::Problem &) {});
  const runtime::ModelInfo model = driver::modelInfo(*build->graph);
  runtime::RunOptions run;
  run.steps = steps;
  run.data = std::string(HSPMD_SOURCE_DIR) + "/examples/data/gpl-3.txt";
  const auto trained = runtime::runThreads(result.programs[0], model, run);
  double params = 0;
  for (const auto &p : model.params) {
    double n = 1;
    for (int64_t d : p.shape)
      n *= static_cast<double>(d);
    params += n;
  }
  const double tokens = static_cast<double>(model.batch * model.seq);
  const double layers = 8, width = 64;
  const double flops = 6 * params * tokens + 6 * layers * static_cast<double>(model.batch) *
                                                 static_cast<double>(model.seq * model.seq) * width;
  const double perStep = trained.seconds / steps;
  std::printf("tiny GPT (%.0f parameters), one device, %d steps: %.0f tokens/s, %.2f GFLOP/s of model FLOPs = %.1f%% "
              "of the sgemm peak\n",
              params, steps, tokens / perStep, flops / perStep / 1e9, 100 * flops / perStep / peak);

  for (const char *name : {"single", "tp2"}) {
    const std::string path = std::string(HSPMD_SOURCE_DIR) + "/examples/gpt/plans/" + name + ".hspmd";
    double time[2] = {0, 0};
    int64_t arena[2] = {0, 0};
    for (int bf16 = 0; bf16 < 2; ++bf16) {
      auto planBuild = driver::elaborateBuild(compilation, path, {path}, "");
      passes::PipelineOptions precision;
      precision.train = true;
      precision.bf16 = bf16 == 1;
      auto compiled =
          passes::runPipeline(*planBuild->graph, planBuild->plans, precision, [](const passes::Problem &) {});
      arena[bf16] = compiled.programs[0].at(0).peakBytes;
      time[bf16] = runtime::runThreads(compiled.programs[0], model, run).seconds / steps;
    }
    std::printf("--precision bf16 vs fp32, %s: step %.1f ms vs %.1f ms (time ratio %.2f), device 0's arena %.1f MB vs "
                "%.1f MB (ratio %.2f)\n",
                name, 1e3 * time[1], 1e3 * time[0], time[1] / time[0], arena[1] / 1e6, arena[0] / 1e6,
                static_cast<double>(arena[1]) / static_cast<double>(arena[0]));
  }
  return 0;
}
