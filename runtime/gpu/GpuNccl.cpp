// GpuNccl.cpp - a device's NCCL calls on its GPU (runtime/gpu/GpuNccl.h).
#include "runtime/gpu/GpuNccl.h"

#include "ir/Tags.h"
#include "runtime/gpu/GpuOffload.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <cstring>
#include <exception>

namespace hspmd::runtime::gpu {

namespace {

void check(ncclResult_t status, const char *what) {
  if (status != ncclSuccess)
    throw CommError(std::string(what) + ": " + ncclGetErrorString(status));
}

void check(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    throw CommError(std::string(what) + ": " + cudaGetErrorString(status));
}

cudaStream_t streamOf(void *stream) {
  return static_cast<cudaStream_t>(stream);
}

// The reductions' element types (NcclEndpoint: f32 or bf16).
ncclDataType_t ncclTypeOf(ir::DType dtype) {
  return dtype == ir::DType::BF16 ? ncclBfloat16 : ncclFloat;
}

ncclComm_t commOf(void *comm) {
  return static_cast<ncclComm_t>(comm);
}

// Where `comm` stands (awaitNccl): ncclCommGetAsyncError, with NCCL's reason when it failed.
NcclProgress progressOf(ncclComm_t comm, std::string *why) {
  ncclResult_t status = ncclSuccess;
  if (const ncclResult_t asked = ncclCommGetAsyncError(comm, &status); asked != ncclSuccess) {
    *why = std::string("ncclCommGetAsyncError: ") + ncclGetErrorString(asked);
    return NcclProgress::Failed;
  }
  if (status == ncclSuccess)
    return NcclProgress::Done;
  if (status == ncclInProgress)
    return NcclProgress::InProgress;
  *why = ncclGetErrorString(status);
  if (const char *last = ncclGetLastError(comm); last && *last)
    *why += std::string(" (") + last + ")";
  return NcclProgress::Failed;
}

std::string listed(const std::vector<int> &members) {
  std::string text;
  for (int member : members)
    text += (text.empty() ? "" : ", ") + std::to_string(member);
  return text;
}

// One nonblocking communicator of `members` (this device among them), its unique id made by
// the first and sent to the others through the run's communicator. Its creation is waited for
// against `timeout`: a member that died before it joined ends the wait with a CommError (a
// blocking ncclCommInitRank would wait for it forever), as does a failure elsewhere that the
// run's communicator reports.
void *communicatorOf(const std::vector<int> &members, int device, Communicator &comm,
                     std::chrono::milliseconds timeout) {
  ncclUniqueId id{};
  if (members.front() == device) {
    check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    for (size_t m = 1; m < members.size(); ++m) {
      std::vector<char> message(sizeof id);
      std::memcpy(message.data(), &id, sizeof id);
      comm.send(members[m], ir::tags::kNcclUniqueId, std::move(message));
    }
  } else {
    const std::vector<char> message = comm.recv(members.front(), ir::tags::kNcclUniqueId);
    if (message.size() != sizeof id)
      throw CommError("device " + std::to_string(device) + " got an NCCL unique id of " +
                      std::to_string(message.size()) + " bytes from device " + std::to_string(members.front()));
    std::memcpy(&id, message.data(), sizeof id);
  }
  const auto rank = static_cast<int>(std::find(members.begin(), members.end(), device) - members.begin());
  const std::string what =
      "device " + std::to_string(device) + ": creating the NCCL communicator of devices " + listed(members);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t made = nullptr;
  const ncclResult_t status = ncclCommInitRankConfig(&made, static_cast<int>(members.size()), id, rank, &config);
  if (status != ncclSuccess && status != ncclInProgress) {
    if (made)
      ncclCommAbort(made);
    throw CommError(what + ": " + ncclGetErrorString(status));
  }
  try {
    awaitNccl([&](std::string *why) { return progressOf(made, why); }, timeout, what, [&] { return comm.stopped(); });
  } catch (const CommError &) {
    ncclCommAbort(made);
    throw;
  }
  return made;
}

} // namespace

GpuNccl::Lane GpuNccl::makeLane() {
  Lane lane;
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  lane.stream = stream;
  cudaEvent_t event = nullptr;
  check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate");
  lane.event = event;
  return lane;
}

void GpuNccl::follow(Lane &waiter, Lane &on) {
  check(cudaEventRecord(static_cast<cudaEvent_t>(on.event), streamOf(on.stream)), "cudaEventRecord");
  check(cudaStreamWaitEvent(streamOf(waiter.stream), static_cast<cudaEvent_t>(on.event), 0), "cudaStreamWaitEvent");
}

// Every communicator of the plan this device is a member of, groups then channels, in the
// plan's order: the same order on every device.
GpuNccl::GpuNccl(std::shared_ptr<const NcclPlan> plan, Communicator &comm, int gpu, GpuStream &compute,
                 std::chrono::milliseconds timeout)
    : plan_(std::move(plan)), comm_(comm), device_(comm.device()), gpu_(gpu), timeout_(timeout), compute_(compute) {
  useGpu(gpu_);
  computeLane_.stream = compute_.stream();
  cudaEvent_t event = nullptr;
  check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate");
  computeLane_.event = event;
  collectives_ = makeLane();
  try {
    for (size_t c = 0; c < plan_->communicators.size(); ++c) {
      const std::vector<int> &members = plan_->communicators[c];
      if (std::find(members.begin(), members.end(), device_) != members.end())
        groups_[static_cast<int>(c)] = communicatorOf(members, device_, comm, timeout_);
    }
    for (const auto &[sender, receiver] : plan_->channels)
      if (sender == device_ || receiver == device_) {
        channels_[{sender, receiver}] = communicatorOf({sender, receiver}, device_, comm, timeout_);
        channelLanes_[{sender, receiver}] = makeLane();
      }
  } catch (const CommError &) {
    abort(); // those made so far: no destructor runs
    throw;
  }
}

GpuNccl::~GpuNccl() {
  useGpu(gpu_);
  // A run that failed elsewhere may leave calls waiting for a peer: those end with the
  // communicators (a run that went well has every stream idle here).
  bool idle = cudaStreamQuery(streamOf(collectives_.stream)) == cudaSuccess;
  for (auto &[pair, lane] : channelLanes_)
    idle = idle && cudaStreamQuery(streamOf(lane.stream)) == cudaSuccess;
  if (!idle || std::uncaught_exceptions() > 0) // (destroyed as a failure unwinds)
    abort();
  cudaDeviceSynchronize();
  // Nonblocking communicators end in two parts: each is finalized (its members finalize theirs
  // at the same time, in no particular order), then destroyed once quiet. One that does not
  // get quiet within the timeout (a member that died after the last step) is aborted.
  std::vector<ncclComm_t> comms;
  for (auto &[index, comm] : groups_)
    comms.push_back(commOf(comm));
  for (auto &[pair, comm] : channels_)
    comms.push_back(commOf(comm));
  for (ncclComm_t comm : comms)
    ncclCommFinalize(comm); // (a failure shows in its state, below)
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  for (size_t c = 0; c < comms.size(); ++c) {
    const auto left =
        std::max(std::chrono::milliseconds(0),
                 std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()));
    try {
      awaitNccl([&](std::string *why) { return progressOf(comms[c], why); }, left, "finalize");
      ncclCommDestroy(comms[c]);
    } catch (const CommError &) {
      ncclCommAbort(comms[c]);
    }
  }
  for (auto &[pair, lane] : channelLanes_) {
    cudaEventDestroy(static_cast<cudaEvent_t>(lane.event));
    cudaStreamDestroy(streamOf(lane.stream));
  }
  for (auto &[data, event] : received_)
    cudaEventDestroy(static_cast<cudaEvent_t>(event));
  cudaEventDestroy(static_cast<cudaEvent_t>(collectives_.event));
  cudaStreamDestroy(streamOf(collectives_.stream));
  cudaEventDestroy(static_cast<cudaEvent_t>(computeLane_.event));
}

