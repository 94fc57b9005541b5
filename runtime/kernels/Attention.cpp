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

// Probabilities of one (batch, head) block, [S, T], from q k^T (cblas_sgemm on the strided
// head slices), scaled, masked and normalised row by row.
struct Mask {
  bool causal = false;
  int64_t queryOffset = 0, keyOffset = 0;
  const int32_t *blockStarts = nullptr; // of the batch's rows, `seq` apart, from local row 0's
  int64_t seq = 0;
};

void probabilities(const Dims &n, const float *q, const float *k, int64_t b, int64_t h, const Mask &mask, float scale,
                   float *p) {
  const float *qb = q + (b * n.S * n.H + h) * n.D;
  const float *kb = k + (b * n.T * n.Hk + h / n.group) * n.D;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(n.S), static_cast<int>(n.T),
              static_cast<int>(n.D), scale, qb, static_cast<int>(n.H * n.D), kb, static_cast<int>(n.Hk * n.D), 0.0f, p,
              static_cast<int>(n.T));
  for (int64_t s = 0; s < n.S; ++s) {
    float *row = p + s * n.T;
    // Keys after the query (in global positions) are masked, and with documents those
    // before its document's start.
    const int64_t position = mask.queryOffset + s;
    const int64_t visible = mask.causal ? std::clamp<int64_t>(position - mask.keyOffset + 1, 0, n.T) : n.T;
    const int64_t first =
        mask.blockStarts ? std::clamp<int64_t>(mask.blockStarts[b * mask.seq + position] - mask.keyOffset, 0, visible)
                         : 0;
    float peak = -INFINITY;
    for (int64_t t = first; t < visible; ++t)
      peak = std::max(peak, row[t]);
    double total = 0;
    for (int64_t t = first; t < visible; ++t)
      total += row[t] = std::exp(row[t] - peak);
    const float inverse = total > 0 ? static_cast<float>(1.0 / total) : 0.0f;
    for (int64_t t = first; t < visible; ++t)
      row[t] *= inverse;
    std::fill(row, row + first, 0.0f);
    std::fill(row + visible, row + n.T, 0.0f);
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
  const int S = static_cast<int>(n.S), T = static_cast<int>(n.T), D = static_cast<int>(n.D),
            Dv = static_cast<int>(n.Dv);
  const int qStride = static_cast<int>(n.H * n.D), kStride = static_cast<int>(n.Hk * n.D),
            vStride = static_cast<int>(n.Hk * n.Dv), oStride = static_cast<int>(n.H * n.Dv);
  std::vector<float> p(static_cast<size_t>(n.S * n.T)), dP(p.size());
  if (op == "attention") {
    for (int64_t b = 0; b < n.B; ++b)
      for (int64_t h = 0; h < n.H; ++h) {
        probabilities(n, q.f32(), k.f32(), b, h, mask, scale, p.data());
        // out[b, :, h, :] = P v
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, S, Dv, T, 1.0f, p.data(), T,
                    v.f32() + (b * n.T * n.Hk + h / n.group) * n.Dv, vStride, 0.0f,
                    out[0].f32() + (b * n.S * n.H + h) * n.Dv, oStride);
      }
    return true;
  }
  const float *dy = in[3].f32();
  float *dq = out[0].f32(), *dk = out[1].f32(), *dv = out[2].f32();
  std::memset(dk, 0, static_cast<size_t>(out[1].numel()) * 4);
  std::memset(dv, 0, static_cast<size_t>(out[2].numel()) * 4);
  for (int64_t b = 0; b < n.B; ++b)
    for (int64_t h = 0; h < n.H; ++h) {
      probabilities(n, q.f32(), k.f32(), b, h, mask, scale, p.data());
      const float *dyb = dy + (b * n.S * n.H + h) * n.Dv;
      const float *vb = v.f32() + (b * n.T * n.Hk + h / n.group) * n.Dv;
      const float *kb = k.f32() + (b * n.T * n.Hk + h / n.group) * n.D;
      const float *qb = q.f32() + (b * n.S * n.H + h) * n.D;
      // dP = dY v^T; dV += P^T dY
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, S, T, Dv, 1.0f, dyb, oStride, vb, vStride, 0.0f, dP.data(),
                  T);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, Dv, S, 1.0f, p.data(), T, dyb, oStride, 1.0f,
                  dv + (b * n.T * n.Hk + h / n.group) * n.Dv, vStride);
      // dS = P * (dP - rowsum(P * dP)) * scale, in place in dP
      for (int64_t s = 0; s < n.S; ++s) {
        float *row = dP.data() + s * n.T;
        const float *prow = p.data() + s * n.T;
        double dot = 0;
        for (int64_t t = 0; t < n.T; ++t)
          dot += static_cast<double>(prow[t]) * row[t];
        for (int64_t t = 0; t < n.T; ++t)
          row[t] = prow[t] * (row[t] - static_cast<float>(dot)) * scale;
      }
      // dQ = dS k; dK += dS^T q
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, S, D, T, 1.0f, dP.data(), T, kb, kStride, 0.0f,
                  dq + (b * n.S * n.H + h) * n.D, qStride);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, D, S, 1.0f, dP.data(), T, qb, qStride, 1.0f,
                  dk + (b * n.T * n.Hk + h / n.group) * n.D, kStride);
    }
  return true;
}

} // namespace hspmd::runtime::kernels
