// GpuKernels.h - the CUDA kernels of the runtime (runtime/gpu/Kernels.cu): the built-in ops of
// runtime/Kernels.h with the same names, attributes and results, on fp32 tensors in GPU memory
// (bf16 ones widened to fp32 around the kernel and rounded back, as on the CPU),
// launched on a stream; matrix products through cuBLAS (bf16 ones on tensor cores). Only built where nvcc is found
// (HSPMD_HAVE_CUDA); docs/gpu.md lists the ops that have no GPU kernel yet.
#pragma once

#include "runtime/Kernels.h"

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace hspmd::runtime::gpu {

/// Whether this process can use a GPU; if not, why (no driver, no device), as CUDA says it.
bool gpuAvailable(std::string *why);

/// The GPUs this process sees; 0 where it cannot use any.
int gpuCount();
/// Makes GPU `ordinal` the calling thread's (cudaSetDevice): what its next allocations,
/// streams and kernels use. Throws KernelError with CUDA's message.
void useGpu(int ordinal);

/// The name CUDA gives GPU `device` ("NVIDIA H100 80GB HBM3"); runtime/gpu/DeviceTypes.h maps
/// it to a cluster file's device type.
std::string gpuName(int device = 0);

/// The calling thread's GPU's free and total memory, in bytes (cudaMemGetInfo).
std::pair<int64_t, int64_t> gpuMemory();

/// Loads cuBLAS, which the first GpuStream does (it is not linked: its initializers would cost
/// every process 60 ms as it starts); needs no GPU. False, with why, where it cannot be loaded.
bool loadBlas(std::string *why);

/// A CUDA stream with its cuBLAS handle: what kernels of one device run on, in order.
class GpuStream {
public:
  GpuStream();
  ~GpuStream();
  GpuStream(const GpuStream &) = delete;
  GpuStream &operator=(const GpuStream &) = delete;
  /// Waits until everything launched on the stream has finished; throws KernelError with
  /// CUDA's message when something failed, or with the CPU kernel's message when a kernel
  /// recorded a bad input in the fault word (which it then clears).
  void synchronize();
  void *stream() const { return stream_; }
  void *blas() const { return blas_; }
  /// A word of GPU memory, zero until a kernel finds its input bad (KernelContext::fault):
  /// runKernel's kernels check there, so that no kernel waits for the host.
  int64_t *fault() const { return fault_; }

private:
  void *stream_ = nullptr;   // cudaStream_t
  void *blas_ = nullptr;     // cublasHandle_t
  int64_t *fault_ = nullptr; // device memory
};

/// Device memory: one allocation, freed with the object.
class DeviceBuffer {
public:
  explicit DeviceBuffer(int64_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  void *data() const { return data_; }
  void upload(const void *host, int64_t bytes, int64_t offset = 0);
  void download(void *host, int64_t bytes, int64_t offset = 0) const;

private:
  void *data_ = nullptr;
};

/// Copies (with `add`, adds: f32, or bf16 when `elementBytes` is 2) the box of extent `size` at `srcLo` in `src` (of
/// shape `srcShape`) to `dstLo` in `dst`, on the stream: runtime::copyBox's contract in GPU memory.
void copyBox(int elementBytes, const void *src, const std::vector<int64_t> &srcShape, const std::vector<int64_t> &srcLo,
             void *dst, const std::vector<int64_t> &dstShape, const std::vector<int64_t> &dstLo,
             const std::vector<int64_t> &size, bool add, GpuStream &stream);
/// Sets `bytes` of GPU memory to zero, on the stream.
void zeroBytes(void *dst, int64_t bytes, GpuStream &stream);
/// Copies host memory to GPU memory (and back) on the stream, waiting until it is done.
void copyToGpu(void *dst, const void *src, int64_t bytes, GpuStream &stream);
void copyToHost(void *dst, const void *src, int64_t bytes, GpuStream &stream);

/// Rounds `n` f32 values to bf16 (the bits of runtime/Bf16.h's rounding) into `out`, on the
/// stream: what a bf16 product does to an f32 operand, done once for a parameter's bf16 copy.
void roundToBf16(const float *in, void *out, int64_t n, GpuStream &stream);

/// out[M, N] = op(a) op(b) as one product: a matmul with the transposes and the batch sum a
/// program leaves around it folded in (runtime/Fusion.h's FusedMatmul, in GPU memory). a is
/// [M, K] or, with transA, [K, M] row-major; b is [K, N] or, with transB, [N, K]. A bf16 product
/// with `bf16` (f32 operands rounded to bf16 first, as runKernel's matmul), the result in out's
/// type; with `scratch` (out shares bytes with an operand) the product goes through scratch.
struct FusedProduct {
  TensorView a, b, out;
  bool transA = false, transB = false;
  int64_t M = 0, N = 0, K = 0;
  bool bf16 = false, scratch = false;
};
void fusedMatmul(const FusedProduct &product, GpuStream &stream);

/// The op names runKernel has a GPU kernel for.
std::vector<std::string> gpuKernelNames();

/// Runs `op` on `stream` on tensors in GPU memory (TensorView::data is a device pointer); the
/// same contract as runtime::runKernel. Throws KernelError for an op without a GPU kernel.
void runKernel(const std::string &op, const ir::AttrMap &attrs, std::span<const TensorView> inputs,
               std::span<const TensorView> outputs, const KernelContext &context, GpuStream &stream);

} // namespace hspmd::runtime::gpu
