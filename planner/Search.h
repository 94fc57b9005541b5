// Search.h - the planner (shared/DESIGN.md section 10): a fast global search over strategies
// for a model on a cluster, each priced with an analytic cost model, and the local programs
// that size each strategy's parts.
//
// Strategies, all built from groups of devices of one type inside one node (tensor-parallel
// groups: fast links stay inside a group):
//   - pipelines per device type: k pipelines of p stages of one TP group each, per type; the
//     layers of each pipeline split over its stages and the batch over the pipelines by the
//     local programs below (HSPMD / HetHub style);
//   - one pipeline over every TP group of the cluster, layers split by speed;
//   - one context-parallel group of TP groups, each taking a contiguous sequence range
//     (planContextShares), or a head-parallel group taking unequal head counts and sequence
//     shares (HexiSeq style; planHeadShares).
// The symmetric plans the report compares against are the same shapes with equal parts:
// Megatron-style (one pipeline of p equal stages, tensor and data parallel inside), equal
// sequence or head shares, over every device or over the devices of one type.
//
// Local programs (each with a fast exact algorithm the search uses and an integer program
// solved by COIN-OR CBC that tests and benches compare it with):
//   - layers per stage: minimise the slowest stage's time per micro-batch, subject to memory;
//   - sequences per pipeline: minimise the slowest pipeline's (m_i + p_i - 1) x tau_i, where
//     an unused pipeline costs nothing (binary u_i);
//   - heads and sequence shares of a head-parallel group.
#pragma once

#include "ir/Cost.h"
#include "ir/Graph.h"
#include "ir/Plan.h"
#include "planner/Cluster.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace hspmd::planner {

/// What the planner needs to know of a model, read from its graph.
struct ModelShape {
  std::string model;                    // the model's name
  std::string stack;                    // the stacked layer ("blocks")
  int64_t layers = 0;                   // elements of the stack
  std::vector<std::string> first, last; // other parameters used before / after the stack ("norm")
  /// The parameters of each name in `first` and `last`, in the graph's order ("norm.weight").
  std::map<std::string, std::vector<std::string>> paramsOf;
  double layerParams = 0, otherParams = 0;
  /// Parameter tensors of one layer and outside the stack: each is synchronised by collectives
  /// of its own (an all-reduce, or under zero a reduce-scatter and an all-gather: as many ring
  /// rounds), each round paying the link's latency.
  double layerTensors = 0, otherTensors = 0;
  double headFlopsPerToken = 0;     // forward FLOPs of the output projection per token
  double attentionFlopsPerPair = 0; // forward FLOPs of one layer per (query, key) pair
  double activationElements = 0;    // forward activations of one layer per token
  /// Bytes one layer's memory-bound ops (all but matmuls and attention) read and write per
  /// token in the forward pass: on hidden-wide values (the residual stream, which every rank
  /// of a tensor-parallel group holds whole and updates alike) and on the others (split).
  double streamBytes = 0, splitBytes = 0;
  int heads = 1, kvHeads = 1;
  int64_t hidden = 0, kvDim = 0; // query and key/value widths
  int elementBytes = 4;
};
/// Reads a model's shape; `error` says why it cannot be planned (no stack, no attention).
ModelShape modelShape(const ir::Graph &graph, std::string &error);

struct PlanRequest {
  int64_t tokens = 0, sequence = 0;            // tokens per step, positions per sequence
  double efficiency = cost::kKernelEfficiency; // the fraction of a device's bf16 peak kernels reach
  double memoryFraction = 0.9;                 // of each device's memory the plan may use
  /// bf16 mixed precision (the plan says `precision bf16`, docs/runtime.md): activations, their
  /// gradients and the messages carrying them take 2 bytes an element; parameters, gradients
  /// (and their synchronisation) and the optimizer state keep the model's element type.
  bool bf16 = false;
};

struct StagePlan {
  std::vector<int> devices; // consecutive runs of `tp` devices are tensor-parallel groups
  int tp = 1;
  int64_t layerBegin = 0, layerEnd = 0;
  bool first = false, last = false; // holds the parameters before / after the stack
  std::vector<int64_t> cp;          // sequence positions per TP group (empty: none)
  std::vector<int64_t> hp;          // heads per TP group (empty: none)
};

struct PipelinePlan {
  std::string name;
  int64_t sequences = 0, microbatches = 0;
  std::vector<StagePlan> stages;
};

struct Candidate {
  std::string family;   // "pipelines per type", "one pipeline", "pipeline", "context", "head"
  std::string strategy; // one line, e.g. "pipelines per type: H800: 1 x 2 stages tp 8; H20: 1 x 4 stages tp 8"
  bool symmetric = false;
  bool recompute = false, zero = false;
  // Its `zero` state is sharded unevenly over the replicas, as intended (the plan says
  // `chunked`): set by `hspmc plan` when the gate finds no other fault (PlanModel.cpp).
  bool chunked = false;
  std::vector<PipelinePlan> pipelines;
  double seconds = 0;   // estimated step
  double peakBytes = 0; // estimated, the fullest device
  bool fits = true;     // every device within its memory
  // The fullest device's estimated bytes over the memory a plan may use of it (the request's
  // memoryFraction); above 1 it does not fit.
  double memoryRatio = 0;
};

