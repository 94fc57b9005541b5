// Executor.cpp - running one device's DeviceProgram: its arena, kernels and communication
// (runtime/Executor.h).
#include "runtime/Executor.h"

#include "ir/Tags.h"
#include "runtime/Kernels.h"
#include "runtime/Regions.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>

namespace hspmd::runtime {

namespace {

// The step is part of every tag, so a step's messages and collectives never meet the next's.
int64_t stepTag(int64_t tag, int64_t step) {
  return ir::tags::ofStep(tag, step);
}

} // namespace

DeviceExecutor::DeviceExecutor(const ir::DeviceProgram &program, Communicator &communicator)
    : program_(program), comm_(communicator), byPhase_(4) {
  // The arena starts at a 64-byte boundary (a cache line; plan-memory places buffers at
  // multiples of 64), so that the kernels' vector loads do not straddle lines.
  arena_.assign(static_cast<size_t>(std::max<int64_t>(program.peakBytes, 0)) + 128, 0);
  base_ = arena_.data() + (64 - reinterpret_cast<uintptr_t>(arena_.data()) % 64) % 64;
  fusion_ = fusionFor(program);
  for (const ir::Instruction &in : program.body)
    byPhase_[static_cast<size_t>(ir::passOf(in.phase))].push_back(&in);
}

void DeviceExecutor::offloadTo(std::unique_ptr<Offload> offload) {
  offload_ = std::move(offload);
  fusion_ = noFusion(program_);
  hostStale_ = false;
  deviceStale_ = true; // the whole arena goes up before the first kernel
}

void DeviceExecutor::hostCurrent() const {
  if (offload_ && hostStale_) {
    offload_->download(0, base_, program_.peakBytes);
    hostStale_ = false;
  }
}

void DeviceExecutor::deviceCurrent() {
  if (offload_ && deviceStale_) {
    offload_->upload(0, base_, program_.peakBytes);
    deviceStale_ = false;
  }
}

char *DeviceExecutor::address(int buffer, int microbatch) const {
  const ir::Buffer &b = program_.buffers[static_cast<size_t>(buffer)];
  return base_ + b.offset + (microbatch % b.slots) * b.bytes();
}

void DeviceExecutor::load(const ParameterStore &store) {
  hostCurrent();
  deviceStale_ = offload_ != nullptr;
  for (const ir::Buffer &b : program_.buffers) {
    if (b.role != ir::BufferRole::Parameter && b.role != ir::BufferRole::State)
      continue;
    const std::string name = ir::storeName(b);
    auto it = store.tensors.find(name);
    if (it == store.tensors.end()) {
      if (b.role == ir::BufferRole::Parameter)
        throw CheckpointError("parameter '" + name + "' is missing from the parameters loaded");
      // Optimizer state starts at zero before the first step; after it, a missing state would
      // silently restart the optimizer.
      if (store.step > 0)
        throw CheckpointError("optimizer state '" + name + "' is missing from the parameters loaded (saved after " +
                              std::to_string(store.step) +
                              " steps; a checkpoint of another optimizer has other state)");
      std::memset(address(b.id, 0), 0, static_cast<size_t>(b.bytes())); // fresh optimizer state
      continue;
    }
    const ir::Box region = b.region();
    bool fits = it->second.shape.size() == region.hi.size();
    for (size_t d = 0; fits && d < region.hi.size(); ++d)
      fits = region.hi[d] <= it->second.shape[d];
    if (!fits)
      throw CheckpointError(std::string(b.role == ir::BufferRole::Parameter ? "parameter '" : "optimizer state '") +
                            name + "' has another shape in the parameters loaded");
    copyBox(4, it->second.data.data(), it->second.shape, region.lo, address(b.id, 0), b.shape,
            std::vector<int64_t>(b.shape.size(), 0), b.shape);
  }
  stepNumber_ = running_ = store.step;
}

namespace {
bool isState(const ir::Buffer &b) {
  return b.role == ir::BufferRole::Parameter || b.role == ir::BufferRole::State;
}
} // namespace

std::vector<char> DeviceExecutor::packState() const {
  hostCurrent();
  std::vector<char> packed(sizeof stepNumber_);
  std::memcpy(packed.data(), &stepNumber_, sizeof stepNumber_);
  for (const ir::Buffer &b : program_.buffers)
    if (isState(b))
      packed.insert(packed.end(), address(b.id, 0), address(b.id, 0) + b.bytes());
  return packed;
}

void unpackState(const ir::DeviceProgram &program, const std::vector<char> &packed, ParameterStore &store) {
  int64_t step = 0;
  size_t at = sizeof step;
  if (packed.size() < at)
    throw CheckpointError("device " + std::to_string(program.device) + " sent no state");
  std::memcpy(&step, packed.data(), sizeof step);
  for (const ir::Buffer &b : program.buffers) {
    if (!isState(b))
      continue;
    if (at + static_cast<size_t>(b.bytes()) > packed.size())
      throw CheckpointError("device " + std::to_string(program.device) + " sent less state than its program holds");
    const std::string name = ir::storeName(b);
    GlobalTensor &t = store.tensors[name];
    if (t.data.empty()) { // optimizer state: the shape of its parameter
      const std::string param = name.substr(0, name.rfind('.'));
      auto owner = store.tensors.find(param);
      if (owner == store.tensors.end())
        throw CheckpointError("no parameter '" + param + "' for optimizer state '" + name + "'");
      t.shape = owner->second.shape;
      t.data.assign(owner->second.data.size(), 0.0f);
    }
    const ir::Box region = b.region();
    copyBox(4, packed.data() + at, b.shape, std::vector<int64_t>(b.shape.size(), 0), t.data.data(), t.shape, region.lo,
            b.shape);
    at += static_cast<size_t>(b.bytes());
  }
  store.step = step;
}

int64_t DeviceExecutor::batchRow(int buffer, int microbatch) const {
  const ir::Box region = program_.buffers[static_cast<size_t>(buffer)].region();
  return (region.lo.empty() ? 0 : region.lo[0]) + microbatch * program_.microbatchSize;
}

KernelContext DeviceExecutor::kernelContext(const ir::Instruction &in, int microbatch) const {
  KernelContext context{running_};
  if (!batch_ || batch_->blockStarts.empty())
    return context;
  context.scored = batch_->scored;
  if ((in.op == "attention" || in.op == "attention_grad") && !in.inputs.empty()) {
    // The query's batch dimension is the batch's rows, as the tokens' is (loadInputs).
    const int64_t row = batchRow(in.inputs[0], microbatch);
    const ir::Buffer &q = program_.buffers[static_cast<size_t>(in.inputs[0])];
    if (q.shape.empty() || row < 0 || row + q.shape[0] > batch_->batch)
      throw DataError("attention's rows " + std::to_string(row) + ".. lie outside the batch of " +
                      std::to_string(batch_->batch));
    context.blockStarts = batch_->blockStarts.data();
    context.batchRows = batch_->batch;
    context.seq = batch_->seq;
    context.row = row;
  }
  return context;
}

namespace {
// The buffer of `program` named `value`, or null.
const ir::Buffer *named(const ir::DeviceProgram &program, const std::string &value) {
  for (const ir::Buffer &b : program.buffers)
    if (b.value == value)
      return &b;
  return nullptr;
}
} // namespace

const ir::Buffer *gradientBuffer(const ir::DeviceProgram &program, const std::string &parameter) {
  if (const ir::Buffer *accumulated = named(program, "grad." + parameter + ".acc"))
    return accumulated;
  return named(program, "grad." + parameter);
}

std::string sameStateLayout(const ir::DeviceProgram &a, const ir::DeviceProgram &b) {
  size_t states = 0;
  for (const ir::Buffer &x : a.buffers) {
    if (!isState(x))
      continue;
    ++states;
    const std::string name = x.value; // "w", its ZeRO share "w.shard", "w.adam_m"
    const ir::Buffer *y = nullptr;
    for (const ir::Buffer &candidate : b.buffers)
      if (isState(candidate) && candidate.value == name && candidate.role == x.role)
        y = &candidate;
    if (!y || y->region().lo != x.region().lo || y->shape != x.shape)
      return "'" + name + "' lies otherwise on device " + std::to_string(a.device);
    if (x.role != ir::BufferRole::Parameter)
      continue;
    const ir::Buffer *gx = gradientBuffer(a, x.value), *gy = gradientBuffer(b, y->value);
    if (!gx && !gy) // a ZeRO share: the gradient is its whole parameter's
      continue;
    if (!gx || !gy || gx->shape != gy->shape || gx->region().lo != gy->region().lo)
      return "the gradient of '" + name + "' lies otherwise on device " + std::to_string(a.device);
    // Both are partial sums over the same devices: the update reduces them over one group.
    auto groupOf = [](const ir::DeviceProgram &program, const ir::Buffer &gradient) {
      for (const ir::Instruction &in : program.body)
        if (in.phase == ir::Phase::Update && in.kind == ir::InstrKind::Collective && !in.inputs.empty() &&
            in.inputs[0] == gradient.id)
          return in.group;
      return ir::DeviceGroup{};
    };
    if (!(groupOf(a, *gx) == groupOf(b, *gy)))
      return "the gradient of '" + name + "' is reduced over other devices on device " + std::to_string(a.device);
  }
  size_t theirs = 0;
  for (const ir::Buffer &y : b.buffers)
    theirs += isState(y) ? 1 : 0;
  if (theirs != states)
    return "device " + std::to_string(a.device) + " holds other state";
  return "";
}

void DeviceExecutor::copyStateFrom(const DeviceExecutor &other, bool parametersOnly) {
  other.hostCurrent();
  hostCurrent();
  deviceStale_ = offload_ != nullptr;
  for (const ir::Buffer &b : program_.buffers) {
    if (!isState(b) || (parametersOnly && b.role != ir::BufferRole::Parameter))
      continue;
    for (const ir::Buffer &o : other.program_.buffers)
      if (o.role == b.role && o.value == b.value && o.bytes() == b.bytes()) { // sameStateLayout
        std::memcpy(address(b.id, 0), other.address(o.id, 0), static_cast<size_t>(b.bytes()));
        break;
      }
  }
  stepNumber_ = running_ = other.stepNumber_;
}

void DeviceExecutor::addGradientsFrom(const DeviceExecutor &other) {
  other.hostCurrent();
  hostCurrent();
  deviceStale_ = offload_ != nullptr;
  for (const ir::Buffer &b : program_.buffers) {
    if (b.role != ir::BufferRole::Parameter)
      continue;
    const ir::Buffer *mine = gradientBuffer(program_, b.value), *theirs = gradientBuffer(other.program_, b.value);
    if (!mine || !theirs)
      continue;
    float *to = reinterpret_cast<float *>(address(mine->id, 0));
    const float *from = reinterpret_cast<const float *>(other.address(theirs->id, 0));
    for (int64_t i = 0; i < mine->bytes() / 4; ++i)
      to[i] += from[i];
  }
}

void DeviceExecutor::loadInputs(const Batch &batch, int microbatch) {
  for (const ir::Buffer &b : program_.buffers) {
    if (b.role != ir::BufferRole::Input)
      continue;
    auto it = batch.inputs.find(b.value);
    if (it == batch.inputs.end())
      throw DataError("the data gives no input named '" + b.value + "'");
    // Row r of the buffer (micro-batch coordinates) is sample batchStart + k * size + (r - batchStart).
    std::vector<int64_t> lo = b.region().lo;
    if (!lo.empty())
      lo[0] = batchRow(b.id, microbatch);
    const std::vector<int64_t> global = {batch.batch, batch.seq};
    if (b.shape.size() != 2 || lo[0] + b.shape[0] > batch.batch || lo[1] + b.shape[1] > batch.seq)
      throw DataError("input '" + b.value + "' does not fit the batch of " + std::to_string(batch.batch) + " x " +
                      std::to_string(batch.seq));
    copyBox(4, it->second.data(), global, lo, address(b.id, microbatch), b.shape, {0, 0}, b.shape);
  }
}

double DeviceExecutor::forwardBackward(const Batch &batch, int64_t step) {
  struct Current { // the batch the kernels see, while the passes run
    const Batch *&at;
    ~Current() { at = nullptr; }
  } current{batch_ = &batch};
  running_ = step;
  changed_ = false;
  deviceCurrent();
  if (offload_)
    offload_->beginStep(batch.skipMicrobatch);
  for (const ir::Buffer &b : program_.buffers)
    if (b.zeroed) {
      std::memset(address(b.id, 0), 0, static_cast<size_t>(b.arenaBytes()));
      if (offload_)
        offload_->zero(b.offset, b.arenaBytes());
    }
  double loss = 0;
  for (const ir::ScheduleSlot &slot : program_.schedule) {
    if (static_cast<size_t>(slot.microbatch) < batch.skipMicrobatch.size() && batch.skipMicrobatch[slot.microbatch])
      continue; // padding only, in every pipeline: skipped by every device
    if (dieAt_ && *dieAt_ == slot.phase) {
      dieAt_.reset();
      throw DeviceDeath("device " + std::to_string(program_.device) + " died at the start of its " +
                        (slot.phase == ir::Phase::Forward ? "forward" : "backward") + " pass of step " +
                        std::to_string(step));
    }
    if (slot.phase == ir::Phase::Forward) {
      loadInputs(batch, slot.microbatch);
      if (offload_) // the micro-batch's inputs go up
        for (const ir::Buffer &b : program_.buffers)
          if (b.role == ir::BufferRole::Input)
            offload_->upload(address(b.id, slot.microbatch) - base_, address(b.id, slot.microbatch), b.bytes());
      run(ir::Phase::Forward, slot.microbatch);
      if (program_.lossBuffer >= 0) {
        char *at = address(program_.lossBuffer, slot.microbatch);
        if (offload_)
          offload_->download(at - base_, at, sizeof(float));
        loss += *reinterpret_cast<const float *>(at);
      }
    } else {
      run(ir::Phase::Backward, slot.microbatch); // recomputation included
    }
  }
  return loss;
}

void DeviceExecutor::updateExchange() {
  changed_ = false;
  if (phases_[static_cast<size_t>(ir::Phase::Update)])
    return;
  const auto &instructions = byPhase_[static_cast<size_t>(ir::Phase::Update)];
  for (exchanged_ = 0; exchanged_ < instructions.size() && instructions[exchanged_]->kind != ir::InstrKind::Kernel;
       ++exchanged_)
    timed(*instructions[exchanged_], 0);
}

void DeviceExecutor::update() {
  changed_ = false;
  if (phases_[static_cast<size_t>(ir::Phase::Update)]) {
    run(ir::Phase::Update, 0);
  } else {
    const auto &instructions = byPhase_[static_cast<size_t>(ir::Phase::Update)];
    for (size_t i = exchanged_; i < instructions.size(); ++i)
      timed(*instructions[i], 0);
  }
  exchanged_ = 0;
  if (offload_)
    offload_->synchronize(); // a kernel that failed fails its step
  stepNumber_ = running_;
}

void DeviceExecutor::run(ir::Phase phase, int microbatch) {
  if (const PhaseFunction generated = phases_[static_cast<size_t>(phase)]) {
    generated(*this, microbatch);
    return;
  }
  for (const ir::Instruction *in : byPhase_[static_cast<size_t>(phase)])
    timed(*in, microbatch);
}

namespace {
double threadCpuSeconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}
} // namespace

