// TensorCoreAttention.cuh - causal attention on bf16 tensors with the products on tensor cores
// (warpProduct, runtime/gpu/Emulation.h), in the manner of flash attention. The contract is
// runtime/kernels/Attention.cpp's (grouped KV heads, query and key offsets, documents), for
// heads whose sizes are multiples of 16, up to 128; the rest run in TiledAttention.cuh's f32
// kernels on widened copies.
//
// Forward: a block of 4 warps takes 64 query rows of one (batch row, head), 16 a warp, and walks
// the keys its rows see in tiles of 64, each tile of K and V read from global memory once for
// the block. A warp's scores S = Q K^T and its output O += P V are 16 x 16 tiles on tensor cores
// (bf16 in, f32 sums); the online softmax between them runs on the warp's lanes, two a row, in
// f32, and P is rounded to bf16 for its product, as flash attention rounds it.
//
// Backward, in two kernels that each write their gradients once (no atomic adds, so they can be
// bf16): the rows kernel walks the keys as the forward pass does, for each row's log-sum-exp
// and delta = dY . Y, which it keeps in f32 scratch, then again for dQ += dS K with dP = dY V^T
// and dS = P (dP - delta) scale. The keys kernel takes 64 keys of one (batch row, KV head), 16 a
// warp, and walks the query rows that see them, of every head of the group, for dV += P^T dY
// and dK += dS^T Q. dS is rounded to bf16 for its products, as P is.
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
#include <cstring>

