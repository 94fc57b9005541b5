// DeduceAnnotations.cpp - deduce-annotations.
//
// Ops are visited in program order. For each op:
//  1. its cells: from lower-plan's placement, or (raw plans) those of its most spread
//     annotated operand; an op whose operands are all still undecided waits for its first
//     consumer and takes that consumer's cells;
//  2. each operand is aligned to the cells: kept, restricted to the cells when it is a copy
//     held more widely, or moved there (a pipeline hop, or a layout change);
//  3. the hetero placement, then each mesh axis of each cell, is decided by the op's sharding
//     rule: every candidate meaning (duplicate, partial, split of one factor) is priced in
//     bytes moved to bring the operands to it, and the cheapest wins; ties go to
//     pass-through splits (tensor parallelism: column-parallel before row-parallel; a rule
//     may prefer its contraction, as embeddings do: vocabulary-parallel), then to the
//     largest factor of an undecided parameter (or split as the plan split a dimension of
//     its size), then to partial sums, then to copies.
//     Carrying partial sums through a linear op is charged the reduction its growth will
//     cost later (when each device would hold more of the result than of the operand), and
//     so, across groups, is a contraction split whose result outgrows the split operand
//     (except where the result becomes a parameter's gradient: it is accumulated over the
//     micro-batches and reduced once a step, with the data-parallel copies' sync); at
//     the hetero level a factor may also be split as the plan split another dimension of its
//     size over the same groups (a gradient reduce-scattered to the cp shares, head-parallel
//     attention's output moved to the sequence shares), and across pipelines (their own
//     micro-batch schedules) a choice that moves nothing comes first. The search reads
//     only the op's kind, attributes and types, its operands as aligned to the cells, the
//     cells and the plan's unequal splits over them: ops that agree on all of it (the same op
//     in each of a model's identical layers) share one search (`searchKey`);
//  4. operands that must change get a `reshard` op before the op; an undecided leaf is
//     decided by its first consumer, and so is an op that only reads undecided leaves: the
//     consumer's requirement is pushed back through it to the leaves (the backward step);
//  5. results get their annotations; a pinned result gets a reshard to its pin.
// Candidates.cpp prices the candidates of step 3; Layout.cpp reads annotations as meanings.
// User annotations are never changed: a leaf the plan annotates keeps its annotation and is
// resharded where needed. A second run over a deduced graph changes nothing (tested).
#include "passes/DeduceAnnotations.h"

#include "ir/AnnotationText.h"
#include "passes/Layout.h"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <set>
#include <unordered_map>

namespace hspmd::passes {

namespace {

using Kind = Meaning::Kind;

class Deducer {
public:
  Deducer(ir::Graph &graph, LoweredPlan &plan, const ReportFn &report)
      : graph_(graph), plan_(plan), report_(report), index_(plan.index) {}

  void run() {
    if (graph_.numPlans <= index_)
      graph_.setNumPlans(index_ + 1);
    for (const auto &[value, annotation] : plan_.fixed)
      set(const_cast<ir::Value *>(value), annotation);
    for (const auto &[op, cells] : plan_.placement)
      for (const Cell &cell : cells)
        allDevices_.insert(cell.devices.begin(), cell.devices.end());
    for (const auto &[value, annotation] : plan_.fixed)
      for (int device : annotation.devices())
        allDevices_.insert(device);
    std::vector<ir::Op *> order;
    for (const auto &op : graph_.ops())
      order.push_back(op.get());
    findAccumulated(order);
    for (ir::Op *op : order)
      visit(*op);
    finish();
  }

private:
  ir::Graph &graph_;
  LoweredPlan &plan_;
  const ReportFn &report_;
  const int index_;
  std::set<const ir::Op *> pending_;
  std::set<int> allDevices_;
  std::map<std::pair<const ir::Value *, std::string>, ir::Value *> reshardCache_;
  std::set<const ir::Op *> accumulated_; // findAccumulated
  // (dimension size, device groups) -> unequal sizes the plan split such a dimension into
  std::map<std::pair<int64_t, std::vector<std::vector<int>>>, std::vector<int64_t>> heteroSplits_;

