// Compile benchmark: the 32B model (Qwen2.5-32B shape), training, under the 48-device
// heterogeneous plan of examples/llama/plans/llama32b_hetero48.hspmd (an H800 pipeline of 2
// stages and an H20 pipeline of 4, TP 8 each), from source to verified DevicePrograms for
// every device. Prints the median time of each phase at 16, 32, 64 and 128 layers (stage
// boundaries scaled with the depth), then at 64 layers for 8 to 128 devices, each relative to
// the smallest: growth is linear when the time ratio equals the size ratio. The reference
// point: HSPMD reports up to about 10 s of graph specialization per strategy switch. Last,
// data parallelism over many devices (the tiny GPT, one sample per device, its parameters
// copied everywhere: each gradient is an all-reduce over every device) from 128 to 4096
// devices (docs/architecture.md: reductions planned by layout, not by every pair), and
// the peak resident memory of the bench after the largest.
//
//   build/bench/bench_deduce [repetitions]
#include "passes/Pipeline.h"
#include "planner/driver/Driver.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <sys/resource.h>

using namespace hspmd;
using Clock = std::chrono::steady_clock;

namespace {

int fastDevices(int devices) {
  const int third = devices / 3;
  return third >= 16 ? third / 16 * 16 : third >= 4 ? third / 4 * 4 : 2;
}

int tpFor(int stageDevices) {
  for (int tp : {8, 4, 2})
    if (stageDevices % tp == 0)
      return tp;
  return 1;
}

std::string planText(int layers, int devices = 48) {
  auto range = [](int a, int b) { return "blocks[" + std::to_string(a) + ":" + std::to_string(b) + "]"; };
  auto span = [](int a, int b) { return "[" + std::to_string(a) + ".." + std::to_string(b) + "]"; };
  const int half = layers / 2, quarter = layers / 4;
  // About a third of the devices are H800s (two stages), the rest H20s (four stages); a
  // stage's tensor-parallel degree is the largest of 8, 4, 2, 1 dividing its device count
  // (the rest of its devices are data-parallel copies).
  const int fast = fastDevices(devices), slow = devices - fast;
  const int fastStage = fast / 2, slowStage = slow / 4, lastStage = slow - 3 * slowStage;
  auto stage = [&](int a, int b, int lo, int hi, const std::string &with) {
    return "    stage devices " + span(a, b) + " tp " + std::to_string(tpFor(b - a)) + " layers " + range(lo, hi) +
           with + "\n";
  };
  std::string text = "import \"" HSPMD_SOURCE_DIR "/stdlib/nn.hspmd\"\n";
  text += "model M = LLaMA(vocab = 152064, d = 5120, heads = 40, kv_heads = 8, layers = " + std::to_string(layers) +
          ", ffn = 27648)\n";
  text += "plan p for M {\n  cluster \"/tmp/hspmd_bench_cluster_" + std::to_string(devices) + ".toml\"\n";
  text += "  bind B = 36, S = 4096\n  zero\n  recompute\n";
  text += "  pipeline h800 share 7 microbatches 14 {\n";
  text += stage(0, fastStage, 0, half, " with embed");
  text += stage(fastStage, fast, half, layers, " with norm, head");
  text += "  }\n  pipeline h20 share 2 microbatches 4 {\n";
  text += stage(fast, fast + slowStage, 0, quarter, " with embed");
  text += stage(fast + slowStage, fast + 2 * slowStage, quarter, 2 * quarter, "");
  text += stage(fast + 2 * slowStage, fast + 3 * slowStage, 2 * quarter, 3 * quarter, "");
  text += stage(fast + 3 * slowStage, fast + 3 * slowStage + lastStage, 3 * quarter, layers, " with norm, head");
  return text + "  }\n}\n";
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
  options.train = true;
  bool ok = passes::runPipeline(*build->graph, build->plans, options, [](const passes::Problem &p) {
              if (p.severity == passes::Severity::Error)
                std::fprintf(stderr, "bench: %s\n", p.message.c_str());
            }).ok;
  if (!ok)
    std::exit(1);
  std::istringstream lines(timing.str());
  for (std::string line; std::getline(lines, line);) { // "pass NAME: 1.23 ms[ (...)]"
    std::istringstream words(line);
    std::string word, name;
    double ms = 0;
    if (words >> word >> name >> ms)
      t.passes[name.substr(0, name.size() - 1)] = ms;
  }
  *ops = build->graph->ops().size();
  return t;
}

void writeCluster(int devices) {
  const int fast = fastDevices(devices);
  std::ofstream out("/tmp/hspmd_bench_cluster_" + std::to_string(devices) + ".toml");
  out << "name = \"bench\"\ninter_node_gbps = 50.0\n";
  for (int at = 0; at < fast; at += 8)
    out << "[[nodes]]\ntype = \"H800\"\ndevices = " << std::min(8, fast - at) << "\n";
  for (int at = fast; at < devices; at += 8)
    out << "[[nodes]]\ntype = \"H20\"\ndevices = " << std::min(8, devices - at) << "\n";
}

// The tiny GPT split by the batch over `devices` H100s, from one annotation of its tokens.
std::string dataParallelPlan(int devices) {
  const std::string cluster = "/tmp/hspmd_bench_dp_cluster_" + std::to_string(devices) + ".toml";
  std::ofstream out(cluster);
  out << "name = \"dp\"\ninter_node_gbps = 50.0\n";
  for (int at = 0; at < devices; at += 8)
    out << "[[nodes]]\ntype = \"H100\"\ndevices = " << std::min(8, devices - at) << "\n";
  const std::string n = std::to_string(devices);
  return "import \"" HSPMD_SOURCE_DIR "/examples/gpt/tiny_gpt.hspmd\"\nplan dp for TinyGPT {\n  cluster \"" + cluster +
         "\"\n  bind B = " + n + ", S = 64\n  annotate tokens = [0.." + n + "]: S0\n}\n";
}

std::vector<Timing> table(const std::vector<std::pair<int, int>> &sizes, int repetitions, const char *label) {
  std::vector<Timing> medians;
  std::printf("%8s %6s %9s %9s %7s %7s %7s %7s %7s %8s %9s %8s\n", label, "ops", "elaborate", "autodiff", "lower",
              "deduce", "resolve", "verify", "special", "plan-mem", "verify-pr", "total");
  for (const auto &[layers, devices] : sizes) {
    const bool dp = std::string(label) == "dp";
    if (!dp)
      writeCluster(devices);
    const std::string file = "/tmp/hspmd_bench_deduce_" + std::string(label) + "_" + std::to_string(layers) + "_" +
                             std::to_string(devices) + ".hspmd";
    std::ofstream(file) << (dp ? dataParallelPlan(devices) : planText(layers, devices));
    std::vector<Timing> runs;
    size_t ops = 0;
    for (int r = 0; r < repetitions; ++r)
      runs.push_back(runOnce(file, &ops));
    std::sort(runs.begin(), runs.end(), [](const Timing &a, const Timing &b) { return a.total() < b.total(); });
    Timing m = runs[runs.size() / 2];
    medians.push_back(m);
    std::printf("%8d %6zu %9.1f %9.1f %7.1f %7.1f %7.1f %7.1f %7.1f %8.1f %9.1f %8.1f\n",
                std::string(label) == "layers" ? layers : devices, ops, m.elaborate, m.passes["autodiff"],
                m.passes["lower-plan"], m.passes["deduce-annotations"], m.passes["resolve-communication"],
                m.passes["verify"], m.passes["specialize"], m.passes["plan-memory"], m.passes["verify-programs"],
                m.total());
  }
  return medians;
}

} // namespace

