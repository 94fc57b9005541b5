// NcclRun.h - the NCCL backend: a device's sends, receives and collectives carried out in its
// offload's memory by the NCCL calls its plan lowers them to (runtime/gpu/NcclPlan.h), instead
// of on the host through the communicator (runtime/Offload.h).
//
// NcclOffload wraps a device's offload (its memory and kernels) and runs each communication
// instruction the executor gives it as that instruction's calls, in the plan's order:
// - a send packs its slices into a message buffer and sends it; a receive receives into one
//   and unpacks it into place (adding, for recv-add);
// - a collective that is NCCL's own (all-reduce, all-gather, reduce-scatter) runs as it is,
//   on its group's communicator, from the input buffer into the output buffer;
// - any other collective runs as the plan's messages: each member sends the parts of its
//   input that others take, receives what it takes, then builds its output from its own part
//   and the messages, in group order (a reduction adds them, from zero).
// The vocabulary-parallel cross-entropy runs its kernels (vocab_parallel_*) in the offload's
// memory around its two all-reduces (the rows' maxima, then their sums).
//
// What the calls run on is an NcclEndpoint: NCCL on the device's GPU (runtime/gpu/GpuNccl.h),
// or HostNccl, the run's communicator on a host arena, which keeps NCCL's rule that matters
// to the plan (a channel's k-th receive takes its k-th message: each message carries its tag,
// checked) so that every call of every plan runs, bit for bit against the host executor, on
// any machine.
#pragma once