  bool known(const ir::Value *value) const { return value->annotations[index_].has_value(); }
  const ir::Annotation &annotationOf(const ir::Value *value) const { return *value->annotations[index_]; }
  void set(ir::Value *value, const ir::Annotation &annotation) {
    value->annotations[index_] = annotation;
    // Remember the plan's unequal splits (cp shares): another op over the same device groups
    // may split a dimension of that size the same way.
    const ir::HeteroPlacement &h = annotation.hetero;
    if (h.kind == ir::HeteroKind::Split && !h.ratio && !h.sizes.empty() && h.dim < value->type.rank())
      if (auto size = value->type.shape[static_cast<size_t>(h.dim)].constant()) {
        std::vector<std::vector<int>> groups;
        for (const auto &local : annotation.subgroups)
          groups.push_back(local.devices);
        heteroSplits_.emplace(std::make_pair(*size, groups), h.sizes);
      }
  }
  bool isFreeLeaf(const ir::Value *value) const { return !known(value) && plan_.flexible.count(value); }

  // The ops that make a parameter's gradient: its producer, and the ops whose one use is a
  // sum leading to it (a weight gradient x^T dy summed over the batch); ops of one result only
  // (a norm's backward, which also makes the input's gradient, is not one). Their results are
  // accumulated over the micro-batches and reduced once a step with the gradient
  // synchronisation the data-parallel copies need anyway, so a partial sum across groups is
  // not charged a reduction per micro-batch (context parallelism would otherwise gather both
  // operands over the whole sequence in every micro-batch and compute the same gradient in
  // every group).
  void findAccumulated(const std::vector<ir::Op *> &order) {
    std::map<const ir::Value *, int> uses;
    for (const ir::Op *op : order)
      for (const ir::Value *operand : op->operands)
        ++uses[operand];
    for (const auto &[param, grad] : plan_.gradients)
      for (const ir::Op *op = grad->def; op && op->results.size() == 1 && accumulated_.insert(op).second;) {
        if (op->kind != ir::OpKind::Sum || op->operands.size() != 1 || uses[op->operands[0]] != 1)
          break;
        op = op->operands[0]->def;
      }
  }

  void visit(ir::Op &op) {
    if (op.kind == ir::OpKind::Param || op.kind == ir::OpKind::Input || op.kind == ir::OpKind::Constant)
      return; // leaves are fixed already, or decided by their first consumer
    if (op.kind == ir::OpKind::Reshard && ir::intAttr(op.attrs, "plan", -1) != index_) {
      set(op.result(), annotationOf(op.operands[0])); // another plan's reshard: identity here
      return;
    }
    if (op.kind == ir::OpKind::Reshard && known(op.result()))
      return; // this plan's own reshard from an earlier run: it stays what it was made for
    std::optional<std::vector<Cell>> cells = cellsFor(op);
    if (!cells) {
      pending_.insert(&op);
      return;
    }
    decide(op, *cells);
  }

  std::optional<std::vector<Cell>> cellsFor(const ir::Op &op) {
    if (auto it = plan_.placement.find(&op); it != plan_.placement.end())
      return it->second;
    const ir::Value *reference = nullptr;
    for (const ir::Value *operand : op.operands) {
      if (!known(operand))
        continue;
      const ir::Annotation &a = annotationOf(operand);
      if (!reference || a.subgroups.size() > annotationOf(reference).subgroups.size() ||
          (a.subgroups.size() == annotationOf(reference).subgroups.size() &&
           a.devices().size() > annotationOf(reference).devices().size()))
        reference = operand;
    }
    if (!reference)
      return std::nullopt;
    return cellsOf(annotationOf(reference));
  }

  struct Operand {
    ir::Value *value = nullptr;
    ir::Annotation current; // on the op's cells (what the op would read without a reshard)
    bool moved = false;
    bool free = false;
    std::vector<std::vector<bool>> freeAxis; // [cell][axis], when free
    bool freeHetero = false;
    OperandView view;
  };

  // An op waiting for its consumer reads only undecided leaves (or other waiting ops).
  bool waiting(const ir::Value *value) const { return !known(value) && value->def && pending_.count(value->def); }