namespace hspmd::runtime::gpu::tensor {

inline constexpr int kWarps = 4;
inline constexpr int kRows = 16 * kWarps; // query rows of a block
inline constexpr int kKeys = 64;          // keys of a tile (and of a block of the keys kernel)
inline constexpr int kThreads = 32 * kWarps;
inline constexpr int kMaxHead = 128;

/// Whether the tensor-core kernels take heads of these sizes.
inline bool takes(int64_t D, int64_t Dv) {
  return D > 0 && Dv > 0 && D % 16 == 0 && Dv % 16 == 0 && D <= kMaxHead && Dv <= kMaxHead;
}

HSPMD_HOST_DEVICE inline int64_t claim(int64_t &at, int64_t bytes) {
  const int64_t here = at;
  at += (bytes + 127) / 128 * 128;
  return here;
}

// Shared memory of the kernels that walk keys for 64 query rows (the forward pass, the rows
// kernel), each area 128-byte aligned: Q [kRows, D] and a tile of K [kKeys, D] and V [kKeys,
// Dv] in bf16 with rows padded by 8 elements (16 bytes: a warp's tile loads spread over the
// banks; wmma needs leading dimensions of 8); per warp its scores (f32), P or dS (bf16) and O or
// dQ (f32), 16 rows each; a float per lane for the two lanes of a row to exchange; and for the
// backward pass dY [kRows, Dv] (bf16) and per warp dP (f32).
struct RowsLayout {
  int ldq, ldv, lds, ldp, ldo;
  int64_t qs, ks, vs, ss, ps, os, swap, dys, dps, bytes;
};

HSPMD_HOST_DEVICE inline RowsLayout rowsLayout(int64_t D, int64_t Dv, bool backward) {
  RowsLayout l{};
  l.ldq = static_cast<int>(D) + 8;
  l.ldv = static_cast<int>(Dv) + 8;
  l.lds = kKeys + 4;
  l.ldp = kKeys + 8;
  l.ldo = static_cast<int>(D > Dv ? D : Dv) + 4;
  int64_t at = 0;
  l.qs = claim(at, int64_t{kRows} * l.ldq * 2);
  l.ks = claim(at, int64_t{kKeys} * l.ldq * 2);
  l.vs = claim(at, int64_t{kKeys} * l.ldv * 2);
  l.ss = claim(at, int64_t{kRows} * l.lds * 4);
  l.ps = claim(at, int64_t{kRows} * l.ldp * 2);
  l.os = claim(at, int64_t{kRows} * l.ldo * 4);
  l.swap = claim(at, int64_t{kThreads} * 4);
  if (backward) {
    l.dys = claim(at, int64_t{kRows} * l.ldv * 2);
    l.dps = claim(at, int64_t{kRows} * l.lds * 4);
  }
  l.bytes = at;
  return l;
}

// Shared memory of the keys kernel: its tile of K and V (bf16), a tile of 64 query rows' Q and dY
// (bf16) with their log-sum-exp, delta and visible keys; per warp P^T, then dS^T (bf16), S^T, then
// P^T (f32), dP^T (f32), and its dK and dV (f32).
struct KeysLayout {
  int ldq, ldv, lds, ldp, ldk, ldo;
  int64_t ks, vs, qs, dys, ss, ps, dps, dks, dvs, rows, bounds, bytes;
};

HSPMD_HOST_DEVICE inline KeysLayout keysLayout(int64_t D, int64_t Dv) {
  KeysLayout l{};
  l.ldq = static_cast<int>(D) + 8;
  l.ldv = static_cast<int>(Dv) + 8;
  l.lds = kRows + 4;
  l.ldp = kRows + 8;
  l.ldk = static_cast<int>(D) + 4;
  l.ldo = static_cast<int>(Dv) + 4;
  int64_t at = 0;
  l.ks = claim(at, int64_t{kKeys} * l.ldq * 2);
  l.vs = claim(at, int64_t{kKeys} * l.ldv * 2);
  l.qs = claim(at, int64_t{kRows} * l.ldq * 2);
  l.dys = claim(at, int64_t{kRows} * l.ldv * 2);
  l.ss = claim(at, int64_t{kKeys} * l.lds * 4);
  l.ps = claim(at, int64_t{kKeys} * l.ldp * 2);
  l.dps = claim(at, int64_t{kKeys} * l.lds * 4);
  l.dks = claim(at, int64_t{kKeys} * l.ldk * 4);
  l.dvs = claim(at, int64_t{kKeys} * l.ldo * 4);
  l.rows = claim(at, int64_t{kRows} * 2 * 4);
  l.bounds = claim(at, int64_t{kRows} * 2 * 8);
  l.bytes = at;
  return l;
}

/// Shared memory the forward pass, and the larger of the backward pass's two kernels, ask for.
inline size_t forwardSharedBytes(int64_t D, int64_t Dv) {
  return static_cast<size_t>(rowsLayout(D, Dv, false).bytes);
}
inline size_t backwardSharedBytes(int64_t D, int64_t Dv) {
  const int64_t rows = rowsLayout(D, Dv, true).bytes, keys = keysLayout(D, Dv).bytes;
  return static_cast<size_t>(rows > keys ? rows : keys);
}

/// Blocks of the keys kernel: one per (batch row, KV head, 64 keys).
HSPMD_HOST_DEVICE inline int64_t keyItems(const AttentionDims &n) {
  return n.B * n.Hk * ((n.T + kKeys - 1) / kKeys);
}

// 16 bytes (8 bf16 values) from `from` to `to`, both 16-byte aligned: one vector load and one
// store on the GPU (the emulation checks the alignment).
HSPMD_DEVICE inline void copy16(uint16_t *to, const uint16_t *from) {
#ifdef __CUDACC__
  *reinterpret_cast<uint4 *>(to) = *reinterpret_cast<const uint4 *>(from);
#else
  emulation::require(reinterpret_cast<uintptr_t>(to) % 16 == 0 && reinterpret_cast<uintptr_t>(from) % 16 == 0,
                     "copy16: pointers must be 16-byte aligned");
  std::memcpy(to, from, 16);
#endif
}

// Rows [0, rows) of `width` bf16 values each from a [.., S or T, heads, width] tensor into shared
// memory (`stride` a row, a multiple of 8; `into` 16-byte aligned), zeros past `count` rows. 8
// values a thread at a time where every row starts 16-byte aligned (`from` aligned, `width` a
// multiple of 8), else one.
HSPMD_DEVICE inline void loadBf16Rows(uint16_t *into, int stride, const uint16_t *from, int64_t b, int64_t length,
                                      int64_t heads, int64_t head, int64_t width, int64_t start, int count, int rows) {
  if (width % 8 == 0 && reinterpret_cast<uintptr_t>(from) % 16 == 0) {
    const int64_t chunks = width / 8;
    for (int64_t e = threadIdx.x; e < rows * chunks; e += blockDim.x) {
      const int64_t i = e / chunks, j = e % chunks * 8;
      uint16_t *to = into + i * stride + j;
      if (i < count)
        copy16(to, from + ((b * length + start + i) * heads + head) * width + j);
      else
        for (int z = 0; z < 8; ++z)
          to[z] = 0;
    }
    return;
  }
  for (int64_t e = threadIdx.x; e < rows * width; e += blockDim.x) {
    const int64_t i = e / width, j = e % width;
    into[i * stride + j] = i < count ? from[((b * length + start + i) * heads + head) * width + j] : uint16_t{0};
  }
}

HSPMD_DEVICE inline float bf16Float(uint16_t bits) {
  return floatOfBits(static_cast<uint32_t>(bits) << 16);
}

// A lane's place: its warp, its row of the warp's 16 (two lanes a row), and which half of the
// row (of its keys, or of its values) it takes.
struct Lane {
  int warp, lane, r, half;
  HSPMD_DEVICE Lane()
      : warp(static_cast<int>(threadIdx.x) / 32), lane(static_cast<int>(threadIdx.x) % 32), r(lane / 2),
        half(lane % 2) {}
};

// The other lane of this row's value of x (both lanes call it; `swap` is the warp's 32 floats).
HSPMD_DEVICE inline float partner(const Lane &me, float *swap, float x) {
  swap[me.lane] = x;
  __syncwarp();
  const float other = swap[me.lane ^ 1];
  __syncwarp();
  return other;
}

// The forward walk of a block's rows (Q in qs) over the keys they see: each lane's row's
// largest score `peak` and softmax sum, and the warp's O unnormalised (os: 16 rows, Dv values).
HSPMD_DEVICE inline void walkForward(const AttentionDims &n, const tiled::Tile &t, const RowsLayout &l,
                                     unsigned char *area, const Lane &me, const uint16_t *k, const uint16_t *v,
                                     float &peak, float &sum) {
  const uint16_t *qTile = reinterpret_cast<uint16_t *>(area + l.qs) + me.warp * 16 * l.ldq;
  uint16_t *ks = reinterpret_cast<uint16_t *>(area + l.ks), *vs = reinterpret_cast<uint16_t *>(area + l.vs);
  float *ss = reinterpret_cast<float *>(area + l.ss) + me.warp * 16 * l.lds;
  uint16_t *ps = reinterpret_cast<uint16_t *>(area + l.ps) + me.warp * 16 * l.ldp;
  float *os = reinterpret_cast<float *>(area + l.os) + me.warp * 16 * l.ldo;
  float *swap = reinterpret_cast<float *>(area + l.swap) + me.warp * 32;
  const int r = me.r, half = me.half;
  for (int64_t j = half; j < n.Dv; j += 2)
    os[r * l.ldo + j] = 0.0f;
  peak = -INFINITY;
  sum = 0;
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
    top = fmaxf(fmaxf(top, partner(me, swap, top)), peak);
    const float shrink = top == -INFINITY || peak == -INFINITY ? 0.0f : expf(peak - top);
    float added = 0;
    for (int c = half * (kKeys / 2); c < (half + 1) * (kKeys / 2); ++c) {
      const float score = ss[r * l.lds + c];
      const float p = score == -INFINITY ? 0.0f : expf(score - top);
      added += p;
      ps[r * l.ldp + c] = bf16BitsOf(p);
    }
    sum = sum * shrink + (added + partner(me, swap, added));
    if (top != -INFINITY) {
      for (int64_t j = half; j < n.Dv; j += 2)
        os[r * l.ldo + j] *= shrink;
      peak = top;
    }
    for (int j = 0; j < n.Dv; j += 16) // O += P V
      warpProduct<false, false>(ps, l.ldp, vs + j, l.ldv, os + j, l.ldo, kKeys, true);
  }
}

