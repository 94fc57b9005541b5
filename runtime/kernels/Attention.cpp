// Attention: q [B, S, H, D], k [B, T, Hk, D], v [B, T, Hk, Dv] -> [B, S, H, Dv], grouped KV
// heads (query head h reads KV head h / (H / Hk)), a causal mask in global positions (query
// s of this piece is at query_offset + s, key t at key_offset + t; a key after its query is
// masked), and the backward pass, which recomputes the probabilities. With documents
// (KernelContext::blockStarts) a query sees only the keys from its document's start on: the
// mask is block-diagonal causal.
//
// One blocked kernel in the manner of FlashAttention: queries in blocks of kQueryBlock rows,
// keys in blocks of kKeyBlock, an online softmax (running maximum and sum per row), so no
// [S, T] matrix is ever in memory, and key blocks no query of a block sees (the causal upper
// triangle, other documents) are skipped. The forward pass runs (batch, head, query block)
// items in parallel; the backward pass (batch, KV head) items, each owning its keys' dK and
// dV. Each tile is a few single-threaded cblas_sgemm calls on strided head slices.
#include "runtime/Kernels.h"
#include "runtime/kernels/Math.h"
#include "runtime/kernels/Parallel.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace hspmd::runtime::kernels {

namespace {

constexpr int64_t kQueryBlock = 64, kKeyBlock = 256;

struct Dims {
  int64_t B, S, T, H, Hk, D, Dv, group;
};

struct Mask {
  bool causal = false;
  int64_t queryOffset = 0, keyOffset = 0;
  const int32_t *blockStarts = nullptr; // of the batch's rows, `seq` apart, from local row 0's
  int64_t seq = 0;
};

// C = alpha op(A) op(B) + beta C on one thread (the kernel's items are the parallelism).
void gemm(bool transA, bool transB, int64_t M, int64_t N, int64_t K, float alpha, const float *a, int64_t lda,
          const float *b, int64_t ldb, float beta, float *c, int64_t ldc) {
  cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans, transB ? CblasTrans : CblasNoTrans,
              static_cast<int>(M), static_cast<int>(N), static_cast<int>(K), alpha, a, static_cast<int>(lda), b,
              static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

// The keys [lo, hi) query row s of batch row b sees: from its document's start (with
// documents) to its own position (causal), in local key indices.
struct Visible {
  const Dims &n;
  const Mask &mask;
  const int32_t *starts; // the batch row's block starts at local query 0, or null

  Visible(const Dims &dims, const Mask &m, int64_t b)
      : n(dims), mask(m), starts(m.blockStarts ? m.blockStarts + b * m.seq + m.queryOffset : nullptr) {}
  int64_t lo(int64_t s) const { return starts ? std::clamp<int64_t>(starts[s] - mask.keyOffset, 0, n.T) : 0; }
  int64_t hi(int64_t s) const {
    return mask.causal ? std::clamp<int64_t>(mask.queryOffset + s - mask.keyOffset + 1, 0, n.T) : n.T;
  }
};

// The scores of query rows [q0, q1) and keys [k0, k1) of one (batch, head): scale q k^T into
// `tile` ([rows, k1 - k0]).
void scores(const Dims &n, const float *q, const float *k, int64_t b, int64_t h, int64_t q0, int64_t q1, int64_t k0,
            int64_t k1, float scale, float *tile) {
  gemm(false, true, q1 - q0, k1 - k0, n.D, scale, q + ((b * n.S + q0) * n.H + h) * n.D, n.H * n.D,
       k + ((b * n.T + k0) * n.Hk + h / n.group) * n.D, n.Hk * n.D, 0.0f, tile, k1 - k0);
}

// One query block's forward pass: out rows [q0, q1) of head h (stride `outStride`), with each
// row's maximum score and its softmax's sum (0 for a row that sees no key: its output is 0).
void forwardBlock(const Dims &n, const Visible &visible, const float *q, const float *k, const float *v, int64_t b,
                  int64_t h, int64_t q0, int64_t q1, float scale, float *out, int64_t outStride, float *peak,
                  float *sum, std::vector<float> &tile) {
  const int64_t rows = q1 - q0;
  for (int64_t r = 0; r < rows; ++r) {
    std::fill(out + r * outStride, out + r * outStride + n.Dv, 0.0f);
    peak[r] = -INFINITY;
    sum[r] = 0.0f;
  }
  int64_t lo = n.T, hi = 0;
  for (int64_t s = q0; s < q1; ++s) {
    lo = std::min(lo, visible.lo(s));
    hi = std::max(hi, visible.hi(s));
  }
  for (int64_t k0 = lo; k0 < hi; k0 += kKeyBlock) {
    const int64_t k1 = std::min(hi, k0 + kKeyBlock), keys = k1 - k0;
    scores(n, q, k, b, h, q0, q1, k0, k1, scale, tile.data());
    for (int64_t r = 0; r < rows; ++r) {
      float *row = tile.data() + r * keys;
      const int64_t a = std::clamp(visible.lo(q0 + r), k0, k1) - k0, e = std::clamp(visible.hi(q0 + r), k0, k1) - k0;
      float top = peak[r];
      for (int64_t t = a; t < e; ++t)
        top = std::max(top, row[t]);
      float added = 0;
      for (int64_t t = 0; t < keys; ++t) {
        row[t] = t >= a && t < e ? expNonPositive(row[t] - top) : 0.0f;
        added += row[t];
      }
      if (e > a && top != peak[r]) { // rescale what the row has so far to the new maximum
        const float shrink = peak[r] == -INFINITY ? 0.0f : expNonPositive(peak[r] - top);
        sum[r] *= shrink;
        for (int64_t j = 0; j < n.Dv; ++j)
          out[r * outStride + j] *= shrink;
        peak[r] = top;
      }
      sum[r] += added;
    }
    // out += P v[k0:k1]
    gemm(false, false, rows, n.Dv, keys, 1.0f, tile.data(), keys, v + ((b * n.T + k0) * n.Hk + h / n.group) * n.Dv,
         n.Hk * n.Dv, 1.0f, out, outStride);
  }
  for (int64_t r = 0; r < rows; ++r) {
    const float inverse = sum[r] > 0 ? 1.0f / sum[r] : 0.0f;
    for (int64_t j = 0; j < n.Dv; ++j)
      out[r * outStride + j] *= inverse;
  }
}

} // namespace

bool attention(const std::string &op, const ir::AttrMap &attrs, In in, In out, const KernelContext &context) {
  if (op != "attention" && op != "attention_grad")
    return false;
  const TensorView &q = in[0], &k = in[1], &v = in[2];
  expect(q.shape.size() == 4 && k.shape.size() == 4 && v.shape.size() == 4, op, "q, k and v need 4 dimensions");
  Dims n{q.shape[0], q.shape[1], k.shape[1], q.shape[2], k.shape[2], q.shape[3], v.shape[3], 1};
  if (n.H == 0 && n.Hk == 0)
    return true; // a device with no heads of an unequal head split: nothing to compute
  expect(n.Hk > 0 && n.H % n.Hk == 0, op, "query heads must be a multiple of key/value heads");
  n.group = n.H / n.Hk;
  const auto scale = static_cast<float>(ir::floatAttr(attrs, "scale", 1.0 / std::sqrt(static_cast<double>(n.D))));
  Mask mask{ir::boolAttr(attrs, "causal"), ir::intAttr(attrs, "query_offset"), ir::intAttr(attrs, "key_offset"),
            nullptr, context.seq};
  if (context.blockStarts) {
    expect(mask.causal, op, "documents need causal attention");
    expect(mask.queryOffset + n.S <= context.seq && mask.keyOffset + n.T <= context.seq, op,
           "the piece lies outside the batch's sequences");
    mask.blockStarts = context.blockStarts + context.row * context.seq;
  }
  const int64_t qStride = n.H * n.D, kStride = n.Hk * n.D, vStride = n.Hk * n.Dv, oStride = n.H * n.Dv;
  const int64_t queryBlocks = (n.S + kQueryBlock - 1) / kQueryBlock;
  if (op == "attention") {
    float *y = out[0].f32();
    parallelFor(n.B * n.H * queryBlocks, 1, [&](int64_t first, int64_t last) {
      std::vector<float> tile(static_cast<size_t>(kQueryBlock * kKeyBlock)), peak(kQueryBlock), sum(kQueryBlock);
      for (int64_t item = first; item < last; ++item) {
        const int64_t b = item / (n.H * queryBlocks), h = item / queryBlocks % n.H,
                      q0 = item % queryBlocks * kQueryBlock;
        const int64_t q1 = std::min(n.S, q0 + kQueryBlock);
        forwardBlock(n, Visible(n, mask, b), q.f32(), k.f32(), v.f32(), b, h, q0, q1, scale,
                     y + ((b * n.S + q0) * n.H + h) * n.Dv, oStride, peak.data(), sum.data(), tile);
      }
    });
    return true;
  }
  // dS = P * (dP - D) * scale with D = rowsum(dY * out), P recomputed from each row's maximum
  // and sum; dQ = dS k, dK += dS^T q, dV += P^T dY.
  const float *dy = in[3].f32();
  float *dq = out[0].f32(), *dk = out[1].f32(), *dv = out[2].f32();
  parallelFor(n.B * n.Hk, 1, [&](int64_t first, int64_t last) {
    std::vector<float> tile(static_cast<size_t>(kQueryBlock * kKeyBlock)), dP(tile.size()),
        o(static_cast<size_t>(kQueryBlock * n.Dv)), peak(kQueryBlock), sum(kQueryBlock), delta(kQueryBlock);
    for (int64_t item = first; item < last; ++item) {
      const int64_t b = item / n.Hk, kvHead = item % n.Hk;
      const Visible visible(n, mask, b);
      float *dkb = dk + b * n.T * kStride + kvHead * n.D, *dvb = dv + b * n.T * vStride + kvHead * n.Dv;
      for (int64_t t = 0; t < n.T; ++t) {
        std::fill(dkb + t * kStride, dkb + t * kStride + n.D, 0.0f);
        std::fill(dvb + t * vStride, dvb + t * vStride + n.Dv, 0.0f);
      }
      for (int64_t h = kvHead * n.group; h < (kvHead + 1) * n.group; ++h)
        for (int64_t q0 = 0; q0 < n.S; q0 += kQueryBlock) {
          const int64_t q1 = std::min(n.S, q0 + kQueryBlock), rows = q1 - q0;
          const float *dyb = dy + ((b * n.S + q0) * n.H + h) * n.Dv, *qb = q.f32() + ((b * n.S + q0) * n.H + h) * n.D;
          float *dqb = dq + ((b * n.S + q0) * n.H + h) * n.D;
          int64_t lo = n.T, hi = 0;
          for (int64_t r = 0; r < rows; ++r) {
            std::fill(dqb + r * qStride, dqb + r * qStride + n.D, 0.0f);
            lo = std::min(lo, visible.lo(q0 + r));
            hi = std::max(hi, visible.hi(q0 + r));
          }
          // The gradients of keys [k0, k1) from the tile's probabilities (P in `tile`) and dP = dY v^T
          // (in `dP`, turned into dS in place).
          auto gradients = [&](int64_t k0, int64_t k1) {
            const int64_t keys = k1 - k0;
            for (int64_t r = 0; r < rows; ++r) {
              const float *p = tile.data() + r * keys;
              float *ds = dP.data() + r * keys;
              for (int64_t t = 0; t < keys; ++t)
                ds[t] = p[t] * (ds[t] - delta[r]) * scale;
            }
            gemm(false, false, rows, n.D, keys, 1.0f, dP.data(), keys,
                 k.f32() + (b * n.T + k0) * kStride + kvHead * n.D, kStride, 1.0f, dqb, qStride); // dQ += dS k
            gemm(true, false, keys, n.D, rows, 1.0f, dP.data(), keys, qb, qStride, 1.0f, dkb + k0 * kStride,
                 kStride); // dK += dS^T q
            gemm(true, false, keys, n.Dv, rows, 1.0f, tile.data(), keys, dyb, oStride, 1.0f, dvb + k0 * vStride,
                 vStride); // dV += P^T dY
          };
          // P of keys [k0, k1) in `tile`, from the scores there and each row's maximum and sum;
          // dP = dY v^T in `dP`.
          auto probabilities = [&](int64_t k0, int64_t k1) {
            const int64_t keys = k1 - k0;
            gemm(false, true, rows, keys, n.Dv, 1.0f, dyb, oStride, v.f32() + (b * n.T + k0) * vStride + kvHead * n.Dv,
                 vStride, 0.0f, dP.data(), keys);
            for (int64_t r = 0; r < rows; ++r) {
              float *p = tile.data() + r * keys;
              const int64_t a = std::clamp(visible.lo(q0 + r), k0, k1) - k0,
                            e = std::clamp(visible.hi(q0 + r), k0, k1) - k0;
              const float inverse = sum[r] > 0 ? 1.0f / sum[r] : 0.0f, top = peak[r];
              for (int64_t t = 0; t < keys; ++t)
                p[t] = t >= a && t < e ? expNonPositive(p[t] - top) * inverse : 0.0f;
            }
          };
          if (hi - lo <= kKeyBlock) { // one tile: its scores once, D = rowsum(P * dP)
            const int64_t keys = std::max<int64_t>(0, hi - lo);
            if (keys == 0)
              continue; // no row sees a key: dQ is 0
            scores(n, q.f32(), k.f32(), b, h, q0, q1, lo, hi, scale, tile.data());
            for (int64_t r = 0; r < rows; ++r) {
              const float *row = tile.data() + r * keys;
              const int64_t a = std::clamp(visible.lo(q0 + r), lo, hi) - lo,
                            e = std::clamp(visible.hi(q0 + r), lo, hi) - lo;
              float top = -INFINITY, total = 0;
              for (int64_t t = a; t < e; ++t)
                top = std::max(top, row[t]);
              for (int64_t t = a; t < e; ++t)
                total += expNonPositive(row[t] - top);
              peak[r] = top;
              sum[r] = total;
            }
            probabilities(lo, hi);
            for (int64_t r = 0; r < rows; ++r) {
              float d = 0;
              for (int64_t t = 0; t < keys; ++t)
                d += tile[static_cast<size_t>(r * keys + t)] * dP[static_cast<size_t>(r * keys + t)];
              delta[r] = d;
            }
            gradients(lo, hi);
            continue;
          }
          // Several key blocks: the forward pass again for each row's maximum, sum and output,
          // D = rowsum(dY * out), then each block's probabilities anew.
          forwardBlock(n, visible, q.f32(), k.f32(), v.f32(), b, h, q0, q1, scale, o.data(), n.Dv, peak.data(),
                       sum.data(), tile);
          for (int64_t r = 0; r < rows; ++r) {
            float d = 0;
            for (int64_t j = 0; j < n.Dv; ++j)
              d += dyb[r * oStride + j] * o[static_cast<size_t>(r * n.Dv + j)];
            delta[r] = d;
          }
          for (int64_t k0 = lo; k0 < hi; k0 += kKeyBlock) {
            const int64_t k1 = std::min(hi, k0 + kKeyBlock);
            scores(n, q.f32(), k.f32(), b, h, q0, q1, k0, k1, scale, tile.data());
            probabilities(k0, k1);
            gradients(k0, k1);
          }
        }
    }
  });
  return true;
}

} // namespace hspmd::runtime::kernels