  Operand prepare(ir::Value *value, const std::vector<Cell> &cells, const OpShardingRule &rule, int index) {
    Operand operand;
    operand.value = value;
    if (waiting(value)) {
      // Decided by this consumer, then pushed back to its leaves (see settleBackward).
      operand.free = true;
      operand.freeHetero = true;
      operand.current = moveTo(ir::Annotation{}, cells);
      for (const Cell &cell : cells)
        operand.freeAxis.push_back(std::vector<bool>(cell.mesh.size(), true));
      operand.view = viewOf(rule, index, *value, operand.current);
      for (auto &axes : operand.view.axes)
        for (auto &meaning : axes)
          meaning = Meaning{Kind::Free};
      operand.view.hetero = Meaning{Kind::Free};
      return operand;
    }
    if (isFreeLeaf(value)) {
      const FlexibleLeaf &leaf = plan_.flexible.at(value);
      operand.free = true;
      operand.freeHetero = leaf.freeCells;
      auto restricted = leaf.freeCells ? std::nullopt : restrictTo(leaf.skeleton, cells);
      if (restricted) {
        operand.current = *restricted;
        auto skeletonCells = cellsOf(leaf.skeleton);
        for (const Cell &cell : cells)
          operand.freeAxis.push_back(
              leaf.freeAxis[std::find(skeletonCells.begin(), skeletonCells.end(), cell) - skeletonCells.begin()]);
      } else {
        // Undecided on these cells: everything is open; a parameter held elsewhere is then
        // moved here with whatever is chosen.
        operand.current = moveTo(ir::Annotation{}, cells);
        for (const Cell &cell : cells)
          operand.freeAxis.push_back(std::vector<bool>(cell.mesh.size(), true));
        operand.moved = !leaf.freeCells;
        operand.freeHetero = true;
      }
    } else {
      if (!known(value))
        set(value, allDevicesDup(value)); // cannot happen for a well-formed graph
      auto restricted = restrictTo(annotationOf(value), cells);
      operand.current = restricted ? *restricted : moveTo(annotationOf(value), cells);
      operand.moved = !restricted;
    }
    operand.view = viewOf(rule, index, *value, operand.current);
    if (operand.free) {
      for (size_t g = 0; g < cells.size(); ++g)
        for (size_t a = 0; a < cells[g].mesh.size(); ++a)
          if (operand.freeAxis[g][a])
            operand.view.axes[g][a] = Meaning{Kind::Free};
      if (operand.freeHetero)
        operand.view.hetero = Meaning{Kind::Free};
    }
    return operand;
  }

  ir::Annotation allDevicesDup(const ir::Value *) const {
    ir::Annotation a;
    std::vector<int> devices(allDevices_.begin(), allDevices_.end());
    if (devices.empty())
      devices.push_back(0);
    a.subgroups.push_back({devices, {{ir::AxisKind::Dup, 0, static_cast<int>(devices.size())}}});
    return a;
  }

  struct Decision {
    Meaning hetero{Kind::Dup};
    std::vector<Meaning> requiredHetero, resultHetero;
    std::vector<std::vector<std::vector<Meaning>>> requiredAxes; // [operand][cell][axis]
    std::vector<std::vector<std::vector<Meaning>>> resultAxes;   // [result][cell][axis]
  };

  // Builds every annotation the decision implies; false when one cannot be written.
  bool buildAll(const ir::Op &op, const OpShardingRule &rule, const std::vector<Cell> &cells, const Decision &d,
                std::vector<ir::Annotation> *required, std::vector<ir::Annotation> *results) {
    for (size_t o = 0; o < op.operands.size(); ++o) {
      auto a = buildAnnotation(rule, rule.operands[o], static_cast<int>(o), *op.operands[o], cells, d.requiredHetero[o],
                               d.requiredAxes[o]);
      if (!a)
        return false;
      if (required)
        required->push_back(std::move(*a));
    }
    for (size_t r = 0; r < op.results.size(); ++r) {
      auto a = buildAnnotation(rule, rule.results[r], -1, *op.results[r], cells, d.resultHetero[r], d.resultAxes[r]);
      if (!a)
        return false;
      if (results)
        results->push_back(std::move(*a));
    }
    return true;
  }

  // What the search of step 3 finds for an op: the decision and the annotations it implies
  // (`found` false when none could be written).
  struct Search {
    Decision d;
    std::vector<ir::Annotation> required, produced;
    bool found = false;
  };
  std::unordered_map<std::string, Search> searches_; // by searchKey
  ShardingRuleCache rules_;

