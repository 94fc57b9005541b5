// bench_simulate: the simulator against measured training steps on this machine (the
// threads backend), for the tiny GPT under several plans.
//
// Calibration, all measured in this run: a device's peak is single-threaded cblas_sgemm
// (1024^3), its memory bandwidth memcpy's. Links run at memcpy bandwidth with an alpha
// measured on empty exchanges between two device threads that compute about 100 us between
// them and arrive together; the wake-up of a thread that waited long enough to sleep
// (ThreadsWorld::kSpin) is measured with one thread computing ~300 us more. Each kernel name
// gets a fixed cost per call and an efficiency against its roofline: the least-squares line
// through its calls' measured times in traced runs of the single-device plan with its batch of
// 8 in 1, 2, 4 and 8 micro-batches, fitted once per kernel thread count the plans run at (the
// executor divides the cores among a process's devices). The devices' threads share the
// machine's cores: the simulator hands each kernel as many free cores as it has threads (and
// each collective's copying one per member), in time order, and with more devices than cores
// every kernel takes longer by the measured oversubscription (CostModel::cores, kernelCores,
// oversubscribed).
// The calibration runs and every plan's steps are measured in `rounds` turns (`steps` steps
// after a warm-up step each; the median and quartiles of all steps), so that the machine's
// load, which changes, touches them alike. The bench prints each plan's ratio, and whether
// the ranking by step time is the same, over all pairs and over the pairs whose measured
// quartile ranges do not overlap.
// Usage: bench_simulate [steps] [rounds]   (HSPMD_BENCH_VERBOSE=1: the fitted kernel costs and
// per-device times; HSPMD_BENCH_TRACES=DIR: each plan's measured and simulated Chrome traces)
#include "bench/Compiled.h"
#include "passes/Pipeline.h"
#include "planner/Estimates.h"
#include "planner/Simulator.h"
#include "planner/driver/Driver.h"
#include "planner/driver/ModelInfo.h"
#include "runtime/Fusion.h"
#include "runtime/Run.h"

#include <cblas.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <thread>

extern "C" void openblas_set_num_threads(int);

using namespace hspmd;
using Clock = std::chrono::steady_clock;

