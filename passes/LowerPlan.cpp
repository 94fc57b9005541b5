// LowerPlan.cpp - lower-plan.
//
// 1. Cells: each stage of each pipeline is one cell (its devices as a [dp, tp] mesh); a
//    stage with `cp` or `hp` shares is one cell per share (single-pipeline plans only: the
//    notation has one hetero level, used by the shares).
// 2. Placement: parameters live on the stages that declare them (their layer range, or
//    `with`); every other op runs on the latest stage among its operands; ops that only
//    read parameters and inputs run on the earliest stage that consumes them.
// 3. Leaves: parameters are replicated over pipelines and over a stage's data-parallel
//    axis, their tensor-parallel axis left for deduce-annotations to choose; inputs are split
//    by batch over pipelines (shares rounded down, the remainder one each to the first
//    pipelines) and over data-parallel axes, by sequence over `cp` shares.
// 4. Pins: `reshard` lines; with `hp`, attention's queries, keys and values are pinned to an
//    unequal head split (HexiSeq's asymmetric head parallelism).
#include "passes/LowerPlan.h"

#include "ir/Words.h"

#include <algorithm>
#include <numeric>
#include <set>

namespace hspmd::passes {

std::vector<int> stageMesh(size_t devices, int tp) {
  std::vector<int> mesh;
  const int n = static_cast<int>(devices);
  if (tp >= 1 && n % tp == 0 && n / tp > 1)
    mesh.push_back(n / tp);
  if (tp > 1 && n % tp == 0)
    mesh.push_back(tp);
  if (mesh.empty())
    mesh.push_back(n);
  return mesh;
}

namespace {

struct StageCells {
  std::vector<Cell> cells;
  const ir::StageSpec *spec = nullptr;
};

// `dataParallel`: the cell's first axis is a stage's data-parallel axis, which splits inputs
// by batch (parameters are copied over it).
ir::LocalAnnotation localOf(const Cell &cell, bool batchSplit, bool dataParallel) {
  ir::LocalAnnotation local;
  local.devices = cell.devices;
  for (size_t a = 0; a < cell.mesh.size(); ++a) {
    ir::MeshAxis axis{ir::AxisKind::Dup, 0, cell.mesh[a]};
    if (batchSplit && dataParallel && a == 0)
      axis = ir::MeshAxis{ir::AxisKind::Split, 0, cell.mesh[a]};
    local.axes.push_back(axis);
  }
  return local;
}

bool hasDataParallelAxis(const ir::StageSpec &stage) {
  return stage.cp.empty() && stage.hp.empty() && stage.tp >= 1 &&
         stage.devices.size() / static_cast<size_t>(stage.tp) > 1;
}

class Lowering {
public:
  Lowering(const ir::Graph &graph, const ir::PlanSpec &plan, int index, const ReportFn &report,
           const std::map<const ir::Op *, const ir::Op *> *origin)
      : graph_(graph), plan_(plan), report_(report), origin_(origin) {
    out_.spec = &plan;
    out_.index = index;
  }

  std::optional<LoweredPlan> run() {
    out_.hasPipelines = !plan_.pipelines.empty();
    for (const auto &pinned : plan_.annotations)
      out_.fixed[graph_.findValue(pinned.value)] = pinned.annotation;
    for (const auto &pinned : plan_.reshards) {
      const ir::Value *value = graph_.findValue(pinned.value);
      out_.pins[value] = pinned.annotation;
      out_.pinLocs[value] = pinned.loc;
    }
    if (!out_.hasPipelines) {
      // A raw plan: whatever is not annotated is deduced from its consumers.
      for (const auto &op : graph_.ops())
        if (op->kind == ir::OpKind::Param || op->kind == ir::OpKind::Input || op->kind == ir::OpKind::Constant)
          if (!out_.fixed.count(op->result()))
            out_.flexible[op->result()] = FlexibleLeaf{{}, {}, true};
      return std::move(out_);
    }
    if (!devicesOnce() || !buildCells())
      return std::nullopt;
    resolveBatch();
    place();
    lowerLeaves();
    pinHeads();
    return std::move(out_);
  }

private:
  const ir::Graph &graph_;
  const ir::PlanSpec &plan_;
  const ReportFn &report_;
  const std::map<const ir::Op *, const ir::Op *> *origin_;
  LoweredPlan out_;
  bool backward(const ir::Op &op) const { return origin_ && origin_->count(&op); }
  std::vector<std::vector<StageCells>> stages_; // [pipeline][stage]
  bool sharesPlan_ = false;                     // a stage has cp or hp shares

  void error(const ir::Location &loc, const std::string &code, const std::string &message) {
    report_(Problem{Severity::Error, loc, code, message, {}, {}});
  }

