// bench_simulate: the simulator against measured training steps on this machine (the
// threads backend), for the tiny GPT under several plans.
//
// Calibration, all measured in this run: a device's peak is single-threaded cblas_sgemm
// (1024^3), its memory bandwidth memcpy's; each kernel's
// efficiency is its measured time on one device (the `single` plan's trace) over its
// roofline time; links run at memcpy bandwidth with an alpha measured on an empty exchange.
// The devices' threads share the machine's cores: the simulator hands each kernel (and each
// collective's copying) the next free core, in time order (CostModel::cores).
// Then every plan is simulated and measured (median step of `steps` steps after one warm-up
// step), and the bench prints the ratio and whether the ranking by step time is the same.
// Usage: bench_simulate [steps]
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

std::unique_ptr<Compiled> compile(const std::string &plan) {
  auto c = std::make_unique<Compiled>();
  const std::string path = std::string(HSPMD_SOURCE_DIR) + "/examples/gpt/plans/" + plan + ".hspmd";
  c->build = driver::elaborateBuild(c->compilation, path, {path}, "");
  passes::PipelineOptions options;
  options.train = true;
  c->result = passes::runPipeline(*c->build->graph, c->build->plans, options, [](const passes::Problem &) {});
  c->model = driver::modelInfo(*c->build->graph);
  return c;
}

// Median seconds per step of `steps` steps (after a warm-up step).
double measure(const Compiled &c, int steps) {
  runtime::RunOptions run;
  run.data = std::string(HSPMD_SOURCE_DIR) + "/examples/data/gpl-3.txt";
  run.steps = steps + 1;
  auto times = runtime::runThreads(c.result.programs[0], c.model, run).stepSeconds;
  times.erase(times.begin()); // the warm-up step
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
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
  for (int i = 0; i < 3; ++i) {
    const auto start = Clock::now();
    std::memcpy(b.data(), a.data(), bytes);
    best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count());
  }
  return static_cast<double>(bytes) / best;
}

} // namespace

int main(int argc, char **argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 5;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const double peak = sgemmCorePeak(), bandwidth = memcpyBandwidth();
  std::printf("calibration: one core's sgemm %.1f GFLOP/s, memcpy %.1f GB/s, %u cores\n", peak / 1e9, bandwidth / 1e9,
              cores);

  // Kernel efficiencies from one traced step of the single-device plan.
  auto single = compile("single");
  planner::CostModel model;
  model.overlap = false; // the threads backend runs communication on the device thread
  model.flops = [&](int) { return peak; };
  model.memoryBandwidth = [&](int) { return bandwidth; };
  model.efficiency = 1.0;
  model.links.alpha = 20e-6;
  model.links.bandwidth = [&](int, int) { return bandwidth / 1e9; };
  {
    runtime::RunOptions run;
    run.data = std::string(HSPMD_SOURCE_DIR) + "/examples/data/gpl-3.txt";
    run.steps = 3;
    run.trace = "/tmp/hspmd_bench_simulate_trace.json";
    runtime::runThreads(single->result.programs[0], single->model, run);
    // Measured seconds per kernel name (the trace holds the first steps; use them all) vs
    // the roofline at efficiency 1.
    const planner::Simulation ideal = planner::simulate(single->result.programs[0], model, true);
    std::map<std::string, double> predicted, measured;
    for (const auto &e : ideal.events)
      if (!e.communication)
        predicted[e.name] += e.seconds;
    std::ifstream file(run.trace);
    const nlohmann::json trace = nlohmann::json::parse(file);
    for (const auto &event : trace["traceEvents"])
      if (event.value("cat", "") == "compute")
        measured[event["name"].get<std::string>()] += event["dur"].get<double>() * 1e-6 / 3; // per step
    for (const auto &[name, seconds] : measured)
      if (predicted.count(name) && seconds > 0) {
        model.kernelEfficiency[name] = predicted[name] / seconds;
        if (std::getenv("HSPMD_BENCH_VERBOSE"))
          std::printf("  %-20s roofline %8.3f ms, measured %8.3f ms per step\n", name.c_str(), predicted[name] * 1e3,
                      seconds * 1e3);
      }
  }

  std::printf("%-22s %12s %12s %8s\n", "plan", "measured", "simulated", "ratio");
  std::vector<std::pair<std::string, std::pair<double, double>>> rows;
  for (const char *plan : {"single", "tp2", "dp2_tp2", "pipeline2", "hetero4", "dp2_zero", "pipeline2_recompute"}) {
    auto c = compile(plan);
    planner::CostModel shared = model;
    shared.cores = static_cast<int>(cores); // the devices' threads share the machine's cores
    const double simulated = planner::simulate(c->result.programs[0], shared).stepSeconds;
    const double measuredStep = measure(*c, steps);
    rows.push_back({plan, {measuredStep, simulated}});
    std::printf("%-22s %9.2f ms %9.2f ms %8.2f\n", plan, measuredStep * 1e3, simulated * 1e3, simulated / measuredStep);
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
  int within = 0, pairs = 0, concordant = 0;
  for (const auto &r : rows)
    within += std::abs(r.second.second / r.second.first - 1) <= 0.25;
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t j = i + 1; j < rows.size(); ++j) {
      ++pairs;
      concordant += (rows[i].second.first < rows[j].second.first) == (rows[i].second.second < rows[j].second.second);
    }
  std::printf("%d of %zu plans within 25%%; ranking by step time %s (%d of %d pairs in the same order)\n", within,
              rows.size(), ranking(true) == ranking(false) ? "preserved" : "differs", concordant, pairs);
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
