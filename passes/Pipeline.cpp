// Pipeline.cpp - the hspmd compiler, pass after pass. The frontend (frontend/Compilation)
// has already parsed the model and plans and elaborated them into an ir::Graph with its
// parameters and inputs, and each plan into an ir::PlanSpec. From there the passes of
// passTable() run in order, each a function of this file that calls the pass's own header:
//
//   autodiff               passes/Autodiff.h
//   lower-plan             passes/LowerPlan.h
//   deduce-annotations     passes/DeduceAnnotations.h
//   resolve-communication  passes/ResolveCommunication.h
//   verify                 ir/Graph.h (verifyGraph), then the caller's checkPlans (lint's
//                          plan checks in a gate: a plan they reject gets no programs)
//   specialize             passes/ProgramBuilder.h (Specialize.cpp; ops alike, as in identical
//                          layers, stamped from the first of them)
//   recompute              passes/ProgramBuilder.h (Recompute.cpp)
//   optimizer-step         passes/ProgramBuilder.h (OptimizerStep.cpp)
//   schedule-pipeline      passes/ProgramBuilder.h (SchedulePipeline.cpp)
//   plan-memory            passes/PlanMemory.h
//   verify-programs        passes/Specialize.h (verifyPrograms, verifyScheduledStep)
//
// The table is the one list of passes: `hspmc passes` prints it, `hspmc dump-ir --after
// PASS` accepts any of its names (the graph after the graph passes, every DeviceProgram after
// the program passes), `--time-passes` times each, and a test checks docs/cli.md against it.
#include "passes/Pipeline.h"

#include "passes/Autodiff.h"
#include "passes/DeduceAnnotations.h"
#include "passes/LowerPlan.h"
#include "passes/Parallel.h"
#include "passes/PlanMemory.h"
#include "passes/ProgramBuilder.h"
#include "passes/ResolveCommunication.h"
#include "passes/Specialize.h"

#include <chrono>
#include <memory>

