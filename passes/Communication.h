// Communication.h - how a value gets from one annotation to another: the communication plan
// of a reshard (shared/DESIGN.md section 6).
//
// planReshard() cuts the tensor into the finest slices both layouts agree on and, for every
// device of the target layout, the slices it needs but does not hold. A slice held by several
// devices comes from the one on the fastest link, then the least loaded; all slices between
// one pair of devices travel as one message. Partial sums are added on the way: a needer
// receives one copy of each partial sum it lacks. The steps are then named after the
// collective they amount to (all-reduce, all-gather, ...) when they do, or `bsr` (batched
// send/receive) otherwise.
#pragma once

#include "ir/Annotation.h"
#include "ir/Cost.h"
#include "ir/DeviceProgram.h"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace hspmd::passes {

using ir::CommKind; // how a reshard moves data: ir/DeviceProgram.h
using ir::commKindName;
using ir::isCollective;

/// The slices one device sends another in one step, fused into one buffer.
struct Message {
  int from = 0, to = 0;
  std::vector<ir::Box> boxes;
  bool add = false; // partial sums: the receiver adds them to what it has
  int64_t bytes = 0;
};

/// A slice a device takes from what it already holds (`add`: its own partial sum).
struct LocalCopy {
  int device = 0;
  ir::Box box;
  bool add = false;
};

struct CommStep {
  CommKind kind = CommKind::Identity;
  ir::Annotation from, to;              // the layouts before and after the step
  std::vector<std::vector<int>> groups; // the device groups of a collective
  std::vector<Message> messages;        // the data movement, as the checker replays it (none
                                        // in a collective without LinkModel::referenceMessages)
  std::vector<LocalCopy> local;
  std::map<int, int64_t> bytesSent, bytesReceived; // per device
  double seconds = 0;                              // alpha-beta estimate
};

struct CommPlan {
  std::vector<CommStep> steps;
  /// Per device of the target: bytes of the target region it did not hold (sources and
  /// targets without partial sums; empty otherwise). The plan is minimal when each device
  /// receives exactly this.
  std::map<int, int64_t> lackingBytes;
  int64_t totalBytes() const;
  double seconds() const;
};

/// Link speeds between devices: bandwidth in GB/s and latency in seconds.
struct LinkModel {
  std::function<double(int, int)> bandwidth = [](int, int) { return 1.0; };
  std::function<bool(int, int)> sameNode = [](int, int) { return true; };
  /// Where set: the least `bandwidth` between two members of a group (infinite for one), what
  /// a collective's ring runs at, answered without asking every pair (a topology can: a
  /// gradient's all-reduce over 4096 devices has 16 million pairs).
  std::function<double(const std::vector<int> &)> leastBandwidth;
  double alpha = cost::kMessageLatency;
  /// For comparison only: take every slice from its first owner (no link or load choice,
  /// no spreading of shared slices).
  bool firstOwner = false;
  /// Whether two devices run in one pipeline. Each pipeline runs its own micro-batch
  /// schedule, so a per-micro-batch message between pipelines has no partner: a slice is
  /// taken from an owner in the needer's pipeline whenever one holds it.
  std::function<bool(int, int)> samePipeline = [](int, int) { return true; };
  /// Whether a collective's steps keep their messages: the reference movement that
  /// explain-reshard lists and the tests replay. Compiling needs only a collective's groups,
  /// and a reduction over n devices has n^2 messages (1024-way data parallelism: a million a
  /// gradient), so the compiler leaves them out (passes/Pipeline.cpp).
  bool referenceMessages = true;
};

/// The plan to turn a tensor of `shape` (elements of `elementBytes`) laid out as `from`
/// into `to`. Both must be valid for the shape.
CommPlan planReshard(const std::vector<int64_t> &shape, int elementBytes, const ir::Annotation &from,
                     const ir::Annotation &to, const LinkModel &links = {});

/// planReshard's answers kept by their question (shape, element size, both layouts), for one
/// link model: a model's identical layers reshard alike, and each distinct reshard is planned
/// once (64 layers of a 32B model: 64 times fewer plans).
class ReshardPlans {
public:
  explicit ReshardPlans(const LinkModel &links) : links_(links) {}
  const CommPlan &plan(const std::vector<int64_t> &shape, int elementBytes, const ir::Annotation &from,
                       const ir::Annotation &to) {
    return *share(shape, elementBytes, from, to);
  }
  /// The same answer, to keep.
  std::shared_ptr<const CommPlan> share(const std::vector<int64_t> &shape, int elementBytes, const ir::Annotation &from,
                                        const ir::Annotation &to);

private:
  const LinkModel &links_;
  std::unordered_map<std::string, std::shared_ptr<const CommPlan>> plans_;
};

/// What one device sends another for a whole batch of tensors (a plan switch moves every
/// parameter and optimizer state at once): one buffer, one grouped send/receive.
struct BatchedMessage {
  int from = 0, to = 0;
  std::vector<std::pair<size_t, ir::Box>> slices; // (tensor index, slice), in tensor order
  int64_t bytes = 0;
};

/// Fuses the movement steps of many tensors' plans into one message per device pair,
/// ordered by (sender, receiver) so every device issues its sends and receives in the same
/// order. Reduction steps are left to their collectives.
std::vector<BatchedMessage> fuseAcrossTensors(const std::vector<CommPlan> &plans);

/// The steps of `plan` as resolve-communication records them on a reshard op (`comm_steps`):
/// each step's kind, a collective's groups, a batched send/receive's messages and the slices
/// devices keep (passes/CommunicationText.cpp gives the grammar).
std::string printCommSteps(const CommPlan &plan);
/// Reads what printCommSteps wrote (kinds, groups, messages and kept slices; not the layouts
/// or byte counts). Print -> parse -> print is the identity.
std::optional<std::vector<CommStep>> parseCommSteps(const std::string &text, std::string *error = nullptr);

using ir::intersectBox; // the box algebra: ir/Annotation.h
using ir::subtractBox;

} // namespace hspmd::passes
