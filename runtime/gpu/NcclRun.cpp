// NcclRun.cpp - a device's communication as its plan's NCCL calls, in its offload's memory,
// and the host endpoint that runs them without a GPU (runtime/gpu/NcclRun.h).
#include "runtime/gpu/NcclRun.h"
#include "runtime/Bf16.h"

#include "ir/Tags.h"
#include "runtime/Regions.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <thread>

namespace hspmd::runtime::gpu {

namespace {

std::string where(const ir::Instruction &in) {
  return in.loc.isKnown() ? " (" + in.loc.str() + ")" : "";
}

} // namespace

void awaitNccl(const std::function<NcclProgress(std::string *why)> &state, std::chrono::milliseconds timeout,
               const std::string &what, const std::function<std::string()> &stopped) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    std::string why;
    switch (state(&why)) {
    case NcclProgress::Done:
      return;
    case NcclProgress::Failed:
      throw CommError(what + ": " + why);
    case NcclProgress::InProgress:
      break;
    }
    if (stopped)
      if (std::string reason = stopped(); !reason.empty())
        throw CommError(reason);
    if (std::chrono::steady_clock::now() > deadline)
      throw CommError(what + ": not done after " + formatSeconds(timeout) + " s (a member that died or never came?)");
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

std::shared_ptr<const NcclPlan> ncclPlanOf(const std::map<int, ir::DeviceProgram> &plan) {
  // The plans in use, by their programs' address: a plan's calls point into its programs, so
  // an entry lives only as long as some device's offload holds it.
  static std::mutex mutex;
  static std::map<const void *, std::weak_ptr<const NcclPlan>> made;
  const std::lock_guard<std::mutex> lock(mutex);
  if (auto it = made.find(&plan); it != made.end())
    if (std::shared_ptr<const NcclPlan> alive = it->second.lock())
      return alive;
  std::string error;
  std::optional<NcclPlan> calls = planNcclCalls(plan, &error);
  if (!calls)
    throw CommError("this plan cannot run on NCCL: " + error);
  auto shared = std::make_shared<const NcclPlan>(std::move(*calls));
  made[&plan] = shared;
  return shared;
}

NcclOffload::NcclOffload(std::unique_ptr<Offload> inner, std::shared_ptr<const NcclPlan> plan,
                         const ir::DeviceProgram &program, std::unique_ptr<NcclEndpoint> endpoint)
    : inner_(std::move(inner)), plan_(std::move(plan)), program_(program), endpoint_(std::move(endpoint)) {
  if (auto mine = plan_->calls.find(program.device); mine != plan_->calls.end())
    for (size_t c = 0; c < mine->second.size(); ++c)
      calls_[{mine->second[c].instruction, mine->second[c].tag}].push_back(static_cast<int>(c));
}

char *NcclOffload::address(int buffer, int microbatch) {
  const ir::Buffer &b = program_.buffers[static_cast<size_t>(buffer)];
  return inner_->memory() + b.offset + (microbatch % b.slots) * b.bytes();
}

void NcclOffload::communicate(const ir::Instruction &in, int microbatch, int64_t tag, const KernelContext &context) {
  inner_->changed(in); // its writes, on the communication streams, come before what reads them
  if (in.kind == ir::InstrKind::Kernel) {
    crossEntropy(in, microbatch, tag, context);
    return;
  }
  const int device = program_.device;
  const int64_t expanded = ir::expandedTag(in.tag, in.phase, microbatch);
  static const std::vector<int> none;
  const auto found = calls_.find({&in, expanded});
  const std::vector<int> &mine = found == calls_.end() ? none : found->second;
  if (mine.empty() && in.kind != ir::InstrKind::Collective)
    throw CommError("device " + std::to_string(device) + ": the NCCL plan has no call for its '" + in.op + "' (tag " +
                    std::to_string(expanded) + ")" + where(in));
  const ir::Buffer *input = in.inputs.empty() ? nullptr : &program_.buffers[static_cast<size_t>(in.inputs[0])];
  const ir::Buffer *output = in.outputs.empty() ? nullptr : &program_.buffers[static_cast<size_t>(in.outputs[0])];
  auto local = [](const ir::Box &box, const ir::Buffer &b) { return minus(box.lo, b.region().lo); };
  // A message's boxes, packed one after another, out of `b` (or unpacked into it).
  auto pack = [&](const std::vector<ir::Box> &boxes, const ir::Buffer &b, char *message, bool out, bool add) {
    const int element = ir::dtypeBytes(b.dtype);
    char *at = address(b.id, microbatch);
    int64_t offset = 0;
    for (const ir::Box &box : boxes) {
      const std::vector<int64_t> size = minus(box.hi, box.lo), origin(size.size(), 0);
      if (out)
        endpoint_->copyBox(element, at, b.shape, local(box, b), message + offset, size, origin, size, false);
      else
        endpoint_->copyBox(element, message + offset, size, origin, at, b.shape, local(box, b), size, add);
      offset += box.numElements() * element;
    }
  };
  auto need = [&](const ir::Buffer *b, const char *what) -> const ir::Buffer & {
    if (!b)
      throw CommError("device " + std::to_string(device) + ": '" + in.op + "' has no " + what + where(in));
    return *b;
  };
  std::map<int, size_t> received; // peer -> the call (and message buffer) of what came from it
  bool own = false;               // the collective ran as NCCL's own
  const std::vector<NcclCall> &calls = plan_->calls.at(device);
  // Call c's message is in message buffer c. Receives come last: a staged one is first in the
  // plan's list (posted at the start of the step where receives only start), but a receive
  // that waits for its message may need this instruction's sends to be out.
  for (int pass = 0; pass < 2; ++pass)
    for (int c : mine) {
      const auto k = static_cast<size_t>(c);
      const NcclCall &call = calls[k];
      if ((call.kind == NcclCallKind::Recv) != (pass == 1))
        continue;
      ++made_;
      switch (call.kind) {
      case NcclCallKind::AllReduce:
      case NcclCallKind::ReduceScatter:
        if (need(input, "input").dtype != ir::DType::F32 && input->dtype != ir::DType::BF16)
          throw CommError("device " + std::to_string(device) + ": NCCL sums f32 or bf16 here, not the elements of '" +
                          in.op + "'" + where(in));
        if (call.kind == NcclCallKind::AllReduce)
          endpoint_->allReduce(call.communicator, address(input->id, microbatch),
                               address(need(output, "output").id, microbatch), call.count, input->dtype, tag, false);
        else
          endpoint_->reduceScatter(call.communicator, address(input->id, microbatch),
                                   address(need(output, "output").id, microbatch), call.count, input->dtype, tag);
        own = true;
        break;
      case NcclCallKind::AllGather:
        endpoint_->allGather(call.communicator, address(need(input, "input").id, microbatch),
                             address(need(output, "output").id, microbatch), call.count * ir::dtypeBytes(input->dtype),
                             tag);
        own = true;
        break;
      case NcclCallKind::Send: {
        char *message = endpoint_->scratch(k, call.bytes);
        pack(call.boxes, need(input, "input"), message, true, false);
        endpoint_->send(call.peer, message, call.bytes, tag);
        break;
      }
      case NcclCallKind::Recv:
        if (k < posted_.size() && posted_[k])
          endpoint_->arrived(endpoint_->scratch(k, call.bytes));
        else
          endpoint_->recv(call.peer, endpoint_->scratch(k, call.bytes), call.bytes, tag, call.staged);
        received[call.peer] = k;
        break;
      }
    }
  if (in.kind == ir::InstrKind::Recv) {
    const NcclCall &call = calls[static_cast<size_t>(mine.front())];
    pack(call.boxes, need(output, "output"), endpoint_->scratch(received.at(call.peer), call.bytes), false,
         in.op == "recv-add");
    return;
  }
  if (in.kind != ir::InstrKind::Collective || own || !output)
    return;
  // A collective as messages: the output from this member's own part and what the others
  // sent, in group order (a reduction adds them, from zero).
  const bool sum = ir::isReduction(in.collective().value_or(ir::CommKind::Bsr));
  const ir::Box region = output->region();
  if (sum)
    endpoint_->zero(address(output->id, microbatch), output->bytes());
  for (int member : in.group) {
    if (member == device) {
      if (!input)
        continue;
      const ir::Box overlap = ir::intersectBox(region, input->region());
      if (!overlap.empty())
        endpoint_->copyBox(ir::dtypeBytes(input->dtype), address(input->id, microbatch), input->shape,
                           local(overlap, *input), address(output->id, microbatch), output->shape,
                           local(overlap, *output), minus(overlap.hi, overlap.lo), sum);
      continue;
    }
    if (auto from = received.find(member); from != received.end()) {
      const NcclCall &call = calls[from->second];
      pack(call.boxes, *output, endpoint_->scratch(from->second, call.bytes), false, sum);
    }
  }
}

// Per row: the pieces' maxima, all-reduced (max); their sums of exponentials and the target's
// logit, all-reduced (sum); then the loss or this piece's gradient. The two values per row are
// in message buffers past the calls'.
void NcclOffload::crossEntropy(const ir::Instruction &in, int microbatch, int64_t tag, const KernelContext &context) {
  const int device = program_.device;
  const int64_t expanded = ir::expandedTag(in.tag, in.phase, microbatch);
  std::array<const NcclCall *, 2> rounds{};
  const std::vector<NcclCall> &calls = plan_->calls.at(device);
  for (int round = 0; round < 2; ++round) {
    auto found = calls_.find({&in, expanded + (static_cast<int64_t>(round) << 37)});
    if (found == calls_.end() || found->second.size() != 1 ||
        calls[static_cast<size_t>(found->second[0])].kind != NcclCallKind::AllReduce)
      throw CommError("device " + std::to_string(device) + ": the NCCL plan has no all-reduce " +
                      std::to_string(round + 1) + " of 2 for its '" + in.op + "' (tag " + std::to_string(expanded) +
                      ")" + where(in));
    rounds[static_cast<size_t>(round)] = &calls[static_cast<size_t>(found->second[0])];
  }
  auto view = [&](int buffer) {
    const ir::Buffer &b = program_.buffers[static_cast<size_t>(buffer)];
    return TensorView{address(buffer, microbatch), b.dtype, b.shape};
  };
  const TensorView logits = view(in.inputs.at(0)), targets = view(in.inputs.at(1));
  const int64_t V = std::max<int64_t>(logits.shape.back(), 1), rows = logits.numel() / V;
  char *peak = endpoint_->scratch(calls.size(), rows * 4), *sums = endpoint_->scratch(calls.size() + 1, 2 * rows * 4);
  const TensorView peaks{peak, ir::DType::F32, {rows}}, totals{sums, ir::DType::F32, {2 * rows}};
  auto run = [&](const char *op, const std::vector<TensorView> &inputs, const TensorView &output) {
    inner_->run(op, in.attrs, inputs, std::span<const TensorView>(&output, 1), context);
  };
  run("vocab_parallel_max", {logits}, peaks);
  endpoint_->allReduce(rounds[0]->communicator, peak, peak, rows, ir::DType::F32, tag, true);
  run("vocab_parallel_sums", {logits, targets, peaks}, totals);
  endpoint_->allReduce(rounds[1]->communicator, sums, sums, 2 * rows, ir::DType::F32, tag + (int64_t{1} << 37), false);
  made_ += 2;
  if (in.op == "cross_entropy")
    run("vocab_parallel_loss", {targets, peaks, totals}, view(in.outputs.at(0)));
  else
    run("vocab_parallel_grad", {logits, targets, peaks, totals, view(in.inputs.at(2))}, view(in.outputs.at(0)));
}

// Where receives only start, the staged ones of the step are posted now, in the plan's order
// (their senders'), but for micro-batches no device runs.
void NcclOffload::beginStep(const std::vector<unsigned char> &skipped) {
  inner_->beginStep(skipped);
  if (!endpoint_->postsEarly())
    return;
  const std::vector<NcclCall> &calls = plan_->calls.at(program_.device);
  posted_.assign(calls.size(), false);
  for (size_t c = 0; c < calls.size(); ++c) {
    const NcclCall &call = calls[c];
    if (!call.staged)
      continue;
    const int64_t within = call.tag % ir::tags::kPerBase; // 2 x micro-batch (+ 1), or the update's
    const auto microbatch = static_cast<size_t>(within / 2);
    if (within != ir::tags::kPerBase - 1 && microbatch < skipped.size() && skipped[microbatch])
      continue;
    endpoint_->recv(call.peer, endpoint_->scratch(c, call.bytes), call.bytes, call.tag, true);
    posted_[c] = true;
  }
}

HostNccl::HostNccl(std::shared_ptr<const NcclPlan> plan, Communicator &comm) : plan_(std::move(plan)), comm_(comm) {}

void HostNccl::gather(int communicator, const char *in, int64_t bytes, int64_t tag,
                      const std::function<void(const std::vector<const char *> &)> &use) {
  Piece mine;
  mine.data = in;
  comm_.exchange(plan_->communicators.at(static_cast<size_t>(communicator)), tag, mine, bytes,
                 [&](const std::vector<Piece> &pieces) {
                   std::vector<const char *> data;
                   for (const Piece &piece : pieces)
                     data.push_back(static_cast<const char *>(piece.data));
                   use(data);
                 });
}

// Each result is built aside and written once every member has read the inputs (an output
// may be its member's input).
namespace {

// Element `i` of `data` (f32 or bf16) as a float; a float stored as one.
float elementAt(const char *data, ir::DType dtype, int64_t i) {
  return dtype == ir::DType::BF16 ? fromBf16(reinterpret_cast<const uint16_t *>(data)[i])
                                  : reinterpret_cast<const float *>(data)[i];
}

void store(const std::vector<float> &values, ir::DType dtype, char *out) {
  if (dtype == ir::DType::BF16)
    narrowToBf16(values.data(), out, static_cast<int64_t>(values.size()));
  else
    std::memcpy(out, values.data(), values.size() * 4);
}

// `into` plus `value` as the host executor adds them (copyBox): bf16 rounded at each step.
float added(float into, float value, ir::DType dtype) {
  return dtype == ir::DType::BF16 ? fromBf16(toBf16(into + value)) : into + value;
}

} // namespace

void HostNccl::allReduce(int communicator, const char *in, char *out, int64_t count, ir::DType dtype, int64_t tag,
                         bool max) {
  std::vector<float> sum(static_cast<size_t>(count), 0.0f);
  gather(communicator, in, count * ir::dtypeBytes(dtype), tag, [&](const std::vector<const char *> &data) {
    for (size_t m = 0; m < data.size(); ++m) // in group order, as the host executor combines them
      for (int64_t i = 0; i < count; ++i) {
        const float value = elementAt(data[m], dtype, i);
        float &into = sum[static_cast<size_t>(i)];
        into = !max ? added(into, value, dtype) : m == 0 ? value : std::max(into, value);
      }
  });
  store(sum, dtype, out);
}

void HostNccl::allGather(int communicator, const char *in, char *out, int64_t bytes, int64_t tag) {
  std::vector<char> all;
  gather(communicator, in, bytes, tag, [&](const std::vector<const char *> &data) {
    for (const char *member : data)
      all.insert(all.end(), member, member + bytes);
  });
  std::memcpy(out, all.data(), all.size());
}

void HostNccl::reduceScatter(int communicator, const char *in, char *out, int64_t count, ir::DType dtype, int64_t tag) {
  const std::vector<int> &group = plan_->communicators.at(static_cast<size_t>(communicator));
  const auto rank = static_cast<int64_t>(std::find(group.begin(), group.end(), comm_.device()) - group.begin());
  std::vector<float> sum(static_cast<size_t>(count), 0.0f);
  gather(communicator, in, count * ir::dtypeBytes(dtype) * static_cast<int64_t>(group.size()), tag,
         [&](const std::vector<const char *> &data) {
           for (const char *member : data)
             for (int64_t i = 0; i < count; ++i)
               sum[static_cast<size_t>(i)] =
                   added(sum[static_cast<size_t>(i)], elementAt(member, dtype, rank * count + i), dtype);
         });
  store(sum, dtype, out);
}

// A channel is the communicator's messages to the peer with tag kNcclChannel, in order; each
// carries the plan's tag of its call first, which its receive checks.
void HostNccl::send(int peer, const char *data, int64_t bytes, int64_t tag) {
  std::vector<char> message(static_cast<size_t>(8 + bytes));
  std::memcpy(message.data(), &tag, 8);
  std::memcpy(message.data() + 8, data, static_cast<size_t>(bytes));
  comm_.send(peer, ir::tags::kNcclChannel, std::move(message));
}

void HostNccl::recv(int peer, char *data, int64_t bytes, int64_t tag, bool staged) {
  const std::string between =
      "device " + std::to_string(comm_.device()) + "'s receive from device " + std::to_string(peer);
  std::vector<char> message;
  if (auto early = early_.find({peer, tag}); early != early_.end()) {
    message = std::move(early->second);
    early_.erase(early);
  } else {
    while (true) {
      message = comm_.recv(peer, ir::tags::kNcclChannel);
      int64_t sent = 0;
      std::memcpy(&sent, message.data(), 8);
      if (sent == tag)
        break;
      if (!staged) // NCCL hands a receive the channel's next message, whatever it was sent for
        throw CommError(between + " (tag " + std::to_string(tag) + ") would take the message sent with tag " +
                        std::to_string(sent) + ": NCCL matches messages by their order on a channel");
      early_[{peer, sent}] = std::move(message); // posted earlier, in the sender's order
    }
  }
  if (static_cast<int64_t>(message.size()) != 8 + bytes)
    throw CommError(between + " (tag " + std::to_string(tag) + ") expected " + std::to_string(bytes) +
                    " bytes but got " + std::to_string(message.size() - 8));
  std::memcpy(data, message.data() + 8, static_cast<size_t>(bytes));
}

void HostNccl::copyBox(int elementBytes, const char *src, const std::vector<int64_t> &srcShape,
                       const std::vector<int64_t> &srcLo, char *dst, const std::vector<int64_t> &dstShape,
                       const std::vector<int64_t> &dstLo, const std::vector<int64_t> &size, bool add) {
  runtime::copyBox(elementBytes, src, srcShape, srcLo, dst, dstShape, dstLo, size, add);
}

void HostNccl::zero(char *at, int64_t bytes) {
  std::memset(at, 0, static_cast<size_t>(bytes));
}

char *HostNccl::scratch(size_t index, int64_t bytes) {
  if (scratch_.size() <= index)
    scratch_.resize(index + 1);
  if (static_cast<int64_t>(scratch_[index].size()) < bytes)
    scratch_[index].resize(static_cast<size_t>(bytes));
  return scratch_[index].data();
}

std::unique_ptr<Offload> hostNcclOffload(const OffloadSite &site) {
  std::shared_ptr<const NcclPlan> plan = ncclPlanOf(site.plan);
  return std::make_unique<NcclOffload>(std::make_unique<HostOffload>(site.program), plan, site.program,
                                       std::make_unique<HostNccl>(plan, site.comm));
}

} // namespace hspmd::runtime::gpu
