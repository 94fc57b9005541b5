// Attention: q [B, S, H, D], k [B, T, Hk, D], v [B, T, Hk, Dv] -> [B, S, H, Dv], grouped KV
// heads (query head h reads KV head h / (H / Hk)), a causal mask in global positions (query
// s of this piece is at query_offset + s, key t at key_offset + t; a key after its query is
// masked), and the backward pass, which recomputes the probabilities row by row.
#include "runtime/Kernels.h"

#include <cmath>
#include <cstring>

namespace hspmd::runtime::kernels {

namespace {

struct Dims {
  int64_t B, S, T, H, Hk, D, Dv, group;
};

// Probabilities of one query row over the keys (masked ones 0); returns them in `p`.
void probabilities(const Dims &n, const float *q, const float *k, int64_t b, int64_t s, int64_t h, bool causal,
                   int64_t queryOffset, int64_t keyOffset, float scale, std::vector<double> &p) {
  const float *qr = q + ((b * n.S + s) * n.H + h) * n.D;
  double peak = -INFINITY;
  for (int64_t t = 0; t < n.T; ++t) {
    if (causal && keyOffset + t > queryOffset + s) {
      p[static_cast<size_t>(t)] = -INFINITY;
      continue;
    }
    const float *kr = k + ((b * n.T + t) * n.Hk + h / n.group) * n.D;
    double dot = 0;
    for (int64_t d = 0; d < n.D; ++d)
      dot += static_cast<double>(qr[d]) * kr[d];
    p[static_cast<size_t>(t)] = dot * scale;
    peak = std::max(peak, p[static_cast<size_t>(t)]);
  }
  double total = 0;
  for (int64_t t = 0; t < n.T; ++t)
    total += p[static_cast<size_t>(t)] =
        std::isinf(p[static_cast<size_t>(t)]) ? 0.0 : std::exp(p[static_cast<size_t>(t)] - peak);
  for (int64_t t = 0; t < n.T; ++t)
    p[static_cast<size_t>(t)] = total > 0 ? p[static_cast<size_t>(t)] / total : 0.0;
}

} // namespace

bool attention(const std::string &op, const ir::AttrMap &attrs, In in, In out) {
  if (op != "attention" && op != "attention_grad")
    return false;
  const TensorView &q = in[0], &k = in[1], &v = in[2];
  expect(q.shape.size() == 4 && k.shape.size() == 4 && v.shape.size() == 4, op, "q, k and v need 4 dimensions");
  Dims n{q.shape[0], q.shape[1], k.shape[1], q.shape[2], k.shape[2], q.shape[3], v.shape[3], 1};
  expect(n.Hk > 0 && n.H % n.Hk == 0, op, "query heads must be a multiple of key/value heads");
  n.group = n.H / n.Hk;
  const bool causal = ir::boolAttr(attrs, "causal");
  const auto scale = static_cast<float>(ir::floatAttr(attrs, "scale", 1.0 / std::sqrt(static_cast<double>(n.D))));
  const int64_t queryOffset = ir::intAttr(attrs, "query_offset"), keyOffset = ir::intAttr(attrs, "key_offset");
  std::vector<double> p(static_cast<size_t>(n.T)), dP(static_cast<size_t>(n.T));
  if (op == "attention") {
    float *o = out[0].f32();
    for (int64_t b = 0; b < n.B; ++b)
      for (int64_t s = 0; s < n.S; ++s)
        for (int64_t h = 0; h < n.H; ++h) {
          probabilities(n, q.f32(), k.f32(), b, s, h, causal, queryOffset, keyOffset, scale, p);
          float *orow = o + ((b * n.S + s) * n.H + h) * n.Dv;
          std::vector<double> acc(static_cast<size_t>(n.Dv), 0.0);
          for (int64_t t = 0; t < n.T; ++t) {
            if (p[static_cast<size_t>(t)] == 0)
              continue;
            const float *vr = v.f32() + ((b * n.T + t) * n.Hk + h / n.group) * n.Dv;
            for (int64_t d = 0; d < n.Dv; ++d)
              acc[static_cast<size_t>(d)] += p[static_cast<size_t>(t)] * vr[d];
          }
          for (int64_t d = 0; d < n.Dv; ++d)
            orow[d] = static_cast<float>(acc[static_cast<size_t>(d)]);
        }
    return true;
  }
  const float *dy = in[3].f32();
  float *dq = out[0].f32(), *dk = out[1].f32(), *dv = out[2].f32();
  std::memset(dq, 0, static_cast<size_t>(out[0].numel()) * 4);
  std::memset(dk, 0, static_cast<size_t>(out[1].numel()) * 4);
  std::memset(dv, 0, static_cast<size_t>(out[2].numel()) * 4);
  for (int64_t b = 0; b < n.B; ++b)
    for (int64_t h = 0; h < n.H; ++h)
      for (int64_t s = 0; s < n.S; ++s) {
        probabilities(n, q.f32(), k.f32(), b, s, h, causal, queryOffset, keyOffset, scale, p);
        const float *g = dy + ((b * n.S + s) * n.H + h) * n.Dv;
        double rowDot = 0;
        for (int64_t t = 0; t < n.T; ++t) {
          const size_t ti = static_cast<size_t>(t);
          if (p[ti] == 0) {
            dP[ti] = 0;
            continue;
          }
          const float *vr = v.f32() + ((b * n.T + t) * n.Hk + h / n.group) * n.Dv;
          float *dvr = dv + ((b * n.T + t) * n.Hk + h / n.group) * n.Dv;
          double sum = 0;
          for (int64_t d = 0; d < n.Dv; ++d) {
            sum += static_cast<double>(g[d]) * vr[d];
            dvr[d] += static_cast<float>(p[ti] * g[d]);
          }
          dP[ti] = sum;
          rowDot += sum * p[ti];
        }
        const float *qr = q.f32() + ((b * n.S + s) * n.H + h) * n.D;
        float *dqr = dq + ((b * n.S + s) * n.H + h) * n.D;
        for (int64_t t = 0; t < n.T; ++t) {
          const size_t ti = static_cast<size_t>(t);
          if (p[ti] == 0)
            continue;
          const auto dS = static_cast<float>(p[ti] * (dP[ti] - rowDot) * scale);
          const float *kr = k.f32() + ((b * n.T + t) * n.Hk + h / n.group) * n.D;
          float *dkr = dk + ((b * n.T + t) * n.Hk + h / n.group) * n.D;
          for (int64_t d = 0; d < n.D; ++d) {
            dqr[d] += dS * kr[d];
            dkr[d] += dS * qr[d];
          }
        }
      }
  return true;
}

} // namespace hspmd::runtime::kernels
