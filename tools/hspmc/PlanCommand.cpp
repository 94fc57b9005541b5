// PlanCommand.cpp - hspmc plan: the planner's search, its finalists simulated, the fastest
// written (planner/driver/PlanModel.h); with --length-distribution, one plan per length bucket.
#include "tools/hspmc/Commands.h"

#include "planner/Search.h"

#include <cstdio>
#include <iostream>

namespace hspmd::cli {

// hspmc plan: the planner's search, its finalists simulated, the fastest written
// (planner/driver/PlanModel.h).
// hspmc plan --length-distribution: one plan per length bucket, and what switching between
// them gains over padding every sequence to --seq.
int runPlanForLengths(const driver::PlanFiles &files, const std::string &lengths) {
  driver::LengthPlan plan;
  if (!driver::planForLengths(files, lengths, plan, std::cerr, std::cerr)) // progress on stderr
    return 1;
  std::printf("\n%10s %10s %8s %12s  %s\n", "positions", "sequences", "tokens", "step", "plan");
  for (const auto &b : plan.buckets)
    std::printf("%10lld %10lld %7.1f%% %9.3f ms  %s\n", static_cast<long long>(b.positions),
                static_cast<long long>(b.sequences), 100 * b.tokens / plan.tokens, b.stepSeconds * 1e3, b.path.c_str());
  std::printf("the distribution (%.0f tokens): %.3f s with a plan per bucket, %.3f s padded to %lld under one plan: "
              "%.2fx\n",
              plan.tokens, plan.bucketedSeconds, plan.paddedSeconds, static_cast<long long>(files.sequence),
              plan.paddedSeconds / plan.bucketedSeconds);
  std::printf("wrote plan set %s: hspmc train %s --data FILE --documents (docs/mixed-lengths.md)\n",
              plan.planSet.c_str(), plan.planSet.c_str());
  // The set trained on documents of these lengths, by strategy (hspmc simulate --documents).
  std::printf("\nthe plan set over documents of these lengths:\n");
  std::fflush(stdout);
  return runSimulateDocuments(plan.planSet, files.cluster, lengths, 0);
}

int runPlan(const driver::PlanFiles &files, bool report) {
  driver::PlanOutcome outcome;
  if (!driver::planModel(files, outcome, std::cerr, std::cerr)) // progress on stderr
    return 1;
  const auto &chosen = *outcome.chosen;
  const double seconds = chosen.simulated.seconds;
  std::printf("wrote %s: %s\n", files.out.c_str(), chosen.candidate.strategy.c_str());
  std::printf("simulated step %.3f ms, %.0f tokens/s", seconds * 1e3, static_cast<double>(files.tokens) / seconds);
  if (outcome.bestSymmetric && outcome.bestSymmetric != &chosen)
    std::printf("; best symmetric plan %.3f ms: %.2fx", outcome.bestSymmetric->simulated.seconds * 1e3,
                outcome.bestSymmetric->simulated.seconds / seconds);
  else if (!outcome.bestSymmetric)
    std::printf("; no symmetric plan fits");
  else
    std::printf("; it is the best symmetric plan");
  std::printf("\n");
  if (report) {
    const planner::PlanRequest request = driver::requestOf(files);
    const planner::LocalCheck check =
        planner::checkLocalPrograms(chosen.candidate, outcome.shape, outcome.cluster, request);
    std::printf("search %.1f ms over %d candidates, simulation of the finalists %.1f s\nlocal programs: %s\n",
                outcome.searchSeconds * 1e3, outcome.considered, outcome.simulateSeconds, check.text.c_str());
  }
  return 0;
}

} // namespace hspmd::cli