  // HS102: a device runs one stage of one pipeline, once; a cp or hp share names devices of
  // its own stage. (A device listed twice made an annotation of no meaning: deduction ended in
  // internal errors, the simulator crashed.)
  bool devicesOnce() {
    std::map<int, std::pair<size_t, size_t>> seen; // device -> (pipeline, stage)
    bool ok = true;
    for (size_t p = 0; p < plan_.pipelines.size(); ++p)
      for (size_t s = 0; s < plan_.pipelines[p].stages.size(); ++s) {
        const ir::StageSpec &stage = plan_.pipelines[p].stages[s];
        std::set<int> here;
        for (int device : stage.devices) {
          if (!here.insert(device).second) {
            error(stage.devicesLoc, "HS102", "device " + std::to_string(device) + " is listed twice in this stage");
            ok = false;
            continue;
          }
          auto [at, fresh] = seen.emplace(device, std::make_pair(p, s));
          if (fresh)
            continue;
          const auto &[otherPipeline, otherStage] = at->second;
          error(stage.devicesLoc, "HS102",
                "device " + std::to_string(device) + " already runs " +
                    (otherPipeline == p ? "stage " + std::to_string(otherStage) + " of this pipeline"
                                        : "a stage of pipeline '" + plan_.pipelines[otherPipeline].name + "'") +
                    ": a device runs one stage");
          ok = false;
        }
        for (const auto *shares : {&stage.cp, &stage.hp}) {
          const char *key = shares == &stage.cp ? "cp" : "hp";
          std::set<int> shared; // devices of the shares so far: each is in one share, once
          for (const ir::ShareSpec &share : *shares)
            for (int device : share.devices) {
              if (!here.count(device)) {
                error(share.loc, "HS102",
                      "device " + std::to_string(device) + " is not a device of this stage (" + key +
                          " shares divide the stage's devices)");
                ok = false;
              } else if (!shared.insert(device).second) {
                error(share.loc, "HS102",
                      "device " + std::to_string(device) + " is in two " + key +
                          " shares (the shares divide the stage's devices, each device into one)");
                ok = false;
              }
            }
        }
      }
    return ok;
  }

  bool buildCells() {
    bool ok = true;
    for (const auto &pipeline : plan_.pipelines) {
      stages_.emplace_back();
      for (const auto &stage : pipeline.stages) {
        StageCells cells;
        cells.spec = &stage;
        const auto &shares = !stage.cp.empty() ? stage.cp : stage.hp;
        if (!shares.empty()) {
          sharesPlan_ = true;
          if (plan_.pipelines.size() > 1) {
            error(stage.loc, "HS113",
                  "cp and hp shares need a plan with a single pipeline (the notation has one hetero level)");
            ok = false;
          }
          if (!stage.cp.empty() && !stage.hp.empty() && stage.cp.size() != stage.hp.size()) {
            error(stage.loc, "HS114", "cp and hp list different device groups");
            ok = false;
          }
          for (const auto &share : shares)
            cells.cells.push_back(Cell{share.devices, {static_cast<int>(share.devices.size())}});
        } else {
          if (stage.devices.empty() || stage.devices.size() % static_cast<size_t>(stage.tp) != 0) {
            error(stage.tpLoc.isKnown() ? stage.tpLoc : stage.loc, "HS108",
                  "tp " + std::to_string(stage.tp) + " does not divide the stage's " +
                      ir::counted(static_cast<int64_t>(stage.devices.size()), "device"));
            ok = false;
            continue;
          }
          cells.cells.push_back(Cell{stage.devices, stageMesh(stage.devices.size(), stage.tp)});
        }
        stages_.back().push_back(std::move(cells));
      }
    }
    return ok;
  }

  void resolveBatch() {
    auto batch = plan_.bindings.find("B");
    if (batch == plan_.bindings.end())
      return;
    ir::HeteroPlacement shares{ir::HeteroKind::Split, 0, {}, true};
    for (const auto &pipeline : plan_.pipelines)
      shares.sizes.push_back(pipeline.share);
    out_.batchPerPipeline = ir::resolveHeteroSizes(shares, plan_.pipelines.size(), batch->second);
  }

  // The stages of pipeline p that hold a parameter.
  std::set<int> declaredStages(size_t p, const std::string &name) const {
    std::set<int> found;
    const auto position = ir::stackPosition(name);
    for (size_t s = 0; s < plan_.pipelines[p].stages.size(); ++s) {
      const ir::StageSpec &stage = plan_.pipelines[p].stages[s];
      const auto &extra = stage.extraParams;
      if (std::find(extra.begin(), extra.end(), name) != extra.end() ||
          (position && position->stack == stage.stack && position->layer >= stage.layerBegin &&
           position->layer < stage.layerEnd))
        found.insert(static_cast<int>(s));
    }
    return found;
  }