  // Everything the search reads, as bytes: the op's kind, attributes and types (its sharding
  // rule follows from them), the operands as the op sees them, the cells, and what else
  // steers the choice. Ops with equal keys find the same: a model's identical layers are
  // searched once.
  std::string searchKey(const std::string &signature, const std::vector<Operand> &operands,
                        const std::vector<Cell> &cells, bool accumulated, bool acrossPipelines,
                        const std::map<int64_t, std::vector<int64_t>> &known) {
    std::string key = signature;
    auto word = [&key](int64_t v) { key.append(reinterpret_cast<const char *>(&v), sizeof v); };
    auto real = [&word](double v) {
      int64_t bits;
      std::memcpy(&bits, &v, sizeof bits);
      word(bits);
    };
    auto meaning = [&](const Meaning &m) {
      word(static_cast<int64_t>(m.kind) | static_cast<int64_t>(m.ratio) << 8 |
           static_cast<int64_t>(static_cast<uint32_t>(m.factor)) << 16); // factor -1 where none
      word(static_cast<int64_t>(m.sizes.size()));
      for (int64_t size : m.sizes)
        word(size);
    };
    word(static_cast<int64_t>(accumulated) | static_cast<int64_t>(acrossPipelines) << 1 |
         static_cast<int64_t>(cells.size()) << 2);
    for (const Operand &operand : operands) {
      meaning(operand.view.hetero);
      real(operand.view.bytes);
      for (const auto &axes : operand.view.axes) {
        word(static_cast<int64_t>(axes.size()));
        for (const Meaning &m : axes)
          meaning(m);
      }
    }
    for (const Cell &cell : cells) {
      word(static_cast<int64_t>(cell.devices.size()) | static_cast<int64_t>(cell.mesh.size()) << 32);
      key.append(reinterpret_cast<const char *>(cell.devices.data()), cell.devices.size() * sizeof(int));
      key.append(reinterpret_cast<const char *>(cell.mesh.data()), cell.mesh.size() * sizeof(int));
    }
    word(static_cast<int64_t>(known.size()));
    for (const auto &[size, sizes] : known) {
      word(size);
      word(static_cast<int64_t>(sizes.size()));
      for (int64_t s : sizes)
        word(s);
    }
    return key;
  }

  void decide(ir::Op &op, const std::vector<Cell> &cells) {
    pending_.erase(&op);
    std::string signature;
    appendOpSignature(signature, op);
    const OpShardingRule &rule = rules_.of(op, signature);
    std::vector<Operand> operands;
    for (size_t o = 0; o < op.operands.size(); ++o)
      operands.push_back(prepare(op.operands[o], cells, rule, static_cast<int>(o)));
    const bool accumulated = accumulated_.count(&op) > 0;
    const auto stages = plan_.stageOf.find(&op);
    const bool acrossPipelines = stages != plan_.stageOf.end() && stages->second.size() > 1;
    std::map<int64_t, std::vector<int64_t>> known;
    if (cells.size() > 1) {
      std::vector<std::vector<int>> groups;
      for (const Cell &cell : cells)
        groups.push_back(cell.devices);
      for (const auto &[key, sizes] : heteroSplits_)
        if (key.second == groups)
          known.emplace(key.first, sizes);
    }
    const std::string key = searchKey(signature, operands, cells, accumulated, acrossPipelines, known);
    auto found = searches_.find(key);
    if (found == searches_.end())
      found = searches_.emplace(key, search(op, rule, operands, cells, accumulated, acrossPipelines, known)).first;
    const Search &s = found->second;
    if (!s.found) {
      report_(Problem{Severity::Error,
                      op.loc,
                      "HS199",
                      "internal error: no annotation found for " + std::string(ir::opInfo(op.kind).name),
                      {},
                      {}});
      return;
    }
    for (size_t o = 0; o < operands.size(); ++o)
      settle(op, operands[o], s.required[o], s.d, o, cells);
    for (size_t r = 0; r < op.results.size(); ++r)
      set(op.results[r], s.produced[r]);
    for (ir::Value *result : op.results)
      applyPin(op, result);
  }