int main(int argc, char **argv) {
  const int repetitions = argc > 1 ? std::max(1, std::atoi(argv[1])) : 3;
  std::printf("compile to verified DevicePrograms (training): 32B model shape, heterogeneous plan, median of %d "
              "runs, ms\n\n",
              repetitions);
  const std::vector<int> layers = {16, 32, 64, 128};
  std::vector<std::pair<int, int>> byLayers;
  for (int l : layers)
    byLayers.push_back({l, 48});
  auto l = table(byLayers, repetitions, "layers");
  std::printf("growth against 16 layers (linear when the time ratio equals the layer ratio):\n");
  for (size_t i = 1; i < layers.size(); ++i)
    std::printf("  %3d layers: layer ratio %5.2f, time ratio %5.2f\n", layers[i], layers[i] / 16.0,
                l[i].total() / l[0].total());
  const std::vector<int> devices = {8, 16, 32, 64, 128};
  std::vector<std::pair<int, int>> byDevices;
  for (int d : devices)
    byDevices.push_back({64, d});
  std::printf("\n64 layers:\n");
  auto d = table(byDevices, repetitions, "devices");
  std::printf("growth against %d devices:\n", devices[0]);
  for (size_t i = 1; i < devices.size(); ++i)
    std::printf("  %3d devices: device ratio %5.2f, time ratio %5.2f\n", devices[i],
                static_cast<double>(devices[i]) / devices[0], d[i].total() / d[0].total());
  std::printf("\n48 devices, 64 layers: %.2f s from source to verified programs for all devices; HSPMD's reported "
              "specialization takes up to 10 s per strategy switch: %.0fx\n",
              l[2].total() / 1e3, 10.0 / (l[2].total() / 1e3));
  const std::vector<int> replicas = {128, 256, 512, 1024, 2048, 4096};
  std::vector<std::pair<int, int>> byReplicas;
  for (int n : replicas)
    byReplicas.push_back({8, n});
  std::printf("\ndata parallel, tiny GPT (8 layers), one sample per device:\n");
  auto r = table(byReplicas, repetitions, "dp");
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("peak resident memory of this bench (the %d-device plan's compile): %.0f MB\n", replicas.back(),
              static_cast<double>(usage.ru_maxrss) / 1024.0);
  std::printf("growth against %d devices (quadratic when the time ratio is the square of the device ratio):\n",
              replicas[0]);
  for (size_t i = 1; i < replicas.size(); ++i)
    std::printf("  %4d devices: device ratio %5.2f (squared %6.2f), time ratio %6.2f\n", replicas[i],
                static_cast<double>(replicas[i]) / replicas[0],
                std::pow(static_cast<double>(replicas[i]) / replicas[0], 2), r[i].total() / r[0].total());
  return 0;
}