namespace hspmd::passes {

namespace {

// What the passes hand one another.
struct State {
  ir::Graph &graph;
  const std::vector<ir::PlanSpec> &specs;
  const PipelineOptions &options;
  ReportFn report; // counts errors into `failed`
  bool failed = false;
  Gradients gradients;
  std::vector<LinkModel> links;                          // per lowered plan: its cluster's links with its pipelines
  std::vector<std::unique_ptr<ProgramBuilder>> builders; // per lowered plan, from specialize to schedule-pipeline
  PipelineResult result;
};

bool differentiate(State &s) {
  if (!s.options.train)
    return true; // an inference build has no backward graph
  if (s.graph.outputs.size() != 1 || s.graph.outputs[0]->type.rank() != 0) {
    s.report(Problem{Severity::Error,
                     s.graph.ops().empty() ? ir::Location{} : s.graph.ops().back()->loc,
                     "HS117",
                     "training needs a model whose forward returns one scalar loss",
                     {},
                     {}});
    return false;
  }
  // Parameters load, checkpoint, switch and update as f32 (ParameterStore holds floats): a
  // parameter the model declares in another type would be read as garbage.
  for (const auto &op : s.graph.ops())
    if (op->kind == ir::OpKind::Param && op->result()->type.dtype != ir::DType::F32) {
      s.report(Problem{Severity::Error,
                       op->loc,
                       "HS121",
                       "training needs f32 parameters, but '" + op->result()->name + "' is " +
                           std::string(ir::dtypeName(op->result()->type.dtype)) +
                           " (for bf16 training say `precision bf16` in the plan: parameters stay f32, activations "
                           "and their messages are bf16)",
                       {},
                       {}});
      return false;
    }
  if (const ir::Value &loss = *s.graph.outputs[0]; loss.type.dtype != ir::DType::F32) {
    // The executors read the loss and seed its gradient as one float: a bf16 loss would be
    // read as garbage and train nothing. `precision bf16` keeps the loss f32 for this reason.
    s.report(Problem{Severity::Error,
                     s.graph.ops().back()->loc,
                     "HS117",
                     "training needs the loss in f32, but the model's forward returns " +
                         std::string(ir::dtypeName(loss.type.dtype)) +
                         " (for bf16 activations say `precision bf16` in the plan: the loss stays f32)",
                     {},
                     {}});
    return false;
  }
  s.gradients = buildGradients(s.graph, s.graph.outputs[0]);
  return true;
}

bool lower(State &s) {
  for (size_t i = 0; i < s.specs.size(); ++i)
    if (auto lowered = lowerPlan(s.graph, s.specs[i], static_cast<int>(i), s.report,
                                 s.options.train ? &s.gradients.origin : nullptr)) {
      for (const auto &[name, grad] : s.gradients.params)
        lowered->gradients[s.graph.findValue(name)] = grad;
      for (const auto &[backward, forward] : s.gradients.origin)
        lowered->backwardOps.insert(backward);
      s.links.push_back(withPipelines(i < s.options.links.size() ? s.options.links[i] : LinkModel{}, *lowered));
      s.links.back().referenceMessages = false; // a collective's groups are what programs need
      s.result.plans.push_back(std::move(*lowered));
    }
  return !s.failed;
}

bool deduce(State &s) {
  s.graph.setNumPlans(static_cast<int>(s.specs.size()));
  for (LoweredPlan &plan : s.result.plans)
    deduceAnnotations(s.graph, plan, s.report);
  return !s.failed;
}

bool resolve(State &s) {
  for (size_t i = 0; i < s.result.plans.size(); ++i)
    resolveCommunication(s.graph, s.result.plans[i], s.links[i], s.report, s.options.threads);
  return !s.failed;
}

bool verify(State &s) {
  const bool ok = ir::verifyGraph(s.graph, [&](const ir::Location &loc, const std::string &message) {
    s.report(Problem{Severity::Error, loc, "HS199", "internal error: " + message, {}, {}});
  });
  // The caller's checks of the deduced plans (lint's, in a gate) before the programs are built.
  return ok && (!s.options.checkPlans || s.options.checkPlans(s.graph, s.result.plans));
}

bool specializeDevices(State &s) {
  for (size_t i = 0; i < s.result.plans.size(); ++i) {
    const bool bf16 = s.options.bf16.value_or(s.result.plans[i].spec && s.result.plans[i].spec->bf16);
    s.builders.push_back(
        std::make_unique<ProgramBuilder>(s.graph, s.result.plans[i], s.links[i], s.options.threads, bf16));
    s.builders.back()->stampAlike(s.options.stamp);
    s.builders.back()->specialize();
    s.result.stampedOps += s.builders.back()->stampedOps();
    s.result.stampableOps += s.builders.back()->stampableOps();
  }
  return !s.failed;
}

bool recompute(State &s) {
  for (auto &builder : s.builders)
    builder->addRecomputation();
  return !s.failed;
}

bool optimizerStep(State &s) {
  for (auto &builder : s.builders) {
    builder->addOptimizerStep();
    s.result.stampedUpdates += builder->stampedUpdates();
    s.result.stampableUpdates += builder->stampableUpdates();
  }
  return !s.failed;
}

bool schedulePipeline(State &s) {
  for (auto &builder : s.builders)
    s.result.programs.push_back(builder->schedulePipeline());
  s.builders.clear();
  return !s.failed;
}

bool planArenas(State &s) {
  std::vector<ir::DeviceProgram *> all;
  for (auto &programs : s.result.programs)
    for (auto &[device, program] : programs)
      all.push_back(&program);
  planMemories(all, s.options.threads);
  return !s.failed;
}

bool verifyDevicePrograms(State &s) {
  bool ok = true;
  for (const auto &programs : s.result.programs) {
    // One pass over each instruction, and the step as the schedule runs it: every
    // micro-batch's forward and backward passes in 1F1B (or GPipe) order, then the update.
    // The two on two threads, their problems kept; the step's reported only where each
    // instruction passed (a mismatched instruction would be reported again in every slot).
    if (s.options.cancelled && s.options.cancelled->load())
      return false; // the expanded step is the long part
    std::vector<Problem> found[2];
    bool passed[2] = {true, true};
    parallelFor(2, s.options.threads, [&](size_t i) {
      const ReportFn keep = [&found, i](const Problem &problem) { found[i].push_back(problem); };
      passed[i] = i == 0 ? verifyPrograms(programs, keep) : verifyScheduledStep(programs, keep);
    });
    for (const Problem &problem : found[0])
      s.report(problem);
    if (passed[0])
      for (const Problem &problem : found[1])
        s.report(problem);
    ok = ok && passed[0] && passed[1];
  }
  return ok && !s.failed;
}

struct Pass {
  PassInfo info;
  bool (*run)(State &);
};

const std::vector<Pass> &passes() {
  static const std::vector<Pass> table = {
      {{"autodiff", "(training builds) the backward graph: a gradient per parameter", false}, differentiate},
      {{"lower-plan",
        "plan sugar -> where each op runs (stage, cp/hp share), parameter and input annotations, pinned values", false},
       lower},
      {{"deduce-annotations",
        "every value's annotation by the per-op sharding rules; reshard ops where operands "
        "disagree",
        false},
       deduce},
      {{"resolve-communication", "the collectives and batched send/receive each reshard amounts to", false}, resolve},
      {{"verify", "the graph and its annotations are consistent", false}, verify},
      {{"specialize",
        "one DeviceProgram per device: local shapes, offsets, reshards as their steps, stages, accumulation", true},
       specializeDevices},
      {{"recompute", "stages with `recompute` run their forward again in each backward pass", true}, recompute},
      {{"optimizer-step", "AdamW or SGD per parameter; under `zero` on each share, then the parameter rebuilt", true},
       optimizerStep},
      {{"schedule-pipeline", "execution order, and a copy per micro-batch in flight of what backward reads", true},
       schedulePipeline},
      {{"plan-memory", "buffers placed in one arena per device, reusing dead buffers' space", true}, planArenas},
      {{"verify-programs", "every collective and send/receive matches across devices, in schedule order; no deadlock",
        true},
       verifyDevicePrograms},
  };
  return table;
}

// --after: the graph, or every program of every plan.
void dump(const State &s, const PassInfo &pass, std::ostream &out) {
  if (!pass.programs) {
    out << ir::printGraph(s.graph);
    return;
  }
  for (const auto &builder : s.builders) // between specialize and schedule-pipeline
    for (const auto &[device, program] : builder->programs())
      out << ir::printProgram(program);
  for (const auto &programs : s.result.programs)
    for (const auto &[device, program] : programs)
      out << ir::printProgram(program);
}

} // namespace

const std::vector<PassInfo> &passTable() {
  static const std::vector<PassInfo> infos = [] {
    std::vector<PassInfo> out;
    for (const Pass &pass : passes())
      out.push_back(pass.info);
    return out;
  }();
  return infos;
}

const std::vector<std::string> &passNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const PassInfo &pass : passTable())
      out.push_back(pass.name);
    return out;
  }();
  return names;
}

