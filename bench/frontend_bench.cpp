// Frontend benchmark: parse + elaborate + verify the 32B model (Qwen2.5-32B shape) at 16,
// 32, 64 and 128 layers. Prints the median time per phase and, as the result, each size's
// time relative to 16 layers next to the layer ratio: growth is linear when they match.
//
//   build/bench/bench_frontend [repetitions]
#include "frontend/Compilation.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace hspmd;
using Clock = std::chrono::steady_clock;

namespace {

struct Timing {
  double parse = 0, elaborate = 0, verify = 0;
  double total() const { return parse + elaborate + verify; }
};

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

Timing runOnce(int layers, size_t *ops) {
  frontend::SourceManager sources;
  frontend::CollectingSink sink;
  frontend::DiagnosticEngine diags(sink);
  frontend::Compilation compilation(sources, diags, HSPMD_STDLIB_DIR);
  std::string text = "import \"nn\"\nmodel M = LLaMA(vocab = 152064, d = 5120, heads = 40, kv_heads = 8, layers = " +
                     std::to_string(layers) + ", ffn = 27648)\n";
  Timing t;
  auto t0 = Clock::now();
  const frontend::FileAst *ast = compilation.loadText("bench.hspmd", text);
  auto t1 = Clock::now();
  auto graph = ast ? compilation.elaborate(*compilation.findModule("M")) : nullptr;
  auto t2 = Clock::now();
  // elaborate() already verifies; time a second verification on its own.
  bool ok = graph && ir::verifyGraph(*graph, [](const ir::Location &, const std::string &) {});
  auto t3 = Clock::now();
  if (!ok) {
    std::fprintf(stderr, "bench: elaboration failed\n");
    std::exit(1);
  }
  *ops = graph->ops().size();
  t.parse = seconds(t0, t1);
  t.elaborate = seconds(t1, t2) - seconds(t2, t3); // elaborate() includes one verification
  t.verify = seconds(t2, t3);
  return t;
}

} // namespace

int main(int argc, char **argv) {
  const int repetitions = argc > 1 ? std::max(1, std::atoi(argv[1])) : 15;
  const std::vector<int> sizes = {16, 32, 64, 128};
  std::vector<Timing> medians;
  std::printf("frontend: parse + elaborate + verify of the 32B model shape, median of %d runs\n", repetitions);
  std::printf("%7s %7s %10s %12s %10s %10s\n", "layers", "ops", "parse ms", "elaborate ms", "verify ms", "total ms");
  for (int layers : sizes) {
    std::vector<Timing> runs;
    size_t ops = 0;
    runOnce(layers, &ops); // warm-up
    for (int r = 0; r < repetitions; ++r)
      runs.push_back(runOnce(layers, &ops));
    std::sort(runs.begin(), runs.end(), [](const Timing &a, const Timing &b) { return a.total() < b.total(); });
    const Timing &m = runs[runs.size() / 2];
    medians.push_back(m);
    std::printf("%7d %7zu %10.2f %12.2f %10.2f %10.2f\n", layers, ops, m.parse * 1e3, m.elaborate * 1e3, m.verify * 1e3,
                m.total() * 1e3);
  }
  std::printf("growth against 16 layers (linear when time ratio == layer ratio):\n");
  for (size_t i = 1; i < sizes.size(); ++i)
    std::printf("  %3d layers: layer ratio %5.2f, total time ratio %5.2f, elaboration time ratio %5.2f\n", sizes[i],
                sizes[i] / 16.0, medians[i].total() / medians[0].total(), medians[i].elaborate / medians[0].elaborate);
  std::printf("(parsing is mostly stdlib/nn.hspmd, whose size does not depend on the layer count)\n");
  return 0;
}
