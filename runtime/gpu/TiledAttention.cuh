// TiledAttention.cuh - causal attention on the GPU in tiles, in the manner of flash attention:
// a block takes 32 query rows of one (batch row, head) and walks the keys they see in tiles of
// 32, each tile of K and V read from global memory once for all 32 rows (the row kernels of
// AttentionKernels.cuh read them once per row), with an online softmax (no [S, T] matrix in
// memory). The contract is runtime/kernels/Attention.cpp's: grouped KV heads, query and key
// offsets (a context-parallel piece), documents (each query sees its own document's keys).
//
// Forward: a thread of the block holds a quarter of one row (kLanes threads a row): its scores
// for every kLanes-th key of a tile, then the row's maximum, sum and a quarter of its output.
// Backward: three walks over the keys (each row's maximum and sum; delta = rowsum(P dP); then
// dS = P (dP - delta) scale), dQ held by the row's threads, dK and dV of a tile summed over the
// block's 32 rows and added atomically (other blocks' rows and heads of the same KV head add
// to them too). Not yet on tensor cores: fp32 products from shared memory.
//
// Compiled by nvcc for Kernels.cu (through KernelTable.cuh), and by the host compiler for
// tests/unit/runtime/GpuEmulatedKernelsTest.cpp, which runs these kernels on CPU threads
// (runtime/gpu/Emulation.h) against the CPU kernel on any machine.
#pragma once

#include "runtime/gpu/Emulation.h"

#include <cstddef>
#include <cstdint>