namespace {

using bench::Compiled;

// `plan`: an example plan's name, or a path.
std::unique_ptr<Compiled> compile(const std::string &plan) {
  return bench::compilePlan(plan.find('/') != std::string::npos
                                ? plan
                                : std::string(HSPMD_SOURCE_DIR) + "/examples/gpt/plans/" + plan + ".hspmd");
}

// Runs `c` for `steps` steps on the threads backend (with a Chrome trace of the first
// runtime::kTracedSteps steps at `trace`, if given), its kernels on `kernelThreads` threads
// (0: as hspmc train runs them).
runtime::RunResult train(const Compiled &c, int steps, const std::string &trace = "", int kernelThreads = 0) {
  runtime::RunOptions run;
  run.kernelThreads = kernelThreads;
  run.data = std::string(HSPMD_SOURCE_DIR) + "/examples/data/gpl-3.txt";
  run.steps = steps;
  run.trace = trace;
  return runtime::runThreads(c.result.programs[0], c.model, run);
}

// Seconds of each of `steps` steps (after a warm-up step).
std::vector<double> measure(const Compiled &c, int steps, int kernelThreads = 0) {
  auto times = train(c, steps + 1, "", kernelThreads).stepSeconds;
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

// Seconds from the later arrival at an exchange of 4 bytes between two device threads to the
// later departure, each of 500 exchanges, device d computing for `sgemms[d]` 64^3 sgemms (about
// 4 us each) between exchanges as it would between kernels. With equal work neither waits long
// enough to sleep (alpha); when one arrives much earlier it sleeps and is woken (alpha plus
// the wake-up, CostModel::wakeup). The times are bimodal: a round where both threads keep
// their cores exchanges in about 4 us, one where the scheduler moves a thread in about 50.
std::vector<double> exchangeLatency(std::array<int, 2> sgemms) {
  runtime::ThreadsWorld world({0, 1});
  const int rounds = 500;
  std::vector<std::array<Clock::time_point, 2>> arrive(rounds), leave(rounds);
  auto loop = [&](int d) {
    float value = 1.0f;
    std::vector<float> a(64 * 64, 1.0f), c(64 * 64);
    for (int64_t tag = 0; tag < rounds; ++tag) {
      for (int k = 0; k < sgemms[static_cast<size_t>(d)]; ++k) // 0.5 MFLOP each
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 64, 64, 64, 1, a.data(), 64, a.data(), 64, 0, c.data(),
                    64);
      runtime::Piece mine;
      mine.data = &value;
      arrive[static_cast<size_t>(tag)][static_cast<size_t>(d)] = Clock::now();
      world.communicator(d).exchange({0, 1}, tag, mine, 4, [](const std::vector<runtime::Piece> &) {});
      leave[static_cast<size_t>(tag)][static_cast<size_t>(d)] = Clock::now();
    }
  };
  std::thread other(loop, 1);
  loop(0);
  other.join();
  std::vector<double> seconds;
  for (size_t i = 0; i < arrive.size(); ++i)
    seconds.push_back(
        std::chrono::duration<double>(std::max(leave[i][0], leave[i][1]) - std::max(arrive[i][0], arrive[i][1]))
            .count());
  return seconds;
}

// The mean of `samples` between their 1st and 99th percentiles: the expected time of a
// bimodal quantity (a median jumps between the modes from run to run), without the rare
// preemption of milliseconds.
double trimmedMean(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  const size_t cut = samples.size() / 100;
  double sum = 0;
  for (size_t i = cut; i < samples.size() - cut; ++i)
    sum += samples[i];
  return sum / static_cast<double>(samples.size() - 2 * cut);
}

// The single-device plan with its batch of 8 in `microbatches` micro-batches (written next to
// the bench's trace, importing the example model by absolute path).
std::string microbatchedSingle(int microbatches) {
  const std::string path = "/tmp/hspmd_bench_single_mb" + std::to_string(microbatches) + ".hspmd";
  std::ofstream out(path);
  const std::string dir = std::string(HSPMD_SOURCE_DIR) + "/examples";
  out << "import \"" << dir << "/gpt/tiny_gpt.hspmd\"\n"
      << "plan single_mb" << microbatches << " for TinyGPT {\n  cluster \"" << dir << "/clusters/cpu4.toml\"\n"
      << "  bind B = 8, S = 64\n  optimizer adamw(lr = 1e-3)\n"
      << "  pipeline main share 1 microbatches " << microbatches
      << " {\n    stage devices [0] layers blocks with wte, lnf\n  }\n}\n";
  return path;
}

// The kernel calls of one step of a single-device plan, in order: name, roofline seconds at
// efficiency 1, and the measured seconds of each traced step.
struct KernelCalls {
  std::vector<std::string> names;
  std::vector<double> roofline;
  std::vector<std::vector<double>> measured;
};

// The instructions the executor folds into fused matmuls (runtime/Fusion.h), per device: the
// simulator skips them as the executor does.
std::map<int, std::vector<bool>> fusedAway(const Compiled &c) {
  std::map<int, std::vector<bool>> skipped;
  for (const auto &[device, program] : c.result.programs[0])
    skipped[device] = runtime::fuseMatmuls(program).skipped;
  return skipped;
}

KernelCalls kernelCalls(const Compiled &c, const planner::CostModel &model) {
  KernelCalls calls;
  planner::CostModel ideal = model;
  ideal.skipInstruction = fusedAway(c);
  ideal.kernelEfficiency.clear();
  ideal.kernelOverhead.clear();
  for (const auto &e : planner::simulate(c.result.programs[0], ideal, true).events)
    if (!e.communication) {
      calls.names.push_back(e.name);
      calls.roofline.push_back(e.seconds);
    }
  calls.measured.resize(calls.names.size());
  return calls;
}

// Adds each call's time in the traced steps after the first (allocating) one to `calls`, the
// kernels on `kernelThreads` threads.
void traceKernels(const Compiled &c, KernelCalls &calls, int kernelThreads) {
  const std::string path = "/tmp/hspmd_bench_simulate_trace.json";
  train(c, runtime::kTracedSteps, path, kernelThreads);
  std::ifstream file(path);
  const nlohmann::json trace = nlohmann::json::parse(file);
  std::vector<std::pair<double, double>> spans; // start, seconds
  for (const auto &event : trace["traceEvents"])
    if (event.value("cat", "") == "compute")
      spans.push_back({event["ts"].get<double>(), event["dur"].get<double>() * 1e-6});
  std::sort(spans.begin(), spans.end());
  if (spans.size() != calls.names.size() * static_cast<size_t>(runtime::kTracedSteps))
    throw std::runtime_error("the trace does not hold the simulated kernel calls");
  for (size_t i = calls.names.size(); i < spans.size(); ++i)
    calls.measured[i % calls.names.size()].push_back(spans[i].second);
}

} // namespace

