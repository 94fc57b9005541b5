// LoweredPlan.h - what lower-plan produces for deduce-annotations and lint: where every op
// runs, the annotations of the leaves, the values pinned by the plan, and the numbers the
// sugar resolves to (batch per pipeline, optimizer-state layout under `zero`).
#pragma once

#include "ir/Annotation.h"
#include "ir/Graph.h"
#include "ir/Plan.h"
#include "passes/Communication.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace hspmd::passes {

/// A device group with its mesh: the devices an op runs on for one pipeline (or one cp/hp
/// share), and the axis counts its values are annotated with.
struct Cell {
  std::vector<int> devices;
  std::vector<int> mesh; // axis counts, outermost first; their product is devices.size()
  bool operator==(const Cell &) const = default;
};

/// A leaf whose annotation is partly for deduction to choose: free mesh axes (a parameter's
/// tensor-parallel axis), or everything (a leaf a raw plan does not annotate).
struct FlexibleLeaf {
  ir::Annotation skeleton;                 // cells and fixed axes; free axes are Dup here
  std::vector<std::vector<bool>> freeAxis; // [subgroup][axis]
  bool freeCells = false;                  // take the cells of the first consumer
};

/// Why a reshard was inserted; lint warns about the ones that move data unasked.
enum class ReshardReason { Pinned, PipelineHop, Reduction, Local, Layout };

struct InsertedReshard {
  std::string value;  // the resharded value
  std::string result; // the reshard op's result
  ir::Annotation from, to;
  ReshardReason reason = ReshardReason::Layout;
  ir::Location loc;      // the consumer that needed it
  int64_t bytes = 0;     // estimated bytes moved
  bool backward = false; // for an op of the backward pass (training builds)
};

struct LoweredPlan {
  const ir::PlanSpec *spec = nullptr;
  int index = 0; // which plan of the build
  bool hasPipelines = false;
  /// Per op: the cells it runs on, one per pipeline (or per cp/hp share). Empty for raw plans.
  std::map<const ir::Op *, std::vector<Cell>> placement;
  /// Per op and pipeline: the stage index. Empty for raw plans.
  std::map<const ir::Op *, std::vector<int>> stageOf;
  std::map<const ir::Value *, ir::Annotation> fixed;  // leaves with a complete annotation
  std::map<const ir::Value *, FlexibleLeaf> flexible; // leaves deduction completes
  std::map<const ir::Value *, ir::Annotation> pins;   // `reshard` lines and the sugar's own pins
  std::map<const ir::Value *, ir::Location> pinLocs;
  std::vector<int64_t> batchPerPipeline;                // empty when B is not bound
  std::map<std::string, ir::Annotation> optimizerState; // param -> layout of its AdamW/SGD state
  std::vector<InsertedReshard> reshards;                // filled by deduce-annotations
  /// Per reshard op of this plan: its communication plan, chosen once by
  /// resolve-communication (and printed on the op as `comm_steps`); specialize lowers exactly
  /// these steps. Absent for a reshard whose shape is not bound (`comm = "deferred"`). Shared:
  /// the reshards of identical layers mostly ask the same question (copying an answer per op
  /// was a third of resolve-communication).
  std::map<const ir::Op *, std::shared_ptr<const CommPlan>> communication;
  /// Training builds: parameter -> its gradient; deduction reshards each gradient to the
  /// parameter's layout (or, under `zero`, to its optimizer state's).
  std::map<const ir::Value *, ir::Value *, ir::ValueById> gradients;
  /// Training builds: gradient -> its value synchronised to the parameter's layout (the
  /// reshard deduce-annotations adds, marked role = "gradient-sync"); absent when the gradient
  /// already has that layout.
  std::map<const ir::Value *, const ir::Value *, ir::ValueById> syncedGradients;
  /// Training builds: the ops of the backward pass (they run once per micro-batch in the
  /// schedule's backward slots).
  std::set<const ir::Op *> backwardOps;
  /// Training builds: the reshards deduce-annotations inserted for ops of the backward pass.
  std::set<const ir::Op *> backwardReshards;
};

/// The role attribute of the reshard that synchronises a gradient once per step, after every
/// micro-batch (its phase is the update's).
inline constexpr const char *kGradientSyncRole = "gradient-sync";
inline bool isGradientSync(const ir::Op &op) {
  auto role = op.attrs.find("role");
  return op.kind == ir::OpKind::Reshard && role != op.attrs.end() &&
         std::holds_alternative<std::string>(role->second) && std::get<std::string>(role->second) == kGradientSyncRole;
}

/// Whether `op` of a training build's graph is one the plan's inference build has too: not of
/// the backward pass, not a reshard for it, not a gradient's synchronisation. Lint checks the
/// plan on these (planner/Lint.h), so that both builds say the same.
inline bool inForwardGraph(const LoweredPlan &plan, const ir::Op &op) {
  return !plan.backwardOps.count(&op) && !plan.backwardReshards.count(&op) && !isGradientSync(op);
}

} // namespace hspmd::passes
