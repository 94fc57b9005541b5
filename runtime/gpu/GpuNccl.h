// GpuNccl.h - the NCCL backend on GPUs (runtime/gpu/NcclRun.h): a device's NCCL calls on its
// GPU, in its GpuOffload's memory. Built where CMake finds NCCL with the CUDA toolkit
// (HSPMD_HAVE_NCCL); docs/gpu.md says what of it has run where.
//
// Communicators: one per distinct group of the plan's NCCL collectives and one per channel
// (a sender and its receiver), created once per plan, in the plan's order on every device (so
// that no two devices wait on each other's creation), the unique id of each sent by its first
// member to the others through the run's communicator (threads or MPI). Streams: the
// offload's (kernels and copies: packing and unpacking messages), one for the collectives and
// one per channel and direction. Each call waits, by an event, for the kernels before it on the
// compute stream, and the compute stream waits for it where what follows reads what it wrote
// (a receive: once its message is unpacked), so that the host never waits for communication
// and a channel's messages do not wait behind another's: the streams and events NcclPlan
// replays. synchronize() and waitForKernels() poll the streams and each communicator's
// asynchronous error against the run's timeout: a failed call, a peer that never comes, or a
// failure elsewhere that the run's communicator reports (Communicator::stopped: another
// device's thread failed) aborts the communicators and ends the wait with a CommError (as the
// host backends' waits end), not a hang.
//
// The communicators are nonblocking (ncclConfig_t::blocking = 0), so that no NCCL call waits
// for a peer on the host: their creation, any call that returns ncclInProgress (a channel's
// first message connects its two ends) and their finalization at the end are polled
// (awaitNccl, NcclRun.h) against the run's timeout. A member that died before it joined fails
// the others' creation with "device D: creating the NCCL communicator of devices 0, 1: not
// done after T s (a member that died or never came?)" instead of leaving them waiting.
#pragma once

#include "runtime/gpu/GpuKernels.h"
#include "runtime/gpu/NcclRun.h"

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace hspmd::runtime::gpu {

class GpuNccl : public NcclEndpoint {
public:
  /// Creates `device`'s communicators of `plan` on GPU `gpu` (waits until every member of
  /// each has come, or `timeout`); `compute` is the offload's stream; `timeout` bounds each
  /// wait. Throws CommError with NCCL's reason, or the wait's, having aborted those it made.
  GpuNccl(std::shared_ptr<const NcclPlan> plan, Communicator &comm, int gpu, GpuStream &compute,
          std::chrono::milliseconds timeout);
  ~GpuNccl() override;
  GpuNccl(const GpuNccl &) = delete;
  GpuNccl &operator=(const GpuNccl &) = delete;
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
  bool postsEarly() const override { return true; }
  void arrived(const char *data) override;
  void synchronize() override { await(true); }
  void waitForKernels() override { await(false); }
  /// Aborts the communicators (the run failed): a peer's calls on them end.
  void abandon() override;

private:
  struct Lane {             // a stream with the event its last call recorded
    void *stream = nullptr; // cudaStream_t
    void *event = nullptr;  // cudaEvent_t
  };
  std::shared_ptr<const NcclPlan> plan_;
  Communicator &comm_; // the run's: the unique ids, and whether the run failed elsewhere
  int device_, gpu_;
  std::chrono::milliseconds timeout_;
  GpuStream &compute_;
  Lane computeLane_, collectives_;
  std::map<int, void *> groups_;                     // communicator index -> ncclComm_t
  std::map<std::pair<int, int>, void *> channels_;   // (sender, receiver) -> ncclComm_t
  std::map<std::pair<int, int>, Lane> channelLanes_; // (sender, receiver) -> its stream here
  std::map<const char *, void *> received_;          // message buffer -> the event of its receive
  std::vector<std::unique_ptr<DeviceBuffer>> scratch_;
  std::vector<int64_t> scratchBytes_;

  std::vector<std::unique_ptr<DeviceBuffer>>
      retired_; // message buffers replaced by larger ones, freed at the step's end
  Lane makeLane();
  /// Polls the compute stream (and, with `everyStream`, the collective and channel streams)
  /// until idle, each communicator's asynchronous error, and the timeout.
  void await(bool everyStream);
  /// Ends every communicator (ncclCommAbort): after a failure, so that no call waits on.
  void abort();
  /// `call` (an NCCL collective on communicator `communicator`, given its ncclComm_t and
  /// stream) on the collective stream, ordered after the kernels before it and before those after.
  void collective(const char *what, const std::function<int(void *comm, void *stream)> &call, int communicator);
  /// After an NCCL call on `comm` (ncclResult_t `status`): waits, against the timeout, for one
  /// still in progress; a failure, or a wait that outlasts the timeout, aborts every
  /// communicator and throws CommError naming `what`.
  void issued(int status, void *comm, const std::string &what);
  /// `waiter` waits for what was launched on `on` so far.
  void follow(Lane &waiter, Lane &on);
};

/// RunOptions::offload for the NCCL backend: a GpuOffload with its communication on NCCL.
std::unique_ptr<Offload> gpuNcclOffload(const OffloadSite &site);

} // namespace hspmd::runtime::gpu
