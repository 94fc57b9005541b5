// Offload.h - where a device's kernels run when not in the executor's own memory: a GPU
// (runtime/gpu/GpuOffload.h), or, to test the executor's side of it on any machine, a second
// arena in host memory (HostOffload).
//
// An offloaded DeviceExecutor keeps its host arena as the staging area of everything the host
// does (parameters loaded, each micro-batch's inputs, the loss read, state packed for a
// checkpoint or moved by a plan switch) and the offload holds the same arena (the memory
// plan's offsets, one allocation) where every kernel and copy of the program runs. The
// executor copies between the two only what the host touches: a micro-batch's inputs up, its
// loss down, the whole arena down before the host reads state and up after it wrote some,
// and the buffers of each send, receive and collective, which run on the host through the
// communicator (threads or MPI), down before it and up after it, unless the offload
// communicates itself, in its own memory (the NCCL backend, runtime/gpu/NcclRun.h).
#pragma once

#include "ir/DeviceProgram.h"
#include "runtime/Kernels.h"

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace hspmd::runtime {

class Communicator;

class Offload {
public:
  virtual ~Offload() = default;
  /// `bytes` at arena offset `offset`: from the host into the offload's memory, back, or set
  /// to zero. Copies to and from the host have finished when they return.
  virtual void upload(int64_t offset, const char *from, int64_t bytes) = 0;
  virtual void download(int64_t offset, char *to, int64_t bytes) = 0;
  virtual void zero(int64_t offset, int64_t bytes) = 0;
  /// Runs kernel or copy instruction `in` of the program for `microbatch` (buffers of several
  /// slots: slot microbatch % slots) in the offload's memory; `context` is the host's.
  virtual void execute(const ir::Instruction &in, int microbatch, const KernelContext &context) = 0;
  /// Runs kernel `op` on tensors in the offload's memory (runtime::runKernel's contract): what
  /// an offload that communicates runs between its calls.
  virtual void run(const std::string &op, const ir::AttrMap &attrs, std::span<const TensorView> inputs,
                   std::span<const TensorView> outputs, const KernelContext &context) = 0;
  /// Waits until everything started has finished (throws KernelError when something failed).
  virtual void synchronize() = 0;
  /// What runs the kernels, as its maker names it (a GPU's CUDA name); "" for the host.
  virtual std::string name() const { return ""; }
  /// The offload's memory: the arena's base there (a GPU's address on a GPU).
  virtual char *memory() = 0;
  /// A step begins (`skipped`: its micro-batches that no device runs, padding only).
  virtual void beginStep(const std::vector<unsigned char> &skipped) { (void)skipped; }
  /// Instruction `in` has written its outputs in the offload's memory by other means than
  /// execute (an offload that communicates, around the one it wraps).
  virtual void changed(const ir::Instruction &in) { (void)in; }
  /// The run has failed on this device: what the offload has in flight is given up now, not
  /// finished when it is destroyed (the NCCL backend aborts its communicators rather than
  /// finalizing them, which waits for peers that may never come).
  virtual void abandon() {}
  /// Whether the offload carries out the program's sends, receives and collectives itself,
  /// in its own memory (communicate); otherwise the executor runs them on the host.
  virtual bool communicates() const { return false; }
  /// Runs send, receive or collective `in` for `microbatch`, or a kernel that communicates (the
  /// vocabulary-parallel cross-entropy), only where communicates(); `tag` is the one the
  /// executor gives the communicator for it, `context` its kernels'.
  virtual void communicate(const ir::Instruction &in, int microbatch, int64_t tag, const KernelContext &context) {
    (void)microbatch;
    (void)tag;
    (void)context;
    throw KernelError("instruction '" + in.op + "' communicates, and this offload does not");
  }
};

/// Where a device's offload is made: its program, the programs of every device of the plan
/// (the same map for each of them), its communicator, and how long it may wait for a peer.
struct OffloadSite {
  const ir::DeviceProgram &program;
  const std::map<int, ir::DeviceProgram> &plan;
  Communicator &comm;
  std::chrono::milliseconds timeout = std::chrono::seconds(120);
};

/// Makes a device's offload for its program (RunOptions::offload).
using OffloadFactory = std::function<std::unique_ptr<Offload>(const OffloadSite &)>;

/// How much memory an offload of `program` allocates: the arena (the memory plan's
/// peakBytes), then room for what the vocabulary-parallel cross-entropy keeps per row between
/// its steps (offloadScratch), so that of its logits only those values come down to the host
/// and go back up when the host communicates for the offload.
int64_t offloadBytes(const ir::DeviceProgram &program);
/// Where, after the arena, a cross-entropy of `rows` rows keeps its maxima (f32, one a row)
/// and its sums and target logits (f32, two a row): offsets in the offload's memory.
struct OffloadScratch {
  int64_t peaks = 0, sums = 0, end = 0;
};
OffloadScratch offloadScratch(const ir::DeviceProgram &program, int64_t rows);
/// The rows of vocabulary-parallel cross-entropy `in` (its logits' elements over the
/// vocabulary piece's).
int64_t vocabParallelRows(const ir::DeviceProgram &program, const ir::Instruction &in);

/// Runs kernel or copy `in` (without fusion) on buffers at `base` + the memory plan's offsets:
/// what the executor does in its own arena, and HostOffload in its second one.
void runInArena(const ir::DeviceProgram &program, char *base, const ir::Instruction &in, int microbatch,
                const KernelContext &context);

/// The offload of the tests: a second arena in host memory, the CPU kernels on it. A run
/// through it computes what the executor computes alone (with HSPMD_FUSION=0, bit for bit),
/// so every copy the executor makes to and from an offload is checked without a GPU.
class HostOffload : public Offload {
public:
  explicit HostOffload(const ir::DeviceProgram &program);
  void upload(int64_t offset, const char *from, int64_t bytes) override;
  void download(int64_t offset, char *to, int64_t bytes) override;
  void zero(int64_t offset, int64_t bytes) override;
  void execute(const ir::Instruction &in, int microbatch, const KernelContext &context) override;
  void run(const std::string &op, const ir::AttrMap &attrs, std::span<const TensorView> inputs,
           std::span<const TensorView> outputs, const KernelContext &context) override {
    runKernel(op, attrs, inputs, outputs, context);
  }
  void synchronize() override {}
  char *memory() override { return base_; }

private:
  const ir::DeviceProgram &program_;
  std::vector<char> arena_;
  char *base_;
};

} // namespace hspmd::runtime
