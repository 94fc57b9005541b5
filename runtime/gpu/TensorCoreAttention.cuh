// TensorCoreAttention.cuh - causal attention forward on bf16 tensors with the products on tensor
// cores (warpProduct, runtime/gpu/Emulation.h), in the manner of flash attention: a block of 4
// warps takes 64 query rows of one (batch row, head), 16 a warp, and walks the keys its rows
// see in tiles of 64, each tile of K and V read from global memory once for the block. A warp's
// scores S = Q K^T and its output O += P V are 16 x 16 tiles on tensor cores (bf16 in, f32
// sums); the online softmax between them runs on the warp's lanes, two a row, in f32, and P is
// rounded to bf16 for its product, as flash attention rounds it. The contract is
// runtime/kernels/Attention.cpp's (grouped KV heads, query and key offsets, documents), for
// heads whose sizes are multiples of 16, up to 128; the rest, and the backward pass, run in
// TiledAttention.cuh's f32 kernels on widened copies.
//
// Compiled by nvcc for Kernels.cu (through KernelTable.cuh), and by the host compiler for the
// tests, which run it on CPU threads against the CPU kernel (warpProduct emulated, its
// alignment rules checked).
#pragma once

#include "runtime/gpu/ElementwiseKernels.cuh"
#include "runtime/gpu/Emulation.h"
#include "runtime/gpu/TiledAttention.cuh"

#include <cstddef>
#include <cstdint>

