// Lint.cpp - the checks of `hspmc lint`, one function per family. Codes: docs/lint.md.
#include "planner/Lint.h"

#include "ir/AnnotationText.h"
#include "ir/Words.h"
#include "passes/Layout.h"
#include "planner/Estimates.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <set>

namespace hspmd::planner {

namespace {

using passes::Problem;
using passes::Severity;

std::string fixed(double value, int digits) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

class Linter {
public:
  Linter(const ir::Graph &graph, const passes::LoweredPlan &plan, const Cluster *cluster,
         const passes::ReportFn &report, const std::map<int, PlannedMemory> &planned)
      : graph_(graph), plan_(plan), spec_(*plan.spec), cluster_(cluster), report_(report), planned_(planned) {}

  void run(LintPart part) {
    if (part == LintPart::Memory) {
      memoryFits();
      return;
    }
    if (!cluster_)
      warn(spec_.loc, "HS200", "no cluster file: device, memory, balance and link checks are skipped");
    devicesExist();
    layersCovered();
    parametersPlaced();
    annotationsMatchStages();
    headsRespectGroups();
    batchesDivide();
    stagesHaveWork();
    splitsDivide();
    if (part == LintPart::All)
      memoryFits();
    balance();
    links();
    reshards();
  }

private:
  const ir::Graph &graph_;
  const passes::LoweredPlan &plan_;
  const ir::PlanSpec &spec_;
  const Cluster *cluster_;
  const passes::ReportFn &report_;
  const std::map<int, PlannedMemory> &planned_;

  void error(const ir::Location &loc, const char *code, std::string message, const ir::Location &noteLoc = {},
             std::string note = {}) {
    report_(Problem{Severity::Error, loc, code, std::move(message), noteLoc, std::move(note)});
  }
  void warn(const ir::Location &loc, const char *code, std::string message, const ir::Location &noteLoc = {},
            std::string note = {}) {
    report_(Problem{Severity::Warning, loc, code, std::move(message), noteLoc, std::move(note)});
  }

  // HS101
  void devicesExist() {
    if (!cluster_)
      return;
    const int count = static_cast<int>(cluster_->devices.size());
    auto check = [&](const std::vector<int> &devices, const ir::Location &loc) {
      for (int d : devices)
        if (d >= count) {
          error(loc, "HS101",
                "device " + std::to_string(d) + " is not in the cluster (" + cluster_->name + " has devices 0.." +
                    std::to_string(count - 1) + ")");
          return;
        }
    };
    for (const auto &pipeline : spec_.pipelines)
      for (const auto &stage : pipeline.stages) {
        check(stage.devices, stage.devicesLoc);
        for (const auto &share : stage.cp)
          check(share.devices, share.loc);
        for (const auto &share : stage.hp)
          check(share.devices, share.loc);
      }
    for (const auto &pinned : spec_.annotations)
      check(pinned.annotation.devices(), pinned.loc);
    for (const auto &pinned : spec_.reshards)
      check(pinned.annotation.devices(), pinned.loc);
  }

  // HS107: every layer of every stack exactly once per pipeline, in order.
  void layersCovered() {
    std::map<std::string, int> stackSizes;
    for (const ir::Value *param : graph_.params()) {
      if (const auto position = ir::stackPosition(param->name))
        stackSizes[position->stack] = std::max(stackSizes[position->stack], static_cast<int>(position->layer) + 1);
    }
    for (const auto &pipeline : spec_.pipelines) {
      for (const auto &[stack, size] : stackSizes) {
        std::vector<size_t> stages;
        for (size_t s = 0; s < pipeline.stages.size(); ++s)
          if (pipeline.stages[s].stack == stack)
            stages.push_back(s);
        for (size_t i = 1; i < stages.size(); ++i) {
          const auto &stage = pipeline.stages[stages[i]];
          if (stage.layerBegin < pipeline.stages[stages[i - 1]].layerBegin) {
            error(stage.layersLoc, "HS107",
                  "stage " + std::to_string(stages[i]) + " of pipeline '" + pipeline.name + "' runs " + stack + "[" +
                      std::to_string(stage.layerBegin) + ":" + std::to_string(stage.layerEnd) +
                      "] after an earlier stage ran later layers");
            return;
          }
        }
        std::vector<int> owner(size, -1);
        for (size_t s : stages) {
          const auto &stage = pipeline.stages[s];
          for (int layer = stage.layerBegin; layer < stage.layerEnd; ++layer) {
            if (owner[layer] >= 0) {
              error(stage.layersLoc, "HS107",
                    "layer " + std::to_string(layer) + " of " + stack + " is placed twice in pipeline '" +
                        pipeline.name + "' (stages " + std::to_string(owner[layer]) + " and " + std::to_string(s) +
                        ")");
              return;
            }
            owner[layer] = static_cast<int>(s);
          }
        }
        for (int layer = 0; layer < size; ++layer) {
          if (owner[layer] >= 0)
            continue;
          int end = layer;
          while (end < size && owner[end] < 0)
            ++end;
          // Point at the first stage after the gap, or at the pipeline when the gap is at the end.
          auto after = std::find_if(stages.begin(), stages.end(),
                                    [&](size_t s) { return pipeline.stages[s].layerBegin >= end; });
          error(after != stages.end() ? pipeline.stages[*after].layersLoc : pipeline.loc, "HS107",
                layerRange(layer, end, stack, pipeline.name));
          return;
        }
      }
    }
  }

