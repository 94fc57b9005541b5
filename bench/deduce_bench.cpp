// Deduction benchmark: the 32B model (Qwen2.5-32B shape) under the 48-device heterogeneous
// plan of examples/llama/plans/llama32b_hetero48.hspmd (an H800 pipeline of 2 stages and an
// H20 pipeline of 4, TP 8 each), at 16, 32, 64 and 128 layers, stage boundaries scaled with
// the depth. Prints the median time of each pass and each size's time relative to 16 layers
// next to the layer ratio: growth is linear when they match.
//
//   build/bench/bench_deduce [repetitions]
#include "passes/Pipeline.h"
#include "tools/hspmc/Driver.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

using namespace hspmd;
using Clock = std::chrono::steady_clock;

namespace {

std::string planText(int layers) {
  auto range = [&](int a, int b) { return "blocks[" + std::to_string(a) + ":" + std::to_string(b) + "]"; };
  const int half = layers / 2, quarter = layers / 4;
  return "import \"" HSPMD_SOURCE_DIR "/stdlib/nn.hspmd\"\n"
         "model M = LLaMA(vocab = 152064, d = 5120, heads = 40, kv_heads = 8, layers = " +
         std::to_string(layers) +
         ", ffn = 27648)\n"
         "plan p for M {\n"
         "  cluster \"" HSPMD_SOURCE_DIR "/examples/clusters/h800x16_h20x32.toml\"\n"
         "  bind B = 36, S = 4096\n  zero\n  recompute\n"
         "  pipeline h800 share 7 microbatches 14 {\n"
         "    stage devices [0..8] tp 8 layers " +
         range(0, half) +
         " with embed\n"
         "    stage devices [8..16] tp 8 layers " +
         range(half, layers) +
         " with norm, head\n"
         "  }\n"
         "  pipeline h20 share 2 microbatches 4 {\n"
         "    stage devices [16..24] tp 8 layers " +
         range(0, quarter) +
         " with embed\n"
         "    stage devices [24..32] tp 8 layers " +
         range(quarter, 2 * quarter) +
         "\n"
         "    stage devices [32..40] tp 8 layers " +
         range(2 * quarter, 3 * quarter) +
         "\n"
         "    stage devices [40..48] tp 8 layers " +
         range(3 * quarter, layers) +
         " with norm, head\n"
         "  }\n}\n";
}

struct Timing {
  double elaborate = 0;
  std::map<std::string, double> passes;
  double total() const {
    double sum = elaborate;
    for (const auto &[name, ms] : passes)
      sum += ms;
    return sum;
  }
};

Timing runOnce(const std::string &file, size_t *ops) {
  frontend::SourceManager sources;
  frontend::CollectingSink sink;
  frontend::DiagnosticEngine diags(sink);
  frontend::Compilation compilation(sources, diags, HSPMD_SOURCE_DIR "/stdlib");
  Timing t;
  auto start = Clock::now();
  auto build = driver::elaborateBuild(compilation, file, {file}, "");
  t.elaborate = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  if (!build) {
    std::fprintf(stderr, "bench: %s\n", sink.diagnostics.empty() ? "failed" : sink.diagnostics[0].message.c_str());
    std::exit(1);
  }
  std::ostringstream timing;
  passes::PipelineOptions options{"", nullptr, &timing};
  bool ok = passes::runPipeline(*build->graph, build->plans, options, [](const passes::Problem &p) {
              if (p.severity == passes::Severity::Error)
                std::fprintf(stderr, "bench: %s\n", p.message.c_str());
            }).ok;
  if (!ok)
    std::exit(1);
  std::istringstream lines(timing.str());
  for (std::string word, name; lines >> word >> name;) { // "pass NAME: 1.23 ms"
    double ms = 0;
    std::string unit;
    lines >> ms >> unit;
    t.passes[name.substr(0, name.size() - 1)] = ms;
  }
  *ops = build->graph->ops().size();
  return t;
}

} // namespace

int main(int argc, char **argv) {
  const int repetitions = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  const std::vector<int> sizes = {16, 32, 64, 128};
  std::vector<Timing> medians;
  std::printf("deduction: 32B model shape, 48-device heterogeneous plan, median of %d runs (ms)\n", repetitions);
  std::printf("%7s %7s %10s %11s %19s %8s %9s\n", "layers", "ops", "elaborate", "lower-plan", "deduce-annotations",
              "verify", "total");
  for (int layers : sizes) {
    const std::string file = "/tmp/hspmd_bench_deduce_" + std::to_string(layers) + ".hspmd";
    std::ofstream(file) << planText(layers);
    std::vector<Timing> runs;
    size_t ops = 0;
    for (int r = 0; r < repetitions; ++r)
      runs.push_back(runOnce(file, &ops));
    std::sort(runs.begin(), runs.end(), [](const Timing &a, const Timing &b) { return a.total() < b.total(); });
    Timing m = runs[runs.size() / 2];
    medians.push_back(m);
    std::printf("%7d %7zu %10.2f %11.2f %19.2f %8.2f %9.2f\n", layers, ops, m.elaborate, m.passes["lower-plan"],
                m.passes["deduce-annotations"], m.passes["verify"], m.total());
  }
  std::printf("growth against 16 layers (linear when the time ratio equals the layer ratio):\n");
  for (size_t i = 1; i < sizes.size(); ++i)
    std::printf("  %3d layers: layer ratio %5.2f, deduce-annotations ratio %5.2f, total ratio %5.2f\n", sizes[i],
                sizes[i] / 16.0, medians[i].passes["deduce-annotations"] / medians[0].passes["deduce-annotations"],
                medians[i].total() / medians[0].total());
  return 0;
}
