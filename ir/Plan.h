// Plan.h - an elaborated annotation plan: the strategy sugar with names resolved and
// integers evaluated, plus the raw annotations pinned to graph values. Produced by the
// frontend; passes/ lowers it into per-value annotations.
#pragma once

#include "ir/Annotation.h"
#include "ir/Location.h"

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace hspmd::ir {

/// A `cp [...]` or `hp [...]` entry: a device (or device group) and its share.
struct ShareSpec {
  std::vector<int> devices;
  int64_t value = 0;
  Location loc;
};

struct StageSpec {
  std::vector<int> devices;
  int tp = 1;
  std::vector<ShareSpec> cp, hp;
  std::string stack;                    // the stacked layer the stage runs, e.g. "blocks"
  int layerBegin = 0, layerEnd = 0;     // [begin, end) of that stack
  std::vector<std::string> extraParams; // `with ...`, expanded to parameter names
  std::vector<std::string> with;        // the `with` paths as written ("norm"); what is printed
  bool zero = false, recompute = false;
  int zeroReplicas = 1; // `zero replicas N`: each shard of the optimizer state on N devices
  Location loc, zeroLoc, devicesLoc, tpLoc, cpLoc, hpLoc, layersLoc;
  std::vector<Location> extraParamLocs; // one per extraParams entry
};

struct PipelineSpec {
  std::string name;
  int64_t share = 1; // relative share of the global batch
  int64_t microbatches = 1;
  std::vector<StageSpec> stages;
  Location loc, shareLoc, microbatchesLoc;
};

/// A user annotation (`annotate`) or pinned reshard (`reshard`) on one graph value.
struct PinnedAnnotation {
  std::string value; // the value's name in the graph
  Annotation annotation;
  Location loc;
};

/// An argument of the plan's `for MODEL(...)`, evaluated.
struct ModelArg {
  std::string name; // "" when positional
  std::variant<int64_t, double, bool, std::string> value;
  Location loc;
  bool operator==(const ModelArg &other) const { return name == other.name && value == other.value; }
};

struct PlanSpec {
  std::string name;
  std::string model;
  std::vector<ModelArg> modelArgs;
  Location loc;
  std::string clusterPath; // resolved against the plan file's folder; "" when not given
  std::map<std::string, int64_t> bindings;
  std::string optimizer = "adamw";
  std::map<std::string, double> optimizerArgs;
  std::string schedule = "1f1b";
  bool zero = false, recompute = false;
  int zeroReplicas = 1; // `zero replicas N` (docs/elastic.md): a failure of N - 1 devices loses no shard
  bool chunked = false; // uneven (chunked) splits are intended: no HS104
  /// `precision bf16`: activations and their messages stored in bf16 (docs/runtime.md, "Mixed
  /// precision"); a command's --precision overrides it.
  bool bf16 = false;
  std::vector<PipelineSpec> pipelines;
  std::vector<PinnedAnnotation> annotations, reshards;
  Location clusterLoc, scheduleLoc, zeroLoc;
};

} // namespace hspmd::ir