  static std::string layerRange(int begin, int end, const std::string &stack, const std::string &pipeline) {
    return (end - begin == 1 ? "layer " + std::to_string(begin) + " of " + stack + " is"
                             : "layers " + stack + "[" + std::to_string(begin) + ":" + std::to_string(end) + "] are") +
           " not placed in pipeline '" + pipeline + "'";
  }

  // HS107: a parameter outside the stacks must be held by some stage of every pipeline.
  void parametersPlaced() {
    for (const auto &pipeline : spec_.pipelines) {
      std::set<std::string> held;
      for (const auto &stage : pipeline.stages)
        held.insert(stage.extraParams.begin(), stage.extraParams.end());
      for (const ir::Value *param : graph_.params()) {
        // A layer of a stack is placed by `layers`: layersCovered names each missing range once.
        if (ir::stackPosition(param->name))
          continue;
        if (!held.count(param->name))
          error(pipeline.loc, "HS107",
                "parameter '" + param->name + "' is not placed in pipeline '" + pipeline.name + "' (add `with " +
                    param->name + "` to the stages that use it)");
      }
    }
  }

  // HS109: a raw annotation of a stage's parameter must use that stage's devices.
  void annotationsMatchStages() {
    if (spec_.pipelines.empty())
      return;
    for (const auto &pinned : spec_.annotations) {
      const ir::Value *value = graph_.findValue(pinned.value);
      if (!value || value->def->kind != ir::OpKind::Param)
        continue;
      std::set<int> stageDevices;
      const auto position = ir::stackPosition(pinned.value);
      for (const auto &pipeline : spec_.pipelines)
        for (const auto &stage : pipeline.stages) {
          bool holds =
              std::find(stage.extraParams.begin(), stage.extraParams.end(), pinned.value) != stage.extraParams.end() ||
              (position && position->stack == stage.stack && position->layer >= stage.layerBegin &&
               position->layer < stage.layerEnd);
          if (holds)
            stageDevices.insert(stage.devices.begin(), stage.devices.end());
        }
      auto devices = pinned.annotation.devices();
      std::set<int> annotated(devices.begin(), devices.end());
      if (!stageDevices.empty() && annotated != stageDevices)
        error(pinned.loc, "HS109",
              "'" + pinned.value + "' is annotated on devices other than those of the stages that hold it");
    }
  }

  // HS119: tensor parallelism splits attention by heads, so `tp` must divide the query
  // heads and the key/value heads of every attention the stage runs. Otherwise no split
  // of the heads exists and attention would run whole on every device of the stage.
  bool tpDividesHeads(const ir::StageSpec &stage) {
    const std::set<int> devices(stage.devices.begin(), stage.devices.end());
    for (const auto &op : graph_.ops()) {
      if (op->kind != ir::OpKind::Attention || !passes::inForwardGraph(plan_, *op))
        continue;
      const auto &annotation = op->result()->annotations.at(plan_.index);
      if (!annotation)
        continue;
      const auto held = annotation->devices();
      if (std::none_of(held.begin(), held.end(), [&](int d) { return devices.count(d) > 0; }))
        continue;
      const auto heads = op->operands[0]->type.shape[2].constant(), kv = op->operands[1]->type.shape[2].constant();
      for (const auto &[count, what] : {std::pair{heads, "heads"}, std::pair{kv, "key/value heads"}}) {
        if (!count || *count % stage.tp == 0)
          continue;
        error(stage.tpLoc, "HS119",
              "tp " + std::to_string(stage.tp) + " does not divide the " + std::to_string(*count) + " " + what +
                  " of attention: tensor parallelism splits attention by heads; use a tp that divides " +
                  std::to_string(*count),
              op->loc, "the attention is here");
        return false;
      }
    }
    return true;
  }

