// Kernels.h - the CPU kernels of the runtime: every built-in op, forward and backward, on
// fp32 host tensors with the local shapes of a DeviceProgram, plus the optimizer steps.
//
// A kernel reads its inputs and writes its outputs; attributes come from the program
// (`query_offset`, `vocab_offset`, `tokens`, ... see docs/cli.md). Kernels are grouped by
// family in runtime/kernels/; runKernel() dispatches by name.
#pragma once

#include "ir/Ops.h"
#include "ir/Type.h"

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace hspmd::runtime {

/// A tensor in memory the caller owns: dense, row-major.
struct TensorView {
  void *data = nullptr;
  ir::DType dtype = ir::DType::F32;
  std::vector<int64_t> shape;

  int64_t numel() const;
  float *f32() const { return static_cast<float *>(data); }
  const int32_t *i32() const { return static_cast<const int32_t *>(data); }
};

/// A kernel called with what it cannot handle (unknown name, shapes that do not fit). The
/// compiler's verifiers make this an internal error for compiled programs.
struct KernelError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct KernelContext {
  int64_t step = 1; // the optimizer step, from 1 (AdamW's bias correction)
  /// Documents (runtime/Documents.h): the batch's block starts, [rows, seq] over the global
  /// batch, and the global row of the kernel's local row 0; attention masks each query to
  /// the keys of its own document. Null: causal only.
  const int32_t *blockStarts = nullptr;
  int64_t seq = 0, row = 0;
  int64_t batchRows = 0; // blockStarts holds batchRows x seq
  /// GPU only: blockStarts points to the GPU's copy (runtime/gpu/GpuOffload.h), not the host's.
  bool blockStartsOnGpu = false;
  /// Scored targets of the whole batch: the loss's divisor in place of the `tokens`
  /// attribute (0: that attribute). A target < 0 is never scored.
  int64_t scored = 0;
  /// GPU only: the stream's fault word (runtime/gpu/GpuKernels.h, GpuStream::fault), where a
  /// kernel records a bad input (a target outside the vocabulary) for the stream's next
  /// synchronize to report, instead of the host waiting on the kernel. Null: the kernel waits
  /// and checks itself.
  int64_t *fault = nullptr;
};

void runKernel(const std::string &op, const ir::AttrMap &attrs, std::span<const TensorView> inputs,
               std::span<const TensorView> outputs, const KernelContext &context = {});

/// The kernel names runKernel knows.
std::vector<std::string> kernelNames();

namespace kernels {
// One function per family (runtime/kernels/*.cpp); each returns false for names it does not own.
using In = std::span<const TensorView>;
bool elementwise(const std::string &op, const ir::AttrMap &attrs, In in, In out);
bool matmul(const std::string &op, const ir::AttrMap &attrs, In in, In out);
bool layout(const std::string &op, const ir::AttrMap &attrs, In in, In out);
bool norms(const std::string &op, const ir::AttrMap &attrs, In in, In out);
bool attention(const std::string &op, const ir::AttrMap &attrs, In in, In out, const KernelContext &context);
bool embeddingAndLoss(const std::string &op, const ir::AttrMap &attrs, In in, In out, const KernelContext &context);
bool optimizer(const std::string &op, const ir::AttrMap &attrs, In in, In out, const KernelContext &context);

/// The parts of a tensor along dimension `dim`, as unbind and split make them and concat
/// joins them: each part's view (unbind's with the removed dimension back, as size 1) and
/// where it starts along `dim`, in order. Given split parts [2, 3, 2] and [2, 3, 3] along 2:
/// offsets 0 and 2. The CPU and GPU layout kernels both walk this.
struct PartAlong {
  TensorView view;
  int64_t offset = 0;
};
std::vector<PartAlong> partsAlong(bool unbind, size_t dim, In parts);
/// Row-major strides of a shape.
std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape);
/// Strides of `shape` broadcast (numpy rules, aligned at the right) to `to`: 0 where it repeats.
std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &shape, const std::vector<int64_t> &to);
void expect(bool condition, const std::string &op, const std::string &what);
/// Threads a kernel may use (at least 1; runtime/kernels/Parallel.h): OpenMP's default
/// (OMP_NUM_THREADS, else the machine's cores) until set.
int kernelThreads();
void setKernelThreads(int threads);
/// The process's threads: OMP_NUM_THREADS where set, else the machine's cores.
int processThreads();
/// OpenBLAS to one thread, and its own threads stopped: the kernels split the matmuls
/// themselves (runtime/kernels/Parallel.h). OpenBLAS starts its threads when it loads, and they
/// spin (sched_yield) for about a tenth of a second, in every process that links it: on 2
/// cores, a fifth of the CPU of `hspmc lint` of a 48-device plan. hspmc calls it first.
void quietBlas();
/// C = alpha op(A) op(B) + beta C, row-major (cblas_sgemm's arguments), split over the kernel
/// threads (runtime/kernels/Parallel.h).
void sgemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float *a, int64_t lda,
           const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
} // namespace kernels

} // namespace hspmd::runtime