#include "runtime/Communicator.h"
#include "runtime/Offload.h"
#include "runtime/gpu/NcclPlan.h"

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace hspmd::runtime::gpu {

/// One device's NCCL: the calls, on addresses in its offload's memory.
class NcclEndpoint {
public:
  virtual ~NcclEndpoint() = default;
  /// On the members of NcclPlan::communicators[communicator]; `tag` names the call (the
  /// executor's tag; NCCL has none). Reductions add (or take the maximum of) `count` elements
  /// of `dtype` (f32 or bf16: bf16 ones added in float and rounded at each step).
  virtual void allReduce(int communicator, const char *in, char *out, int64_t count, ir::DType dtype, int64_t tag,
                         bool max = false) = 0;
  /// `bytes`: what each member contributes; `out` holds them in the group's order.
  virtual void allGather(int communicator, const char *in, char *out, int64_t bytes, int64_t tag) = 0;
  /// `count`: the elements of each member's block of `in`, which it gets summed into `out`.
  virtual void reduceScatter(int communicator, const char *in, char *out, int64_t count, ir::DType dtype,
                             int64_t tag) = 0;
  /// A channel's message (`tag`: the executor's for its instruction, the same on both sides,
  /// which HostNccl checks); `staged`: the receiver posted its receives of this channel at the
  /// start of the step, in the sender's order.
  virtual void send(int peer, const char *data, int64_t bytes, int64_t tag) = 0;
  virtual void recv(int peer, char *data, int64_t bytes, int64_t tag, bool staged) = 0;
  /// runtime::copyBox in the offload's memory.
  virtual void copyBox(int elementBytes, const char *src, const std::vector<int64_t> &srcShape,
                       const std::vector<int64_t> &srcLo, char *dst, const std::vector<int64_t> &dstShape,
                       const std::vector<int64_t> &dstLo, const std::vector<int64_t> &size, bool add) = 0;
  virtual void zero(char *at, int64_t bytes) = 0;
  /// Message buffer `index` (the call's in the device's list) of at least `bytes` in the
  /// offload's memory (kept until asked for again with a larger size).
  virtual char *scratch(size_t index, int64_t bytes) = 0;
  /// Whether receives only start (a GPU's stream runs them): staged ones are then posted at the
  /// start of the step, and arrived() orders what reads one after it. Otherwise each receive
  /// has its message when it returns (HostNccl), staged ones taken when the program needs them.
  virtual bool postsEarly() const { return false; }
  /// What follows reads the message received into `data` (a receive posted early).
  virtual void arrived(const char *data) { (void)data; }
  /// Waits until every call started has finished (the step's end), or throws CommError when a
  /// call failed or the wait outlasted the run's timeout (a peer that died).
  virtual void synchronize() {}
  /// Waits, as synchronize() does, only until the kernels started have finished (and the calls
  /// they wait for): before the host reads the offload's memory. Not every call: a receive
  /// posted early may wait for a message its sender sends once this device has gone on.
  virtual void waitForKernels() {}
  /// The run has failed (Offload::abandon): the calls in flight are given up.
  virtual void abandon() {}
};

/// Where a nonblocking NCCL communicator (GpuNccl.h) stands, as ncclCommGetAsyncError says.
enum class NcclProgress { Done, InProgress, Failed };

/// Waits for a nonblocking NCCL communicator to finish what its last call started (its
/// creation, a call that returned ncclInProgress, its finalization): polls `state` (which
/// says, when Failed, NCCL's reason in `why`) until it is no longer in progress. Throws
/// CommError "WHAT: WHY" when it failed, and "WHAT: not done after T s (a member that died or
/// never came?)" when `timeout` has passed; `state` is polled at least once. `stopped`, where
/// given, says why the run stopped elsewhere (Communicator::stopped: the threads world's
/// failure), or nothing: a wait still in progress then ends at once with CommError of its text,
/// as the communicator's own waits end. The caller aborts the communicator: nothing it started
/// can be trusted after any of these.
void awaitNccl(const std::function<NcclProgress(std::string *why)> &state, std::chrono::milliseconds timeout,
               const std::string &what, const std::function<std::string()> &stopped = {});

/// The NCCL calls of a plan, built once per plan and shared by its devices (threads) or made
/// by each process (MPI); throws CommError naming what stands in the way.
std::shared_ptr<const NcclPlan> ncclPlanOf(const std::map<int, ir::DeviceProgram> &plan);

class NcclOffload : public Offload {
public:
  NcclOffload(std::unique_ptr<Offload> inner, std::shared_ptr<const NcclPlan> plan, const ir::DeviceProgram &program,
              std::unique_ptr<NcclEndpoint> endpoint);
  // The copies wait for the kernels before them, which may wait for communication: first a wait
  // with the run's deadline.
  void upload(int64_t offset, const char *from, int64_t bytes) override {
    endpoint_->waitForKernels();
    inner_->upload(offset, from, bytes);
  }
  void download(int64_t offset, char *to, int64_t bytes) override {
    endpoint_->waitForKernels();
    inner_->download(offset, to, bytes);
  }
  void zero(int64_t offset, int64_t bytes) override { inner_->zero(offset, bytes); }
  void execute(const ir::Instruction &in, int microbatch, const KernelContext &context) override {
    inner_->execute(in, microbatch, context);
  }
  void run(const std::string &op, const ir::AttrMap &attrs, std::span<const TensorView> inputs,
           std::span<const TensorView> outputs, const KernelContext &context) override {
    inner_->run(op, attrs, inputs, outputs, context);
  }
  void synchronize() override {
    endpoint_->synchronize();
    inner_->synchronize();
  }
  void beginStep(const std::vector<unsigned char> &skipped) override;
  void changed(const ir::Instruction &in) override { inner_->changed(in); }
  void abandon() override {
    endpoint_->abandon();
    inner_->abandon();
  }
  std::string name() const override { return inner_->name(); }
  char *memory() override { return inner_->memory(); }
  bool communicates() const override { return true; }
  void communicate(const ir::Instruction &in, int microbatch, int64_t tag, const KernelContext &context) override;
  /// The plan's calls this device has made so far.
  int64_t callsMade() const { return made_; }

private:
  std::unique_ptr<Offload> inner_;
  std::shared_ptr<const NcclPlan> plan_;
  const ir::DeviceProgram &program_;
  std::unique_ptr<NcclEndpoint> endpoint_;
  std::map<std::pair<const ir::Instruction *, int64_t>, std::vector<int>> calls_; // (instruction, expanded tag)
  std::vector<bool> posted_; // per call: a staged receive posted at the start of this step
  int64_t made_ = 0;

  char *address(int buffer, int microbatch);
  /// The vocabulary-parallel cross-entropy: its kernels around its two all-reduces.
  void crossEntropy(const ir::Instruction &in, int microbatch, int64_t tag, const KernelContext &context);
};

/// HostNccl: the endpoint of the tests, on a host offload's memory through the run's
/// communicator (NcclRun.h).
class HostNccl : public NcclEndpoint {
public:
  HostNccl(std::shared_ptr<const NcclPlan> plan, Communicator &comm);
  void allReduce(int communicator, const char *in, char *out, int64_t count, ir::DType dtype, int64_t tag,
                 bool max) override;
  void allGather(int communicator, const char *in, char *out, int64_t bytes, int64_t tag) override;
  void reduceScatter(int communicator, const char *in, char *out, int64_t count, ir::DType dtype, int64_t tag) override;
  void send(int peer, const char *data, int64_t bytes, int64_t tag) override;
  void recv(int peer, char *data, int64_t bytes, int64_t tag, bool staged) override;
  void copyBox(int elementBytes, const char *src, const std::vector<int64_t> &srcShape,
               const std::vector<int64_t> &srcLo, char *dst, const std::vector<int64_t> &dstShape,
               const std::vector<int64_t> &dstLo, const std::vector<int64_t> &size, bool add) override;
  void zero(char *at, int64_t bytes) override;
  char *scratch(size_t index, int64_t bytes) override;

private:
  std::shared_ptr<const NcclPlan> plan_;
  Communicator &comm_;
  std::map<std::pair<int, int64_t>, std::vector<char>> early_; // staged channels: (peer, tag) -> message
  std::vector<std::vector<char>> scratch_;
  /// Every member's `in` (of `bytes`), in the communicator's group order, to `use`.
  void gather(int communicator, const char *in, int64_t bytes, int64_t tag,
              const std::function<void(const std::vector<const char *> &)> &use);
};

/// RunOptions::offload for the NCCL backend on the host: HostOffload's memory and kernels,
/// HostNccl's calls: the NCCL backend run through on any machine (tests).
std::unique_ptr<Offload> hostNcclOffload(const OffloadSite &site);

} // namespace hspmd::runtime::gpu