namespace {

HSPMD_KERNEL void attentionForward(AttentionDims n, const uint16_t *q, const uint16_t *k, const uint16_t *v,
                                   uint16_t *y) {
  HSPMD_SHARED_FLOATS(shared);
  const RowsLayout l = rowsLayout(n.D, n.Dv, false);
  unsigned char *area = reinterpret_cast<unsigned char *>(shared);
  const Lane me;
  const int row = me.warp * 16 + me.r; // of the block's kRows
  const float *os = reinterpret_cast<float *>(area + l.os) + me.warp * 16 * l.ldo;
  for (int64_t item = blockIdx.x; item < tiled::items(n, kRows); item += gridDim.x) {
    const tiled::Tile t = tiled::tileOf(n, item, row, kRows);
    __syncthreads(); // the last item's reads of qs are done
    loadBf16Rows(reinterpret_cast<uint16_t *>(area + l.qs), l.ldq, q, t.b, n.S, n.H, t.h, n.D, t.row0, t.rows, kRows);
    float peak, sum;
    walkForward(n, t, l, area, me, k, v, peak, sum);
    if (row < t.rows)
      for (int64_t j = me.half; j < n.Dv; j += 2)
        y[((t.b * n.S + t.row0 + row) * n.H + t.h) * n.Dv + j] =
            bf16BitsOf(sum > 0 ? os[me.r * l.ldo + j] / sum : 0.0f);
  }
}

// The backward pass's rows kernel: each row's log-sum-exp and delta into `stats` ([B, H, S, 2],
// f32), and dQ.
HSPMD_KERNEL void attentionBackwardRows(AttentionDims n, const uint16_t *q, const uint16_t *k, const uint16_t *v,
                                        const uint16_t *dy, uint16_t *dq, float *stats) {
  HSPMD_SHARED_FLOATS(shared);
  const RowsLayout l = rowsLayout(n.D, n.Dv, true);
  unsigned char *area = reinterpret_cast<unsigned char *>(shared);
  const Lane me;
  const int r = me.r, half = me.half, row = me.warp * 16 + r;
  uint16_t *ks = reinterpret_cast<uint16_t *>(area + l.ks), *vs = reinterpret_cast<uint16_t *>(area + l.vs),
           *dys = reinterpret_cast<uint16_t *>(area + l.dys);
  const uint16_t *qTile = reinterpret_cast<uint16_t *>(area + l.qs) + me.warp * 16 * l.ldq,
                 *dyTile = dys + me.warp * 16 * l.ldv;
  float *ss = reinterpret_cast<float *>(area + l.ss) + me.warp * 16 * l.lds;
  float *dps = reinterpret_cast<float *>(area + l.dps) + me.warp * 16 * l.lds;
  uint16_t *ps = reinterpret_cast<uint16_t *>(area + l.ps) + me.warp * 16 * l.ldp;
  float *os = reinterpret_cast<float *>(area + l.os) + me.warp * 16 * l.ldo;
  float *swap = reinterpret_cast<float *>(area + l.swap) + me.warp * 32;
  for (int64_t item = blockIdx.x; item < tiled::items(n, kRows); item += gridDim.x) {
    const tiled::Tile t = tiled::tileOf(n, item, row, kRows);
    __syncthreads(); // the last item's reads of qs and dys are done
    loadBf16Rows(reinterpret_cast<uint16_t *>(area + l.qs), l.ldq, q, t.b, n.S, n.H, t.h, n.D, t.row0, t.rows, kRows);
    loadBf16Rows(dys, l.ldv, dy, t.b, n.S, n.H, t.h, n.Dv, t.row0, t.rows, kRows);
    __syncthreads(); // dY is read below even where the rows see no key
    float peak, sum;
    walkForward(n, t, l, area, me, k, v, peak, sum);
    // delta = dY . O / sum, from this lane's half of the values and its partner's.
    float part = 0;
    for (int64_t j = half; j < n.Dv; j += 2)
      part += bf16Float(dyTile[r * l.ldv + j]) * os[r * l.ldo + j];
    const float both = part + partner(me, swap, part);
    const float delta = sum > 0 ? both / sum : 0.0f;
    const float lse = sum > 0 ? peak + logf(sum) : 0.0f;
    if (half == 0 && row < t.rows) {
      float *at = stats + 2 * ((t.b * n.H + t.h) * n.S + t.row0 + row);
      at[0] = lse;
      at[1] = delta;
    }
    for (int64_t j = half; j < n.D; j += 2) // os holds dQ from here
      os[r * l.ldo + j] = 0.0f;
    for (int64_t c0 = t.first; c0 < t.last; c0 += kKeys) {
      const int count = static_cast<int>(t.last - c0 < kKeys ? t.last - c0 : kKeys);
      __syncthreads(); // the last tile's reads of ks and vs are done
      loadBf16Rows(ks, l.ldq, k, t.b, n.T, n.Hk, t.kv, n.D, c0, count, kKeys);
      loadBf16Rows(vs, l.ldv, v, t.b, n.T, n.Hk, t.kv, n.Dv, c0, count, kKeys);
      __syncthreads();
      for (int c = 0; c < kKeys; c += 16) {
        warpProduct<false, true>(qTile, l.ldq, ks + c * l.ldq, l.ldq, ss + c, l.lds, static_cast<int>(n.D), false);
        warpProduct<false, true>(dyTile, l.ldv, vs + c * l.ldv, l.ldv, dps + c, l.lds, static_cast<int>(n.Dv), false);
      }
      for (int c = half * (kKeys / 2); c < (half + 1) * (kKeys / 2); ++c) { // dS = P (dP - delta) scale
        const int64_t key = c0 + c;
        const float p = c < count && key >= t.lo && key < t.hi ? expf(ss[r * l.lds + c] * n.scale - lse) : 0.0f;
        ps[r * l.ldp + c] = bf16BitsOf(p * (dps[r * l.lds + c] - delta) * n.scale);
      }
      for (int j = 0; j < n.D; j += 16) // dQ += dS K
        warpProduct<false, false>(ps, l.ldp, ks + j, l.ldq, os + j, l.ldo, kKeys, true);
    }
    if (row < t.rows)
      for (int64_t j = half; j < n.D; j += 2)
        dq[((t.b * n.S + t.row0 + row) * n.H + t.h) * n.D + j] = bf16BitsOf(os[r * l.ldo + j]);
  }
}

// The backward pass's keys kernel: dK and dV of 64 keys of one (batch row, KV head), from the
// rows of every head of its group that see them (`stats`: the rows kernel's).
HSPMD_KERNEL void attentionBackwardKeys(AttentionDims n, const uint16_t *q, const uint16_t *k, const uint16_t *v,
                                        const uint16_t *dy, const float *stats, uint16_t *dk, uint16_t *dv) {
  HSPMD_SHARED_FLOATS(shared);
  const KeysLayout l = keysLayout(n.D, n.Dv);
  unsigned char *area = reinterpret_cast<unsigned char *>(shared);
  const Lane me;
  const int r = me.r, half = me.half, mine = me.warp * 16 + r; // this lane's key of the block's kKeys
  uint16_t *ks = reinterpret_cast<uint16_t *>(area + l.ks), *vs = reinterpret_cast<uint16_t *>(area + l.vs),
           *qs = reinterpret_cast<uint16_t *>(area + l.qs), *dys = reinterpret_cast<uint16_t *>(area + l.dys);
  float *ss = reinterpret_cast<float *>(area + l.ss) + me.warp * 16 * l.lds;
  float *dps = reinterpret_cast<float *>(area + l.dps) + me.warp * 16 * l.lds;
  uint16_t *ps = reinterpret_cast<uint16_t *>(area + l.ps) + me.warp * 16 * l.ldp;
  float *dks = reinterpret_cast<float *>(area + l.dks) + me.warp * 16 * l.ldk;
  float *dvs = reinterpret_cast<float *>(area + l.dvs) + me.warp * 16 * l.ldo;
  float *rowStats = reinterpret_cast<float *>(area + l.rows);     // [kRows, 2]: log-sum-exp, delta
  int64_t *bounds = reinterpret_cast<int64_t *>(area + l.bounds); // [kRows, 2]: the keys a row sees
  const int64_t tiles = (n.T + kKeys - 1) / kKeys;
  for (int64_t item = blockIdx.x; item < keyItems(n); item += gridDim.x) {
    const int64_t b = item / (n.Hk * tiles), kv = item / tiles % n.Hk, k0 = item % tiles * kKeys;
    const int count = static_cast<int>(n.T - k0 < kKeys ? n.T - k0 : kKeys);
    __syncthreads(); // the last item's reads of ks and vs are done
    loadBf16Rows(ks, l.ldq, k, b, n.T, n.Hk, kv, n.D, k0, count, kKeys);
    loadBf16Rows(vs, l.ldv, v, b, n.T, n.Hk, kv, n.Dv, k0, count, kKeys);
    for (int64_t j = half; j < n.D; j += 2)
      dks[r * l.ldk + j] = 0.0f;
    for (int64_t j = half; j < n.Dv; j += 2)
      dvs[r * l.ldo + j] = 0.0f;
    for (int64_t h = kv * n.group; h < (kv + 1) * n.group; ++h)
      for (int64_t i0 = 0; i0 < n.S; i0 += kRows) {
        const int rows = static_cast<int>(n.S - i0 < kRows ? n.S - i0 : kRows);
        __syncthreads(); // the last tile's reads of qs, dys, rowStats and bounds are done
        for (int i = static_cast<int>(threadIdx.x); i < kRows; i += static_cast<int>(blockDim.x)) {
          int64_t lo = 0, hi = 0;
          float lse = 0, delta = 0; // rows past the last see no key (and are not NaNs shared memory held)
          if (i < rows) {
            visibleKeys(n, b, i0 + i, lo, hi);
            const float *at = stats + 2 * ((b * n.H + h) * n.S + i0 + i);
            lse = at[0];
            delta = at[1];
          }
          rowStats[2 * i] = lse;
          rowStats[2 * i + 1] = delta;
          bounds[2 * i] = lo;
          bounds[2 * i + 1] = hi;
        }
        __syncthreads();
        bool seen = false; // whether any of these rows sees any of the block's keys
        for (int i = 0; i < kRows && !seen; ++i)
          seen = (bounds[2 * i] > k0 ? bounds[2 * i] : k0) <
                 (bounds[2 * i + 1] < k0 + count ? bounds[2 * i + 1] : k0 + count);
        if (!seen)
          continue; // every thread reads the same: the block skips the tile together
        loadBf16Rows(qs, l.ldq, q, b, n.S, n.H, h, n.D, i0, rows, kRows);
        loadBf16Rows(dys, l.ldv, dy, b, n.S, n.H, h, n.Dv, i0, rows, kRows);
        __syncthreads();
        const uint16_t *kTile = ks + me.warp * 16 * l.ldq, *vTile = vs + me.warp * 16 * l.ldv;
        for (int c = 0; c < kRows; c += 16) // S^T = K Q^T: Q's rows are Q^T's columns
          warpProduct<false, true>(kTile, l.ldq, qs + c * l.ldq, l.ldq, ss + c, l.lds, static_cast<int>(n.D), false);
        const int64_t key = k0 + mine;
        for (int c = half * (kRows / 2); c < (half + 1) * (kRows / 2); ++c) { // P^T
          const float p = mine < count && key >= bounds[2 * c] && key < bounds[2 * c + 1]
                              ? expf(ss[r * l.lds + c] * n.scale - rowStats[2 * c])
                              : 0.0f;
          ss[r * l.lds + c] = p;
          ps[r * l.ldp + c] = bf16BitsOf(p);
        }
        for (int j = 0; j < n.Dv; j += 16) // dV += P^T dY
          warpProduct<false, false>(ps, l.ldp, dys + j, l.ldv, dvs + j, l.ldo, kRows, true);
        for (int c = 0; c < kRows; c += 16) // dP^T = V dY^T
          warpProduct<false, true>(vTile, l.ldv, dys + c * l.ldv, l.ldv, dps + c, l.lds, static_cast<int>(n.Dv), false);
        for (int c = half * (kRows / 2); c < (half + 1) * (kRows / 2); ++c) // dS^T = P^T (dP^T - delta) scale
          ps[r * l.ldp + c] = bf16BitsOf(ss[r * l.lds + c] * (dps[r * l.lds + c] - rowStats[2 * c + 1]) * n.scale);
        for (int j = 0; j < n.D; j += 16) // dK += dS^T Q
          warpProduct<false, false>(ps, l.ldp, qs + j, l.ldq, dks + j, l.ldk, kRows, true);
      }
    if (mine < count) {
      for (int64_t j = half; j < n.D; j += 2)
        dk[((b * n.T + k0 + mine) * n.Hk + kv) * n.D + j] = bf16BitsOf(dks[r * l.ldk + j]);
      for (int64_t j = half; j < n.Dv; j += 2)
        dv[((b * n.T + k0 + mine) * n.Hk + kv) * n.Dv + j] = bf16BitsOf(dvs[r * l.ldo + j]);
    }
  }
}

} // namespace
} // namespace hspmd::runtime::gpu::tensor
