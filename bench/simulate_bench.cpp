// bench_simulate: the simulator against measured training steps on this machine (the
// threads backend), for the tiny GPT under several plans.
//
// Calibration, all measured in this run: a device's peak is single-threaded cblas_sgemm
// (1024^3), its memory bandwidth memcpy's. Each kernel name gets a fixed cost per call and
// an efficiency against its roofline, fitted to its measured time on one device in two
// traced runs of the `single` plan (one micro-batch of 8; eight of 1). Links run at memcpy
// bandwidth with an alpha measured on empty exchanges between two device threads.
// The devices' threads share the machine's cores: the simulator hands each kernel (and each
// collective's copying) the next free core, in time order (CostModel::cores).
// Then every plan is simulated and measured (in `rounds` turns of `steps` steps after a
// warm-up step each; the median and quartiles of all steps), and the bench prints the ratio
// and whether the ranking by step time is the same, over all pairs and over the pairs whose
// measured quartile ranges do not overlap.
// Usage: bench_simulate [steps] [rounds]
#include "passes/Pipeline.h"
#include "planner/Estimates.h"
#include "planner/Simulator.h"
#include "runtime/Run.h"
#include "tools/hspmc/Driver.h"
#include "tools/hspmc/Train.h"

#include <cblas.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

extern "C" void openblas_set_num_threads(int);

using namespace hspmd;
using Clock = std::chrono::steady_clock;

namespace {

struct Compiled {
  frontend::SourceManager sources;
  frontend::CollectingSink sink;
  frontend::DiagnosticEngine diags{sink};
  frontend::Compilation compilation{sources, diags};
  std::optional<driver::Build> build;
  passes::PipelineResult result;
  runtime::ModelInfo model;
};

// `plan`: an example plan's name, or a path.
std::unique_ptr<Compiled> compile(const std::string &plan) {
  auto c = std::make_unique<Compiled>();
  const std::string path = plan.find('/') != std::string::npos
                               ? plan
                               : std::string(HSPMD_SOURCE_DIR) + "/examples/gpt/plans/" + plan + ".hspmd";
  c->build = driver::elaborateBuild(c->compilation, path, {path}, "");
  passes::PipelineOptions options;
  options.train = true;
  c->result = passes::runPipeline(*c->build->graph, c->build->plans, options, [](const passes::Problem &) {});
  c->model = driver::modelInfo(*c->build->graph);
  return c;
}

// Seconds of each of `steps` steps (after a warm-up step).
std::vector<double> measure(const Compiled &c, int steps) {
  runtime::RunOptions run;
  run.data = std::string(HSPMD_SOURCE_DIR) + "/examples/data/gpl-3.txt";
  run.steps = steps + 1;
  auto times = runtime::runThreads(c.result.programs[0], c.model, run).stepSeconds;
  times.erase(times.begin()); // the warm-up step
  return times;
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

double sgemmCorePeak() {
  openblas_set_num_threads(1);
  const int n = 1024;
  std::vector<float> a(n * n, 1.0f), b(n * n, 0.5f), c(n * n);
  double best = 1e300;
  for (int i = 0; i < 3; ++i) {
    const auto start = Clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a.data(), n, b.data(), n, 0, c.data(), n);
    best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count());
  }
  return 2.0 * n * n * n / best;
}

double memcpyBandwidth() {
  const size_t bytes = 64 << 20;
  std::vector<char> a(bytes, 1), b(bytes);
  double best = 1e300;
  for (int i = 0; i < 10; ++i) {
    const auto start = Clock::now();
    std::memcpy(b.data(), a.data(), bytes);
    best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count());
  }
  return static_cast<double>(bytes) / best;
}

// Seconds of one exchange of 4 bytes between two device threads (median of 2000).
double exchangeLatency() {
  runtime::ThreadsWorld world({0, 1});
  const int rounds = 2000;
  std::vector<double> seconds(rounds);
  auto loop = [&](int d) {
    float value = 1.0f;
    for (int64_t tag = 0; tag < rounds; ++tag) {
      runtime::Piece mine;
      mine.data = &value;
      const auto start = Clock::now();
      world.communicator(d).exchange({0, 1}, tag, mine, 4, [](const std::vector<runtime::Piece> &) {});
      if (d == 0)
        seconds[static_cast<size_t>(tag)] = std::chrono::duration<double>(Clock::now() - start).count();
    }
  };
  std::thread other(loop, 1);
  loop(0);
  other.join();
  std::sort(seconds.begin(), seconds.end());
  return seconds[rounds / 2];
}