// A collective on the collective stream, between the kernels before it and those after it.
void GpuNccl::collective(const char *what, const std::function<int(void *comm, void *stream)> &call, int communicator) {
  useGpu(gpu_);
  follow(collectives_, computeLane_);
  void *comm = groups_.at(communicator);
  issued(call(comm, collectives_.stream), comm,
         std::string(what) + " on devices " + listed(plan_->communicators.at(static_cast<size_t>(communicator))));
  follow(computeLane_, collectives_);
}

// A call on a nonblocking communicator that returned ncclInProgress is still being set up (its
// first call on a channel connects the two): NCCL asks that it be done before the next call.
void GpuNccl::issued(int status, void *comm, const std::string &what) {
  if (status == ncclSuccess)
    return;
  const std::string where = "device " + std::to_string(device_) + ": " + what;
  try {
    if (status != ncclInProgress)
      throw CommError(where + ": " + ncclGetErrorString(static_cast<ncclResult_t>(status)));
    awaitNccl([&](std::string *why) { return progressOf(commOf(comm), why); }, timeout_, where,
              [&] { return comm_.stopped(); });
  } catch (const CommError &) {
    abort();
    throw;
  }
}

void GpuNccl::allReduce(int communicator, const char *in, char *out, int64_t count, ir::DType dtype, int64_t /*tag*/,
                        bool max) {
  collective(
      "ncclAllReduce",
      [&](void *comm, void *stream) {
        return ncclAllReduce(in, out, static_cast<size_t>(count), ncclTypeOf(dtype), max ? ncclMax : ncclSum,
                             commOf(comm), streamOf(stream));
      },
      communicator);
}