PipelineResult runPipeline(ir::Graph &graph, const std::vector<ir::PlanSpec> &plans, const PipelineOptions &options,
                           const ReportFn &report) {
  State s{graph, plans, options, {}, false, {}, {}, {}, {}};
  s.report = [&](const Problem &problem) {
    s.failed = s.failed || problem.severity == Severity::Error;
    report(problem);
  };
  for (const Pass &pass : passes()) {
    if (options.cancelled && options.cancelled->load())
      return std::move(s.result);
    const auto start = std::chrono::steady_clock::now();
    const bool ok = pass.run(s);
    const auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (options.timing) {
      *options.timing << "pass " << pass.info.name << ": " << seconds * 1e3 << " ms";
      if (pass.run == specializeDevices && ok && s.result.stampableOps > 0)
        *options.timing << " (" << s.result.stampedOps << " of " << s.result.stampableOps
                        << " op emissions stamped from an op alike)";
      if (pass.run == optimizerStep && ok && s.result.stampableUpdates > 0)
        *options.timing << " (" << s.result.stampedUpdates << " of " << s.result.stampableUpdates
                        << " parameter updates stamped from one alike)";
      *options.timing << "\n";
    }
    if (!ok)
      return std::move(s.result);
    if (options.dump && options.dumpAfter == pass.info.name)
      dump(s, pass.info, *options.dump);
  }
  s.result.ok = true;
  return std::move(s.result);
}

void releasePrograms(PipelineResult &result, int threads) {
  std::vector<ir::DeviceProgram *> all;
  for (auto &programs : result.programs)
    for (auto &[device, program] : programs)
      all.push_back(&program);
  parallelFor(all.size(), threads, [&](size_t i) { *all[i] = ir::DeviceProgram{}; });
  result.programs.clear();
}

} // namespace hspmd::passes
