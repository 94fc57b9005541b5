// Embedding lookups (on a vocabulary shard: rows outside [vocab_offset, vocab_offset + V)
// read as zeros, a partial sum) and the fused softmax-cross-entropy, whose local sum is
// divided by `tokens`, the global token count, so that pieces add up to the global mean
// (with documents, by the batch's scored targets: KernelContext::scored; a target < 0, a
// padding position, is not scored). The loss runs rows in parallel and adds their losses in
// row order.
#include "runtime/Kernels.h"
#include "runtime/kernels/Math.h"
#include "runtime/kernels/Parallel.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace hspmd::runtime::kernels {

namespace {

// The steps of cross-entropy over logits split by vocabulary (a piece of V columns per member
// of a group, from `vocab_offset`), between which the members combine their rows' values:
//   vocab_parallel_max   logits -> peak[rows]: the row maxima of this piece (combined: max)
//   vocab_parallel_sums  logits, targets, peak -> sums[2 rows]: the sums of exp(logit - peak),
//                        then the target's logit where this piece holds it, else 0 (combined: +)
//   vocab_parallel_loss  targets, peak, sums -> loss: the scored rows' losses over `tokens`
//   vocab_parallel_grad  logits, targets, peak, sums, upstream -> this piece's gradient
void vocabParallel(const std::string &op, const ir::AttrMap &attrs, In in, In out, const KernelContext &context) {
  const int64_t offset = ir::intAttr(attrs, "vocab_offset");
  if (op == "vocab_parallel_loss") {
    const int32_t *targets = in[0].i32();
    const float *peak = in[1].f32(), *sums = in[2].f32();
    const int64_t rows = in[1].numel();
    const auto tokens = static_cast<double>(context.scored > 0 ? context.scored : ir::intAttr(attrs, "tokens", rows));
    double loss = 0;
    for (int64_t r = 0; r < rows; ++r)
      if (targets[r] >= 0) // a target < 0 is not scored
        loss += std::log(static_cast<double>(sums[r])) + peak[r] - sums[rows + r];
    out[0].f32()[0] = static_cast<float>(loss / tokens);
    return;
  }
  const float *x = in[0].f32();
  const int64_t V = in[0].shape.back(), rows = in[0].numel() / std::max<int64_t>(V, 1);
  if (op == "vocab_parallel_max") {
    float *peak = out[0].f32();
    for (int64_t r = 0; r < rows; ++r) {
      peak[r] = -INFINITY;
      for (int64_t c = 0; c < V; ++c)
        peak[r] = std::max(peak[r], x[r * V + c]);
    }
  } else if (op == "vocab_parallel_sums") {
    const int32_t *targets = in[1].i32();
    const float *peak = in[2].f32();
    float *sums = out[0].f32();
    for (int64_t r = 0; r < rows; ++r) {
      double total = 0;
      for (int64_t c = 0; c < V; ++c)
        total += std::exp(static_cast<double>(x[r * V + c] - peak[r]));
      sums[r] = static_cast<float>(total);
      const int64_t t = targets[r] - offset;
      sums[rows + r] = t >= 0 && t < V ? x[r * V + t] : 0.0f;
    }
  } else if (op == "vocab_parallel_grad") {
    const int32_t *targets = in[1].i32();
    const float *peak = in[2].f32(), *sums = in[3].f32();
    const double upstream = in[4].f32()[0];
    const auto tokens = static_cast<double>(context.scored > 0 ? context.scored : ir::intAttr(attrs, "tokens", rows));
    float *g = out[0].f32();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < V; ++c) {
        if (targets[r] < 0) {
          g[r * V + c] = 0.0f;
          continue;
        }
        const double p = std::exp(static_cast<double>(x[r * V + c] - peak[r])) / sums[r];
        g[r * V + c] = static_cast<float>(upstream * (p - (c + offset == targets[r] ? 1.0 : 0.0)) / tokens);
      }
  } else {
    throw KernelError("no CPU kernel named '" + op + "'");
  }
}

} // namespace

bool embeddingAndLoss(const std::string &op, const ir::AttrMap &attrs, In in, In out, const KernelContext &context) {
  if (op == "embedding") {
    const TensorView &table = in[0], &ids = in[1];
    const int64_t V = table.shape[0], D = table.shape[1], offset = ir::intAttr(attrs, "vocab_offset");
    float *y = out[0].f32();
    for (int64_t i = 0; i < ids.numel(); ++i) {
      const int64_t row = ids.i32()[i] - offset;
      if (row >= 0 && row < V)
        std::memcpy(y + i * D, table.f32() + row * D, static_cast<size_t>(D) * 4);
      else
        std::memset(y + i * D, 0, static_cast<size_t>(D) * 4);
    }
  } else if (op == "embedding_grad") {
    const TensorView &ids = in[0], &dy = in[1];
    const int64_t V = out[0].shape[0], D = out[0].shape[1], offset = ir::intAttr(attrs, "vocab_offset");
    float *g = out[0].f32();
    std::memset(g, 0, static_cast<size_t>(V * D) * 4);
    for (int64_t i = 0; i < ids.numel(); ++i) {
      const int64_t row = ids.i32()[i] - offset;
      if (row < 0 || row >= V)
        continue;
      for (int64_t d = 0; d < D; ++d)
        g[row * D + d] += dy.f32()[i * D + d];
    }
  } else if (op == "cross_entropy" || op == "cross_entropy_grad") {
    const TensorView &logits = in[0], &targets = in[1];
    const int64_t V = logits.shape.back(), rows = logits.numel() / V;
    const double tokens = static_cast<double>(context.scored > 0 ? context.scored : ir::intAttr(attrs, "tokens", rows));
    const bool grad = op == "cross_entropy_grad";
    const double upstream = grad ? in[2].f32()[0] : 1.0;
    for (int64_t n = 0; n < rows; ++n)
      expect(targets.i32()[n] < V, op, "target " + std::to_string(targets.i32()[n]) + " outside the vocabulary");
    std::vector<double> rowLoss(grad ? 0 : static_cast<size_t>(rows), 0.0);
    parallelFor(rows, grainFor(rows, V), [&](int64_t begin, int64_t end) {
      std::vector<float> shifted(grad ? 0 : static_cast<size_t>(V));
      for (int64_t n = begin; n < end; ++n) {
        const float *row = logits.f32() + n * V;
        const int64_t target = targets.i32()[n];
        float *e = grad ? out[0].f32() + n * V : shifted.data(); // exp(logit - max)
        if (target < 0) {                                        // not scored
          if (grad)
            std::fill(e, e + V, 0.0f);
          continue;
        }
        float peak = -INFINITY;
        for (int64_t c = 0; c < V; ++c)
          peak = std::max(peak, row[c]);
        double total = 0;
        for (int64_t c = 0; c < V; ++c) {
          e[c] = expNonPositive(row[c] - peak);
          total += e[c];
        }
        if (!grad) {
          rowLoss[static_cast<size_t>(n)] = std::log(total) + peak - row[target];
          continue;
        }
        const auto factor = static_cast<float>(upstream / total / tokens);
        for (int64_t c = 0; c < V; ++c)
          e[c] *= factor;
        e[target] -= static_cast<float>(upstream / tokens);
      }
    });
    double loss = 0;
    for (double l : rowLoss)
      loss += l;
    if (!grad)
      out[0].f32()[0] = static_cast<float>(loss / tokens);
  } else if (op.rfind("vocab_parallel_", 0) == 0) {
    vocabParallel(op, attrs, in, out, context);
  } else {
    return false;
  }
  return true;
}

} // namespace hspmd::runtime::kernels