  // Step 3 for one op: the hetero placement, then each axis of each cell.
  Search search(const ir::Op &op, const OpShardingRule &rule, const std::vector<Operand> &operands,
                const std::vector<Cell> &cells, bool accumulated, bool acrossPipelines,
                const std::map<int64_t, std::vector<int64_t>> &known) {
    std::vector<double> bytes;
    for (const Operand &operand : operands)
      bytes.push_back(operand.view.bytes);

    Search s;
    Decision &d = s.d;
    const size_t n = operands.size(), results = op.results.size();
    // A trial decision is accepted where every annotation it implies can be written; those
    // of the last one accepted are kept.
    bool accepted = false;
    auto accept = [&](const Decision &trial) {
      std::vector<ir::Annotation> trialRequired, trialProduced;
      if (!buildAll(op, rule, cells, trial, &trialRequired, &trialProduced))
        return false;
      s.required = std::move(trialRequired);
      s.produced = std::move(trialProduced);
      accepted = true;
      return true;
    };
    d.requiredHetero.assign(n, Meaning{Kind::Dup});
    d.resultHetero.assign(results, Meaning{Kind::Dup});
    d.requiredAxes.assign(n, {});
    d.resultAxes.assign(results, {});
    for (size_t g = 0; g < cells.size(); ++g) {
      for (auto &axes : d.requiredAxes)
        axes.emplace_back(cells[g].mesh.size(), Meaning{Kind::Dup});
      for (auto &axes : d.resultAxes)
        axes.emplace_back(cells[g].mesh.size(), Meaning{Kind::Dup});
    }
    // The hetero placement first, then each axis of each cell, keeping only choices that can
    // be written as annotations.
    if (cells.size() > 1) {
      std::vector<Meaning> m;
      for (const Operand &operand : operands)
        m.push_back(operand.view.hetero);
      std::vector<OperandView> views;
      for (const Operand &operand : operands)
        views.push_back(operand.view);
      const std::vector<double> grows =
          accumulated ? std::vector<double>(views.size(), 1.0) : growth(op, rule, views, cells);
      auto list = candidates(op, rule, m, bytes, static_cast<int>(cells.size()), true, grows, known);
      // Cells in different pipelines run their micro-batches on their own schedules: an op
      // moves nothing between them when it can help it (only gradients meet, once a step).
      if (acrossPipelines)
        std::stable_partition(list.begin(), list.end(), [](const Candidate &c) { return !c.moves; });
      for (const Candidate &c : list) {
        Decision trial = d;
        trial.requiredHetero = c.required;
        trial.resultHetero = c.results;
        if (accept(trial)) {
          d = std::move(trial);
          break;
        }
      }
    }
    for (size_t g = 0; g < cells.size(); ++g) {
      for (size_t a = 0; a < cells[g].mesh.size(); ++a) {
        if (cells[g].mesh[a] == 1)
          continue;
        std::vector<Meaning> m;
        std::vector<double> pieceBytes;
        for (const Operand &operand : operands) {
          m.push_back(operand.view.axes[g][a]);
          pieceBytes.push_back(operand.view.bytes / static_cast<double>(cells.size()));
        }
        for (const Candidate &c : candidates(op, rule, m, pieceBytes, cells[g].mesh[a], false)) {
          Decision trial = d;
          for (size_t o = 0; o < n; ++o)
            trial.requiredAxes[o][g][a] = c.required[o];
          for (size_t r = 0; r < results; ++r)
            trial.resultAxes[r][g][a] = c.results[r];
          if (accept(trial)) {
            d = std::move(trial);
            break;
          }
        }
      }
    }
    // The last accepted trial's annotations are the decision's: built again only when no
    // trial was accepted (the first decision stands).
    s.found = accepted || buildAll(op, rule, cells, d, &s.required, &s.produced);
    return s;
  }

  // The backward step: a waiting op's result must be `target`; derive what its operands
  // must be through its rule, settle them (recursively), and give the op its result.
  // Falls back to deciding the op forward on the target's cells when the rule cannot be
  // inverted.
  void settleBackward(ir::Op &op, const ir::Annotation &target) {
    pending_.erase(&op);
    const OpShardingRule &rule = rules_.of(op);
    const std::vector<Cell> cells = cellsOf(target);
    // Read the target through the result's dims: a view of "operand" -1.
    OpShardingRule asResult = rule;
    asResult.operands = rule.results;
    asResult.scales.clear();
    OperandView out = viewOf(asResult, 0, *op.result(), target);
    auto requiredOf = [&](const Meaning &m, size_t o) -> std::optional<Meaning> {
      if (m.kind == Kind::Dup)
        return Meaning{Kind::Dup};
      if (m.kind == Kind::Partial)
        return rule.linearity == Linearity::Additive ? std::optional<Meaning>(Meaning{Kind::Partial}) : std::nullopt;
      if (m.kind == Kind::Split)
        return rule.operandHas(static_cast<int>(o), m.factor) ? m : Meaning{Kind::Dup};
      return std::nullopt;
    };
    std::vector<ir::Annotation> required;
    bool ok = true;
    for (size_t o = 0; o < op.operands.size() && ok; ++o) {
      auto hetero = requiredOf(out.hetero, o);
      std::vector<std::vector<Meaning>> axes;
      ok = hetero.has_value();
      for (size_t g = 0; g < cells.size() && ok; ++g) {
        axes.emplace_back();
        for (const Meaning &m : out.axes[g]) {
          auto a = requiredOf(m, o);
          ok = ok && a.has_value();
          axes.back().push_back(a.value_or(Meaning{}));
        }
      }
      auto a = ok ? buildAnnotation(rule, rule.operands[o], static_cast<int>(o), *op.operands[o], cells, *hetero, axes)
                  : std::nullopt;
      ok = a.has_value();
      if (a)
        required.push_back(*a);
    }
    for (size_t o = 0; o < op.operands.size() && ok; ++o)
      ok = waiting(op.operands[o]) || (isFreeLeaf(op.operands[o]) && plan_.flexible.at(op.operands[o]).freeCells);
    if (!ok) {
      decide(op, cells); // a leaf held elsewhere, or a rule that cannot be read backwards
      return;
    }
    for (size_t o = 0; o < op.operands.size(); ++o) {
      ir::Value *operand = op.operands[o];
      if (waiting(operand)) {
        settleBackward(*operand->def, required[o]);
      } else {
        set(operand, required[o]);
        plan_.flexible.erase(operand);
      }
    }
    set(op.result(), target);
  }