  // HS106: head counts per device must sum to the heads. HS205: shares that split a
  // key/value group train (deduction gathers the keys and values whole), at that cost.
  void headsRespectGroups() {
    for (const auto &pipeline : spec_.pipelines)
      for (const auto &stage : pipeline.stages) {
        if (stage.tp > 1 && stage.hp.empty() && !tpDividesHeads(stage))
          return;
        if (stage.hp.empty())
          continue;
        int64_t total = 0;
        for (const auto &share : stage.hp)
          total += share.value;
        for (const auto &op : graph_.ops()) {
          if (op->kind != ir::OpKind::Attention || !passes::inForwardGraph(plan_, *op))
            continue;
          auto heads = op->operands[0]->type.shape[2].constant(), kv = op->operands[1]->type.shape[2].constant();
          if (!heads || !kv)
            continue;
          if (total != *heads) {
            error(stage.hpLoc, "HS106",
                  "hp head counts sum to " + std::to_string(total) + ", but attention has " + std::to_string(*heads) +
                      " heads");
            return;
          }
          const int64_t group = *heads / *kv;
          for (const auto &share : stage.hp)
            if (share.value % group != 0) {
              warn(share.loc, "HS205",
                   std::to_string(share.value) + " heads break the key/value groups: " + std::to_string(*heads) +
                       " query heads share " + std::to_string(*kv) +
                       " key/value heads; with shares that are not multiples of " + std::to_string(group) +
                       " every device gathers all keys and values");
              return;
            }
          return;
        }
      }
  }

  // HS110, HS112, HS201
  void batchesDivide() {
    for (size_t p = 0; p < spec_.pipelines.size(); ++p) {
      const auto &pipeline = spec_.pipelines[p];
      if (static_cast<int64_t>(pipeline.stages.size()) > pipeline.microbatches)
        warn(pipeline.microbatchesLoc, "HS201",
             "pipeline '" + pipeline.name + "' has " + std::to_string(pipeline.stages.size()) + " stages but " +
                 ir::counted(pipeline.microbatches, "micro-batch", "micro-batches") +
                 ": some stages idle for most of each step");
      if (plan_.batchPerPipeline.empty())
        continue;
      const int64_t batch = plan_.batchPerPipeline[p];
      if (batch == 0) {
        error(pipeline.shareLoc, "HS112",
              "pipeline '" + pipeline.name + "' gets no samples of the batch of " +
                  std::to_string(spec_.bindings.at("B")));
        continue;
      }
      if (batch % pipeline.microbatches != 0)
        error(pipeline.microbatchesLoc, "HS110",
              std::to_string(pipeline.microbatches) + " micro-batches do not divide pipeline '" + pipeline.name +
                  "''s batch of " + std::to_string(batch));
    }
  }

  // HS207: a stage with no layers and no parameters trains (its devices pass nothing on),
  // but its devices idle: most likely a stage left half-written.
  void stagesHaveWork() {
    for (const auto &pipeline : spec_.pipelines)
      for (size_t s = 0; s < pipeline.stages.size(); ++s) {
        const auto &stage = pipeline.stages[s];
        if (stage.layerEnd > stage.layerBegin || !stage.extraParams.empty())
          continue;
        std::string devices;
        for (int d : stage.devices)
          devices += (devices.empty() ? "" : ", ") + std::to_string(d);
        warn(stage.loc, "HS207",
             "stage " + std::to_string(s) + " of pipeline '" + pipeline.name +
                 "' runs no layers and holds no parameters: " +
                 (stage.devices.size() == 1 ? "its device " + devices + " idles" : "its devices " + devices + " idle") +
                 " (give it `layers` or remove it)");
      }
  }

