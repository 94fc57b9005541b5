// GpuOffload.h - a device's program on a GPU (runtime/Offload.h): the program's arena as one
// GPU allocation (the memory plan's offsets), every kernel and copy through runtime/gpu/'s
// CUDA kernels on one stream, in the order the executor runs them; the executor's arena is
// the host's staging area (parameters in, each micro-batch's inputs up, its loss down, the
// state down for a checkpoint, the buffers of each send, receive and collective down and up:
// communication goes through the host's communicator until the NCCL backend, docs/gpu.md).
//
// Which GPU: under mpirun the process's local rank (OMPI_COMM_WORLD_LOCAL_RANK), else the
// device's number, modulo the GPUs the process sees; devices of one process may share one.
//
// bf16 copies of parameters: a bf16 product rounds an f32 operand to bf16 first (MatmulKernels.cuh).
// For an f32 parameter that bf16 products read (`--precision bf16`: the master weights stay f32),
// the offload keeps a bf16 copy beside it, rounded when a product first reads the parameter
// after it changed, and hands the products the copy: the same bits, rounded once a step (after
// the optimizer's update) instead of in every product of every micro-batch, as Megatron keeps bf16
// weights beside f32 master weights. What changes a parameter: a kernel or copy writing it, an
// upload or zero over it, a step's start, and the communication of an offload around this one
// (changed()). 2 bytes a parameter more on the GPU; where they cannot be allocated, the products
// round as before. HSPMD_GPU_PARAMETER_COPIES=0 turns the copies off.
//
// Fused products: the transposes and batch sums that autodiff leaves around matmuls (dX = dY W^T
// as a transpose of W, then a product; a weight's gradient as a batch of products, then their
// sum) run as one cuBLAS product with a transposed operand (runtime/Fusion.h, the CPU executor's
// analysis, with bf16 tensors too). The transposes and sums are skipped: no copy of W per
// micro-batch, no batch of d x N products in memory, and the backward products read the
// parameter's bf16 copy like the forward ones. HSPMD_FUSION=0 runs every instruction as the
// program says, as on the CPU.
#pragma once

#include "runtime/Fusion.h"
#include "runtime/Offload.h"
#include "runtime/gpu/GpuKernels.h"

#include <map>
#include <memory>

namespace hspmd::runtime::gpu {

/// What a GpuOffload says when `device`'s arena of `bytes` (its memory plan's peak) cannot be
/// allocated on GPU `gpu`, named `name`, which has `free` of `total` bytes (`why`: CUDA's error).
std::string arenaDoesNotFit(int device, int64_t bytes, int gpu, const std::string &name, int64_t free, int64_t total,
                            const std::string &why);
/// The warning a GpuOffload prints (stderr) when `leftOut` of the `wanted` bf16 copies of the
/// parameters its bf16 products read (`bytes` of them) do not fit beside its arena.
std::string copiesDoNotFit(int device, int gpu, int leftOut, int wanted, int64_t bytes);

class GpuOffload : public Offload {
public:
  /// Throws KernelError when no GPU can be used (CUDA's reason), or when the program's arena
  /// does not fit in the GPU's free memory (arenaDoesNotFit).
  explicit GpuOffload(const ir::DeviceProgram &program);
  void upload(int64_t offset, const char *from, int64_t bytes) override;
  void download(int64_t offset, char *to, int64_t bytes) override;
  void zero(int64_t offset, int64_t bytes) override;
  void execute(const ir::Instruction &in, int microbatch, const KernelContext &context) override;
  void run(const std::string &op, const ir::AttrMap &attrs, std::span<const TensorView> inputs,
           std::span<const TensorView> outputs, const KernelContext &context) override;
  void synchronize() override;
  void beginStep(const std::vector<unsigned char> &skipped) override;
  void changed(const ir::Instruction &in) override;
  std::string name() const override { return gpuName(gpu_); }
  char *memory() override { return static_cast<char *>(arena_.data()); }
  /// The stream its kernels run on, and its GPU (the NCCL backend's, runtime/gpu/GpuNccl.h).
  GpuStream &stream() { return stream_; }
  int gpu() const { return gpu_; }
  /// How many times a parameter's bf16 copy has been rounded (tests).
  int64_t parameterCopiesMade() const { return copiesMade_; }
  /// How many of the parameters bf16 products read got no copy: no room on the GPU (tests).
  int parameterCopiesLeftOut() const { return copiesLeftOut_; }
  /// The products it runs fused, with what they fold (tests).
  const Fusion &fusion() const { return fusion_; }

private:
  struct ParameterCopy {
    std::unique_ptr<DeviceBuffer> bf16; // allocated with the offload
    bool current = false;               // holds the parameter as it is now
  };
  const ir::DeviceProgram &program_;
  int gpu_; // the GPU's ordinal, made the calling thread's before each call
  GpuStream stream_;
  DeviceBuffer arena_;
  Fusion fusion_;                       // by body index: products run with their transposes and sums
  std::map<int, ParameterCopy> copies_; // by buffer: the f32 parameters bf16 products read
  std::map<int64_t, int> copiedAt_;     // their offsets in the arena, to their buffers
  int64_t copiesMade_ = 0;
  int copiesLeftOut_ = 0;
  // The step's block starts (documents, KernelContext::blockStarts), copied to the GPU at the
  // first attention of the step that reads them: attention then reads them there.
  std::unique_ptr<DeviceBuffer> starts_;
  int64_t startsBytes_ = 0;
  const int32_t *startsFrom_ = nullptr; // the host's, copied this step (null: none yet)

  char *onGpu(int buffer, int microbatch) const;
  /// The bytes [begin, end) of the arena changed: the copies of parameters there are stale.
  void wrote(int64_t begin, int64_t end);
  /// Where the outputs of `in` are (any micro-batch's copy: parameters have one).
  void wroteOutputs(const ir::Instruction &in);
  /// `view` of buffer `buffer`, an input of product `in`: its bf16 copy where it has one.
  TensorView operandOf(const ir::Instruction &in, int buffer, TensorView view);
  /// `context` with its block starts (if any) on the GPU.
  KernelContext withStartsOnGpu(const KernelContext &context);
};

/// RunOptions::offload for a run on the machine's GPUs (hspmc build --target cuda).
std::unique_ptr<Offload> gpuOffload(const OffloadSite &site);

} // namespace hspmd::runtime::gpu
