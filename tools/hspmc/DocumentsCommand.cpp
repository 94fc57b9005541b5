// DocumentsCommand.cpp - hspmc simulate PLAN|SET --documents LENGTHS: a corpus of documents
// of these lengths trained once over, priced on the cluster's cost model, by strategy:
// padded (a document a sequence) and packed (several, block-diagonal masks) under one plan,
// and with a plan set a plan per step by its longest document (docs/mixed-lengths.md).
#include "tools/hspmc/Commands.h"

#include "planner/Estimates.h"
#include "planner/PlanSet.h"
#include "planner/Simulator.h"
#include "planner/driver/ModelInfo.h"
#include "runtime/Documents.h"
#include "runtime/Executor.h"
#include "runtime/Run.h"
#include "runtime/Switch.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>

namespace hspmd::cli {

namespace {

// A plan of the run, compiled for the cluster, with its step simulated at the two ends of
// attention's density (no pair computed, every pair), for each set of micro-batches skipped
// (padding only): a step in between is priced on the line through them.
struct PricedPlan {
  std::unique_ptr<TrainingBuild> build;
  std::string name;
  int64_t batch = 0, seq = 0;
  planner::CostModel model;
  std::map<std::vector<uint8_t>, std::pair<double, double>> ends; // by micro-batches skipped

