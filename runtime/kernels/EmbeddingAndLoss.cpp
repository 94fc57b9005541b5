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
  } else {
    return false;
  }
  return true;
}

} // namespace hspmd::runtime::kernels