namespace hspmd::runtime::gpu {

struct AttentionDims {
  int64_t B, S, T, H, Hk, D, Dv, group; // q [B, S, H, D], k [B, T, Hk, D], v [B, T, Hk, Dv]
  float scale;
  bool causal;
  int64_t queryOffset, keyOffset, seq;
  const int32_t *starts; // [B, seq] block starts of the kernel's rows, or null (no documents)
};

// The keys [lo, hi) query s of batch row b sees.
HSPMD_DEVICE inline void visibleKeys(const AttentionDims &n, int64_t b, int64_t s, int64_t &lo, int64_t &hi) {
  lo = 0;
  hi = n.T;
  if (n.starts) {
    const int64_t start = n.starts[b * n.seq + n.queryOffset + s] - n.keyOffset;
    lo = start < 0 ? 0 : start > n.T ? n.T : start;
  }
  if (n.causal) {
    const int64_t end = n.queryOffset + s - n.keyOffset + 1;
    hi = end < 0 ? 0 : end > n.T ? n.T : end;
  }
}

namespace tiled {

inline constexpr int kRows = 32;                   // query rows of a block
inline constexpr int kKeys = 32;                   // keys of a tile
inline constexpr int kLanes = 4;                   // threads of a row
inline constexpr int kThreads = kRows * kLanes;    // of a block
inline constexpr int kMaxHead = 128;               // the largest D and Dv the tiled kernels take
inline constexpr int kPerLane = kMaxHead / kLanes; // values of a row's output (or dQ) a thread holds
inline constexpr int kPad = kKeys + 1;             // a row of scores in shared memory

/// Whether the tiled kernels take heads of these sizes (else the row kernels run).
inline bool takes(int64_t D, int64_t Dv) {
  return D > 0 && Dv > 0 && D <= kMaxHead && Dv <= kMaxHead;
}

// Shared memory: Q and K rows padded to D + 1 floats, V and dY rows to Dv + 1 (no two rows of
// a warp's reads in one bank), scores kPad a row.
inline size_t forwardSharedBytes(int64_t D, int64_t Dv) {
  return static_cast<size_t>(kRows * (D + 1) + kKeys * (D + 1) + kKeys * (Dv + 1) + kRows * kPad) * sizeof(float);
}
inline size_t backwardSharedBytes(int64_t D, int64_t Dv) {
  return static_cast<size_t>(kRows * (D + 1) + kRows * (Dv + 1) + kKeys * (D + 1) + kKeys * (Dv + 1) +
                             2 * kRows * kPad) *
         sizeof(float);
}

/// Blocks: one per (batch row, head, `perBlock` query rows).
HSPMD_HOST_DEVICE inline int64_t items(const AttentionDims &n, int perBlock = kRows) {
  return n.B * n.H * ((n.S + perBlock - 1) / perBlock);
}

HSPMD_DEVICE inline float dot(const float *a, const float *b, int64_t count) {
  float sum = 0;
  for (int64_t j = 0; j < count; ++j)
    sum += a[j] * b[j];
  return sum;
}

// Where a block's item is, and the keys its rows see.
struct Tile {
  int64_t b, h, kv, row0;
  int rows;            // of the block's rows that exist (the last tile of a sequence may be short)
  int64_t first, last; // the keys any of them sees: [first, last), empty where none sees any
  int64_t lo, hi;      // the keys this thread's row sees
};

HSPMD_DEVICE inline Tile tileOf(const AttentionDims &n, int64_t item, int row, int perBlock = kRows) {
  const int64_t tiles = (n.S + perBlock - 1) / perBlock;
  Tile t;
  t.b = item / (n.H * tiles);
  t.h = item / tiles % n.H;
  t.kv = t.h / n.group;
  t.row0 = item % tiles * perBlock;
  t.rows = static_cast<int>(n.S - t.row0 < perBlock ? n.S - t.row0 : perBlock);
  t.first = n.T;
  t.last = 0;
  t.lo = t.hi = 0;
  for (int i = 0; i < t.rows; ++i) {
    int64_t lo, hi;
    visibleKeys(n, t.b, t.row0 + i, lo, hi);
    if (lo < hi) {
      t.first = lo < t.first ? lo : t.first;
      t.last = hi > t.last ? hi : t.last;
    }
    if (i == row) {
      t.lo = lo;
      t.hi = hi;
    }
  }
  return t;
}

// Rows [0, kRows) of `width` values each from a [.., S or T, heads, width] tensor into shared
// memory (`stride` floats a row), zeros past `count` rows.
HSPMD_DEVICE inline void loadRows(float *into, int64_t stride, const float *from, int64_t b, int64_t length,
                                  int64_t heads, int64_t head, int64_t width, int64_t start, int count) {
  for (int64_t e = threadIdx.x; e < kRows * width; e += blockDim.x) {
    const int64_t i = e / width, j = e % width;
    into[i * stride + j] = i < count ? from[((b * length + start + i) * heads + head) * width + j] : 0.0f;
  }
}

// This thread's scores of a tile of keys (every kLanes-th, from its lane), -INFINITY where its
// row does not see the key.
HSPMD_DEVICE inline void tileScores(const AttentionDims &n, const Tile &t, const float *qs, const float *ks, float *ps,
                                    int row, int lane, int64_t c0, int count) {
  for (int c = lane; c < kKeys; c += kLanes) {
    const int64_t key = c0 + c;
    ps[row * kPad + c] = c < count && key >= t.lo && key < t.hi
                             ? dot(qs + row * (n.D + 1), ks + c * (n.D + 1), n.D) * n.scale
                             : -INFINITY;
  }
}

// The kernels, one copy per file that includes this (each binary has one or two).
namespace {

HSPMD_KERNEL void attentionForward(AttentionDims n, const float *q, const float *k, const float *v, float *y) {
  HSPMD_SHARED_FLOATS(shared);
  float *qs = shared, *ks = qs + kRows * (n.D + 1), *vs = ks + kKeys * (n.D + 1), *ps = vs + kKeys * (n.Dv + 1);
  const int row = static_cast<int>(threadIdx.x) / kLanes, lane = static_cast<int>(threadIdx.x) % kLanes;
  for (int64_t item = blockIdx.x; item < items(n); item += gridDim.x) {
    const Tile t = tileOf(n, item, row);
    __syncthreads(); // the last item's reads of qs are done
    loadRows(qs, n.D + 1, q, t.b, n.S, n.H, t.h, n.D, t.row0, t.rows);
    float acc[kPerLane];
    for (int i = 0; i < kPerLane; ++i)
      acc[i] = 0;
    float peak = -INFINITY, sum = 0;
    for (int64_t c0 = t.first; c0 < t.last; c0 += kKeys) {
      const int count = static_cast<int>(t.last - c0 < kKeys ? t.last - c0 : kKeys);
      __syncthreads(); // the last tile's reads of ks, vs and ps are done
      loadRows(ks, n.D + 1, k, t.b, n.T, n.Hk, t.kv, n.D, c0, count);
      loadRows(vs, n.Dv + 1, v, t.b, n.T, n.Hk, t.kv, n.Dv, c0, count);
      __syncthreads();
      tileScores(n, t, qs, ks, ps, row, lane, c0, count);
      __syncthreads();
      float top = peak;
      for (int c = 0; c < kKeys; ++c)
        top = fmaxf(top, ps[row * kPad + c]);
      if (top == -INFINITY)
        continue; // the row sees none of these keys, nor any before
      const float shrink = peak == -INFINITY ? 0.0f : expf(peak - top);
      sum *= shrink;
      for (int i = 0; i < kPerLane; ++i)
        acc[i] *= shrink;
      for (int c = 0; c < kKeys; ++c) {
        const float score = ps[row * kPad + c];
        if (score == -INFINITY)
          continue;
        const float p = expf(score - top);
        sum += p;
        for (int i = 0; i < kPerLane; ++i)
          if (const int64_t j = lane + i * kLanes; j < n.Dv)
            acc[i] += p * vs[c * (n.Dv + 1) + j];
      }
      peak = top;
    }
    if (row < t.rows)
      for (int i = 0; i < kPerLane; ++i)
        if (const int64_t j = lane + i * kLanes; j < n.Dv)
          y[((t.b * n.S + t.row0 + row) * n.H + t.h) * n.Dv + j] = sum > 0 ? acc[i] / sum : 0.0f;
  }
}

// dS = P (dP - delta) scale with dP = dY v^T and delta = rowsum(P dP); dQ = dS k, dK += dS^T q,
// dV += P^T dY. dK and dV must be zero before (other blocks add to them).
HSPMD_KERNEL void attentionBackward(AttentionDims n, const float *q, const float *k, const float *v, const float *dy,
                                    float *dq, float *dk, float *dv) {
  HSPMD_SHARED_FLOATS(shared);
  float *qs = shared, *dys = qs + kRows * (n.D + 1), *ks = dys + kRows * (n.Dv + 1), *vs = ks + kKeys * (n.D + 1),
        *ps = vs + kKeys * (n.Dv + 1), *ds = ps + kRows * kPad;
  const int row = static_cast<int>(threadIdx.x) / kLanes, lane = static_cast<int>(threadIdx.x) % kLanes;
  for (int64_t item = blockIdx.x; item < items(n); item += gridDim.x) {
    const Tile t = tileOf(n, item, row);
    __syncthreads(); // the last item's reads of qs and dys are done
    loadRows(qs, n.D + 1, q, t.b, n.S, n.H, t.h, n.D, t.row0, t.rows);
    loadRows(dys, n.Dv + 1, dy, t.b, n.S, n.H, t.h, n.Dv, t.row0, t.rows);
    // The keys of a tile into shared memory (V too, with `values`), and the row's scores of them.
    auto tile = [&](int64_t c0, int count, bool values) {
      __syncthreads(); // the last tile's reads are done
      loadRows(ks, n.D + 1, k, t.b, n.T, n.Hk, t.kv, n.D, c0, count);
      if (values)
        loadRows(vs, n.Dv + 1, v, t.b, n.T, n.Hk, t.kv, n.Dv, c0, count);
      __syncthreads();
      tileScores(n, t, qs, ks, ps, row, lane, c0, count);
    };
    // Each row's maximum score and softmax sum.
    float peak = -INFINITY, sum = 0;
    for (int64_t c0 = t.first; c0 < t.last; c0 += kKeys) {
      tile(c0, static_cast<int>(t.last - c0 < kKeys ? t.last - c0 : kKeys), false);
      __syncthreads();
      float top = peak;
      for (int c = 0; c < kKeys; ++c)
        top = fmaxf(top, ps[row * kPad + c]);
      if (top == -INFINITY)
        continue;
      float added = 0;
      for (int c = 0; c < kKeys; ++c)
        if (const float score = ps[row * kPad + c]; score != -INFINITY)
          added += expf(score - top);
      sum = sum * (peak == -INFINITY ? 0.0f : expf(peak - top)) + added;
      peak = top;
    }
    const float inverse = sum > 0 ? 1.0f / sum : 0.0f;
    // This thread's P and dP of a tile's key c (its scores in ps).
    auto probability = [&](int c) {
      const float score = ps[row * kPad + c];
      return score == -INFINITY ? 0.0f : expf(score - peak) * inverse;
    };
    // delta: each lane's keys' P dP into ds, the row's sum of them read by each of its lanes.
    float delta = 0;
    for (int64_t c0 = t.first; c0 < t.last; c0 += kKeys) {
      tile(c0, static_cast<int>(t.last - c0 < kKeys ? t.last - c0 : kKeys), true);
      for (int c = lane; c < kKeys; c += kLanes) {
        const float p = probability(c);
        ds[row * kPad + c] = p == 0.0f ? 0.0f : p * dot(dys + row * (n.Dv + 1), vs + c * (n.Dv + 1), n.Dv);
      }
      __syncthreads();
      for (int c = 0; c < kKeys; ++c)
        delta += ds[row * kPad + c];
    }
    float grad[kPerLane];
    for (int i = 0; i < kPerLane; ++i)
      grad[i] = 0;
    for (int64_t c0 = t.first; c0 < t.last; c0 += kKeys) {
      const int count = static_cast<int>(t.last - c0 < kKeys ? t.last - c0 : kKeys);
      tile(c0, count, true);
      for (int c = lane; c < kKeys; c += kLanes) { // this thread's scores become its P
        const float p = probability(c);
        const float dp = p == 0.0f ? 0.0f : dot(dys + row * (n.Dv + 1), vs + c * (n.Dv + 1), n.Dv);
        ds[row * kPad + c] = p * (dp - delta) * n.scale;
        ps[row * kPad + c] = p;
      }
      __syncthreads(); // every row's P and dS
      for (int c = 0; c < kKeys; ++c) {
        const float d = ds[row * kPad + c];
        for (int i = 0; i < kPerLane; ++i)
          if (const int64_t j = lane + i * kLanes; j < n.D)
            grad[i] += d * ks[c * (n.D + 1) + j];
      }
      for (int64_t e = threadIdx.x; e < count * n.D; e += blockDim.x) {
        const int64_t c = e / n.D, j = e % n.D;
        float a = 0;
        for (int i = 0; i < kRows; ++i)
          a += ds[i * kPad + c] * qs[i * (n.D + 1) + j];
        atomicAdd(dk + ((t.b * n.T + c0 + c) * n.Hk + t.kv) * n.D + j, a);
      }
      for (int64_t e = threadIdx.x; e < count * n.Dv; e += blockDim.x) {
        const int64_t c = e / n.Dv, j = e % n.Dv;
        float a = 0;
        for (int i = 0; i < kRows; ++i)
          a += ps[i * kPad + c] * dys[i * (n.Dv + 1) + j];
        atomicAdd(dv + ((t.b * n.T + c0 + c) * n.Hk + t.kv) * n.Dv + j, a);
      }
    }
    if (row < t.rows)
      for (int i = 0; i < kPerLane; ++i)
        if (const int64_t j = lane + i * kLanes; j < n.D)
          dq[((t.b * n.S + t.row0 + row) * n.H + t.h) * n.D + j] = grad[i];
  }
}

} // namespace
} // namespace tiled
} // namespace hspmd::runtime::gpu