void GpuNccl::allGather(int communicator, const char *in, char *out, int64_t bytes, int64_t /*tag*/) {
  collective(
      "ncclAllGather",
      [&](void *comm, void *stream) {
        return ncclAllGather(in, out, static_cast<size_t>(bytes), ncclInt8, commOf(comm), streamOf(stream));
      },
      communicator);
}

void GpuNccl::reduceScatter(int communicator, const char *in, char *out, int64_t count, ir::DType dtype,
                            int64_t /*tag*/) {
  collective(
      "ncclReduceScatter",
      [&](void *comm, void *stream) {
        return ncclReduceScatter(in, out, static_cast<size_t>(count), ncclTypeOf(dtype), ncclSum, commOf(comm),
                                 streamOf(stream));
      },
      communicator);
}

// A send waits for the kernels that packed its message; nothing waits for it until the step
// ends (its buffer is its call's own).
void GpuNccl::send(int peer, const char *data, int64_t bytes, int64_t /*tag*/) {
  useGpu(gpu_);
  Lane &lane = channelLanes_.at({device_, peer});
  follow(lane, computeLane_);
  void *comm = channels_.at({device_, peer});
  issued(ncclSend(data, static_cast<size_t>(bytes), ncclInt8, 1, commOf(comm), streamOf(lane.stream)), comm,
         "ncclSend to device " + std::to_string(peer));
}

// A receive records an event that arrived() makes the compute stream wait for; one the
// program makes where it needs it (not staged) is waited for at once. (Its buffer is its
// call's own, last read in the step before, which ended with every stream synchronised.)
void GpuNccl::recv(int peer, char *data, int64_t bytes, int64_t /*tag*/, bool staged) {
  useGpu(gpu_);
  Lane &lane = channelLanes_.at({peer, device_});
  void *comm = channels_.at({peer, device_});
  issued(ncclRecv(data, static_cast<size_t>(bytes), ncclInt8, 0, commOf(comm), streamOf(lane.stream)), comm,
         "ncclRecv from device " + std::to_string(peer));
  void *&event = received_[data];
  if (!event) {
    cudaEvent_t made = nullptr;
    check(cudaEventCreateWithFlags(&made, cudaEventDisableTiming), "cudaEventCreate");
    event = made;
  }
  check(cudaEventRecord(static_cast<cudaEvent_t>(event), streamOf(lane.stream)), "cudaEventRecord");
  if (!staged)
    arrived(data);
}

void GpuNccl::arrived(const char *data) {
  useGpu(gpu_);
  check(cudaStreamWaitEvent(streamOf(computeLane_.stream), static_cast<cudaEvent_t>(received_.at(data)), 0),
        "cudaStreamWaitEvent");
}