  // Decides a free leaf, and puts a reshard before `op` when the operand must change.
  void settle(ir::Op &op, Operand &operand, const ir::Annotation &target, const Decision &d, size_t o,
              const std::vector<Cell> &cells) {
    ir::Value *value = operand.value;
    if (waiting(value)) {
      settleBackward(*value->def, target);
      return;
    }
    if (operand.free) {
      const FlexibleLeaf &leaf = plan_.flexible.at(value);
      ir::Annotation decided = target;
      if (!leaf.freeCells && operand.moved) {
        decided = leaf.skeleton; // keep its own cells; take the chosen meanings where meshes match
        auto own = cellsOf(decided);
        for (size_t s = 0; s < own.size(); ++s)
          for (size_t g = 0; g < cells.size(); ++g)
            if (own[s].mesh == cells[g].mesh)
              for (size_t a = 0; a < own[s].mesh.size(); ++a)
                if (leaf.freeAxis[s][a])
                  decided.subgroups[s].axes[a] = target.subgroups[g].axes[a];
      } else if (!leaf.freeCells) {
        decided = leaf.skeleton; // the op's cells are some of the leaf's: spread the choice
        auto own = cellsOf(decided);
        for (size_t s = 0; s < own.size(); ++s) {
          size_t g = std::find(cells.begin(), cells.end(), own[s]) - cells.begin();
          if (g == cells.size())
            g = std::find_if(cells.begin(), cells.end(), [&](const Cell &c) { return c.mesh == own[s].mesh; }) -
                cells.begin();
          if (g < cells.size())
            for (size_t a = 0; a < own[s].mesh.size(); ++a)
              if (leaf.freeAxis[s][a])
                decided.subgroups[s].axes[a] = target.subgroups[g].axes[a];
        }
      }
      set(value, decided);
      plan_.flexible.erase(value);
      // What the op reads of the decided leaf; a part the leaf's own layout fixes (a copy
      // per pipeline) may still need a reshard, usually a local slice.
      operand.current = restrictTo(decided, cells).value_or(moveTo(decided, cells));
    }
    const bool changes = operand.moved || !(operand.current == target);
    if (!changes)
      return;
    ReshardReason reason = classify(op, operand, target, d, o);
    insertReshard(op, value, target, reason);
  }

  ReshardReason classify(const ir::Op &op, const Operand &operand, const ir::Annotation &, const Decision &d,
                         size_t o) const {
    if (operand.moved) {
      if (!plan_.hasPipelines || !operand.value->def)
        return ReshardReason::Layout;
      auto from = plan_.stageOf.find(operand.value->def), to = plan_.stageOf.find(&op);
      return from != plan_.stageOf.end() && to != plan_.stageOf.end() && from->second != to->second
                 ? ReshardReason::PipelineHop
                 : ReshardReason::Layout;
    }
    bool reduction = false, layout = false;
    auto look = [&](const Meaning &from, const Meaning &to) {
      if (from == to || from.kind == Kind::Free)
        return;
      if (from.kind == Kind::Partial)
        reduction = true;
      else if (from.kind == Kind::Split || from.kind == Kind::Opaque)
        layout = layout || to.kind != Kind::Partial;
    };
    look(operand.view.hetero, d.requiredHetero[o]);
    for (size_t g = 0; g < d.requiredAxes[o].size(); ++g)
      for (size_t a = 0; a < d.requiredAxes[o][g].size(); ++a)
        look(operand.view.axes[g][a], d.requiredAxes[o][g][a]);
    return layout ? ReshardReason::Layout : reduction ? ReshardReason::Reduction : ReshardReason::Local;
  }

