// Switch.h - moving a run's state from one plan's layout to another's (issue 17, shared/DESIGN.md
// section 8): every parameter and optimizer state, in one fused batched send/receive.
//
// planSwitch() reads the state buffers of both plans' DevicePrograms (each holds a box of one
// global tensor: a parameter, its ZeRO shard, an AdamW moment) and builds one slice table over
// all tensors. For every device of the new plan, what its new buffers cover and its old ones do
// not is cut into cells, each held whole by the same set of old owners; each cell comes from
// one owner (an owner in the same node, then on the fastest link, then the least loaded by
// bytes divided by bandwidth). All cells between one pair of devices form one message. What a
// device holds itself it copies locally. runSwitch() carries the plan out on one device: its
// sends are posted at once, then its local copies, then its receives, all in flight together
// and unpacked in the order they arrive (Communicator::recvEach).
#pragma once

#include "ir/DeviceProgram.h"
#include "runtime/Communicator.h"

#include <algorithm>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace hspmd::runtime {

class DeviceExecutor;

struct SwitchError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Link speeds for choosing owners and pricing the move: GB/s between two devices, whether
/// they share a node, and the latency of one message.
struct SwitchLinks {
  std::function<double(int, int)> bandwidth = [](int, int) { return 1.0; };
  std::function<bool(int, int)> sameNode = [](int, int) { return true; };
  double alpha = 5e-6;
};

/// How a cell held by several old owners picks one: by the links and the load (hspmd), by the
/// bytes each owner sends so far alone (Hetu's volume-only greedy), or the lowest id (naive).
enum class OwnerChoice { Links, Volume, FirstOwner };

struct SwitchSlice {
  int tensor = 0; // index into StateSwitch::tensors
  ir::Box box;    // global coordinates
};

/// Everything one device sends another: one buffer, the slices packed in order.
struct SwitchMessage {
  int bucket = 0; // index into StateSwitch::buckets
  int from = 0, to = 0;
  std::vector<SwitchSlice> slices;
  int64_t bytes = 0;
};

struct StateSwitch {
  std::vector<std::string> tensors;    // store names: "wte", "wte.adam_m", ...
  std::vector<bool> isParameter;       // per tensor: a parameter, or optimizer state
  std::vector<int64_t> tensorBytes;    // per tensor: its global size
  std::vector<std::string> buckets;    // what moves in turn: {"all"}, or layers ("blocks[3]", "wte")
  std::vector<int> bucketOf;           // per tensor: its bucket
  bool byLayer = false;                // moved in buckets: the old arena is released first
  std::vector<SwitchMessage> messages; // by (bucket, sender, receiver)
  std::vector<int> fromDevices, toDevices;
  int64_t localBytes = 0;      // copied by devices from what they held
  std::map<int, int64_t> kept; // the same, per device
  int64_t bytesMoved = 0;      // in messages
  int64_t bytesMin = 0;        // what each device needs and does not hold, summed
  int64_t messagesUnfused = 0; // one per tensor and device pair
  int64_t maxSendBytes = 0, balancedSendBytes = 0;
  double seconds = 0, lowerSeconds = 0; // estimated on the links; lower bound of the busiest device
  double planSeconds = 0;               // how long planning took
};

/// One `--switch STEP:TARGET` option of a run (hspmc train, a generated binary), checked: a
/// step from 1, after `previousStep`, within `steps` unless the run starts from a checkpoint
/// (its first step is known only then). `target` names what the caller accepts after the
/// colon ("a plan file"). `error` is empty when the option is good; it then names the option.
struct SwitchOption {
  int64_t step = 0;
  std::string target, error;
};
SwitchOption parseSwitchOption(const std::string &option, int64_t previousStep, int64_t steps, bool fromCheckpoint,
                               const std::string &target);

/// Plans the move from `from`'s layout to `to`'s: one fused message per device pair, or, by
/// layer, one bucket per layer (a parameter and its optimizer state together; what lies
/// outside the layers, such as the embedding, a bucket each) moved one after another. Throws
/// SwitchError naming a tensor one plan has and the other has not, or a region of a tensor no
/// old device holds.
StateSwitch planSwitch(const std::map<int, ir::DeviceProgram> &from, const std::map<int, ir::DeviceProgram> &to,
                       const SwitchLinks &links = {}, OwnerChoice choice = OwnerChoice::Links, bool byLayer = false);

/// What one device holds at the peak of a move, in bytes. Side by side: the old and the new
/// arena and every message it sends or receives. In buckets: its old state packed out of the
/// old arena (both held while it packs), then the old arena released, the packed state beside
/// the new arena and one bucket's messages.
struct SwitchMemory {
  int64_t oldArena = 0, newArena = 0, oldState = 0, messages = 0, bucketMessages = 0;
  int64_t sideBySide() const { return oldArena + newArena + messages; }
  int64_t inBuckets() const { return std::max(oldArena + oldState, oldState + newArena + bucketMessages); }
};
/// Per device of either plan; `byLayer` is planSwitch(..., byLayer = true) of the same plans.
std::map<int, SwitchMemory> switchMemory(const StateSwitch &fused, const StateSwitch &byLayer,
                                         const std::map<int, ir::DeviceProgram> &from,
                                         const std::map<int, ir::DeviceProgram> &to);

/// A device's memory: its type's name and its bytes (0: not known, never too small).
struct DeviceMemory {
  std::string type;
  double bytes = 0;
};
/// Plans a move that fits every device's memory: the fused move where the old and new
/// layouts fit side by side, else the move in buckets by layer. Throws SwitchError naming the
/// first device where neither fits (what it needs and has).
StateSwitch planSwitchToFit(const std::map<int, ir::DeviceProgram> &from, const std::map<int, ir::DeviceProgram> &to,
                            const SwitchLinks &links, const std::function<DeviceMemory(int)> &memory);

/// The state a device holds under the plan switched from: its program there (null when the
/// plan does not use it) and where each of its state buffers' data lies.
struct HeldState {
  const ir::DeviceProgram *program = nullptr;
  std::function<const char *(int buffer)> data;
  /// In its executor's arena.
  static HeldState of(const DeviceExecutor *executor);
  /// In what DeviceExecutor::packState packed (which must outlive it).
  static HeldState packed(const ir::DeviceProgram &program, const std::vector<char> &state);
};

/// Carries out `plan` on `device`, bucket after bucket: `before` is what it holds under the
/// old plan, `after` its executor under the new one (null where the new plan does not use
/// it). Messages use `tag`. Nothing of `before` is changed: if the move fails, the old state
/// is whole.
void runSwitch(const StateSwitch &plan, int device, Communicator &comm, int64_t tag, const HeldState &before,
               DeviceExecutor *after);

} // namespace hspmd::runtime