  void place() {
    const size_t numOps = graph_.ops().size();
    for (const auto &op : graph_.ops())
      out_.stageOf[op.get()].assign(plan_.pipelines.size(), -1);
    for (size_t p = 0; p < plan_.pipelines.size(); ++p) {
      const int numStages = static_cast<int>(stages_[p].size());
      std::vector<int> stage(numOps, -1);
      std::vector<std::set<int>> allowed(numOps);
      std::set<int> all;
      for (int s = 0; s < numStages; ++s)
        all.insert(s);
      for (const auto &op : graph_.ops()) {
        const int id = op->id;
        if (backward(*op))
          continue; // placed with its forward op below
        if (op->kind == ir::OpKind::Param) {
          allowed[id] = declaredStages(p, op->result()->name);
          if (allowed[id].empty())
            allowed[id] = all;
          if (allowed[id].size() == 1)
            stage[id] = *allowed[id].begin();
          continue;
        }
        int latest = -1;
        std::set<int> common = all;
        for (const ir::Value *operand : op->operands) {
          const int from = operand->def->id;
          latest = std::max(latest, stage[from]);
          std::set<int> meet;
          std::set_intersection(common.begin(), common.end(), allowed[from].begin(), allowed[from].end(),
                                std::inserter(meet, meet.begin()));
          common = meet.empty() ? common : meet;
        }
        stage[id] = latest;
        allowed[id] = latest >= 0 ? std::set<int>{latest} : common;
      }
      // Ops that only read parameters and inputs run where they are first needed.
      std::vector<int> firstUse(numOps, numStages);
      for (auto it = graph_.ops().rbegin(); it != graph_.ops().rend(); ++it) {
        const ir::Op &op = **it;
        if (backward(op))
          continue;
        if (stage[op.id] < 0) {
          int want = firstUse[op.id] < numStages ? firstUse[op.id] : *allowed[op.id].rbegin();
          if (!allowed[op.id].count(want)) {
            auto below = allowed[op.id].upper_bound(want);
            want = below == allowed[op.id].begin() ? *allowed[op.id].begin() : *std::prev(below);
          }
          stage[op.id] = want;
        }
        for (const ir::Value *operand : op.operands)
          firstUse[operand->def->id] = std::min(firstUse[operand->def->id], stage[op.id]);
      }
      // The backward of an op runs where the op ran (its origin comes earlier in the graph).
      for (const auto &op : graph_.ops())
        if (backward(*op))
          stage[op->id] = stage[origin_->at(op.get())->id];
      for (const auto &op : graph_.ops()) {
        out_.stageOf[op.get()][p] = stage[op->id];
        const auto &cells = stages_[p][stage[op->id]].cells;
        auto &placed = out_.placement[op.get()];
        placed.insert(placed.end(), cells.begin(), cells.end());
      }
    }
  }

  void lowerLeaves() {
    for (const auto &op : graph_.ops()) {
      const ir::Value *value = op->result();
      if (out_.fixed.count(value))
        continue;
      if (op->kind == ir::OpKind::Constant) {
        out_.flexible[value] = FlexibleLeaf{{}, {}, true};
      } else if (op->kind == ir::OpKind::Param) {
        lowerParam(*op);
      } else if (op->kind == ir::OpKind::Input) {
        lowerInput(*op);
      }
    }
  }

  void lowerParam(const ir::Op &op) {
    FlexibleLeaf leaf;
    leaf.skeleton.hetero.kind = ir::HeteroKind::Dup;
    for (size_t p = 0; p < plan_.pipelines.size(); ++p)
      for (int s : declaredStages(p, op.result()->name))
        for (const Cell &cell : stages_[p][s].cells) {
          leaf.skeleton.subgroups.push_back(localOf(cell, false, false));
          // The tensor-parallel axis (the inner axis of a [dp, tp] mesh, or the only axis of a
          // cp/hp share or of a tp-only stage) is for deduction to choose.
          std::vector<bool> free(cell.mesh.size(), false);
          const ir::StageSpec &stage = *stages_[p][s].spec;
          if (stage.tp > 1 || !stage.cp.empty() || !stage.hp.empty())
            free.back() = true; // a tp-only mesh [tp], or the inner axis of [dp, tp]
          leaf.freeAxis.push_back(free);
        }
    if (leaf.skeleton.subgroups.empty()) {
      leaf.freeCells = true; // placed by no stage: lint reports it; deduction still copes
      leaf.skeleton = {};
    }
    out_.flexible[op.result()] = std::move(leaf);
  }