  // HS104: a split over a mesh axis should divide the dimension it splits.
  void splitsDivide() {
    if (spec_.chunked)
      return;
    std::set<std::string> reported;
    for (const auto &op : graph_.ops()) {
      if (op->kind != ir::OpKind::Param && op->kind != ir::OpKind::Input)
        continue;
      const ir::Value *value = op->result();
      if (const auto &annotation = value->annotations.at(plan_.index))
        splitDivides(*value, *annotation, "'" + value->name + "'", &reported);
    }
    // `zero` shards each parameter's optimizer state over the replicas: equal shards, or
    // its all-gather would take unequal pieces.
    // One message for all of them: they share the cause.
    std::vector<const ir::Value *> uneven;
    for (const auto &[name, annotation] : plan_.optimizerState)
      if (const ir::Value *param = graph_.findValue(name); param && !splitDivides(*param, annotation, "", nullptr))
        uneven.push_back(param);
    if (!uneven.empty()) {
      const std::string others =
          uneven.size() == 1 ? std::string() : " and of " + std::to_string(uneven.size() - 1) + " more";
      splitDivides(*uneven.front(), plan_.optimizerState.at(uneven.front()->name),
                   "the optimizer state of '" + uneven.front()->name + "'" + others + " " + kUnevenZeroState,
                   &reported);
    }
  }

  // HS104 for one layout of `value`, named `what` in the message; reported once per value in
  // `reported`, not at all without it. Whether every split divides.
  bool splitDivides(const ir::Value &value, const ir::Annotation &annotation, const std::string &what,
                    std::set<std::string> *reported) {
    for (size_t g = 0; g < annotation.subgroups.size(); ++g)
      for (const auto &axis : annotation.subgroups[g].axes) {
        if (axis.kind != ir::AxisKind::Split || axis.count == 1)
          continue;
        // What the subgroup holds of the dimension (all of it, or its share of a split
        // between subgroups) is what the axis splits.
        const auto sizes = concrete(value);
        const auto &devices = annotation.subgroups[g].devices;
        int64_t lo = sizes[axis.dim], hi = 0, extent = 0;
        for (int device : devices)
          for (const auto &piece : ir::ownedRegion(annotation, sizes, device)) {
            lo = std::min(lo, piece.box.lo[axis.dim]);
            hi = std::max(hi, piece.box.hi[axis.dim]);
            extent = std::max(extent, piece.box.hi[axis.dim] - piece.box.lo[axis.dim]);
          }
        auto size = value.type.shape[axis.dim].constant();
        if (!size || hi <= lo || (hi - lo) % axis.count == 0)
          continue;
        if (!reported || !reported->insert(value.name).second)
          return false;
        const std::string dimension = "dimension " + std::to_string(axis.dim);
        error(locateValue(value, devices[0]), "HS104",
              std::to_string(axis.count) + " devices do not divide " +
                  (hi - lo == *size ? dimension + " (" + std::to_string(*size) + ") of " + what
                                    : dimension + " of " + what + " where their subgroup holds " +
                                          std::to_string(hi - lo) + " of its " + std::to_string(*size)) +
                  " (pieces of " + std::to_string(extent) +
                  " or fewer; say `chunked` in the plan if that is intended)");
        return false;
      }
    return true;
  }

  // HS111 (and HS206, which only the memory plans can tell)
  void memoryFits() {
    if (!cluster_)
      return;
    const bool recompute = spec_.recompute;
    std::optional<Problem> copiesLeftOut; // the first device's, said when no device is over its memory
    for (const auto &[device, memory] : estimateMemory(graph_, plan_)) {
      if (device >= static_cast<int>(cluster_->devices.size()))
        continue;
      bool stageRecompute = recompute;
      const ir::StageSpec *stage = stageOf(device);
      if (stage)
        stageRecompute = stageRecompute || stage->recompute;
      const DeviceType &type = cluster_->typeOf(device);
      const double capacity = type.memoryGiB * 1024 * 1024 * 1024;
      const ir::Location &loc = stage ? stage->devicesLoc : spec_.loc;
      std::string note;
      if (!stageRecompute && memory.total(true) <= capacity)
        note = "with `recompute` the estimate is " + memoryText(memory.total(true));
      if (auto planned = planned_.find(device); planned != planned_.end()) {
        // The memory plan of the device's training program: exact for the program as
        // compiled (parameters, gradients and optimizer state in the model's element types).
        const double need = static_cast<double>(planned->second.peak);
        if (need <= capacity) {
          if (!copiesLeftOut)
            copiesLeftOut = copiesThatDoNotFit(device, planned->second, type, capacity, loc);
          continue;
        }
        error(loc, "HS111",
              "device " + std::to_string(device) + " needs " + memoryText(need) +
                  " by the memory plan of its training program (first-order estimate " +
                  memoryText(memory.total(stageRecompute)) + "), but a " + type.name + " has " + memoryText(capacity),
              note.empty() ? ir::Location{} : loc, note);
        return;
      }
      const double need = memory.total(stageRecompute);
      if (need <= capacity)
        continue;
      error(loc, "HS111",
            "device " + std::to_string(device) + " needs an estimated " + memoryText(need) + " (parameters " +
                memoryText(memory.params) + ", gradients " + memoryText(memory.grads) + ", optimizer state " +
                memoryText(memory.optimizer) + ", activations " +
                memoryText(stageRecompute ? memory.activationsRecompute : memory.activations) + " for " +
                std::to_string(memory.inFlight) + " micro-batches in flight), but a " + type.name + " has " +
                memoryText(capacity),
            note.empty() ? ir::Location{} : loc, note);
      return; // one device tells the story
    }
    if (copiesLeftOut)
      report_(*copiesLeftOut);
  }

