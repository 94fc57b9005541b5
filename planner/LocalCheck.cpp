// LocalCheck.cpp - the finalists' local programs checked and refined with COIN-OR CBC
// (planner/Search.h: refineLocalPrograms, checkLocalPrograms), on the search's analytic
// model (SearchModel.h).
#include "planner/Search.h"

#include "planner/SearchModel.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hspmd::planner {

using namespace search;

bool refineLocalPrograms(Candidate &candidate, const ModelShape &shape, const Cluster &cluster,
                         const PlanRequest &request, double timeLimitSeconds) {
  if (candidate.symmetric || candidate.pipelines.size() != 1 || candidate.pipelines[0].stages.size() != 1)
    return false;
  StagePlan &stage = candidate.pipelines[0].stages[0];
  if (stage.hp.empty())
    return false; // the other local programs' fast algorithms are exact
  const Context cx(shape, cluster, request);
  const int64_t block = contextBlock(request.sequence);
  std::vector<double> headSeconds, blockSeconds;
  headInputs(cx, stage, block, headSeconds, blockSeconds);
  const int64_t unit = static_cast<int64_t>(stage.tp) * (shape.heads / shape.kvHeads);
  const HeadSplit exact =
      splitHeadsExact(shape.heads, unit, request.sequence / block, headSeconds, blockSeconds, timeLimitSeconds);
  double current = 0;
  for (size_t g = 0; g < headSeconds.size(); ++g)
    current = std::max(current, static_cast<double>(stage.hp[g]) * headSeconds[g] +
                                    static_cast<double>(stage.cp[g] / block) * blockSeconds[g]);
  if (!exact.feasible || exact.seconds >= current * (1 - 1e-9))
    return false;
  // CBC balances computation; keep its answer only if the whole estimated step (with
  // communication) is no worse.
  Candidate refined = candidate;
  StagePlan &changed = refined.pipelines[0].stages[0];
  changed.hp = exact.heads;
  for (size_t g = 0; g < exact.blocks.size(); ++g)
    changed.cp[g] = exact.blocks[g] * block;
  changed = withoutIdleGroups(changed);
  if (changed.devices.size() / static_cast<size_t>(changed.tp) < 2)
    return false;
  estimate(refined, shape, cluster, request);
  if (refined.seconds > candidate.seconds || (candidate.fits && !refined.fits))
    return false;
  candidate = refined;
  return true;
}

LocalCheck checkLocalPrograms(const Candidate &candidate, const ModelShape &shape, const Cluster &cluster,
                              const PlanRequest &request, double timeLimitSeconds) {
  const Context cx(shape, cluster, request);
  LocalCheck check;
  auto gapText = [&](const std::string &what, double planned, double exact, bool optimal) {
    check.planned = planned;
    check.exact = exact;
    check.optimal = optimal;
    char line[256];
    std::snprintf(line, sizeof line, "%s: planned %.6g s, CBC %.6g s%s: gap %.2f%%", what.c_str(), planned, exact,
                  optimal ? " (proven optimal)" : " (time limit, best found)", 100 * (planned - exact) / exact);
    check.text = line;
  };
  if (candidate.symmetric) {
    check.text = "none (a symmetric plan: equal parts)";
    return check;
  }
  // The candidate's own answer (what the plan holds) against CBC's optimum.
  const StagePlan &stage = candidate.pipelines.front().stages.front();
  if (!stage.hp.empty()) {
    const int64_t block = contextBlock(request.sequence);
    std::vector<double> headSeconds, blockSeconds;
    headInputs(cx, stage, block, headSeconds, blockSeconds);
    const int64_t unit = static_cast<int64_t>(stage.tp) * (shape.heads / shape.kvHeads);
    double planned = 0;
    for (size_t g = 0; g < headSeconds.size(); ++g)
      planned = std::max(planned, static_cast<double>(stage.hp[g]) * headSeconds[g] +
                                      static_cast<double>(stage.cp[g] / block) * blockSeconds[g]);
    const HeadSplit exact =
        splitHeadsExact(shape.heads, unit, request.sequence / block, headSeconds, blockSeconds, timeLimitSeconds);
    gapText("heads and sequence shares", planned, exact.seconds, exact.optimal);
  } else if (!stage.cp.empty()) {
    const int64_t block = contextBlock(request.sequence);
    const auto devices = shareDevices(cx, stage);
    const ContextPlan exact = planContextShares(devices, request.sequence, block, contextCost(cx), timeLimitSeconds);
    gapText("sequence shares", contextMakespan(devices, stage.cp, contextCost(cx)), exact.makespan, exact.optimal);
  } else {
    std::vector<PipelinePlan> pipelines = candidate.pipelines;
    double worstPlanned = 0, worstExact = 0;
    bool optimal = true;
    for (auto &pipeline : pipelines) {
      const LayerInputs in =
          layerInputs(cx, pipeline, candidate.recompute, candidate.zero, static_cast<int>(pipelines.size()));
      for (size_t st = 0; st < pipeline.stages.size(); ++st)
        worstPlanned =
            std::max(worstPlanned, static_cast<double>(pipeline.stages[st].layerEnd - pipeline.stages[st].layerBegin) *
                                           in.layerSeconds[st] +
                                       in.fixedSeconds[st]);
      const LayerSplit exact = splitLayersExact(shape.layers, in.layerSeconds, in.fixedSeconds, in.maxLayers);
      worstExact = std::max(worstExact, exact.seconds);
      optimal = optimal && exact.optimal;
    }
    gapText("layers per stage (slowest stage)", worstPlanned, worstExact, optimal);
    const std::string layers = check.text;
    const BatchInputs in = batchInputs(cx, pipelines, candidate.recompute, candidate.zero);
    double planned = 0;
    for (size_t i = 0; i < pipelines.size(); ++i)
      planned =
          std::max(planned, static_cast<double>(pipelines[i].sequences + in.stages[i] - 1) * in.tau[i] + in.after[i]);
    const BatchSplit exact = splitBatchExact(cx.sequences(), in.stages, in.tau, in.after, in.most);
    gapText("sequences per pipeline", planned, exact.seconds, exact.optimal);
    check.text = layers + "; " + check.text;
  }
  return check;
}

} // namespace hspmd::planner
