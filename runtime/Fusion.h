// Fusion.h - what the executor runs as one kernel without changing the program: the
// transposes and batch sums the autodiff leaves around matmuls (docs/runtime.md, "The CPU
// kernels").
//
//  - `transpose` of the last two dimensions feeding only a matmul becomes the matmul reading
//    the untransposed buffer (cblas_sgemm's transposed operand): dX = dY W^T reads W, and a
//    2-D operand's transpose likewise;
//  - a weight's gradient, sum over the batch of transpose(x) @ dy ([B, S, d] and [B, S, N]
//    -> [B, d, N] -> sum over dimension 0), becomes one product over all B x S rows:
//    x^T dy with x as [B S, d], writing the sum's result.
//
// A pattern is fused only when the folded instructions run in the same pass as the matmul, the
// buffers they write are read by nothing else, and nothing between them writes the bytes the
// fused matmul reads or reads and writes the bytes it now writes early (the arena reuses bytes:
// PlanMemory). The folded instructions are skipped (no time, no trace event).
//
// The CPU's sgemm takes f32 tensors only; the GPU's products (cuBLAS, runtime/gpu/GpuOffload.h)
// take bf16 ones too, and fuse with `bf16` set.
#pragma once
#include "ir/DeviceProgram.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace hspmd::runtime {

/// out[M, N] = op(a) op(b): a is [M, K] or, transposed, [K, M]; b is [K, N] or [N, K].
struct FusedMatmul {
  int a = -1, b = -1, out = -1; // buffers
  bool transA = false, transB = false;
  bool scratch = false; // out shares bytes with a or b: the product goes to scratch memory first
  int64_t M = 0, N = 0, K = 0;
};

struct Fusion {
  std::vector<bool> skipped;                       // by body index: folded into a fused matmul
  std::vector<std::optional<FusedMatmul>> matmuls; // by body index: the matmul run instead
  int fused = 0;                                   // matmuls fused
};

/// With `bf16`, products of bf16 tensors too (else f32 ones only).
Fusion fuseMatmuls(const ir::DeviceProgram &program, bool bf16 = false);

/// Every instruction run as the program says.
Fusion noFusion(const ir::DeviceProgram &program);

/// What the executors run: fuseMatmuls, or noFusion where HSPMD_FUSION=0 (to compare).
Fusion fusionFor(const ir::DeviceProgram &program, bool bf16 = false);

// The bf16 copies of parameters (runtime/gpu/GpuOffload.h). A GPU's bf16 product rounds its
// f32 operands to bf16 first; for an f32 parameter it reads, the GPU keeps a bf16 copy beside
// the arena, rounded once a step. hspmc lint weighs them too (HS206).

/// Whether body instruction `i` of `program`, a matmul, is a bf16 product: one of its tensors
/// (or, where `fusion` fused it, one of the fused product's) is bf16.
bool bf16Product(const ir::DeviceProgram &program, size_t i, const Fusion &fusion);

/// The f32 parameters (buffer ids, increasing) that get a bf16 copy: those the bf16 products
/// of `program` read, the untransposed ones where `fusion` (fusionFor(program, true)) folded a
/// transpose, one slot in the arena each, none overlapping another in the arena. A copy is
/// half the parameter's bytes.
std::vector<int> bf16ParameterCopies(const ir::DeviceProgram &program, const Fusion &fusion);

/// What the copies leave free on the GPU: they are allocated when the device's program starts,
/// before what comes after the arena (the NCCL communicators' buffers, kernels' scratch), which
/// must still find room. Assumed, not measured: NCCL's buffers are a few MiB per channel and
/// peer.
inline constexpr int64_t kParameterCopyReserve = int64_t{1} << 30;

} // namespace hspmd::runtime