  void lowerInput(const ir::Op &op) {
    const ir::Value *value = op.result();
    ir::Annotation annotation;
    for (size_t p = 0; p < plan_.pipelines.size(); ++p) {
      int s = out_.stageOf.at(&op)[p];
      for (const Cell &cell : stages_[p][s].cells)
        annotation.subgroups.push_back(localOf(cell, true, hasDataParallelAxis(*stages_[p][s].spec)));
    }
    if (plan_.pipelines.size() > 1) {
      annotation.hetero = {ir::HeteroKind::Split, 0, {}, true};
      if (!out_.batchPerPipeline.empty()) {
        annotation.hetero.sizes = out_.batchPerPipeline;
        annotation.hetero.ratio = false;
      } else {
        for (const auto &pipeline : plan_.pipelines)
          annotation.hetero.sizes.push_back(pipeline.share);
      }
    } else if (annotation.subgroups.size() > 1 && value->type.rank() >= 2) {
      // cp (or hp) shares split the sequence dimension in proportion to their values.
      const ir::StageSpec &stage = *stages_[0][out_.stageOf.at(&op)[0]].spec;
      const auto &shares = !stage.cp.empty() ? stage.cp : stage.hp;
      annotation.hetero = {ir::HeteroKind::Split, 1, {}, true};
      for (const auto &share : shares)
        annotation.hetero.sizes.push_back(share.value);
      if (auto length = value->type.shape[1].constant()) {
        annotation.hetero.sizes = ir::resolveHeteroSizes(annotation.hetero, shares.size(), *length);
        annotation.hetero.ratio = false;
      }
    }
    out_.fixed[value] = annotation;
  }

  // With hp, everything but attention works on sequence shares (as in HexiSeq): the input of
  // each norm is pinned to the sequence split, so the partial sums that head-parallel
  // attention leaves are reduce-scattered rather than all-reduced.
  void pinSequence(const ir::Op &op) {
    const ir::StageSpec &stage = *stages_[0][out_.stageOf.at(&op)[0]].spec;
    const ir::Value *x = op.operands[0];
    if (stage.hp.empty() || x->type.rank() < 3)
      return;
    const auto &shares = !stage.cp.empty() ? stage.cp : stage.hp;
    ir::Annotation pin;
    pin.hetero = {ir::HeteroKind::Split, 1, {}, true};
    for (const auto &share : shares) {
      pin.subgroups.push_back(localOf(Cell{share.devices, {static_cast<int>(share.devices.size())}}, false, false));
      pin.hetero.sizes.push_back(share.value);
    }
    if (auto length = x->type.shape[1].constant()) {
      pin.hetero.sizes = ir::resolveHeteroSizes(pin.hetero, shares.size(), *length);
      pin.hetero.ratio = false;
    }
    out_.pins[x] = pin;
    out_.pinLocs[x] = stage.hpLoc;
  }

  void pinHeads() {
    if (!sharesPlan_)
      return;
    for (const auto &op : graph_.ops()) {
      if (op->kind == ir::OpKind::RmsNorm || op->kind == ir::OpKind::LayerNorm)
        pinSequence(*op);
      if (op->kind != ir::OpKind::Attention)
        continue;
      const ir::StageSpec &stage = *stages_[0][out_.stageOf.at(op.get())[0]].spec;
      if (stage.hp.empty())
        continue;
      auto heads = op->operands[0]->type.shape[2].constant();
      int64_t total = 0;
      for (const auto &share : stage.hp)
        total += share.value;
      if (!heads || total != *heads)
        continue; // lint reports head counts that do not add up (HS106)
      std::vector<std::pair<const ir::Value *, ir::Annotation>> pins;
      for (size_t i = 0; i < 3; ++i) {
        const ir::Value *operand = op->operands[i];
        auto own = operand->type.shape[2].constant();
        ir::Annotation pin;
        pin.hetero = {ir::HeteroKind::Split, 2, {}, false};
        bool whole = true;
        for (const auto &share : stage.hp) {
          const int n = static_cast<int>(share.devices.size());
          const int64_t mine = share.value * *own / *heads;
          ir::LocalAnnotation local = localOf(Cell{share.devices, {n}}, false, false);
          if (n > 1 && mine % n == 0) // the group's tensor-parallel devices split its heads
            local.axes[0] = ir::MeshAxis{ir::AxisKind::Split, 2, n};
          pin.subgroups.push_back(local);
          whole = whole && (share.value * *own) % *heads == 0;
          pin.hetero.sizes.push_back(mine);
        }
        if (!whole)
          break; // lint reports head counts that break KV groups (HS106)
        pins.emplace_back(operand, pin);
      }
      if (pins.size() != 3)
        continue;
      for (const auto &[operand, pin] : pins) {
        out_.pins[operand] = pin;
        out_.pinLocs[operand] = stage.hpLoc;
      }
    }
  }
};

} // namespace

std::optional<LoweredPlan> lowerPlan(const ir::Graph &graph, const ir::PlanSpec &plan, int index,
                                     const ReportFn &report, const std::map<const ir::Op *, const ir::Op *> *origin) {
  return Lowering(graph, plan, index, report, origin).run();
}

} // namespace hspmd::passes