  // HS206: the bf16 copies a GPU would leave out beside the memory plan (`capacity` bytes of a
  // `type`), allocated in order while `memory.reserve` bytes stay free, as the GPU does.
  static std::optional<Problem> copiesThatDoNotFit(int device, const PlannedMemory &memory, const DeviceType &type,
                                                   double capacity, const ir::Location &loc) {
    double free = capacity - static_cast<double>(memory.peak);
    int leftOut = 0;
    double leftOutBytes = 0;
    for (int64_t bytes : memory.bf16Copies)
      if (free - static_cast<double>(bytes) >= static_cast<double>(memory.reserve)) {
        free -= static_cast<double>(bytes);
      } else {
        ++leftOut;
        leftOutBytes += static_cast<double>(bytes);
      }
    if (leftOut == 0)
      return std::nullopt;
    return Problem{Severity::Warning,
                   loc,
                   "HS206",
                   "device " + std::to_string(device) + "'s bf16 copies of " + std::to_string(leftOut) + " of the " +
                       std::to_string(memory.bf16Copies.size()) + " parameters its bf16 products read (" +
                       memoryText(leftOutBytes) + ") do not fit on a " + type.name + " (" + memoryText(capacity) +
                       ") beside the memory plan of its training program (" +
                       memoryText(static_cast<double>(memory.peak)) + ") and the " +
                       memoryText(static_cast<double>(memory.reserve)) +
                       " a GPU run keeps free: on a GPU those products round the parameter each time they read it "
                       "(slower, the same results)",
                   {},
                   {}};
  }

  // HS202
  void balance() {
    if (!cluster_)
      return;
    auto compute = estimateCompute(graph_, plan_, *cluster_);
    if (compute.size() < 2)
      return;
    auto [slowest, fastest] = std::minmax_element(compute.begin(), compute.end(),
                                                  [](const auto &a, const auto &b) { return a.second > b.second; });
    if (fastest->second <= 0 || slowest->second / fastest->second <= 1.10)
      return;
    // Layers are whole: when giving away one of its layers would make the slowest device
    // faster than the fastest one, no placement of layers balances better (a planned plan
    // on a mixed cluster is like that) and there is nothing to say.
    const ir::StageSpec *stage = stageOf(slowest->first);
    const int layers = stage && !stage->stack.empty() ? std::max(1, stage->layerEnd - stage->layerBegin) : 1;
    if (slowest->second - slowest->second / layers <= fastest->second)
      return;
    warn(spec_.loc, "HS202",
         "estimated compute per step differs by " + fixed(100 * (slowest->second / fastest->second - 1), 0) +
             "% across devices: slowest device " + std::to_string(slowest->first) + " (" +
             cluster_->devices[slowest->first].type + ", " + fixed(slowest->second * 1e3, 2) + " ms), fastest device " +
             std::to_string(fastest->first) + " (" + cluster_->devices[fastest->first].type + ", " +
             fixed(fastest->second * 1e3, 2) + " ms)");
  }

  // HS203: a pipeline hop that pairs devices across nodes when another order would not.
  void links() {
    if (!cluster_)
      return;
    auto nodeOf = [&](int d) {
      return d < static_cast<int>(cluster_->devices.size()) ? cluster_->devices[d].node : -1;
    };
    for (const auto &pipeline : spec_.pipelines)
      for (size_t s = 1; s < pipeline.stages.size(); ++s) {
        const auto &from = pipeline.stages[s - 1].devices, &to = pipeline.stages[s].devices;
        if (from.size() != to.size())
          continue;
        int crossing = 0;
        std::map<int, int> fromNodes, toNodes;
        for (size_t i = 0; i < from.size(); ++i) {
          crossing += nodeOf(from[i]) != nodeOf(to[i]);
          ++fromNodes[nodeOf(from[i])];
          ++toNodes[nodeOf(to[i])];
        }
        int best = static_cast<int>(from.size());
        for (const auto &[node, count] : fromNodes)
          best -= std::min(count, toNodes[node]);
        if (crossing > best)
          warn(pipeline.stages[s].devicesLoc, "HS203",
               "the hop from stage " + std::to_string(s - 1) + " to stage " + std::to_string(s) + " of pipeline '" +
                   pipeline.name + "' sends " + std::to_string(crossing) + " of " + std::to_string(from.size()) +
                   " device pairs over the network; listing this stage's devices in another order needs only " +
                   std::to_string(best));
      }
  }

