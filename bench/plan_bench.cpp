// bench_plan: what `hspmc plan` finds, all in the simulator (planner/Simulator.h), against
// the best symmetric plan it finds for the same cluster (equal parts: Megatron-style
// pipelines, equal sequence or head shares, over all devices or over one type).
//
//   1. the 32B model on 16 x H800 + 32 x H20 (4K positions, 36 sequences per step);
//   2. LLaMA-2-7B on 8 x H100 + 8 x A100 with 32K-256K positions (HexiSeq's setting);
//   2b. LLaMA-2-7B on 32 devices of four types (8 each of H100, A100, H20, L40S) at 32K and
//      128K (HexiSeq's cluster-scale setting);
//   3. FLOP-matched pairs, compared per peak FLOP/s: LLaMA-2-7B on 4 A100 + 2 devices of
//      twice an A100 vs 8 A100 (equal FLOP/s and HBM bandwidth in all), and on 4 H100 + 4 A100
//      (5204 TFLOP/s) vs 16 A100 (4992 TFLOP/s);
//   4. the search's speed at 16-128 devices of 4 types, and the local programs' gap to CBC;
//   5. bf16 mixed precision against fp32: the plan each writes for the 32B and the 7B settings.
//
// Each setting runs the planner's search, compiles and simulates its finalists (the best 2
// of each family of strategies, planned and symmetric) and prints the fastest planned
// (non-symmetric) finalist against the fastest symmetric one, first among those whose
// programs fit memory (what `hspmc plan` compares), then regardless of memory: the programs
// hold fp32 weights, gradients and activations, so long contexts do not fit 80 GiB devices.
// Usage: bench_plan [--quick | --speed | --context | --precision]   (--quick: the 32K context
// only, no 128-device search; --speed: only the search speed; --context: only the 7B settings;
// --precision: only the bf16 comparison)
#include "planner/Search.h"
#include "planner/driver/Driver.h"
#include "planner/driver/PlanModel.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

using namespace hspmd;
using Clock = std::chrono::steady_clock;