struct SearchResult {
  std::vector<Candidate> planned, symmetric; // best first
  int considered = 0;                        // candidates priced
};

/// Every strategy above, priced; `limit` best of each kind are kept.
SearchResult searchPlans(const ModelShape &shape, const Cluster &cluster, const PlanRequest &request, size_t limit = 3);

/// The estimated step of a candidate (sets seconds, peakBytes, fits).
void estimate(Candidate &candidate, const ModelShape &shape, const Cluster &cluster, const PlanRequest &request);

/// A candidate as a plan: `name` for MODEL with bindings B (sequences per step) and S, AdamW
/// at lr 1e-3, 1F1B, its pipelines and stages (the parameters before and after the stack go
/// `with` the first and last stages). No cluster path: the caller's.
ir::PlanSpec planSpec(const Candidate &candidate, const ModelShape &shape, const PlanRequest &request,
                      const std::string &name);

/// The plan file of a candidate (printPlan of planSpec, its strategy as a comment). `modelImport` and `clusterPath` are
/// relative to it.
std::string planText(const Candidate &candidate, const ModelShape &shape, const PlanRequest &request,
                     const std::string &name, const std::string &modelImport, const std::string &clusterPath);

/// The finalists' local programs where the fast algorithm is not exact (the head program),
/// solved again with CBC; CBC's answer is kept when the whole estimated step is no worse.
/// Returns whether the candidate changed.
bool refineLocalPrograms(Candidate &candidate, const ModelShape &shape, const Cluster &cluster,
                         const PlanRequest &request, double timeLimitSeconds = 10);

/// A candidate's local programs solved again with CBC: the gap of the candidate's own
/// answer (what its plan holds) to the integer program's optimum.
struct LocalCheck {
  double planned = 0, exact = 0; // the objective of the candidate's answer and of CBC's (seconds)
  bool optimal = false;          // CBC proved optimality within the time limit
  std::string text;              // one line
};
LocalCheck checkLocalPrograms(const Candidate &candidate, const ModelShape &shape, const Cluster &cluster,
                              const PlanRequest &request, double timeLimitSeconds = 10);

// ---- local programs --------------------------------------------------------------------

/// Layers of a pipeline's stages: stage s takes l_s >= 1 layers at `layerSeconds[s]` each
/// plus `fixedSeconds[s]`, holding at most `maxLayers[s]`; minimise the slowest stage.
struct LayerSplit {
  std::vector<int64_t> layers;
  double seconds = 0; // the slowest stage
  bool feasible = false, optimal = false;
};
LayerSplit splitLayers(int64_t layers, const std::vector<double> &layerSeconds, const std::vector<double> &fixedSeconds,
                       const std::vector<int64_t> &maxLayers);
LayerSplit splitLayersExact(int64_t layers, const std::vector<double> &layerSeconds,
                            const std::vector<double> &fixedSeconds, const std::vector<int64_t> &maxLayers);

/// Sequences per pipeline: pipeline i with p_i stages and tau_i seconds per micro-batch (one
/// sequence) runs b_i sequences in (b_i + p_i - 1) tau_i, plus `afterSeconds[i]` (its
/// gradient sync) when used, and at most `maxSequences[i]`; minimise the slowest pipeline.
struct BatchSplit {
  std::vector<int64_t> sequences;
  double seconds = 0;
  bool feasible = false, optimal = false;
};
BatchSplit splitBatch(int64_t sequences, const std::vector<int> &stages, const std::vector<double> &tau,
                      const std::vector<double> &afterSeconds, const std::vector<int64_t> &maxSequences);
BatchSplit splitBatchExact(int64_t sequences, const std::vector<int> &stages, const std::vector<double> &tau,
                           const std::vector<double> &afterSeconds, const std::vector<int64_t> &maxSequences);

/// Heads and sequence shares of a head-parallel group: group g takes h_g heads (a positive
/// multiple of `headUnit`) at `headSeconds[g]` each and s_g blocks of positions at
/// `blockSeconds[g]` each; minimise the slowest group.
struct HeadSplit {
  std::vector<int64_t> heads, blocks;
  double seconds = 0;
  bool feasible = false, optimal = false;
};
HeadSplit splitHeads(int64_t heads, int64_t headUnit, int64_t blocks, const std::vector<double> &headSeconds,
                     const std::vector<double> &blockSeconds);
HeadSplit splitHeadsExact(int64_t heads, int64_t headUnit, int64_t blocks, const std::vector<double> &headSeconds,
                          const std::vector<double> &blockSeconds, double timeLimitSeconds = 30);

} // namespace hspmd::planner