  // A value as people know it: by its name when the source gave it one ('blocks[1].forward.h'),
  // else as the result of its op where that op is written (anonymous values are numbered).
  std::string describeValue(const std::string &name) const {
    const ir::Value *value = graph_.findValue(name);
    if (!value || !value->def || name.find_first_not_of("0123456789") != std::string::npos)
      return "'" + name + "'";
    const ir::Location &loc = value->def->loc;
    return "the result of " + std::string(ir::opInfo(value->def->kind).name) + " at " +
           std::filesystem::path(loc.file.str()).filename().string() + ":" + std::to_string(loc.line) + ":" +
           std::to_string(loc.col);
  }

  // HS204: layout changes deduction inserted (not pipeline hops, reductions or pins). The
  // same change at the same place (every layer of a stack) is reported once.
  void reshards() {
    struct Group {
      const passes::InsertedReshard *first;
      int count = 0;
      int64_t bytes = 0;
    };
    std::vector<std::pair<std::string, Group>> groups;
    for (const auto &reshard : plan_.reshards) {
      if (reshard.reason != passes::ReshardReason::Layout || reshard.backward)
        continue;
      std::string key =
          reshard.loc.str() + "|" + ir::printAnnotation(reshard.from) + "|" + ir::printAnnotation(reshard.to);
      auto it = std::find_if(groups.begin(), groups.end(), [&](const auto &g) { return g.first == key; });
      if (it == groups.end())
        it = groups.insert(groups.end(), {key, Group{&reshard, 0, 0}});
      ++it->second.count;
      it->second.bytes += reshard.bytes;
    }
    for (const auto &[key, group] : groups) {
      const auto &reshard = *group.first;
      std::string what = describeValue(reshard.value) +
                         (group.count > 1 ? " and " + std::to_string(group.count - 1) + " like it" : std::string());
      warn(reshard.loc, "HS204",
           what + (group.count > 1 ? " are" : " is") + " resharded automatically from " +
               ir::printAnnotation(reshard.from) + " to " + ir::printAnnotation(reshard.to) + " (about " +
               fixed(static_cast<double>(group.bytes) / 1048576, 1) + " MiB per step)");
    }
  }

  const ir::StageSpec *stageOf(int device) const {
    for (const auto &pipeline : spec_.pipelines)
      for (const auto &stage : pipeline.stages)
        if (std::find(stage.devices.begin(), stage.devices.end(), device) != stage.devices.end())
          return &stage;
    return nullptr;
  }

  // Where a layout of `value` that `device` holds is written: its raw annotation, else the
  // stage of that device holding it (its `tp`, else its `with`, else its devices).
  ir::Location locateValue(const ir::Value &value, int device) const {
    for (const auto &pinned : spec_.annotations)
      if (pinned.value == value.name)
        return pinned.loc;
    const ir::StageSpec *stage = stageOf(device);
    if (!stage)
      return spec_.pipelines.empty() ? spec_.loc : spec_.pipelines[0].stages[0].devicesLoc;
    if (value.def->kind == ir::OpKind::Param) {
      if (stage->tpLoc.isKnown())
        return stage->tpLoc;
      for (size_t i = 0; i < stage->extraParams.size(); ++i)
        if (stage->extraParams[i] == value.name)
          return stage->extraParamLocs[i];
    }
    return stage->devicesLoc;
  }

  static std::vector<int64_t> concrete(const ir::Value &value) {
    std::vector<int64_t> sizes;
    for (const auto &dim : value.type.shape)
      sizes.push_back(dim.constant().value_or(1));
    return sizes;
  }
};

} // namespace

void lintPlan(const ir::Graph &graph, const passes::LoweredPlan &plan, const Cluster *cluster,
              const passes::ReportFn &report, const std::map<int, PlannedMemory> &planned, LintPart part) {
  Linter(graph, plan, cluster, report, planned).run(part);
}

} // namespace hspmd::planner