  ir::Value *insertReshard(ir::Op &before, ir::Value *value, const ir::Annotation &target, ReshardReason reason) {
    const std::string key = ir::printAnnotation(target);
    auto cached = reshardCache_.find({value, key});
    if (cached != reshardCache_.end()) {
      ir::Graph::replaceOperand(&before, value, cached->second);
      return cached->second;
    }
    ir::Op *reshard = graph_.insertOpBefore(&before, ir::OpKind::Reshard, {value}, {value->type},
                                            {{"plan", int64_t{index_}}}, before.loc, {value->name + ".reshard"});
    ir::Value *result = reshard->result();
    for (int q = 0; q < index_; ++q)
      result->annotations[q] = value->annotations[q];
    set(result, target);
    ir::Graph::replaceOperand(&before, value, result);
    reshardCache_[{value, key}] = result;
    InsertedReshard record;
    record.value = value->name;
    record.result = result->name;
    record.from = annotationOf(value);
    record.to = target;
    record.reason = reason;
    record.loc = before.loc;
    record.bytes = static_cast<int64_t>(reason == ReshardReason::Local ? 0 : valueBytes(*value));
    record.backward = plan_.backwardOps.count(&before) || plan_.backwardReshards.count(&before);
    if (record.backward)
      plan_.backwardReshards.insert(reshard);
    plan_.reshards.push_back(record);
    return result;
  }

  void applyPin(ir::Op &op, ir::Value *value) {
    auto pin = plan_.pins.find(value);
    if (pin == plan_.pins.end() || annotationOf(value) == pin->second)
      return;
    // Reshard right after the producer; every consumer reads the pinned value.
    std::vector<ir::Op *> consumers;
    for (const auto &other : graph_.ops())
      if (other->id > op.id &&
          std::find(other->operands.begin(), other->operands.end(), value) != other->operands.end())
        consumers.push_back(other.get());
    // Already pinned by an earlier run: the only consumer is the reshard to the pin.
    if (consumers.empty() || (consumers.size() == 1 && consumers[0]->kind == ir::OpKind::Reshard &&
                              known(consumers[0]->result()) && annotationOf(consumers[0]->result()) == pin->second))
      return;
    ir::Value *pinned = insertReshard(*consumers.front(), value, pin->second, ReshardReason::Pinned);
    plan_.reshards.back().loc = plan_.pinLocs.count(value) ? plan_.pinLocs.at(value) : op.loc;
    for (ir::Op *consumer : consumers)
      ir::Graph::replaceOperand(consumer, value, pinned);
  }

  void finish() {
    for (const ir::Op *op : std::vector<const ir::Op *>(pending_.begin(), pending_.end()))
      for (ir::Value *result : op->results)
        if (!known(result))
          set(result, allDevicesDup(result));
    for (const auto &op : graph_.ops())
      for (ir::Value *result : op->results)
        if (!known(result)) {
          auto leaf = plan_.flexible.find(result);
          set(result,
              leaf != plan_.flexible.end() && !leaf->second.freeCells ? leaf->second.skeleton : allDevicesDup(result));
        }
    plan_.flexible.clear();
    shardOptimizerState();
    synchronizeGradients();
  }

  // Training builds: each gradient goes to where its parameter's update happens, the
  // parameter's layout (or its optimizer state's under `zero`): partial sums across
  // data-parallel copies become all-reduces, split-all-reduces across pipelines of different
  // layouts, reduce-scatters under `zero`.
  void synchronizeGradients() {
    for (const auto &[param, grad] : plan_.gradients) {
      if (!known(param) || !known(grad))
        continue;
      auto state = plan_.optimizerState.find(param->name);
      const ir::Annotation &target = state != plan_.optimizerState.end() ? state->second : annotationOf(param);
      if (annotationOf(grad) == target)
        continue;
      ir::Op *reshard = graph_.createOp(ir::OpKind::Reshard, {grad}, {grad->type},
                                        {{"plan", int64_t{index_}}, {"role", std::string(kGradientSyncRole)}},
                                        grad->def->loc, {grad->name + ".synced"});
      plan_.syncedGradients[grad] = reshard->result();
      for (int q = 0; q < graph_.numPlans; ++q)
        reshard->result()->annotations[q] = q == index_ ? target : grad->annotations[q];
      plan_.reshards.push_back(InsertedReshard{grad->name, reshard->result()->name, annotationOf(grad), target,
                                               ReshardReason::Reduction, grad->def->loc,
                                               static_cast<int64_t>(valueBytes(*grad)), true});
    }
  }

