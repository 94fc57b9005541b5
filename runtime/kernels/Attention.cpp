// Attention: q [B, S, H, D], k [B, T, Hk, D], v [B, T, Hk, Dv] -> [B, S, H, Dv], grouped KV
// heads (query head h reads KV head h / (H / Hk)), a causal mask in global positions (query
// s of this piece is at query_offset + s, key t at key_offset + t; a key after its query is
// masked), and the backward pass, which recomputes the probabilities. With documents
// (KernelContext::blockStarts) a query sees only the keys from its document's start on: the
// mask is block-diagonal causal. Each (batch, head) block is a few cblas_sgemm calls on
// strided head slices.
#include "runtime/Kernels.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace hspmd::runtime::kernels {

namespace {

struct Dims {
  int64_t B, S, T, H, Hk, D, Dv, group;
};

struct Mask {
  bool causal = false;
  int64_t queryOffset = 0, keyOffset = 0;
  const int32_t *blockStarts = nullptr; // of the batch's rows, `seq` apart, from local row 0's
  int64_t seq = 0;
};

// Query rows [q0, q1) of a batch row that see keys [k0, k1) at most (each row masked further
// by causality): with documents, the rows of one document and its keys, so that the products
// skip the pairs the block-diagonal mask removes; without, every row and key.
struct Block {
  int64_t q0, q1, k0, k1;
};

std::vector<Block> blocksOf(const Dims &n, const Mask &mask, int64_t b) {
  auto visibleEnd = [&](int64_t s) { // one past the last key query s sees
    return mask.causal ? std::clamp<int64_t>(mask.queryOffset + s - mask.keyOffset + 1, 0, n.T) : n.T;
  };
  if (!mask.blockStarts)
    return {Block{0, n.S, 0, visibleEnd(n.S - 1)}};
  std::vector<Block> blocks;
  const int32_t *starts = mask.blockStarts + b * mask.seq + mask.queryOffset;
  for (int64_t s = 0; s < n.S;) {
    int64_t end = s + 1;
    while (end < n.S && starts[end] == starts[s])
      ++end;
    const int64_t k1 = visibleEnd(end - 1);
    blocks.push_back({s, end, std::clamp<int64_t>(starts[s] - mask.keyOffset, 0, k1), k1});
    s = end;
  }
  return blocks;
}

// Probabilities of one (batch, head, block) in rows [q0, q1), columns [k0, k1) of `p` ([S, T]):
// q k^T (cblas_sgemm on the strided head slices), scaled, masked and normalised row by row.
void probabilities(const Dims &n, const float *q, const float *k, int64_t b, int64_t h, const Mask &mask,
                   const Block &block, float scale, float *p) {
  const int64_t rows = block.q1 - block.q0, keys = block.k1 - block.k0;
  const float *qb = q + ((b * n.S + block.q0) * n.H + h) * n.D;
  const float *kb = k + ((b * n.T + block.k0) * n.Hk + h / n.group) * n.D;
  float *pb = p + block.q0 * n.T + block.k0;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(rows), static_cast<int>(keys),
              static_cast<int>(n.D), scale, qb, static_cast<int>(n.H * n.D), kb, static_cast<int>(n.Hk * n.D), 0.0f, pb,
              static_cast<int>(n.T));
  for (int64_t s = block.q0; s < block.q1; ++s) {
    float *row = p + s * n.T;
    // Keys after the query (in global positions) are masked.
    const int64_t visible =
        mask.causal ? std::clamp<int64_t>(mask.queryOffset + s - mask.keyOffset + 1, block.k0, block.k1) : block.k1;
    float peak = -INFINITY;
    for (int64_t t = block.k0; t < visible; ++t)
      peak = std::max(peak, row[t]);
    double total = 0;
    for (int64_t t = block.k0; t < visible; ++t)
      total += row[t] = std::exp(row[t] - peak);
    const float inverse = total > 0 ? static_cast<float>(1.0 / total) : 0.0f;
    for (int64_t t = block.k0; t < visible; ++t)
      row[t] *= inverse;
    std::fill(row + visible, row + block.k1, 0.0f);
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
  const int T = static_cast<int>(n.T), D = static_cast<int>(n.D), Dv = static_cast<int>(n.Dv);
  const int qStride = static_cast<int>(n.H * n.D), kStride = static_cast<int>(n.Hk * n.D),
            vStride = static_cast<int>(n.Hk * n.Dv), oStride = static_cast<int>(n.H * n.Dv);
  std::vector<float> p(static_cast<size_t>(n.S * n.T)), dP(p.size());
  if (op == "attention") {
    float *y = out[0].f32();
    for (int64_t b = 0; b < n.B; ++b) {
      const std::vector<Block> blocks = blocksOf(n, mask, b);
      for (int64_t h = 0; h < n.H; ++h)
        for (const Block &block : blocks) {
          float *yb = y + ((b * n.S + block.q0) * n.H + h) * n.Dv;
          if (block.k1 <= block.k0) { // no key to see: zero
            for (int64_t s = block.q0; s < block.q1; ++s)
              std::fill(yb + (s - block.q0) * n.H * n.Dv, yb + (s - block.q0) * n.H * n.Dv + n.Dv, 0.0f);
            continue;
          }
          probabilities(n, q.f32(), k.f32(), b, h, mask, block, scale, p.data());
          // out[b, q0:q1, h, :] = P[q0:q1, k0:k1] v[k0:k1]
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(block.q1 - block.q0), Dv,
                      static_cast<int>(block.k1 - block.k0), 1.0f, p.data() + block.q0 * n.T + block.k0, T,
                      v.f32() + ((b * n.T + block.k0) * n.Hk + h / n.group) * n.Dv, vStride, 0.0f, yb, oStride);
        }
    }
    return true;
  }
  const float *dy = in[3].f32();
  float *dq = out[0].f32(), *dk = out[1].f32(), *dv = out[2].f32();
  std::memset(dk, 0, static_cast<size_t>(out[1].numel()) * 4);
  std::memset(dv, 0, static_cast<size_t>(out[2].numel()) * 4);
  for (int64_t b = 0; b < n.B; ++b) {
    const std::vector<Block> blocks = blocksOf(n, mask, b);
    for (int64_t h = 0; h < n.H; ++h)
      for (const Block &block : blocks) {
        const int rows = static_cast<int>(block.q1 - block.q0), keys = static_cast<int>(block.k1 - block.k0);
        float *dqb = dq + ((b * n.S + block.q0) * n.H + h) * n.D;
        if (keys <= 0) { // no key seen: no gradient
          for (int s = 0; s < rows; ++s)
            std::fill(dqb + s * qStride, dqb + s * qStride + n.D, 0.0f);
          continue;
        }
        probabilities(n, q.f32(), k.f32(), b, h, mask, block, scale, p.data());
        const float *dyb = dy + ((b * n.S + block.q0) * n.H + h) * n.Dv;
        const float *vb = v.f32() + ((b * n.T + block.k0) * n.Hk + h / n.group) * n.Dv;
        const float *kb = k.f32() + ((b * n.T + block.k0) * n.Hk + h / n.group) * n.D;
        const float *qb = q.f32() + ((b * n.S + block.q0) * n.H + h) * n.D;
        float *pb = p.data() + block.q0 * n.T + block.k0, *dPb = dP.data() + block.q0 * n.T + block.k0;
        // dP = dY v^T; dV += P^T dY
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, keys, Dv, 1.0f, dyb, oStride, vb, vStride, 0.0f, dPb,
                    T);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, keys, Dv, rows, 1.0f, pb, T, dyb, oStride, 1.0f,
                    dv + ((b * n.T + block.k0) * n.Hk + h / n.group) * n.Dv, vStride);
        // dS = P * (dP - rowsum(P * dP)) * scale, in place in dP
        for (int s = 0; s < rows; ++s) {
          float *row = dPb + s * n.T;
          const float *prow = pb + s * n.T;
          double dot = 0;
          for (int t = 0; t < keys; ++t)
            dot += static_cast<double>(prow[t]) * row[t];
          for (int t = 0; t < keys; ++t)
            row[t] = prow[t] * (row[t] - static_cast<float>(dot)) * scale;
        }
        // dQ = dS k; dK += dS^T q
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, D, keys, 1.0f, dPb, T, kb, kStride, 0.0f, dqb,
                    qStride);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, keys, D, rows, 1.0f, dPb, T, qb, qStride, 1.0f,
                    dk + ((b * n.T + block.k0) * n.Hk + h / n.group) * n.D, kStride);
      }
  }
  return true;
}

} // namespace hspmd::runtime::kernels