namespace {

const std::string kSource = HSPMD_SOURCE_DIR;

struct Result {
  // The fastest planned (not symmetric) and symmetric finalists: among those whose programs
  // fit memory, and regardless of memory.
  const driver::SimulatedCandidate *planned = nullptr, *symmetric = nullptr;
  const driver::SimulatedCandidate *plannedAny = nullptr, *symmetricAny = nullptr;
  driver::PlanOutcome outcome;
  bool ok = false;
};

// The planner on `model` and `cluster`; the fastest planned and symmetric finalists.
std::unique_ptr<Result> plan(const std::string &model, const std::string &cluster, int64_t seq, int64_t tokens,
                             bool bf16 = false) {
  auto r = std::make_unique<Result>();
  driver::PlanFiles files;
  files.model = kSource + "/" + model;
  files.cluster = kSource + "/" + cluster;
  files.out = (std::filesystem::temp_directory_path() / "bench_plan.hspmd").string();
  files.sequence = seq;
  files.tokens = tokens;
  files.ignoreMemory = true;
  files.everyFinalist = true; // both kinds compared, whatever the estimates say
  files.bf16 = bf16;
  std::ostringstream progress;
  r->ok = driver::planModel(files, r->outcome, progress, std::cerr);
  std::filesystem::remove(files.out);
  auto fastest = [](const std::vector<driver::SimulatedCandidate> &list, bool mustFit) {
    const driver::SimulatedCandidate *best = nullptr;
    for (const auto &c : list)
      if (c.simulated.seconds > 0 && (c.simulated.fits || !mustFit) &&
          (!best || c.simulated.seconds < best->simulated.seconds))
        best = &c;
    return best;
  };
  r->planned = fastest(r->outcome.planned, true);
  r->symmetric = fastest(r->outcome.symmetric, true);
  r->plannedAny = fastest(r->outcome.planned, false);
  r->symmetricAny = fastest(r->outcome.symmetric, false);
  return r;
}

std::string gib(const driver::SimulatedCandidate &c) {
  char text[64];
  std::snprintf(text, sizeof text, "%.0f GiB%s", c.simulated.peakBytes / (1ull << 30), c.simulated.fits ? "" : "!");
  return text;
}

// Planned vs symmetric, among the finalists that fit memory and regardless of memory;
// returns symmetric / planned of the first comparison that has both (0 when none has).
double report(const std::string &label, const Result &r) {
  double first = 0;
  for (bool fit : {true, false}) {
    const auto *p = fit ? r.planned : r.plannedAny, *s = fit ? r.symmetric : r.symmetricAny;
    const std::string what = label + (fit ? " (fits)" : " (any)");
    if (!fit && p == r.planned && s == r.symmetric)
      continue; // the same finalists
    if (!p || !s) {
      std::printf("%-38s no %s finalist%s\n", what.c_str(), p ? "symmetric" : "planned", fit ? " fits memory" : "");
      continue;
    }
    const double ratio = s->simulated.seconds / p->simulated.seconds;
    if (first == 0)
      first = ratio;
    std::printf("%-38s %10.1f ms %7s  %10.1f ms %7s  %5.2fx\n", what.c_str(), p->simulated.seconds * 1e3,
                gib(*p).c_str(), s->simulated.seconds * 1e3, gib(*s).c_str(), ratio);
    std::printf("%-38s   planned:   %s\n%-38s   symmetric: %s\n", "", p->candidate.strategy.c_str(), "",
                s->candidate.strategy.c_str());
  }
  return first;
}

// HexiSeq's comparison: context or head parallelism over all the cluster's devices with
// equal shares (whatever the devices' speed) against the same groups with the shares of the
// local programs. Per family, the best equal-share candidate over all devices (as the search
// estimates it) and the planned candidate of the same groups, compiled and simulated.
struct SharesComparison {
  driver::SimulatedCandidate equal, planned; // the fastest of each (fits first)
};

bool faster(const driver::SimulatedPlan &now, const driver::SimulatedPlan &was) {
  return now.seconds > 0 &&
         (was.seconds <= 0 || (now.fits && !was.fits) || (now.fits == was.fits && now.seconds < was.seconds));
}

SharesComparison equalSharesOverAll(const Result &r, const std::string &model, const std::string &cluster, int64_t seq,
                                    int64_t tokens) {
  planner::PlanRequest request;
  request.sequence = seq;
  request.tokens = tokens;
  const auto search = planner::searchPlans(r.outcome.shape, r.outcome.cluster, request, 1000);
  const std::string equalTail = ", equal shares", plannedTail = ", shares from the local program";
  SharesComparison out;
  const std::string path = (std::filesystem::temp_directory_path() / "bench_plan_equal.hspmd").string();
  auto simulate = [&](const planner::Candidate &c) {
    {
      std::ofstream file(path);
      file << planner::planText(c, r.outcome.shape, request, "shares", kSource + "/" + model, kSource + "/" + cluster);
    }
    return driver::SimulatedCandidate{c, driver::simulatePlanFile(path, r.outcome.cluster)};
  };
  for (const std::string family : {"context", "head"}) {
    for (const auto &equal : search.symmetric) { // best first
      if (equal.family != family || equal.strategy.find("(all devices)") == std::string::npos)
        continue;
      // "symmetric: <groups>, equal shares" -> "<groups>, shares from the local program"
      const std::string groups =
          equal.strategy.substr(std::string("symmetric: ").size(),
                                equal.strategy.size() - std::string("symmetric: ").size() - equalTail.size());
      const auto planned = std::find_if(search.planned.begin(), search.planned.end(), [&](const auto &c) {
        return c.family == family && c.strategy == groups + plannedTail;
      });
      if (planned == search.planned.end())
        continue;
      const auto e = simulate(equal), p = simulate(*planned);
      if (faster(e.simulated, out.equal.simulated))
        out.equal = e;
      if (faster(p.simulated, out.planned.simulated))
        out.planned = p;
      break;
    }
  }
  std::filesystem::remove(path);
  return out;
}

void header() {
  std::printf("%-38s %13s %7s  %13s %7s  %6s\n", "setting", "planned", "memory", "symmetric", "memory", "ratio");
}

// A synthetic cluster of n devices in nodes of 8, the nodes cycling through 4 types.
// n devices in nodes of 8, the nodes taking `typeCount` types in turn: H100, A100, H20, L40S,
// H800, A800, and two made-up ones (an A100 of half the FLOP/s, an L40S of half the memory).
planner::Cluster syntheticCluster(int n, int typeCount = 4) {
  std::vector<planner::ClusterError> errors;
  planner::Cluster cluster;
  cluster.name = "synthetic" + std::to_string(n);
  cluster.interNodeGBps = 25;
  cluster.types = *planner::loadDeviceTypes(kSource + "/stdlib/devices.toml", errors);
  planner::DeviceType slowA100 = cluster.types.at("A100"), smallL40S = cluster.types.at("L40S");
  slowA100.name = "A100-half";
  slowA100.bf16Tflops /= 2;
  smallL40S.name = "L40S-24G";
  smallL40S.memoryGiB = 24;
  cluster.types[slowA100.name] = slowA100;
  cluster.types[smallL40S.name] = smallL40S;
  const char *types[] = {"H100", "A100", "H20", "L40S", "H800", "A800", "A100-half", "L40S-24G"};
  for (int node = 0; node * 8 < n; ++node) {
    cluster.nodes.push_back({"node" + std::to_string(node), types[node % typeCount], 8, 0});
    for (int d = 0; d < 8; ++d)
      cluster.devices.push_back({node * 8 + d, node, types[node % typeCount]});
  }
  return cluster;
}

// HexiSeq's comparison: the same CP/HP groups over all devices, equal shares against shares
// from the local programs; returns equal / planned (0 when either is missing).
double equalVsPlannedShares(const Result &result, const std::string &model, const std::string &cluster, int64_t seq,
                            int64_t tokens) {
  const auto shares = equalSharesOverAll(result, model, cluster, seq, tokens);
  const auto &e = shares.equal.simulated, &p = shares.planned.simulated;
  if (e.seconds <= 0 || p.seconds <= 0)
    return 0;
  const double r = e.seconds / p.seconds;
  std::printf("%-38s   CP/HP over all devices, equal shares %.1f ms %s vs planned shares %.1f ms %s: %.2fx\n"
              "%-38s     (%s; %s)\n",
              "", e.seconds * 1e3, gib(shares.equal).c_str(), p.seconds * 1e3, gib(shares.planned).c_str(), r, "",
              shares.equal.candidate.strategy.c_str(), shares.planned.candidate.strategy.c_str());
  return r;
}

void runSettings(bool quick, bool contextOnly) {
  header();
  // 1. The 32B model on 16 x H800 + 32 x H20.
  if (!contextOnly)
    report("32B, 16 H800 + 32 H20, 4K",
           *plan("examples/llama/llama32b.hspmd", "examples/clusters/h800x16_h20x32.toml", 4096, 36 * 4096));
  // 2. LLaMA-2-7B on 8 x H100 + 8 x A100, 256K tokens per step.
  std::vector<int64_t> contexts = {32768, 65536, 131072, 262144};
  if (quick)
    contexts.resize(1);
  double sum = 0, most = 0;
  int n = 0;
  double sumEqual = 0, mostEqual = 0;
  int nEqual = 0;
  for (int64_t seq : contexts) {
    const std::string model = "examples/llama/llama2_7b.hspmd", cluster = "examples/clusters/h100x8_a100x8.toml";
    const int64_t tokens = std::max<int64_t>(seq, 262144);
    const auto result = plan(model, cluster, seq, tokens);
    const double ratio = report("7B, 8 H100 + 8 A100, " + std::to_string(seq / 1024) + "K", *result);
    if (ratio > 0) {
      sum += ratio;
      most = std::max(most, ratio);
      ++n;
    }
    const double r = equalVsPlannedShares(*result, model, cluster, seq, tokens);
    if (r > 0) {
      sumEqual += r;
      mostEqual = std::max(mostEqual, r);
      ++nEqual;
    }
  }
  if (n > 0)
    std::printf("7B, 8 H100 + 8 A100: %.2fx on average, %.2fx at best (HexiSeq reports 1.11x and 1.19x on real "
                "H100-A100 clusters)\n",
                sum / n, most);
  if (nEqual > 0)
    std::printf("7B, 8 H100 + 8 A100, CP/HP over all 16 devices, planned shares vs equal shares (HexiSeq's "
                "comparison): %.2fx on average, %.2fx at best\n",
                sumEqual / nEqual, mostEqual);
  // HexiSeq's cluster-scale setting: up to four device types. 32 devices, a node of 8 each of
  // H100, A100, H20 and L40S, 256K tokens per step.
  if (!quick) {
    double sumMixed = 0, sumMixedEqual = 0;
    int nMixed = 0, nMixedEqual = 0;
    const std::string model = "examples/llama/llama2_7b.hspmd", cluster = "examples/clusters/mixed4x32.toml";
    for (int64_t seq : {32768, 131072}) {
      const int64_t tokens = std::max<int64_t>(seq, 262144);
      const auto result = plan(model, cluster, seq, tokens);
      const double ratio = report("7B, 8 each of 4 types, " + std::to_string(seq / 1024) + "K", *result);
      if (ratio > 0) {
        sumMixed += ratio;
        ++nMixed;
      }
      const double r = equalVsPlannedShares(*result, model, cluster, seq, tokens);
      if (r > 0) {
        sumMixedEqual += r;
        ++nMixedEqual;
      }
    }
    if (nMixed > 0)
      std::printf("7B, 32 devices of 4 types: %.2fx on average against the best symmetric plan; CP/HP planned vs "
                  "equal shares over all 32: %.2fx on average (HexiSeq reports 1.36x on average in its 32-128-GPU "
                  "simulations with up to four types)\n",
                  sumMixed / nMixed, nMixedEqual > 0 ? sumMixedEqual / nMixedEqual : 0.0);
  }
  if (contextOnly)
    return;
  // 3. FLOP-matched pairs: the plan `hspmc plan` would write (the fastest finalist that fits
  // memory) on each side, in tokens/s per peak PFLOP/s.
  auto written = [](const Result &r) {
    const auto *a = r.planned, *b = r.symmetric;
    return !a ? b : !b ? a : a->simulated.seconds < b->simulated.seconds ? a : b;
  };
  auto pair = [&](const std::string &label, const std::string &mixedCluster, double mixedTflops,
                  const std::string &sameCluster, double sameTflops) {
    auto mixed = plan("examples/llama/llama2_7b.hspmd", mixedCluster, 4096, 262144);
    auto same = plan("examples/llama/llama2_7b.hspmd", sameCluster, 4096, 262144);
    const driver::SimulatedCandidate *m = written(*mixed), *s = written(*same);
    if (!m || !s) {
      std::printf("%s: no plan fits\n", label.c_str());
      return;
    }
    const double perMixed = 262144 / m->simulated.seconds / mixedTflops * 1e3,
                 perSame = 262144 / s->simulated.seconds / sameTflops * 1e3;
    std::printf("%s, 7B, 4K:\n  mixed %.0f tokens/s (%s)\n  same  %.0f tokens/s (%s)\n", label.c_str(),
                262144 / m->simulated.seconds, m->candidate.strategy.c_str(), 262144 / s->simulated.seconds,
                s->candidate.strategy.c_str());
    std::printf("  tokens/s per peak PFLOP/s: %.1f vs %.1f: %+.1f%% %s\n", perMixed, perSame,
                100 * (perMixed / perSame - 1),
                std::abs(perMixed / perSame - 1) <= 0.03 ? "(within 3%)" : "(not within 3%)");
  };
  // Controlled: 4 A100 + 2 devices of twice an A100 (FLOP/s, HBM, memory) vs 8 A100, both in
  // two nodes: the same totals, only the devices are unequal.
  pair("FLOP-matched, 4 A100 + 2 double-A100 vs 8 A100", "examples/clusters/a100x4_double2.toml", 2496,
       "examples/clusters/a100x4x2.toml", 2496);
  // Real devices: 4 H100 + 4 A100 (5204 TFLOP/s, 21.5 TB/s of HBM) vs 16 A100 (4992 TFLOP/s,
  // 32.6 TB/s): the H100 has half an A100's HBM bandwidth per FLOP.
  pair("FLOP-matched, 4 H100 + 4 A100 vs 16 A100", "examples/clusters/h100x4_a100x4.toml", 5204,
       "examples/clusters/a100x16.toml", 4992);
}

// 5. `hspmc plan --precision bf16` against fp32 on the same settings: the plan each writes
// (the fastest finalist that fits memory), its simulated step and memory, and how many
// finalists fit at all. Both sides are priced by the same simulator, which prices a kernel and
// a message by the bytes of its buffers (bf16 activations: half of fp32's).
void precisionComparison(bool quick) {
  std::printf("\nbf16 mixed precision (hspmc plan --precision bf16) against fp32, the plan each writes:\n");
  std::printf("%-30s %12s %8s %6s  %12s %8s %6s  %6s\n", "setting", "fp32 step", "memory", "fit", "bf16 step", "memory",
              "fit", "ratio");
  struct Setting {
    std::string label, model, cluster;
    int64_t seq, tokens;
  };
  std::vector<Setting> settings = {{"32B, 16 H800 + 32 H20, 4K", "examples/llama/llama32b.hspmd",
                                    "examples/clusters/h800x16_h20x32.toml", 4096, 36 * 4096},
                                   {"7B, 8 H100 + 8 A100, 32K", "examples/llama/llama2_7b.hspmd",
                                    "examples/clusters/h100x8_a100x8.toml", 32768, 262144}};
  if (!quick)
    settings.push_back({"7B, 8 H100 + 8 A100, 128K", "examples/llama/llama2_7b.hspmd",
                        "examples/clusters/h100x8_a100x8.toml", 131072, 262144});
  for (const Setting &s : settings) {
    const driver::SimulatedCandidate *best[2] = {nullptr, nullptr};
    int fit[2] = {0, 0}, all[2] = {0, 0};
    std::vector<double> estimateErrors[2]; // the search's memory estimate / the compiled peak
    std::unique_ptr<Result> results[2];
    for (int half = 0; half < 2; ++half) {
      results[half] = plan(s.model, s.cluster, s.seq, s.tokens, half == 1);
      for (const auto *list : {&results[half]->outcome.planned, &results[half]->outcome.symmetric})
        for (const auto &c : *list) {
          if (c.simulated.seconds <= 0)
            continue;
          ++all[half];
          if (c.simulated.peakBytes > 0)
            estimateErrors[half].push_back(c.candidate.peakBytes / c.simulated.peakBytes);
          if (!c.simulated.fits)
            continue;
          ++fit[half];
          if (!best[half] || c.simulated.seconds < best[half]->simulated.seconds)
            best[half] = &c;
        }
    }
    auto column = [&](int half) {
      char text[64];
      if (!best[half])
        std::snprintf(text, sizeof text, "%12s %8s %2d/%-3d", "none fits", "", fit[half], all[half]);
      else
        std::snprintf(text, sizeof text, "%9.1f ms %8s %2d/%-3d", best[half]->simulated.seconds * 1e3,
                      gib(*best[half]).c_str(), fit[half], all[half]);
      return std::string(text);
    };
    char ratio[16] = "-";
    if (best[0] && best[1])
      std::snprintf(ratio, sizeof ratio, "%5.2fx", best[0]->simulated.seconds / best[1]->simulated.seconds);
    std::printf("%-30s %s  %s  %6s\n", s.label.c_str(), column(0).c_str(), column(1).c_str(), ratio);
    for (int half = 0; half < 2; ++half) {
      if (best[half])
        std::printf("%-30s   %s: %s\n", "", half ? "bf16" : "fp32", best[half]->candidate.strategy.c_str());
      auto &e = estimateErrors[half];
      std::sort(e.begin(), e.end());
      if (!e.empty())
        std::printf("%-30s   %s: the search's memory estimate / the compiled peak: %.2f to %.2f, median %.2f\n", "",
                    half ? "bf16" : "fp32", e.front(), e.back(), e[e.size() / 2]);
    }
  }
}

void searchSpeed(bool quick) {
  // 4. Search speed with up to 4 types, and the local programs' gap to CBC.
  hspmd::frontend::SourceManager sources;
  hspmd::frontend::CollectingSink sink;
  hspmd::frontend::DiagnosticEngine diags(sink);
  hspmd::frontend::Compilation compilation(sources, diags);
  auto build = driver::elaborateBuild(compilation, kSource + "/examples/llama/llama2_7b.hspmd", {}, "");
  std::string error;
  const planner::ModelShape shape = planner::modelShape(*build->graph, error);
  planner::PlanRequest request;
  request.sequence = 32768;
  request.tokens = 262144;
  // The median of `runs` searches on `cluster`, in seconds, and the last search's result.
  auto timed = [&](const planner::Cluster &cluster, int runs, planner::SearchResult &result) {
    std::vector<double> times;
    for (int i = 0; i < runs; ++i) {
      const auto start = Clock::now();
      result = planner::searchPlans(shape, cluster, request);
      times.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    }
    std::sort(times.begin(), times.end());
    return times[static_cast<size_t>(runs / 2)];
  };
  for (int devices : {16, 32, 64, 128}) {
    if (quick && devices > 64)
      break;
    const planner::Cluster cluster = syntheticCluster(devices);
    planner::SearchResult result;
    const double median = timed(cluster, 5, result);
    std::printf("search, %3d devices of 4 types: %7.2f ms (median of 5, %d candidates priced)", devices, median * 1e3,
                result.considered);
    if (!result.planned.empty()) {
      const auto check = planner::checkLocalPrograms(result.planned.front(), shape, cluster, request, 20);
      std::printf("; best candidate's local programs: %s", check.text.c_str());
    }
    std::printf("\n");
  }
  // Cluster scale (HexiSeq names thousands of GPUs as its open problem): up to 1024 devices of
  // 8 types.
  for (int devices : {256, 512, 1024}) {
    if (quick)
      break;
    const planner::Cluster cluster = syntheticCluster(devices, 8);
    planner::SearchResult result;
    const double median = timed(cluster, 3, result);
    std::printf("search, %4d devices of 8 types: %7.2f ms (median of 3, %d candidates priced; best: %s)\n", devices,
                median * 1e3, result.considered,
                result.planned.empty() ? "none" : result.planned.front().strategy.c_str());
  }
}

} // namespace

int main(int argc, char **argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const bool speedOnly = argc > 1 && std::strcmp(argv[1], "--speed") == 0;
  const bool contextOnly = argc > 1 && std::strcmp(argv[1], "--context") == 0;
  const bool precisionOnly = argc > 1 && std::strcmp(argv[1], "--precision") == 0;
  if (precisionOnly) {
    precisionComparison(false);
    return 0;
  }
  if (!speedOnly)
    runSettings(quick, contextOnly);
  if (contextOnly)
    return 0;
  if (!speedOnly)
    precisionComparison(quick);
  searchSpeed(quick);
  return 0;
}