  // `zero`: the optimizer state of a parameter is split over all the copies of it.
  // `zero replicas R` keeps R copies of each share on different devices: where the parameter
  // lies whole on R or more pipelines (subgroups), each pipeline keeps a whole copy of the
  // state, split inside it; otherwise an outermost replica axis of R is kept in each
  // subgroup (its devices farthest apart in the group) and the rest of the copies split.
  void shardOptimizerState() {
    bool zero = false;
    int replicas = 1;
    ir::Location where;
    if (plan_.spec && plan_.spec->zero) {
      zero = true;
      replicas = plan_.spec->zeroReplicas;
      where = plan_.spec->zeroLoc;
    }
    if (plan_.spec)
      for (const auto &pipeline : plan_.spec->pipelines)
        for (const auto &stage : pipeline.stages)
          if (stage.zero && (!zero || stage.zeroReplicas > replicas)) {
            zero = true;
            replicas = stage.zeroReplicas;
            where = stage.zeroLoc;
          }
    if (!zero)
      return;
    std::vector<std::string> short_;
    for (const ir::Value *param : graph_.params()) {
      ir::Annotation state = annotationOf(param);
      if (param->type.rank() == 0)
        continue;
      const bool heteroDup = state.subgroups.size() > 1 && state.hetero.kind == ir::HeteroKind::Dup;
      int within = replicas; // copies each subgroup keeps
      if (heteroDup && replicas > 1 && static_cast<int>(state.subgroups.size()) >= replicas)
        within = 1;
      else if (heteroDup)
        state.hetero = {ir::HeteroKind::Split, 0, {}, false};
      // Each copy axis splits a dimension no other axis splits, so that a device's share
      // of the state lies inside its piece of the parameter (under tensor parallelism the
      // parameter's own split keeps its dimension).
      const auto sizes = ir::sizesWithUnboundAsOne(param->type.shape);
      for (auto &local : state.subgroups) {
        std::set<int> split;
        for (const auto &axis : local.axes)
          if (axis.kind == ir::AxisKind::Split)
            split.insert(axis.dim);
        int keep = within, copies = 1;
        std::vector<ir::MeshAxis> axes;
        for (auto axis : local.axes) {
          if (axis.kind != ir::AxisKind::Dup || axis.count <= 1) {
            axes.push_back(axis);
            continue;
          }
          copies *= axis.count;
          if (const int kept = std::gcd(axis.count, keep); kept > 1) {
            axes.push_back({ir::AxisKind::Dup, 0, kept});
            axis.count /= kept;
            keep /= kept;
            if (axis.count == 1)
              continue;
          }
          int dim = 0;
          for (int d = 0; d < static_cast<int>(sizes.size()); ++d)
            if (!split.count(d) && sizes[static_cast<size_t>(d)] % axis.count == 0) {
              dim = d;
              break;
            }
          split.insert(dim);
          axes.push_back({ir::AxisKind::Split, dim, axis.count});
        }
        local.axes = std::move(axes);
        if (keep > 1)
          short_.push_back("'" + param->name + "' has " + std::to_string(copies) + (copies == 1 ? " copy" : " copies") +
                           " on devices " + ir::printDeviceRange(local.devices) +
                           (copies < within ? ", fewer than " : ", not a multiple of ") + std::to_string(within));
      }
      plan_.optimizerState[param->name] = state;
    }
    if (!short_.empty())
      report_(
          Problem{Severity::Error,
                  where,
                  "HS120",
                  "zero replicas " + std::to_string(replicas) + ": " + short_.front() +
                      (short_.size() > 1 ? " (and " + std::to_string(short_.size() - 1) + " more parameters)" : "") +
                      "; each share of its optimizer state is kept on " + std::to_string(replicas) +
                      " of the devices holding it (its data-parallel copies, or pipelines that each hold it whole)",
                  {},
                  {}});
  }
};

} // namespace

void deduceAnnotations(ir::Graph &graph, LoweredPlan &plan, const ReportFn &report) {
  Deducer(graph, plan, report).run();
}

} // namespace hspmd::passes