// The single-device plan with its batch of 8 in 8 micro-batches (written next to the
// bench's trace, importing the example model by absolute path).
std::string microbatchedSingle() {
  const std::string path = "/tmp/hspmd_bench_single_mb8.hspmd";
  std::ofstream out(path);
  const std::string dir = std::string(HSPMD_SOURCE_DIR) + "/examples";
  out << "import \"" << dir << "/gpt/tiny_gpt.hspmd\"\n"
      << "plan single_mb8 for TinyGPT {\n  cluster \"" << dir << "/clusters/cpu4.toml\"\n"
      << "  bind B = 8, S = 64\n  optimizer adamw(lr = 1e-3)\n"
      << "  pipeline main share 1 microbatches 8 {\n    stage devices [0] layers blocks with wte, lnf\n  }\n}\n";
  return path;
}

// Per kernel name, per step: measured seconds (a traced run of 3 steps), roofline seconds
// at efficiency 1, and calls.
struct KernelSample {
  std::map<std::string, double> measured, roofline, calls;
};

KernelSample sampleKernels(const Compiled &c, const planner::CostModel &model) {
  KernelSample sample;
  runtime::RunOptions run;
  run.data = std::string(HSPMD_SOURCE_DIR) + "/examples/data/gpl-3.txt";
  run.steps = 4;
  run.trace = "/tmp/hspmd_bench_simulate_trace.json";
  runtime::runThreads(c.result.programs[0], c.model, run);
  planner::CostModel ideal = model;
  ideal.kernelEfficiency.clear();
  ideal.kernelOverhead.clear();
  for (const auto &e : planner::simulate(c.result.programs[0], ideal, true).events)
    if (!e.communication) {
      sample.roofline[e.name] += e.seconds;
      sample.calls[e.name] += 1;
    }
  // The trace holds the first 4 steps; the first (allocating) one is left out.
  std::ifstream file(run.trace);
  const nlohmann::json trace = nlohmann::json::parse(file);
  std::vector<std::pair<std::string, std::pair<double, double>>> spans;
  for (const auto &event : trace["traceEvents"])
    if (event.value("cat", "") == "compute")
      spans.push_back({event["name"].get<std::string>(), {event["ts"].get<double>(), event["dur"].get<double>()}});
  std::sort(spans.begin(), spans.end(), [](const auto &a, const auto &b) { return a.second.first < b.second.first; });
  const size_t perStep = spans.size() / 4;
  for (size_t i = perStep; i < spans.size(); ++i)
    sample.measured[spans[i].first] += spans[i].second.second * 1e-6 / 3;
  return sample;
}

} // namespace

