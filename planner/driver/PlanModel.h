// PlanModel.h - `hspmc plan`: the planner's search (planner/Search.h) on a model and a cluster
// file, its finalists compiled and simulated (planner/Simulator.h), the fastest written as a
// plan file that lints clean.
#pragma once

#include "frontend/Compilation.h"
#include "planner/Cluster.h"
#include "planner/Search.h"

#include <atomic>
#include <iosfwd>
#include <string>
#include <vector>

namespace hspmd::driver {

struct PlanFiles {
  std::string model, cluster, out; // the plan is written to `out`
  int64_t tokens = 0, sequence = 0;
  size_t finalists = 2;       // of each family of strategies, planned and symmetric, simulated
  std::string finalistsDir;   // where to keep the finalists' plan files (empty: not kept)
  std::string lengths;        // --length-distribution's file (read: no output may be it)
  bool ignoreMemory = false;  // choose by simulated time alone (benches; the plan is not linted;
                              // the finalists are still widened when none fits)
  bool everyFinalist = false; // compile every finalist: none is left out by its estimates
  size_t threads = 0;         // compiling finalists side by side (0: the machine's cores, at most 8)
  bool bf16 = false;          // --precision bf16: priced, compiled and written as `precision bf16`
};

/// What the search is asked for these files: their tokens, sequence and precision.
planner::PlanRequest requestOf(const PlanFiles &files);

/// A finalist is not compiled when its estimated memory is over this many times what a device
/// may use, unless no other fits.
inline constexpr double kUncompiledMemoryRatio = 1.4;
/// Nor when its estimated step, at the smallest error (simulated / estimated) its family has
/// shown less this fraction, is slower than the fastest simulated plan that fits.
inline constexpr double kEstimateSlack = 0.1;

/// A finalist estimated within this many times the best estimate of its list (planned or
/// symmetric) is likely to be compiled: idle cores start such finalists longest first.
inline constexpr double kLikelyEstimate = 1.25;

/// A plan compiled for training and simulated for one step.
struct SimulatedPlan {
  double seconds = 0;   // per step in the simulator (0: not simulated)
  double peakBytes = 0; // the fullest device's memory plan
  bool fits = false;    // every device's memory plan within its memory
  std::string error;    // why it could not be compiled
  std::string skipped;  // why it was not compiled (its estimates rule it out)
  bool chunked = false; // compiled with `chunked` (its `zero` state does not divide evenly)
};

struct SimulatedCandidate {
  planner::Candidate candidate;
  SimulatedPlan simulated;
};

struct PlanOutcome {
  planner::ModelShape shape;
  planner::Cluster cluster;
  int considered = 0;
  double searchSeconds = 0, simulateSeconds = 0;
  std::vector<SimulatedCandidate> planned, symmetric; // finalists, in the search's order
  // The fastest finalist whose programs fit memory (it is written), and the fastest
  // symmetric one that fits (null when none does).
  const SimulatedCandidate *chosen = nullptr, *bestSymmetric = nullptr;
};

/// Plans, writes the plan to `files.out` and checks that it lints clean. Progress lines go to
/// `progress`; errors (with locations) to `errors`. Returns false on error.
bool planModel(const PlanFiles &files, PlanOutcome &outcome, std::ostream &progress, std::ostream &errors);

/// Reads a file of sequence (or document) lengths, one per line (blank lines and `#` comments
/// skipped); errors at FILE:LINE for a line that is not a positive length or (`longest` > 0)
/// one above `longest` (named `longestName` in the message).
bool readLengths(const std::string &path, int64_t longest, const std::string &longestName,
                 std::vector<int64_t> &lengths, std::ostream &errors);

/// `--length-distribution FILE`: one plan per length bucket. Buckets are S, S/2, S/4, ...
/// (S = `files.sequence`); a sequence runs padded to the smallest bucket that holds it. The
/// plan for S is written to `files.out`, the others next to it as STEM_<bucket>.hspmd.
struct LengthBucket {
  int64_t positions = 0;  // the bucket's sequence length
  int64_t sequences = 0;  // of the distribution in this bucket
  double tokens = 0;      // their real (unpadded) tokens
  std::string path;       // its plan
  double stepSeconds = 0; // simulated step of its plan
  int64_t perStep = 0;    // sequences per step of its plan
};
struct LengthPlan {
  std::vector<LengthBucket> buckets; // shortest first
  double bucketedSeconds = 0;        // the whole distribution, each bucket under its plan
  double paddedSeconds = 0;          // the whole distribution padded to S under S's plan
  double tokens = 0;                 // real tokens of the distribution
  std::string planSet;               // the plan set written beside the plans (planner/PlanSet.h)
};
bool planForLengths(const PlanFiles &files, const std::string &lengthsPath, LengthPlan &plan, std::ostream &progress,
                    std::ostream &errors);
/// How much slower a step (a fraction) a shorter bucket's plan may be when it takes the
/// layout of S's plan (the same devices, stages, layers and groups, its batch rebound), so
/// that the set's plans hold the state alike: switches between them move nothing and they
/// can run within one step (docs/planner.md).
inline constexpr double kSharedLayoutSlack = 0.10;
/// A bucket's plan in the layout of `longestPlan` (planned for `longest`), compiled and
/// simulated; written over `files.out` when it fits and is within kSharedLayoutSlack of the
/// bucket's own best (`outcome`). 1: written; 0: not; -1: the file could not be written.
int sharedLayout(const PlanFiles &longest, const PlanFiles &files, const planner::Candidate &longestPlan,
                 const PlanOutcome &outcome, LengthBucket &bucket, std::ostream &progress, std::ostream &errors);

/// Compiles a plan in memory for training, through the gate (driver::checkSpec), and
/// simulates one step on `cluster`. The model `spec` names must be loaded in `compilation`;
/// `sink` is its diagnostics' sink (the first error becomes SimulatedPlan::error).
SimulatedPlan simulateSpec(frontend::Compilation &compilation, const frontend::CollectingSink &sink,
                           const ir::PlanSpec &spec, const planner::Cluster &cluster,
                           const std::atomic<bool> *cancelled = nullptr);

/// The same for the plan file `path`.
SimulatedPlan simulatePlanFile(const std::string &path, const planner::Cluster &cluster);

} // namespace hspmd::driver
