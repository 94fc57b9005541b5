// Search.cpp - the planner's global search (planner/Search.h): candidate strategies built per
// family (pipelines per device type or over all devices; context- and head-parallel groups,
// planned and symmetric), each priced by the analytic model of SearchModel.h, the best of each
// family kept.
#include "planner/Search.h"

#include "planner/SearchModel.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>

namespace hspmd::planner {

using namespace search;

namespace {

// ---- candidate builders ---------------------------------------------------------------

// At most this many micro-batches a pipeline: more barely shorten the pipeline's bubble, but
// every device's program grows with them (a step of 256 micro-batches of a 7B model compiles
// to programs of tens of GB).
constexpr int64_t kMaxPlannedMicrobatches = 64;

// The largest divisor of n that is at most kMaxPlannedMicrobatches.
int64_t cappedMicrobatches(int64_t n) {
  for (int64_t m = std::min(n, kMaxPlannedMicrobatches); m > 1; --m)
    if (n % m == 0)
      return m;
  return 1;
}

// Micro-batches per pipeline: the divisor of its sequences per data-parallel replica whose
// estimated step is shortest (more fill the pipeline; fewer send fewer messages and keep
// fewer tiny kernels), preferring those that fit memory. Pipelines with cp or hp shares run
// a micro-batch per sequence, up to kMaxPlannedMicrobatches.
void chooseMicrobatches(Candidate &c, const Context &cx) {
  for (PipelinePlan &pipeline : c.pipelines) {
    const StagePlan &first = pipeline.stages.front();
    if (!first.cp.empty() || !first.hp.empty()) {
      pipeline.microbatches = cappedMicrobatches(pipeline.sequences);
      continue;
    }
    const int64_t perReplica = pipeline.sequences / static_cast<int64_t>(first.devices.size() / first.tp);
    int64_t best = pipeline.microbatches;
    double bestSeconds = std::numeric_limits<double>::infinity();
    bool bestFits = false;
    for (int64_t m = 1; m <= std::min(perReplica, kMaxPlannedMicrobatches); ++m) {
      if (perReplica % m != 0)
        continue;
      pipeline.microbatches = m;
      priced(c, cx);
      if ((c.fits && !bestFits) || (c.fits == bestFits && c.seconds < bestSeconds)) {
        best = m;
        bestSeconds = c.seconds;
        bestFits = c.fits;
      }
    }
    pipeline.microbatches = best;
  }
}

// Prices `candidate`, first without recomputation, then with it when memory is short.
bool finish(Candidate &candidate, const Context &cx, std::vector<Candidate> &out) {
  chooseMicrobatches(candidate, cx);
  priced(candidate, cx);
  if (!candidate.fits && !candidate.recompute)
    return false; // the caller retries with recomputation
  out.push_back(candidate);
  return true;
}

// The cluster's device types, in device order.
std::vector<std::string> deviceTypes(const Cluster &cluster) {
  std::vector<std::string> types;
  for (const auto &d : cluster.devices)
    if (std::find(types.begin(), types.end(), d.type) == types.end())
      types.push_back(d.type);
  return types;
}

// Device sets a strategy may use: all devices (the empty set), and each type alone when there
// are several.
std::vector<std::set<std::string>> typeSubsets(const std::vector<std::string> &types) {
  std::vector<std::set<std::string>> subsets = {{}};
  if (types.size() > 1)
    for (const auto &type : types)
      subsets.push_back({type});
  return subsets;
}

// Pipelines per device type (hetero) or one Megatron-style pipeline (symmetric).
void pipelineCandidates(const Context &cx, std::vector<Candidate> &planned, std::vector<Candidate> &symmetric,
                        int &considered) {
  const ModelShape &m = cx.shape;
  const int64_t B = cx.sequences();
  const std::vector<std::string> types = deviceTypes(cx.cluster);
  // Symmetric: over all devices and over each type alone.
  const auto subsets = typeSubsets(types);
  for (const auto &subset : subsets)
    for (int t : tpDegrees(cx)) {
      const auto groups = tpGroups(cx.cluster, subset, t);
      const int64_t G = static_cast<int64_t>(groups.size());
      for (int64_t p = 1; p <= std::min<int64_t>(G, m.layers); ++p) {
        if (G % p != 0 || B % (G / p) != 0)
          continue;
        const int64_t dp = G / p;
        for (bool recompute : {false, true}) {
          ++considered;
          Candidate c;
          c.symmetric = true;
          c.recompute = recompute;
          c.zero = dp > 1;
          PipelinePlan pipeline{"main", B, B / dp, {}};
          for (int64_t s = 0; s < p; ++s) {
            StagePlan stage;
            stage.tp = t;
            for (int64_t g = s * dp; g < (s + 1) * dp; ++g)
              stage.devices.insert(stage.devices.end(), groups[static_cast<size_t>(g)].begin(),
                                   groups[static_cast<size_t>(g)].end());
            pipeline.stages.push_back(stage);
          }
          assignLayers(cx, pipeline, recompute, c.zero, 1, true);
          c.pipelines.push_back(pipeline);
          c.family = "pipeline";
          c.strategy = "symmetric: " + std::string(subset.empty() ? "all devices" : *subset.begin() + " only") +
                       ", one pipeline of " + std::to_string(p) + (p == 1 ? " stage" : " equal stages") + ", tp " +
                       std::to_string(t) + " dp " + std::to_string(dp);
          if (finish(c, cx, symmetric))
            break;
        }
      }
    }
  // Hetero: one pipeline over every TP group of the cluster, in device order, layers split
  // by speed and memory.
  for (int t : tpDegrees(cx)) {
    const auto groups = tpGroups(cx.cluster, {}, t);
    if (types.size() < 2 || groups.size() < 2 || static_cast<int64_t>(groups.size()) > m.layers)
      continue;
    for (bool recompute : {false, true}) {
      ++considered;
      Candidate c;
      c.recompute = recompute;
      c.family = "one pipeline";
      PipelinePlan pipeline{"main", B, B, {}};
      for (const auto &g : groups)
        pipeline.stages.push_back(StagePlan{g, t, 0, 0, false, false, {}, {}});
      if (!assignLayers(cx, pipeline, recompute, false, 1, false))
        continue;
      c.pipelines.push_back(pipeline);
      c.strategy = "one pipeline of " + std::to_string(groups.size()) + " stages tp " + std::to_string(t) +
                   " over all devices, layers by speed";
      if (finish(c, cx, planned))
        break;
    }
  }
  // Hetero: per type, options (tp t, k pipelines of p stages); the best few per type by their
  // own throughput, then every combination, sizes from the local programs.
  struct Option {
    int t = 1;
    int64_t k = 1, p = 1;
    double rate = 0; // sequences per second, alone
  };
  std::map<std::string, std::vector<Option>> options;
  for (const auto &type : types)
    for (int t : tpDegrees(cx)) {
      const auto groups = tpGroups(cx.cluster, {type}, t);
      const int64_t G = static_cast<int64_t>(groups.size());
      for (int64_t k = 1; k <= G; ++k) {
        if (G % k != 0 || G / k > m.layers)
          continue;
        Option o{t, k, G / k, 0};
        PipelinePlan pipeline{"x", 1, 1, {}};
        for (int64_t s = 0; s < o.p; ++s)
          pipeline.stages.push_back(StagePlan{groups[static_cast<size_t>(s)], t, 0, 0, false, false, {}, {}});
        if (!assignLayers(cx, pipeline, true, true, static_cast<int>(k), false))
          continue;
        double slowest = 0;
        for (size_t s = 0; s < pipeline.stages.size(); ++s) {
          const StageCost c = stageCost(cx, pipeline.stages[s], true, true, 1, 1, static_cast<int>(k), -1);
          slowest = std::max(slowest, static_cast<double>(pipeline.stages[s].layerEnd - pipeline.stages[s].layerBegin) *
                                              c.layerSeconds +
                                          c.fixedSeconds);
        }
        // Pipelines beyond the batch's sequences get none (the batch program leaves them out).
        const double working = static_cast<double>(std::min(k, B));
        const double perPipeline = static_cast<double>(std::max<int64_t>(1, B / k));
        o.rate = working * perPipeline / ((perPipeline + static_cast<double>(o.p) - 1) * slowest);
        options[type].push_back(o);
      }
      auto &list = options[type];
      std::sort(list.begin(), list.end(), [](const Option &a, const Option &b) { return a.rate > b.rate; });
      if (list.size() > 3)
        list.resize(3);
    }
  std::vector<std::string> usable;
  for (const auto &type : types)
    if (!options[type].empty())
      usable.push_back(type);
  if (usable.empty())
    return;
  // Each type's TP groups, once (the combinations below ask for them thousands of times).
  std::map<std::pair<std::string, int>, std::vector<std::vector<int>>> groupsOf;
  for (const auto &type : usable)
    for (const Option &o : options[type])
      groupsOf.try_emplace({type, o.t}, tpGroups(cx.cluster, {type}, o.t));
  // A type's pipelines under one of its options, their layers assigned and their inputs to
  // the batch program priced: they depend on the option, recomputation and the number of
  // pipelines in all (replicas share the optimizer state and the gradients), not on the other
  // types' options, so each is built once however many combinations take it (3^8 of them at 8
  // types).
  struct TypePipelines {
    bool ok = true;
    std::vector<PipelinePlan> pipelines;
    BatchInputs in;
    std::string type;
    Option option;
  };
  std::map<std::tuple<size_t, size_t, bool, int>, TypePipelines> built;
  auto typePipelines = [&](size_t i, size_t option, bool recompute, int total) -> const TypePipelines & {
    const auto key = std::make_tuple(i, option, recompute, total);
    if (auto it = built.find(key); it != built.end())
      return it->second;
    TypePipelines b;
    const Option &o = options[usable[i]][option];
    const auto &groups = groupsOf.at({usable[i], o.t});
    b.type = usable[i];
    b.option = o;
    for (int64_t j = 0; j < o.k && b.ok; ++j) {
      PipelinePlan pipeline{usable[i] + std::to_string(j), 1, 1, {}};
      for (int64_t s = 0; s < o.p; ++s)
        pipeline.stages.push_back(StagePlan{groups[static_cast<size_t>(j * o.p + s)], o.t, 0, 0, false, false, {}, {}});
      b.ok = assignLayers(cx, pipeline, recompute, true, total, false);
      b.pipelines.push_back(std::move(pipeline));
    }
    if (b.ok)
      b.in = batchInputs(cx, b.pipelines, recompute, true, total);
    return built.emplace(key, std::move(b)).first->second;
  };
  std::vector<size_t> pick(usable.size(), 0);
  for (;;) {
    for (bool recompute : {false, true}) {
      ++considered;
      Candidate c;
      c.recompute = recompute;
      c.zero = true;
      int total = 0;
      for (size_t i = 0; i < usable.size(); ++i)
        total += static_cast<int>(options[usable[i]][pick[i]].k);
      std::vector<const TypePipelines *> parts;
      bool ok = true;
      for (size_t i = 0; i < usable.size() && ok; ++i) {
        parts.push_back(&typePipelines(i, pick[i], recompute, total));
        ok = parts.back()->ok;
      }
      if (!ok)
        continue;
      // Sequences per pipeline (the other local program).
      BatchInputs in;
      std::string strategy;
      for (const TypePipelines *part : parts) {
        in.stages.insert(in.stages.end(), part->in.stages.begin(), part->in.stages.end());
        in.tau.insert(in.tau.end(), part->in.tau.begin(), part->in.tau.end());
        in.after.insert(in.after.end(), part->in.after.begin(), part->in.after.end());
        in.most.insert(in.most.end(), part->in.most.begin(), part->in.most.end());
      }
      const BatchSplit split = splitBatch(B, in.stages, in.tau, in.after, in.most);
      if (!split.feasible)
        continue;
      size_t at = 0;
      for (const TypePipelines *part : parts) {
        int64_t used = 0;
        for (const PipelinePlan &pipeline : part->pipelines)
          if (const int64_t sequences = split.sequences[at++]; sequences > 0) {
            c.pipelines.push_back(pipeline);
            c.pipelines.back().sequences = c.pipelines.back().microbatches = sequences;
            ++used;
          }
        // What the plan runs: pipelines the batch leaves without sequences are not in it.
        const Option &o = part->option;
        strategy += (strategy.empty() ? "" : "; ") + part->type + ": ";
        if (used == 0)
          strategy += "none";
        else
          strategy += (used < o.k ? std::to_string(used) + " of " : std::string()) + std::to_string(o.k) +
                      (o.k == 1 ? " pipeline of " : " pipelines of ") + std::to_string(o.p) +
                      (o.p == 1 ? " stage" : " stages") + " tp " + std::to_string(o.t);
      }
      c.family = "pipelines per type";
      c.strategy = "pipelines per type: " + strategy;
      if (finish(c, cx, planned))
        break;
    }
    size_t i = 0;
    while (i < pick.size() && ++pick[i] == options[usable[i]].size())
      pick[i++] = 0;
    if (i == pick.size())
      break;
  }
}

// One context-parallel (or head-parallel) group of TP groups, single stage.
void contextCandidates(const Context &cx, std::vector<Candidate> &planned, std::vector<Candidate> &symmetric,
                       int &considered) {
  const ModelShape &m = cx.shape;
  const int64_t S = cx.request.sequence, B = cx.sequences();
  const std::vector<std::string> types = deviceTypes(cx.cluster);
  const auto subsets = typeSubsets(types);
  const int64_t block = contextBlock(S), blocks = S / block;
  for (const auto &subset : subsets)
    for (int t : tpDegrees(cx)) {
      auto groups = tpGroups(cx.cluster, subset, t);
      const int64_t G = static_cast<int64_t>(groups.size());
      if (G < 2 || G > blocks)
        continue;
      // Slower groups first: the early positions cost least.
      std::stable_sort(groups.begin(), groups.end(),
                       [&](const auto &a, const auto &b) { return cx.slowest(a) < cx.slowest(b); });
      StagePlan base;
      base.tp = t;
      base.layerEnd = m.layers;
      base.first = base.last = true;
      for (const auto &g : groups)
        base.devices.insert(base.devices.end(), g.begin(), g.end());
      const std::string where = subset.empty() ? "all devices" : *subset.begin() + " only";
      const int64_t headUnit = static_cast<int64_t>(t) * (m.heads / m.kvHeads);
      for (int kind = 0; kind < 4; ++kind) { // cp equal, cp planned, hp equal, hp planned
        const bool hp = kind >= 2, equal = kind % 2 == 0;
        if (!subset.empty() && !equal && types.size() > 1)
          continue; // one type: the planned split is the equal one
        StagePlan stage = base;
        if (!hp && equal) {
          for (int64_t g = 0; g < G; ++g)
            stage.cp.push_back((blocks / G + (g < blocks % G ? 1 : 0)) * block);
        } else if (!hp) {
          const ContextPlan shares = planContextSharesFast(shareDevices(cx, base), S, block, contextCost(cx));
          if (!shares.error.empty())
            continue;
          stage.cp = shares.lengths;
        } else if (m.heads % (G * headUnit) == 0 && equal) {
          for (int64_t g = 0; g < G; ++g) {
            stage.hp.push_back(m.heads / G);
            stage.cp.push_back((blocks / G + (g < blocks % G ? 1 : 0)) * block);
          }
        } else if (!equal && m.heads % headUnit == 0) {
          std::vector<double> headSeconds, blockSeconds;
          headInputs(cx, base, block, headSeconds, blockSeconds);
          const HeadSplit split = splitHeads(m.heads, headUnit, blocks, headSeconds, blockSeconds);
          if (!split.feasible)
            continue;
          stage.hp = split.heads;
          for (int64_t b : split.blocks)
            stage.cp.push_back(b * block);
        } else {
          continue;
        }
        // A group with nothing to do is left out.
        const StagePlan kept = withoutIdleGroups(stage);
        if (kept.devices.size() / static_cast<size_t>(t) < 2)
          continue;
        for (bool recompute : {false, true}) {
          ++considered;
          Candidate c;
          c.symmetric = equal;
          c.recompute = recompute;
          c.zero = true;
          c.pipelines.push_back(PipelinePlan{"main", B, B, {kept}});
          c.family = hp ? "head" : "context";
          c.strategy = std::string(equal ? "symmetric: " : "") + (hp ? "head" : "context") + "-parallel group of " +
                       std::to_string(kept.devices.size() / static_cast<size_t>(t)) + " x tp " + std::to_string(t) +
                       " (" + where + ")" + (equal ? ", equal shares" : ", shares from the local program");
          if (finish(c, cx, equal ? symmetric : planned))
            break;
        }
      }
    }
}

} // namespace

SearchResult searchPlans(const ModelShape &shape, const Cluster &cluster, const PlanRequest &request, size_t limit) {
  SearchResult result;
  const Context cx(shape, cluster, request);
  pipelineCandidates(cx, result.planned, result.symmetric, result.considered);
  contextCandidates(cx, result.planned, result.symmetric, result.considered);
  // The best `limit` of each family: the analytic model ranks within a family better than
  // across families, whose communication it prices more roughly.
  for (auto *list : {&result.planned, &result.symmetric}) {
    std::stable_sort(list->begin(), list->end(), [](const Candidate &a, const Candidate &b) {
      return a.fits != b.fits ? a.fits : a.seconds < b.seconds;
    });
    std::map<std::string, size_t> kept;
    std::vector<Candidate> best;
    for (Candidate &c : *list)
      if (kept[c.family]++ < limit)
        best.push_back(std::move(c));
    *list = std::move(best);
  }
  return result;
}

} // namespace hspmd::planner