  double stepSeconds(double density, const std::vector<uint8_t> &skip) {
    auto [known, fresh] = ends.try_emplace(skip);
    if (fresh) {
      planner::CostModel at = model;
      at.skipMicrobatch = skip;
      at.attentionDensity = 0;
      known->second.first = planner::simulate(build->programs(), at).stepSeconds;
      at.attentionDensity = 1;
      known->second.second = planner::simulate(build->programs(), at).stepSeconds;
    }
    return known->second.first + density * (known->second.second - known->second.first);
  }
};

// The fraction of its rows' causal query-key pairs that the documents' blocks hold, in the
// pipeline where it is highest (the slowest, the others waiting for it at the gradients'
// reduction; a pipeline's rows are its speed): the step is priced at that density on every
// device, each pipeline's micro-batches taken as alike.
double density(const runtime::DocumentSteps::Step &step, const runtime::DocumentShape &shape) {
  std::vector<runtime::PipelineRows> pipelines = shape.pipelines;
  if (pipelines.empty())
    pipelines.push_back({0, 1, shape.batch});
  const double rowPairs = static_cast<double>(shape.seq) * static_cast<double>(shape.seq + 1) / 2;
  double highest = 0;
  for (const runtime::PipelineRows &pipeline : pipelines) {
    double pairs = 0;
    for (const auto &piece : step.pieces)
      if (piece.row >= pipeline.start && piece.row < pipeline.start + pipeline.microbatches * pipeline.size)
        pairs += static_cast<double>(piece.length) * static_cast<double>(piece.length + 1) / 2;
    highest = std::max(highest, pairs / (static_cast<double>(pipeline.microbatches * pipeline.size) * rowPairs));
  }
  return highest;
}

struct Outcome {
  int64_t steps = 0, switches = 0;
  double tokens = 0, stepSeconds = 0, switchSeconds = 0;
};

} // namespace

int runSimulateDocuments(const std::string &file, const std::string &clusterFile, const std::string &lengthsPath,
                         int64_t tokens, bool balanced) {
  auto fail = [](const std::string &message) {
    std::cerr << "hspmc simulate: error: " << message << "\n";
    return 1;
  };
  std::vector<std::string> files = {file};
  if (planner::isPlanSet(file)) {
    std::vector<planner::ClusterError> errors;
    const auto set = planner::readPlanSet(file, errors);
    for (const auto &error : errors)
      std::cerr << error.loc.str() << ": error: " << error.message << "\n";
    if (!set)
      return 1;
    files = set->plans;
  }
  // Every plan compiled for one cluster: --cluster, or the first plan's (which the others
  // must name too).
  std::vector<PricedPlan> plans;
  std::optional<planner::Cluster> cluster;
  std::string firstCluster;
  for (const std::string &path : files) {
    PricedPlan priced;
    priced.build = std::make_unique<TrainingBuild>(
        path, std::vector<std::string>{}, files.size() > 1 || path != file ? "simulate a plan set" : "simulate", true,
        clusterFile);
    TrainingBuild &t = *priced.build;
    if (!cluster) {
      cluster = t.simulationCluster(clusterFile);
      if (t.hasPlan())
        firstCluster = t.plan().clusterPath;
    } else if (clusterFile.empty() && t.hasPlan()) {
      std::error_code ignored;
      if (!std::filesystem::equivalent(t.plan().clusterPath, firstCluster, ignored)) {
        t.diags.error(t.plan().loc, "the plan names cluster " +
                                        (t.plan().clusterPath.empty() ? "none" : "'" + t.plan().clusterPath + "'") +
                                        ", the set's first plan '" + firstCluster +
                                        "': a plan set is simulated on one cluster (pass --cluster FILE)");
        t.checked = false; // not compiled: its devices may be none of that cluster's
      }
    }
    if (cluster)
      t.compileOn(*cluster); // a plan of another cluster: its devices must be in this one
    if (int code = t.report(); code != 0)
      return code;
    const runtime::ModelInfo info = driver::modelInfo(*t.build->graph);
    priced.name = t.plan().name;
    priced.batch = info.batch;
    priced.seq = info.seq;
    for (const PricedPlan &other : plans)
      if (other.seq == priced.seq)
        return fail(file + ": plans '" + other.name + "' and '" + priced.name + "' both take sequences of " +
                    std::to_string(priced.seq) + ": a length bucket has one plan");
    priced.model = planner::costModel(*cluster);
    plans.push_back(std::move(priced));
  }
  std::vector<int64_t> lengths;
  if (!driver::readLengths(lengthsPath, 0, "", lengths, std::cerr))
    return 1;
  const runtime::Documents documents = runtime::Documents::fromLengths(lengths);
  std::cout << "documents: " << runtime::describeDocuments(documents) << " (" << lengthsPath
            << "), trained once over on cluster '" << cluster->name << "'" << std::endl;

  // One pass over the corpus under `shapes` (indices into `plans`), each step priced under its
  // plan, a change of plan priced as the move of the state on the cluster's links.
  const passes::LinkModel links = planner::linkModel(*cluster);
  runtime::SwitchLinks switchLinks;
  switchLinks.bandwidth = links.bandwidth;
  switchLinks.sameNode = links.sameNode;
  switchLinks.alpha = links.alpha;
  std::map<std::pair<size_t, size_t>, double> moves;
  // Per micro-batch, plans hand the state over in each device's memory: a copy at its
  // memory bandwidth, the slowest device's.
  planner::CostModel costs = planner::costModel(*cluster);
  auto copySeconds = [&](size_t from, size_t to, bool parametersOnly) {
    double slowest = 0;
    for (const auto &[device, program] : plans[to].build->programs()) {
      double bytes = 0;
      for (const ir::Buffer &b : program.buffers)
        if (b.role == ir::BufferRole::Parameter || (!parametersOnly && b.role == ir::BufferRole::State))
          bytes += static_cast<double>(b.bytes());
      slowest = std::max(slowest, 2 * bytes / costs.memoryBandwidth(device));
    }
    (void)from;
    return slowest;
  };
  auto pass = [&](const std::vector<size_t> &which, runtime::DocumentLayout layout, bool dense, bool perMicroBatch) {
    std::vector<runtime::DocumentShape> shapes;
    for (size_t k : which)
      shapes.push_back(runtime::documentShape(plans[k].build->programs(), plans[k].batch, plans[k].seq));
    runtime::DocumentSteps steps(documents, shapes,
                                 {0, tokens, layout,
                                  balanced ? runtime::DocumentSchedule::Balanced : runtime::DocumentSchedule::InOrder,
                                  perMicroBatch});
    Outcome out;
    out.steps = steps.prepareOnePass();
    size_t previous = which[steps.step(0).shape];
    for (int64_t s = 0; s < out.steps; ++s) {
      const auto &step = steps.step(s);
      out.tokens += static_cast<double>(step.tokens);
      for (size_t shape : step.shapes) {
        PricedPlan &plan = plans[which[shape]];
        runtime::DocumentSteps::Step part;
        runtime::Batch rows; // which rows hold documents: the micro-batches that run
        rows.realRows.assign(static_cast<size_t>(plan.batch), 0);
        for (const auto &piece : step.pieces)
          if (piece.shape == shape) {
            part.pieces.push_back(piece);
            rows.realRows[static_cast<size_t>(piece.row)] = 1;
          }
        runtime::skipEmptyMicrobatches(rows, plan.build->programs());
        out.stepSeconds += plan.stepSeconds(dense ? 1.0 : density(part, shapes[shape]), rows.skipMicrobatch);
        if (perMicroBatch && shape != step.shape) { // its parameters from the holder's
          out.switchSeconds += copySeconds(which[step.shape], which[shape], true);
          ++out.switches;
        }
      }
      const size_t now = which[step.shape];
      if (now != previous) {
        if (perMicroBatch) {
          out.switchSeconds += copySeconds(previous, now, false);
        } else {
          auto [known, fresh] = moves.try_emplace({previous, now}, 0.0);
          if (fresh)
            known->second =
                runtime::planSwitch(plans[previous].build->programs(), plans[now].build->programs(), switchLinks)
                    .seconds;
          out.switchSeconds += known->second;
        }
        ++out.switches;
        previous = now;
      }
    }
    return out;
  };
  // Per micro-batch needs plans that hold the state alike (runtime::sameStateLayout).
  std::string unlike;
  for (size_t k = 1; k < plans.size() && unlike.empty(); ++k)
    for (const auto &[device, program] : plans[0].build->programs()) {
      auto other = plans[k].build->programs().find(device);
      unlike = other == plans[k].build->programs().end() ? "device " + std::to_string(device) + " is in one plan only"
                                                         : runtime::sameStateLayout(program, other->second);
      if (!unlike.empty()) {
        unlike = "'" + plans[0].name + "' and '" + plans[k].name + "' do not hold the state alike: " + unlike;
        break;
      }
    }
  // One plan: the one of the longest sequences.
  const size_t longest = static_cast<size_t>(
      std::max_element(plans.begin(), plans.end(), [](const auto &a, const auto &b) { return a.seq < b.seq; }) -
      plans.begin());
  std::vector<size_t> all(plans.size());
  for (size_t k = 0; k < plans.size(); ++k)
    all[k] = k;
  struct Row {
    std::string name;
    Outcome outcome;
  };
  const std::string one = " (" + plans[longest].name + ", " + std::to_string(plans[longest].batch) + " x " +
                          std::to_string(plans[longest].seq) + ")";
  std::vector<Row> rows;
  try {
    rows.push_back({"padded, one plan" + one, pass({longest}, runtime::DocumentLayout::Padded, true, false)});
    rows.push_back({"packed, one plan" + one, pass({longest}, runtime::DocumentLayout::Packed, false, false)});
    if (plans.size() > 1) {
      rows.push_back({"per step, " + std::to_string(plans.size()) + " plans (Hetu)",
                      pass(all, runtime::DocumentLayout::Packed, false, false)});
      if (unlike.empty())
        rows.push_back({"per micro-batch, " + std::to_string(plans.size()) + " plans (hspmd)",
                        pass(all, runtime::DocumentLayout::Packed, false, true)});
    }
  } catch (const std::exception &e) { // DataError, SwitchError
    return fail(lengthsPath + ": " + e.what());
  }
  char line[300];
  std::snprintf(line, sizeof line, "%-44s %7s %17s %11s %12s %10s  %s\n", "strategy", "steps", "real tokens/step",
                "mean step", "tokens/s", "vs padded", "switches");
  std::cout << line;
  auto rate = [](const Outcome &o) { return o.tokens / (o.stepSeconds + o.switchSeconds); };
  for (const Row &row : rows) {
    const Outcome &o = row.outcome;
    char moved[80] = "-";
    if (o.switches > 0)
      std::snprintf(moved, sizeof moved, "%lld, %.1f ms", static_cast<long long>(o.switches), o.switchSeconds * 1e3);
    std::snprintf(line, sizeof line, "%-44s %7lld %17.0f %8.3f ms %12.0f %9.2fx  %s\n", row.name.c_str(),
                  static_cast<long long>(o.steps), o.tokens / static_cast<double>(o.steps),
                  1e3 * o.stepSeconds / static_cast<double>(o.steps), rate(o), rate(o) / rate(rows.front().outcome),
                  moved);
    std::cout << line;
  }
  if (plans.size() == 1)
    std::cout << "per step and per micro-batch: FILE is one plan (a plan set has a plan per length bucket)\n";
  else if (!unlike.empty())
    std::cout << "per micro-batch: not possible with these plans (" << unlike << ")\n";
  return 0;
}

} // namespace hspmd::cli