void GpuNccl::copyBox(int elementBytes, const char *src, const std::vector<int64_t> &srcShape,
                      const std::vector<int64_t> &srcLo, char *dst, const std::vector<int64_t> &dstShape,
                      const std::vector<int64_t> &dstLo, const std::vector<int64_t> &size, bool add) {
  useGpu(gpu_);
  gpu::copyBox(elementBytes, src, srcShape, srcLo, dst, dstShape, dstLo, size, add, compute_);
}

void GpuNccl::zero(char *at, int64_t bytes) {
  useGpu(gpu_);
  zeroBytes(at, bytes, compute_);
}

char *GpuNccl::scratch(size_t index, int64_t bytes) {
  if (scratch_.size() <= index) {
    scratch_.resize(index + 1);
    scratchBytes_.resize(index + 1, 0);
  }
  if (scratchBytes_[index] < bytes) { // the first step (a call's size is the same every step)
    useGpu(gpu_);
    if (scratch_[index]) { // (not waited for: a receive posted early may be pending; freed at the step's end)
      if (auto old = received_.find(static_cast<const char *>(scratch_[index]->data())); old != received_.end()) {
        cudaEventDestroy(static_cast<cudaEvent_t>(old->second));
        received_.erase(old);
      }
      retired_.push_back(std::move(scratch_[index]));
    }
    scratch_[index] = std::make_unique<DeviceBuffer>(bytes);
    scratchBytes_[index] = bytes;
  }
  return static_cast<char *>(scratch_[index]->data());
}

// Polls rather than waits: a stream blocked on a peer that died would never return. Ends, having
// aborted the communicators, at a failed call, at the timeout, or when the run's communicator
// says the run failed elsewhere (a peer's calls that will never come).
void GpuNccl::await(bool everyStream) {
  useGpu(gpu_);
  std::vector<cudaStream_t> streams = {streamOf(computeLane_.stream)};
  if (everyStream) {
    streams.push_back(streamOf(collectives_.stream));
    for (auto &[pair, lane] : channelLanes_)
      streams.push_back(streamOf(lane.stream));
  }
  std::vector<ncclComm_t> comms;
  for (auto &[index, comm] : groups_)
    comms.push_back(commOf(comm));
  for (auto &[pair, comm] : channels_)
    comms.push_back(commOf(comm));
  const auto state = [&](std::string *why) {
    bool done = true;
    for (cudaStream_t stream : streams) {
      const cudaError_t status = cudaStreamQuery(stream);
      if (status == cudaErrorNotReady)
        done = false;
      else
        check(status, "a kernel or an NCCL call on the GPU");
    }
    if (done)
      return NcclProgress::Done;
    for (ncclComm_t comm : comms)
      if (progressOf(comm, why) == NcclProgress::Failed) {
        *why = "an NCCL call failed: " + *why;
        return NcclProgress::Failed;
      }
    return NcclProgress::InProgress;
  };
  try {
    awaitNccl(state, timeout_, "device " + std::to_string(device_) + ": waiting for its NCCL calls",
              [&] { return comm_.stopped(); });
  } catch (const CommError &) {
    abort();
    throw;
  }
  if (everyStream)
    retired_.clear();
}

void GpuNccl::abandon() {
  useGpu(gpu_);
  abort();
}

void GpuNccl::abort() {
  for (auto &[index, comm] : groups_)
    ncclCommAbort(commOf(comm));
  for (auto &[pair, comm] : channels_)
    ncclCommAbort(commOf(comm));
  groups_.clear(); // (aborted: not to be destroyed again)
  channels_.clear();
}

std::unique_ptr<Offload> gpuNcclOffload(const OffloadSite &site) {
  std::shared_ptr<const NcclPlan> plan = ncclPlanOf(site.plan);
  auto offload = std::make_unique<GpuOffload>(site.program);
  auto endpoint = std::make_unique<GpuNccl>(plan, site.comm, offload->gpu(), offload->stream(), site.timeout);
  return std::make_unique<NcclOffload>(std::move(offload), plan, site.program, std::move(endpoint));
}

} // namespace hspmd::runtime::gpu
