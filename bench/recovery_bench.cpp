// bench_recovery: what surviving a device's death costs on this CPU (docs/elastic.md), against
// checkpoint-and-restart, measured in one run.
//
// For each case a run of 8 steps on the threads backend loses a device at the start of the
// forward pass of step 5 and goes on under a recovery plan. Measured in that run: the
// agreement, planning the move, the move, and the redone step (the step's time after the
// death, which includes the interrupted step's lost work). Compiling the recovery plan (done
// before the run by hspmc train) is measured apart, and so is --recover auto's re-plan: the
// planner's plan for the live devices (planner/driver/Replan.h), then compiling it.
//
// Checkpoint-and-restart, with a checkpoint every K steps (K = 10, 50): a failure at a
// uniformly random step loses (K - 1) / 2 steps on average, plus the restart: compiling the
// plan again and loading the checkpoint (measured: ParameterStore::save and load of the same
// state). Process start-up and a scheduler's reaction are not counted, which favours restart.
//
//   build/bench/bench_recovery
#include "bench/Compiled.h"
#include "planner/driver/Replan.h"
#include "runtime/ParameterStore.h"
#include "runtime/Run.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <unistd.h>

using namespace hspmd;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::unique_ptr<bench::Compiled> compile(const std::string &relative) {
  return bench::compilePlan(std::string(HSPMD_SOURCE_DIR) + "/" + relative);
}

struct Case {
  std::string plan, recovery;
  int device;
};

} // namespace

int main() {
  const std::vector<Case> cases = {
      {"examples/gpt/plans/hetero4.hspmd", "examples/gpt/plans/pipeline2_recompute.hspmd", 3},
      {"examples/gpt/plans/dp2_tp2.hspmd", "examples/gpt/plans/tp2.hspmd", 2},
      {"examples/llama/plans/tiny_llama_hetero4.hspmd", "examples/llama/plans/tiny_llama_dp2_zero.hspmd", 2},
      {"bench/plans/wide_dp2.hspmd", "bench/plans/wide_single.hspmd", 1}};
  const std::string checkpoint =
      (std::filesystem::temp_directory_path() / ("hspmd_bench_recovery_" + std::to_string(::getpid()))).string();
  std::printf(
      "in-place recovery (threads; a device dies at the start of step 5 of 8) against checkpoint-and-restart\n");
  for (const Case &c : cases) {
    auto run = compile(c.plan), recovery = compile(c.recovery);
    runtime::RunPlans plans{{&run->programs(), &recovery->programs()}, {}, {1}, {"run", "recovery"}};
    runtime::RunOptions options;
    options.steps = 8;
    options.data = HSPMD_SOURCE_DIR "/examples/data/gpl-3.txt";
    options.faults.push_back({5, c.device, runtime::FaultPhase::Forward, 1, {}});
    options.save = checkpoint;
    const runtime::RunResult failed = runtime::runThreads(plans, run->model, options);
    if (failed.recoveries.size() != 1) {
      std::fprintf(stderr, "bench_recovery: %s did not recover once\n", c.plan.c_str());
      return 1;
    }
    const runtime::RunResult::Recovery &r = failed.recoveries[0];
    // Steps 1-4 and 6-8 ran normally (6-8 under the recovery plan); step 5 was interrupted and redone.
    double before = 0, after = 0;
    for (size_t i = 0; i < 4; ++i)
      before += failed.stepSeconds[i] / 4;
    for (size_t i = 5; i < 8; ++i)
      after += failed.stepSeconds[i] / 3;
    const double redone = failed.stepSeconds[4];
    // Restart: load the checkpoint (and save it, as a run that checkpoints does every K steps).
    const std::string fingerprint = runtime::ParameterStore::fingerprint(run->model.name, run->model.params);
    auto start = Clock::now();
    const runtime::ParameterStore store = runtime::ParameterStore::load(checkpoint, fingerprint);
    const double load = since(start);
    start = Clock::now();
    store.save(checkpoint);
    const double save = since(start);
    std::filesystem::remove(checkpoint);
    const double inPlace = r.agreeSeconds + r.planSeconds + r.moveSeconds + redone;
    std::printf("  %s -> %s (device %d dies): agree %.2f ms, plan %.2f ms, move %.2f ms, step 5 with the redo %.1f ms "
                "(a step %.1f ms before, %.1f ms after); compile the recovery plan %.0f ms\n",
                run->build->plans[0].name.c_str(), recovery->build->plans[0].name.c_str(), c.device,
                r.agreeSeconds * 1e3, r.planSeconds * 1e3, r.moveSeconds * 1e3, redone * 1e3, before * 1e3, after * 1e3,
                recovery->seconds * 1e3);
    // --recover auto: the planner for the live devices, then the compiler.
    std::vector<int> live;
    for (const auto &[d, program] : run->programs())
      if (d != c.device)
        live.push_back(d);
    start = Clock::now();
    const driver::SurvivorPlan replanned = driver::planForSurvivors(
        run->build->plans[0], run->compilation, run->model.batch, run->model.seq, live, checkpoint + "_replan");
    const double replan = since(start);
    if (!replanned.error.empty()) {
      std::fprintf(stderr, "bench_recovery: --recover auto for %s: %s\n", c.plan.c_str(), replanned.error.c_str());
      return 1;
    }
    auto compiledReplan = bench::compilePlan(replanned.path);
    std::filesystem::remove_all(checkpoint + "_replan");
    std::printf("    --recover auto instead: planned in %.0f ms (%s), compiled in %.0f ms; with this run's "
                "agreement and move (to the fixed plan): %.0f ms\n",
                replan * 1e3, replanned.strategy.c_str(), compiledReplan->seconds * 1e3,
                (r.agreeSeconds + replan + compiledReplan->seconds + r.planSeconds + r.moveSeconds) * 1e3);
    std::printf("    in place: 0 steps lost, %.1f ms lost (%.2f steps)", (inPlace - after) * 1e3,
                (inPlace - after) / after);
    for (int k : {10, 50}) {
      const double restart = recovery->seconds + load + (k - 1) / 2.0 * after;
      std::printf("; restart every %d: %.1f steps lost, %.1f ms (%.0fx), saving %.1f ms per checkpoint", k,
                  (k - 1) / 2.0, restart * 1e3, restart / std::max(1e-9, inPlace - after), save * 1e3);
    }
    std::printf("\n");
  }
  return 0;
}
