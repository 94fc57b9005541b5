// Pipeline.cpp - the hspmd compiler, pass after pass. The frontend (frontend/Compilation)
// has already parsed the model and plans and elaborated them into an ir::Graph with its
// parameters and inputs, and each plan into an ir::PlanSpec. From there:
//
//   autodiff            (training builds) the backward graph: a gradient per parameter
//   lower-plan          plan sugar -> where each op runs (per pipeline stage, per cp/hp share),
//                       the annotations of parameters and inputs, and pinned values
//   deduce-annotations  every value's annotation, by the per-op sharding rules; reshard ops
//                       where operands disagree
//   resolve-communication  the collectives and batched send/receive each reshard amounts to
//   verify              the graph and its annotations are consistent
//   specialize          one DeviceProgram per device: local shapes, offsets, concrete peers
//   plan-memory         buffers placed in one arena per device, reusing dead buffers' space
//   verify-programs     every collective and send/receive matches across devices; no deadlock
//
// `hspmc dump-ir --after PASS` prints the IR after any of them; `--time-passes` times them.
#include "passes/Pipeline.h"

#include "passes/Autodiff.h"
#include "passes/DeduceAnnotations.h"
#include "passes/LowerPlan.h"
#include "passes/PlanMemory.h"
#include "passes/ResolveCommunication.h"
#include "passes/Specialize.h"

#include <chrono>

namespace hspmd::passes {

const std::vector<std::string> &passNames() {
  static const std::vector<std::string> names = {"lower-plan", "deduce-annotations", "resolve-communication", "verify"};
  return names;
}

namespace {

// Runs one pass: times it and prints the IR after it when asked.
class PassRunner {
public:
  PassRunner(ir::Graph &graph, const PipelineOptions &options) : graph_(graph), options_(options) {}

  template <typename F> bool operator()(const std::string &name, F &&pass) {
    auto start = std::chrono::steady_clock::now();
    bool ok = pass();
    auto seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (options_.timing)
      *options_.timing << "pass " << name << ": " << seconds * 1e3 << " ms\n";
    if (ok && options_.dump && options_.dumpAfter == name)
      *options_.dump << ir::printGraph(graph_);
    return ok;
  }

private:
  ir::Graph &graph_;
  const PipelineOptions &options_;
};

} // namespace

PipelineResult runPipeline(ir::Graph &graph, const std::vector<ir::PlanSpec> &plans, const PipelineOptions &options,
                           const ReportFn &report) {
  PipelineResult result;
  PassRunner run(graph, options);
  bool failed = false;
  ReportFn counting = [&](const Problem &problem) {
    failed = failed || problem.severity == Severity::Error;
    report(problem);
  };

  Gradients gradients;
  if (options.train && !run("autodiff", [&] {
        if (graph.outputs.size() != 1 || graph.outputs[0]->type.rank() != 0) {
          counting(Problem{Severity::Error,
                           graph.ops().empty() ? ir::Location{} : graph.ops().back()->loc,
                           "HS117",
                           "training needs a model whose forward returns one scalar loss",
                           {},
                           {}});
          return false;
        }
        gradients = buildGradients(graph, graph.outputs[0]);
        return true;
      }))
    return result;

  if (!run("lower-plan", [&] {
        for (size_t i = 0; i < plans.size(); ++i)
          if (auto lowered = lowerPlan(graph, plans[i], static_cast<int>(i), counting,
                                       options.train ? &gradients.origin : nullptr)) {
            for (const auto &[name, grad] : gradients.params)
              lowered->gradients[graph.findValue(name)] = grad;
            for (const auto &[backward, forward] : gradients.origin)
              lowered->backwardOps.insert(backward);
            result.plans.push_back(std::move(*lowered));
          }
        return !failed;
      }))
    return result;

  if (!run("deduce-annotations", [&] {
        graph.setNumPlans(static_cast<int>(plans.size()));
        for (LoweredPlan &plan : result.plans)
          deduceAnnotations(graph, plan, counting);
        return !failed;
      }))
    return result;

  if (!run("resolve-communication", [&] {
        for (const LoweredPlan &plan : result.plans) {
          const size_t i = static_cast<size_t>(plan.index);
          resolveCommunication(
              graph, plan, withPipelines(i < options.links.size() ? options.links[i] : LinkModel{}, plan), counting);
        }
        return !failed;
      }))
    return result;

  if (!run("verify", [&] {
        return ir::verifyGraph(graph, [&](const ir::Location &loc, const std::string &message) {
          counting(Problem{Severity::Error, loc, "HS199", "internal error: " + message, {}, {}});
        });
      }))
    return result;

  if (!run("specialize", [&] {
        for (const LoweredPlan &plan : result.plans) {
          const size_t i = static_cast<size_t>(plan.index);
          result.programs.push_back(
              specialize(graph, plan, withPipelines(i < options.links.size() ? options.links[i] : LinkModel{}, plan)));
        }
        return true;
      }))
    return result;

  run("plan-memory", [&] {
    for (auto &programs : result.programs)
      for (auto &[device, program] : programs)
        planMemory(program);
    return true;
  });

  result.ok = run("verify-programs", [&] {
    bool ok = true;
    for (const auto &programs : result.programs) {
      // One pass over each instruction, then the step as the schedule runs it: every
      // micro-batch's forward and backward passes in 1F1B (or GPipe) order, then the update.
      if (!verifyPrograms(programs, counting)) {
        ok = false;
        continue;
      }
      ok = verifyScheduledStep(programs, counting) && ok;
    }
    return ok;
  });
  return result;
}

} // namespace hspmd::passes