void DeviceExecutor::timed(const ir::Instruction &in, int microbatch) {
  if (fusion_.skipped[static_cast<size_t>(&in - program_.body.data())])
    return; // folded into a fused matmul (runtime/Fusion.h)
  const auto start = std::chrono::steady_clock::now();
  const bool communication = in.kind != ir::InstrKind::Kernel && in.kind != ir::InstrKind::Copy;
  const bool cpu = !communication && (measureCpu_ || slowdown_ > 1);
  const double cpuStart = cpu ? threadCpuSeconds() : 0;
  execute(in, microbatch);
  if (cpu) {
    if (slowdown_ > 1) { // a straggler: it spins until the work took `slowdown_` times its CPU time
      const double until = cpuStart + slowdown_ * (threadCpuSeconds() - cpuStart);
      while (threadCpuSeconds() < until) {
      }
    }
    kernelCpu_ += threadCpuSeconds() - cpuStart;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  (communication ? times_.communicating : times_.busy) += seconds;
  if (tracing_)
    events_.push_back({in.op, communication, std::chrono::duration<double>(start - origin_).count(), seconds});
}

void DeviceExecutor::execute(const ir::Instruction &in, int microbatch) {
  if (!offload_) {
    executeHere(in, microbatch);
    return;
  }
  changed_ = changed_ || in.phase == ir::Phase::Update;
  deviceCurrent();
  if ((in.kind == ir::InstrKind::Kernel && in.group.empty()) || in.kind == ir::InstrKind::Copy) {
    offload_->execute(in, microbatch, kernelContext(in, microbatch));
    hostStale_ = true;
    return;
  }
  if (offload_->communicates()) { // the NCCL backend
    offload_->communicate(in, microbatch, tagOf(in, microbatch), lossContext(in, microbatch));
    hostStale_ = true;
    return;
  }
  if (in.kind == ir::InstrKind::Kernel) { // the vocabulary-parallel cross-entropy
    vocabParallelCrossEntropy(in, microbatch, tagOf(in, microbatch), offload_.get());
    hostStale_ = true;
    return;
  }
  // Communication runs on the host, through the communicator: the buffers it reads (and
  // writes: a receive may add) come down, those it wrote go back up.
  auto stage = [&](int buffer, bool up) {
    char *at = address(buffer, microbatch);
    const int64_t bytes = program_.buffers[static_cast<size_t>(buffer)].bytes();
    if (up)
      offload_->upload(at - base_, at, bytes);
    else
      offload_->download(at - base_, at, bytes);
  };
  for (int b : in.inputs)
    stage(b, false);
  for (int b : in.outputs)
    stage(b, false);
  executeHere(in, microbatch);
  for (int b : in.outputs)
    stage(b, true);
}

int64_t DeviceExecutor::tagOf(const ir::Instruction &in, int microbatch) const {
  return stepTag(ir::expandedTag(in.tag, in.phase, microbatch), running_) + tagOffset_;
}

void DeviceExecutor::executeHere(const ir::Instruction &in, int microbatch) {
  const int64_t tag = tagOf(in, microbatch);
  auto view = [&](int buffer) {
    const ir::Buffer &b = program_.buffers[static_cast<size_t>(buffer)];
    return TensorView{address(buffer, microbatch), b.dtype, b.shape};
  };
  switch (in.kind) {
  case ir::InstrKind::Kernel: {
    changed_ = changed_ || in.phase == ir::Phase::Update; // an update kernel writes the state
    if (!in.group.empty()) {
      vocabParallelCrossEntropy(in, microbatch, tag, nullptr);
      return;
    }
    if (const auto &fused = fusion_.matmuls[static_cast<size_t>(&in - program_.body.data())]) {
      const FusedMatmul &f = *fused;
      if (f.scratch)
        scratch_.resize(static_cast<size_t>(f.M * f.N));
      float *out = f.scratch ? scratch_.data() : view(f.out).f32();
      kernels::sgemm(f.transA, f.transB, f.M, f.N, f.K, 1.0f, view(f.a).f32(), f.transA ? f.M : f.K, view(f.b).f32(),
                     f.transB ? f.K : f.N, 0.0f, out, f.N);
      if (f.scratch)
        std::memcpy(view(f.out).f32(), out, static_cast<size_t>(f.M * f.N) * 4);
      return;
    }
    runInArena(program_, base_, in, microbatch, kernelContext(in, microbatch));
    return;
  }
  case ir::InstrKind::Copy:
    runInArena(program_, base_, in, microbatch, KernelContext{});
    return;
  case ir::InstrKind::Send: {
    const ir::Buffer &from = program_.buffers[static_cast<size_t>(in.inputs.at(0))];
    const int element = ir::dtypeBytes(from.dtype);
    std::vector<char> message(static_cast<size_t>(in.bytes));
    int64_t at = 0;
    for (const ir::Box &box : in.slices) {
      const auto size = minus(box.hi, box.lo);
      copyBox(element, address(from.id, microbatch), from.shape, minus(box.lo, from.origin), message.data() + at, size,
              std::vector<int64_t>(size.size(), 0), size);
      at += box.numElements() * element;
    }
    comm_.send(in.peer, tag, std::move(message));
    return;
  }
  case ir::InstrKind::Recv: {
    const ir::Buffer &to = program_.buffers[static_cast<size_t>(in.outputs.at(0))];
    const int element = ir::dtypeBytes(to.dtype);
    const std::vector<char> message = comm_.recv(in.peer, tag);
    if (static_cast<int64_t>(message.size()) != in.bytes)
      throw CommError("device " + std::to_string(program_.device) + " expected " + std::to_string(in.bytes) +
                      " bytes from device " + std::to_string(in.peer) + " but got " + std::to_string(message.size()));
    int64_t at = 0;
    for (const ir::Box &box : in.slices) {
      const auto size = minus(box.hi, box.lo);
      copyBox(element, message.data() + at, size, std::vector<int64_t>(size.size(), 0), address(to.id, microbatch),
              to.shape, minus(box.lo, to.origin), size, in.op == "recv-add");
      at += box.numElements() * element;
    }
    return;
  }
  case ir::InstrKind::Collective:
    collective(in, microbatch, tag);
    return;
  }
}

// Cross-entropy over logits split by vocabulary among `in.group`: per row, the members
// exchange their maxima, then their sums of exponentials and target logits (the target is
// in one member's piece), and each computes the whole row's loss or its piece's gradient
// (the vocab_parallel_* kernels, runtime/kernels/EmbeddingAndLoss.cpp). Offloaded, the
// kernels run in the offload's memory, its per-row values in the offload's scratch
// (offloadScratch), and only those come down for the exchange and go back up: not the
// logits.
void DeviceExecutor::vocabParallelCrossEntropy(const ir::Instruction &in, int microbatch, int64_t tag,
                                               Offload *offload) {
  char *const memory = offload ? offload->memory() : base_;
  auto view = [&](int buffer) {
    const ir::Buffer &b = program_.buffers[static_cast<size_t>(buffer)];
    return TensorView{memory + (address(buffer, microbatch) - base_), b.dtype, b.shape};
  };
  const TensorView logits = view(in.inputs[0]), targets = view(in.inputs[1]);
  const int64_t rows = vocabParallelRows(program_, in);
  const KernelContext context = lossContext(in, microbatch);
  std::vector<float> peak(static_cast<size_t>(rows)), sums(static_cast<size_t>(2 * rows));
  const OffloadScratch scratch = offloadScratch(program_, rows);
  const int64_t peakAt = scratch.peaks, sumsAt = scratch.sums;
  const TensorView peaks{offload ? memory + peakAt : reinterpret_cast<char *>(peak.data()), ir::DType::F32, {rows}},
      totals{offload ? memory + sumsAt : reinterpret_cast<char *>(sums.data()), ir::DType::F32, {2 * rows}};
  // Combines one value per row with every member's, in group order.
  auto combine = [&](std::vector<float> &values, int64_t at, int round, auto fold) {
    const int64_t bytes = static_cast<int64_t>(values.size() * 4);
    if (offload)
      offload->download(at, reinterpret_cast<char *>(values.data()), bytes);
    const std::vector<float> local = values;
    Piece mine;
    mine.data = local.data();
    comm_.exchange(in.group, tag + (static_cast<int64_t>(round) << 37), mine, bytes,
                   [&](const std::vector<Piece> &pieces) {
                     bool first = true;
                     for (const Piece &piece : pieces) {
                       const float *theirs = static_cast<const float *>(piece.data);
                       for (size_t r = 0; r < values.size(); ++r)
                         values[r] = first ? theirs[r] : fold(values[r], theirs[r]);
                       first = false;
                     }
                   });
    if (offload)
      offload->upload(at, reinterpret_cast<const char *>(values.data()), bytes);
  };
  auto run = [&](const char *op, const std::vector<TensorView> &inputs, const TensorView &output) {
    if (offload)
      offload->run(op, in.attrs, inputs, std::span<const TensorView>(&output, 1), context);
    else
      runKernel(op, in.attrs, inputs, std::span<const TensorView>(&output, 1), context);
  };
  run("vocab_parallel_max", {logits}, peaks);
  combine(peak, peakAt, 0, [](float a, float b) { return std::max(a, b); });
  run("vocab_parallel_sums", {logits, targets, peaks}, totals);
  combine(sums, sumsAt, 1, [](float a, float b) { return a + b; });
  if (in.op == "cross_entropy")
    run("vocab_parallel_loss", {targets, peaks, totals}, view(in.outputs[0]));
  else
    run("vocab_parallel_grad", {logits, targets, peaks, totals, view(in.inputs[2])}, view(in.outputs[0]));
}

KernelContext DeviceExecutor::lossContext(const ir::Instruction &in, int microbatch) const {
  KernelContext context = kernelContext(in, microbatch);
  context.scored = batch_ && batch_->scored > 0 ? batch_->scored : 0;
  return context;
}

// A reduction sets each output element to the sum, over the partial sums the members hold,
// of the element with its global index (a partial sum held by several members counts once,
// from the first); a gather copies into the output whatever the members' inputs hold of it.
void DeviceExecutor::collective(const ir::Instruction &in, int microbatch, int64_t tag) {
  Piece mine;
  int64_t bytes = 0;
  if (!in.inputs.empty()) {
    const ir::Buffer &b = program_.buffers[static_cast<size_t>(in.inputs[0])];
    mine.data = address(b.id, microbatch);
    const ir::Box region = b.region();
    mine.lo = region.lo;
    mine.hi = region.hi;
    bytes = b.bytes();
  }
  const ir::Buffer *out = in.outputs.empty() ? nullptr : &program_.buffers[static_cast<size_t>(in.outputs[0])];
  const std::optional<ir::CommKind> kind = in.collective();
  const bool sum = kind && ir::isReduction(*kind);
  mine.partial = in.partial;
  comm_.exchange(in.group, tag, mine, bytes, [&](const std::vector<Piece> &pieces) {
    if (!out)
      return;
    char *target = address(out->id, microbatch);
    const ir::Box region = out->region();
    if (sum)
      std::memset(target, 0, static_cast<size_t>(out->bytes()));
    std::map<int, std::vector<ir::Box>> taken; // partial sum -> the parts already added
    for (const Piece &piece : pieces) {
      if (!piece.data)
        continue;
      const ir::Box overlap = ir::intersectBox(region, ir::Box{piece.lo, piece.hi});
      if (overlap.empty())
        continue;
      std::vector<ir::Box> parts{overlap};
      if (sum) // a replica of a partial sum already added adds nothing
        for (const ir::Box &done : taken[piece.partial])
          parts = ir::subtractBox(parts, done);
      for (const ir::Box &part : parts) {
        copyBox(ir::dtypeBytes(out->dtype), piece.data, minus(piece.hi, piece.lo), minus(part.lo, piece.lo), target,
                out->shape, minus(part.lo, region.lo), minus(part.hi, part.lo), sum);
        if (sum)
          taken[piece.partial].push_back(part);
      }
    }
  });
}

} // namespace hspmd::runtime