namespace hspmd::runtime::gpu::tensor {

inline constexpr int kWarps = 4;
inline constexpr int kRows = 16 * kWarps; // query rows of a block
inline constexpr int kKeys = 64;          // keys of a tile
inline constexpr int kThreads = 32 * kWarps;
inline constexpr int kMaxHead = 128;

/// Whether the tensor-core kernel takes heads of these sizes.
inline bool takes(int64_t D, int64_t Dv) {
  return D > 0 && Dv > 0 && D % 16 == 0 && Dv % 16 == 0 && D <= kMaxHead && Dv <= kMaxHead;
}

// Shared memory, each area 128-byte aligned: Q [kRows, D], K [kKeys, D] and V [kKeys, Dv] in bf16
// with rows padded by 8 elements (16 bytes: a warp's tile loads spread over the banks; wmma
// needs leading dimensions of 8); per warp its scores (f32), P (bf16) and O (f32), 16 rows
// each; and a float per lane for the two lanes of a row to exchange.
struct ForwardLayout {
  int ldq, ldv, lds, ldp, ldo;
  int64_t qs, ks, vs, ss, ps, os, swap, bytes;
};

HSPMD_HOST_DEVICE inline int64_t claim(int64_t &at, int64_t bytes) {
  const int64_t here = at;
  at += (bytes + 127) / 128 * 128;
  return here;
}

HSPMD_HOST_DEVICE inline ForwardLayout forwardLayout(int64_t D, int64_t Dv) {
  ForwardLayout l{};
  l.ldq = static_cast<int>(D) + 8;
  l.ldv = static_cast<int>(Dv) + 8;
  l.lds = kKeys + 4;
  l.ldp = kKeys + 8;
  l.ldo = static_cast<int>(Dv) + 4;
  int64_t at = 0;
  l.qs = claim(at, int64_t{kRows} * l.ldq * 2);
  l.ks = claim(at, int64_t{kKeys} * l.ldq * 2);
  l.vs = claim(at, int64_t{kKeys} * l.ldv * 2);
  l.ss = claim(at, int64_t{kRows} * l.lds * 4);
  l.ps = claim(at, int64_t{kRows} * l.ldp * 2);
  l.os = claim(at, int64_t{kRows} * l.ldo * 4);
  l.swap = claim(at, int64_t{kThreads} * 4);
  l.bytes = at;
  return l;
}

// Rows [0, rows) of `width` bf16 values each from a [.., S or T, heads, width] tensor into shared
// memory (`stride` a row), zeros past `count` rows.
HSPMD_DEVICE inline void loadBf16Rows(uint16_t *into, int stride, const uint16_t *from, int64_t b, int64_t length,
                                      int64_t heads, int64_t head, int64_t width, int64_t start, int count, int rows) {
  for (int64_t e = threadIdx.x; e < rows * width; e += blockDim.x) {
    const int64_t i = e / width, j = e % width;
    into[i * stride + j] = i < count ? from[((b * length + start + i) * heads + head) * width + j] : uint16_t{0};
  }
}

namespace {

HSPMD_KERNEL void attentionForward(AttentionDims n, const uint16_t *q, const uint16_t *k, const uint16_t *v,
                                   uint16_t *y) {
  HSPMD_SHARED_FLOATS(shared);
  const ForwardLayout l = forwardLayout(n.D, n.Dv);
  unsigned char *area = reinterpret_cast<unsigned char *>(shared);
  uint16_t *qs = reinterpret_cast<uint16_t *>(area + l.qs), *ks = reinterpret_cast<uint16_t *>(area + l.ks),
           *vs = reinterpret_cast<uint16_t *>(area + l.vs);
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int r = lane / 2, half = lane % 2; // this lane's row of its warp's 16, and which half of it
  const int row = warp * 16 + r;           // of the block's kRows
  float *ss = reinterpret_cast<float *>(area + l.ss) + warp * 16 * l.lds;
  uint16_t *ps = reinterpret_cast<uint16_t *>(area + l.ps) + warp * 16 * l.ldp;
  float *os = reinterpret_cast<float *>(area + l.os) + warp * 16 * l.ldo;
  float *swap = reinterpret_cast<float *>(area + l.swap) + warp * 32;
  // The other lane of this row's value of x (both lanes call it).
  auto partner = [&](float x) {
    swap[lane] = x;
    __syncwarp();
    const float other = swap[lane ^ 1];
    __syncwarp();
    return other;
  };
  const uint16_t *qTile = qs + warp * 16 * l.ldq;
  for (int64_t item = blockIdx.x; item < tiled::items(n, kRows); item += gridDim.x) {
    const tiled::Tile t = tiled::tileOf(n, item, row, kRows);
    __syncthreads(); // the last item's reads of qs are done
    loadBf16Rows(qs, l.ldq, q, t.b, n.S, n.H, t.h, n.D, t.row0, t.rows, kRows);
    for (int64_t j = half; j < n.Dv; j += 2)
      os[r * l.ldo + j] = 0.0f;
    float peak = -INFINITY, sum = 0;
    for (int64_t c0 = t.first; c0 < t.last; c0 += kKeys) {
      const int count = static_cast<int>(t.last - c0 < kKeys ? t.last - c0 : kKeys);
      __syncthreads(); // the last tile's reads of ks and vs are done (and qs written)
      loadBf16Rows(ks, l.ldq, k, t.b, n.T, n.Hk, t.kv, n.D, c0, count, kKeys);
      loadBf16Rows(vs, l.ldv, v, t.b, n.T, n.Hk, t.kv, n.Dv, c0, count, kKeys);
      __syncthreads();
      for (int c = 0; c < kKeys; c += 16) // S = Q K^T: K's rows are K^T's columns
        warpProduct<false, true>(qTile, l.ldq, ks + c * l.ldq, l.ldq, ss + c, l.lds, static_cast<int>(n.D), false);
      // This lane's half of the row's keys: scaled, masked, and their largest.
      float top = -INFINITY;
      for (int c = half * (kKeys / 2); c < (half + 1) * (kKeys / 2); ++c) {
        const int64_t key = c0 + c;
        const float score = c < count && key >= t.lo && key < t.hi ? ss[r * l.lds + c] * n.scale : -INFINITY;
        ss[r * l.lds + c] = score;
        top = fmaxf(top, score);
      }
      top = fmaxf(fmaxf(top, partner(top)), peak);
      const float shrink = top == -INFINITY || peak == -INFINITY ? 0.0f : expf(peak - top);
      float added = 0;
      for (int c = half * (kKeys / 2); c < (half + 1) * (kKeys / 2); ++c) {
        const float score = ss[r * l.lds + c];
        const float p = score == -INFINITY ? 0.0f : expf(score - top);
        added += p;
        ps[r * l.ldp + c] = bf16BitsOf(p);
      }
      sum = sum * shrink + (added + partner(added));
      if (top != -INFINITY) {
        for (int64_t j = half; j < n.Dv; j += 2)
          os[r * l.ldo + j] *= shrink;
        peak = top;
      }
      for (int j = 0; j < n.Dv; j += 16) // O += P V
        warpProduct<false, false>(ps, l.ldp, vs + j, l.ldv, os + j, l.ldo, kKeys, true);
    }
    if (row < t.rows)
      for (int64_t j = half; j < n.Dv; j += 2)
        y[((t.b * n.S + t.row0 + row) * n.H + t.h) * n.Dv + j] = bf16BitsOf(sum > 0 ? os[r * l.ldo + j] / sum : 0.0f);
  }
}

} // namespace
} // namespace hspmd::runtime::gpu::tensor