int main(int argc, char **argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 5;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const double peak = sgemmCorePeak(), bandwidth = memcpyBandwidth();
  std::printf("calibration: one core's sgemm %.1f GFLOP/s, memcpy %.1f GB/s, %u cores\n", peak / 1e9, bandwidth / 1e9,
              cores);

  // Kernel costs from traced steps of the single-device plan, run as one micro-batch of 8
  // and as 8 micro-batches of 1: per kernel name, a fixed cost per call and an efficiency
  // against the roofline (two equations, two unknowns).
  planner::CostModel model;
  model.overlap = false; // the threads backend runs communication on the device thread
  model.exchange = true; // and each collective is one exchange
  model.flops = [&](int) { return peak; };
  model.memoryBandwidth = [&](int) { return bandwidth; };
  model.efficiency = 1.0;
  model.links.alpha = exchangeLatency();
  model.links.bandwidth = [&](int, int) { return bandwidth / 1e9; };
  std::printf("calibration: an empty exchange between two device threads takes %.1f us (alpha)\n",
              model.links.alpha * 1e6);
  const KernelSample big = sampleKernels(*compile("single"), model);
  const KernelSample small = sampleKernels(*compile(microbatchedSingle()), model);
  for (const auto &[name, m1] : big.measured) {
    if (!big.roofline.count(name) || m1 <= 0)
      continue;
    const double r1 = big.roofline.at(name), n1 = big.calls.at(name);
    double efficiency = r1 / m1, overhead = 0;
    if (small.measured.count(name) && small.roofline.count(name)) {
      const double m8 = small.measured.at(name), r8 = small.roofline.at(name), n8 = small.calls.at(name);
      const double det = n1 * r8 - n8 * r1;
      if (std::abs(det) > 1e-12) {
        const double o = (m1 * r8 - m8 * r1) / det, k = (n1 * m8 - n8 * m1) / det;
        if (o >= 0 && k > 0) {
          overhead = o;
          efficiency = 1 / k;
        }
      }
    }
    model.kernelEfficiency[name] = efficiency;
    model.kernelOverhead[name] = overhead;
    if (std::getenv("HSPMD_BENCH_VERBOSE"))
      std::printf("  %-20s roofline %8.3f ms, measured %8.3f ms per step in %3.0f calls: efficiency %.2f, "
                  "%.1f us per call\n",
                  name.c_str(), r1 * 1e3, m1 * 1e3, n1, efficiency, overhead * 1e6);
  }

  // The plans are measured in turns (`rounds` rounds of `steps` steps each), so that a change
  // in the machine's load touches them all alike.
  const std::vector<std::string> plans = {
      "single", "tp2", "dp2_tp2", "pipeline2", "hetero4", "dp2_zero", "pipeline2_recompute"};
  std::vector<std::unique_ptr<Compiled>> compiled;
  std::vector<std::vector<double>> times(plans.size());
  for (const auto &plan : plans)
    compiled.push_back(compile(plan));
  for (int round = 0; round < rounds; ++round)
    for (size_t i = 0; i < plans.size(); ++i) {
      const auto some = measure(*compiled[i], steps);
      times[i].insert(times[i].end(), some.begin(), some.end());
    }
  std::printf("%-22s %12s %21s %12s %8s\n", "plan", "measured", "(quartiles)", "simulated", "ratio");
  std::vector<std::pair<std::string, std::pair<double, double>>> rows;
  std::vector<std::pair<double, double>> quartiles;
  for (size_t i = 0; i < plans.size(); ++i) {
    planner::CostModel shared = model;
    shared.cores = static_cast<int>(cores); // the devices' threads share the machine's cores
    const planner::Simulation simulation = planner::simulate(compiled[i]->result.programs[0], shared);
    const double simulated = simulation.stepSeconds;
    if (std::getenv("HSPMD_BENCH_VERBOSE"))
      for (const auto &[device, d] : simulation.devices)
        std::printf("  %s device %d: busy %.2f ms, communicating %.2f ms, idle %.2f ms\n", plans[i].c_str(), device,
                    d.busy * 1e3, d.communicating * 1e3, d.idle * 1e3);
    const double measuredStep = quantile(times[i], 0.5);
    rows.push_back({plans[i], {measuredStep, simulated}});
    quartiles.push_back({quantile(times[i], 0.25), quantile(times[i], 0.75)});
    std::printf("%-22s %9.2f ms  (%7.2f - %7.2f ms) %9.2f ms %8.2f\n", plans[i].c_str(), measuredStep * 1e3,
                quartiles.back().first * 1e3, quartiles.back().second * 1e3, simulated * 1e3, simulated / measuredStep);
  }
  auto ranking = [&](bool simulated) {
    std::vector<std::string> order;
    auto sorted = rows;
    std::sort(sorted.begin(), sorted.end(), [&](const auto &a, const auto &b) {
      return simulated ? a.second.second < b.second.second : a.second.first < b.second.first;
    });
    for (const auto &r : sorted)
      order.push_back(r.first);
    return order;
  };
  // A pair is told apart by measurement when the quartile ranges of its step times do not
  // overlap; the others are ties as far as this machine can say.
  int within = 0, pairs = 0, concordant = 0, apart = 0, concordantApart = 0;
  for (const auto &r : rows)
    within += std::abs(r.second.second / r.second.first - 1) <= 0.25;
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t j = i + 1; j < rows.size(); ++j) {
      ++pairs;
      const bool same =
          (rows[i].second.first < rows[j].second.first) == (rows[i].second.second < rows[j].second.second);
      concordant += same;
      if (quartiles[i].second < quartiles[j].first || quartiles[j].second < quartiles[i].first) {
        ++apart;
        concordantApart += same;
      }
    }
  std::printf("%d of %zu plans within 25%%; ranking by median step time %s (%d of %d pairs in the same order); "
              "%d of the %d pairs measurement tells apart in the same order\n",
              within, rows.size(), ranking(true) == ranking(false) ? "preserved" : "differs", concordant, pairs,
              concordantApart, apart);
  const auto m = ranking(false), s = ranking(true);
  std::printf("  measured : ");
  for (const auto &p : m)
    std::printf("%s ", p.c_str());
  std::printf("\n  simulated: ");
  for (const auto &p : s)
    std::printf("%s ", p.c_str());
  std::printf("\n");
  return 0;
}