int main(int argc, char **argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 8;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 8;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const double peak = sgemmCorePeak(), bandwidth = memcpyBandwidth();
  std::printf("calibration: one core's sgemm %.1f GFLOP/s, memcpy %.1f GB/s, %u cores\n", peak / 1e9, bandwidth / 1e9,
              cores);

  // The cost model: one core's peak and memcpy bandwidth now; the exchange latency, the
  // kernels' costs and oversubscription from the rounds below.
  planner::CostModel model;
  model.overlap = false; // the threads backend runs communication on the device thread
  model.exchange = true; // and each collective is one exchange
  model.flops = [&](int) { return peak; };
  model.memoryBandwidth = [&](int) { return bandwidth; };
  model.efficiency = 1.0;
  model.links.bandwidth = [&](int, int) { return bandwidth / 1e9; };

  // Everything is measured in turns (`rounds` rounds of `steps` steps each), so that a change
  // in the machine's load touches it all alike. Each round:
  //  - measures the exchange latency (alpha);
  //  - traces the single-device plan with its batch of 8 in 1, 2, 4 and 8 micro-batches: each
  //    kernel call's time in the 3 steps after the first, with the kernels on as many threads
  //    as each plan's devices will have (the cores divided among them: all for one device,
  //    one each on this machine for more);
  //  - measures oversubscription: the 8-micro-batch plan run as twice as many copies at once
  //    as there are cores, against as many copies as cores (each copy one device thread, its
  //    kernels on that thread);
  //  - measures the plans' steps.
  const std::vector<std::string> plans = {
      "single", "tp2", "dp2_tp2", "pipeline2", "hetero4", "dp2_zero", "pipeline2_recompute"};
  std::vector<std::unique_ptr<Compiled>> compiled;
  std::vector<std::vector<double>> times(plans.size());
  std::vector<int> kernelThreads; // each plan's, as runtime::runThreads sets them
  for (const auto &plan : plans) {
    compiled.push_back(compile(plan));
    kernelThreads.push_back(
        std::max(1, static_cast<int>(cores) / static_cast<int>(compiled.back()->result.programs[0].size())));
  }
  const std::set<int> threadCounts(kernelThreads.begin(), kernelThreads.end());
  std::vector<std::unique_ptr<Compiled>> calibration;
  std::map<int, std::vector<KernelCalls>> traced; // by kernel threads
  for (int microbatches : {1, 2, 4, 8}) {
    calibration.push_back(compile(microbatchedSingle(microbatches)));
    const KernelCalls calls = kernelCalls(*calibration.back(), model);
    for (int t : threadCounts)
      traced[t].push_back(calls);
  }
  const Compiled *microbatched = calibration.back().get();
  auto concurrentStep = [&](unsigned copies) {
    std::vector<double> medians(copies);
    std::vector<std::thread> threads;
    for (unsigned k = 0; k < copies; ++k)
      threads.emplace_back([&, k] { medians[k] = quantile(measure(*microbatched, steps, 1), 0.5); });
    for (auto &t : threads)
      t.join();
    return quantile(medians, 0.5);
  };
  std::vector<double> oversubscription, alphas, sleeps; // the exchanges of every round
  std::vector<double> alphaRounds, sleepRounds;         // each round's median
  for (int round = 0; round < rounds; ++round) {
    std::fprintf(stderr, "measuring: round %d of %d\n", round + 1, rounds);
    for (auto [samples, medians, sgemms] : {std::tuple{&alphas, &alphaRounds, std::array<int, 2>{20, 20}},
                                            std::tuple{&sleeps, &sleepRounds, std::array<int, 2>{80, 0}}}) {
      const std::vector<double> some = exchangeLatency(sgemms); // {80, 0}: device 1 waits ~300 us
      medians->push_back(quantile(some, 0.5));
      samples->insert(samples->end(), some.begin(), some.end());
    }
    for (auto &[t, calls] : traced)
      for (size_t i = 0; i < calibration.size(); ++i)
        traceKernels(*calibration[i], calls[i], t);
    oversubscription.push_back(concurrentStep(2 * cores) / (2 * concurrentStep(cores)));
    for (size_t i = 0; i < plans.size(); ++i) {
      const auto some = measure(*compiled[i], steps);
      times[i].insert(times[i].end(), some.begin(), some.end());
    }
  }

  // Per kernel threads and kernel name: a fixed cost per call and an efficiency against the
  // roofline, the least-squares line through its calls' (roofline, median measured) seconds in
  // the traced plans.
  std::map<int, planner::CostModel> models; // by kernel threads
  for (const auto &[threads, tracedCalls] : traced) {
    planner::CostModel &fitted = models[threads];
    std::map<std::string, std::vector<std::pair<double, double>>> points;
    for (const KernelCalls &calls : tracedCalls)
      for (size_t i = 0; i < calls.names.size(); ++i)
        points[calls.names[i]].push_back({calls.roofline[i], quantile(calls.measured[i], 0.5)});
    for (const auto &[name, xy] : points) {
      double n = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
      for (const auto &[x, y] : xy) {
        n += 1, sx += x, sy += y, sxx += x * x, sxy += x * y;
      }
      if (sy <= 0 || sx <= 0)
        continue;
      double efficiency = sx / sy, overhead = 0; // through the origin when the sizes do not vary
      const double det = n * sxx - sx * sx;
      if (det > 1e-12 * n * sxx) {
        const double k = (n * sxy - sx * sy) / det, o = (sy - k * sx) / n;
        if (o >= 0 && k > 0) {
          overhead = o;
          efficiency = 1 / k;
        }
      }
      fitted.kernelEfficiency[name] = efficiency;
      fitted.kernelOverhead[name] = overhead;
      if (std::getenv("HSPMD_BENCH_VERBOSE"))
        std::printf("  %d threads: %-20s %4.0f calls: roofline %8.3f ms, measured %8.3f ms: efficiency %.2f, %.1f us "
                    "per call\n",
                    threads, name.c_str(), n, sx * 1e3, sy * 1e3, efficiency, overhead * 1e6);
    }
  }

  model.links.alpha = trimmedMean(alphas);
  std::printf("calibration: an empty exchange between two device threads that arrive together takes %.1f us (alpha; "
              "trimmed mean of %zu in %d rounds, round medians %.1f - %.1f)\n",
              model.links.alpha * 1e6, alphas.size(), rounds, quantile(alphaRounds, 0) * 1e6,
              quantile(alphaRounds, 1) * 1e6);
  model.spin = std::chrono::duration<double>(runtime::ThreadsWorld::kSpin).count();
  const double slept = trimmedMean(sleeps);
  model.wakeup = std::max(0.0, slept - model.links.alpha);
  std::printf("calibration: a device thread that waited longer than %.0f us (polling) sleeps: the exchange then takes "
              "%.1f us (trimmed mean of %zu in %d rounds, round medians %.1f - %.1f), a wake-up of %.1f us more\n",
              model.spin * 1e6, slept * 1e6, sleeps.size(), rounds, quantile(sleepRounds, 0) * 1e6,
              quantile(sleepRounds, 1) * 1e6, model.wakeup * 1e6);
  model.oversubscribed = quantile(oversubscription, 0.5);
  std::printf("calibration: with twice as many device threads as cores, kernels take %.3fx as long "
              "(median of %d rounds, %.3f - %.3f)\n",
              model.oversubscribed, rounds, quantile(oversubscription, 0), quantile(oversubscription, 1));
  std::printf("%-22s %12s %21s %12s %8s\n", "plan", "measured", "(quartiles)", "simulated", "ratio");
  std::vector<std::pair<std::string, std::pair<double, double>>> rows;
  std::vector<std::pair<double, double>> quartiles;
  for (size_t i = 0; i < plans.size(); ++i) {
    planner::CostModel shared = model;
    shared.kernelEfficiency = models.at(kernelThreads[i]).kernelEfficiency;
    shared.kernelOverhead = models.at(kernelThreads[i]).kernelOverhead;
    shared.cores = static_cast<int>(cores); // the devices' threads share the machine's cores
    shared.kernelCores = kernelThreads[i];
    shared.skipInstruction = fusedAway(*compiled[i]);
    const char *traces = std::getenv("HSPMD_BENCH_TRACES");
    const planner::Simulation simulation = planner::simulate(compiled[i]->result.programs[0], shared, traces);
    if (traces) { // both traces of each plan, to compare device by device
      train(*compiled[i], runtime::kTracedSteps, std::string(traces) + "/" + plans[i] + ".measured.json");
      std::map<int, std::vector<runtime::TraceEvent>> events;
      for (const auto &e : simulation.events)
        events[e.device].push_back({e.name, e.communication, e.start, e.seconds});
      runtime::writeTrace(std::string(traces) + "/" + plans[i] + ".simulated.json", events);
    }
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
