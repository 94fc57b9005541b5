// ReferenceEvaluator.cpp - the reference evaluator: one plain loop nest per op, in double precision
// (ReferenceEvaluator.h).
#include "ReferenceEvaluator.h"

#include <cmath>
#include <stdexcept>

namespace hspmd::testing {

std::map<std::string, Tensor> randomLeaves(const ir::Graph &graph, std::mt19937 &rng, int64_t vocab) {
  std::normal_distribution<double> normal(0.0, 0.5);
  std::map<std::string, Tensor> leaves;
  for (const auto &op : graph.ops()) {
    if (op->kind != ir::OpKind::Param && op->kind != ir::OpKind::Input)
      continue;
    Tensor t{*ir::concreteShape(op->result()->type.shape), {}};
    for (int64_t i = 0; i < t.size(); ++i)
      t.data.push_back(ir::isFloat(op->result()->type.dtype)
                           ? normal(rng)
                           : static_cast<double>(std::uniform_int_distribution<int64_t>(0, vocab - 1)(rng)));
    leaves[op->result()->name] = t;
  }
  return leaves;
}

namespace {

using ir::OpKind;

std::vector<int64_t> shapeOf(const ir::Value &v) {
  auto shape = ir::concreteShape(v.type.shape);
  if (!shape)
    throw std::runtime_error("the reference evaluator needs concrete shapes");
  return *shape;
}

std::vector<int64_t> unflatten(int64_t at, const std::vector<int64_t> &shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    index[d] = at % shape[d];
    at /= shape[d];
  }
  return index;
}

int64_t flatten(const std::vector<int64_t> &index, const std::vector<int64_t> &shape) {
  int64_t at = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    at = at * shape[d] + index[d];
  return at;
}

// The element of `t` that broadcasting maps an index of `out` to.
double broadcastAt(const Tensor &t, const std::vector<int64_t> &outIndex) {
  const size_t offset = outIndex.size() - t.shape.size();
  int64_t at = 0;
  for (size_t d = 0; d < t.shape.size(); ++d)
    at = at * t.shape[d] + (t.shape[d] == 1 ? 0 : outIndex[offset + d]);
  return t.data[at];
}

Tensor make(const std::vector<int64_t> &shape) {
  Tensor t{shape, {}};
  t.data.assign(static_cast<size_t>(t.size()), 0.0);
  return t;
}

double normalCdf(double x) {
  return 0.5 * (1 + std::erf(x / std::sqrt(2.0)));
}
double normalPdf(double x) {
  return std::exp(-x * x / 2) / std::sqrt(2 * M_PI);
}
double sigmoid(double x) {
  return 1 / (1 + std::exp(-x));
}

// Rows of the last dimension: calls f(rowStart, rowLength) for every row.
template <typename F> void forRows(const Tensor &t, F f) {
  const int64_t n = t.shape.empty() ? 1 : t.shape.back();
  for (int64_t row = 0; row * n < t.size(); ++row)
    f(row * n, n);
}

struct AttentionParts {
  int64_t B, S, T, H, Hk, D, Dv;
};

AttentionParts partsOf(const Tensor &q, const Tensor &k, const Tensor &v) {
  return {q.shape[0], q.shape[1], k.shape[1], q.shape[2], k.shape[2], q.shape[3], v.shape[3]};
}

// Attention probabilities P[b][h][s][t].
std::vector<double> attentionProbabilities(const Tensor &q, const Tensor &k, const AttentionParts &p, bool causal,
                                           double scale) {
  std::vector<double> probs(static_cast<size_t>(p.B * p.H * p.S * p.T), 0.0);
  const int64_t group = p.H / p.Hk;
  for (int64_t b = 0; b < p.B; ++b)
    for (int64_t h = 0; h < p.H; ++h)
      for (int64_t s = 0; s < p.S; ++s) {
        double *row = &probs[static_cast<size_t>(((b * p.H + h) * p.S + s) * p.T)];
        double peak = -1e300;
        for (int64_t t = 0; t < p.T; ++t) {
          if (causal && t > s + (p.T - p.S)) {
            row[t] = -1e300;
            continue;
          }
          double dot = 0;
          for (int64_t d = 0; d < p.D; ++d)
            dot += q.data[((b * p.S + s) * p.H + h) * p.D + d] * k.data[((b * p.T + t) * p.Hk + h / group) * p.D + d];
          row[t] = dot * scale;
          peak = std::max(peak, row[t]);
        }
        double total = 0;
        for (int64_t t = 0; t < p.T; ++t)
          total += row[t] = row[t] <= -1e299 ? 0 : std::exp(row[t] - peak);
        for (int64_t t = 0; t < p.T; ++t)
          row[t] /= total;
      }
  return probs;
}

std::vector<Tensor> run(const ir::Op &op, const std::vector<const Tensor *> &in) {
  const std::vector<int64_t> out = shapeOf(*op.result());
  auto elementwise = [&](auto f) {
    Tensor r = make(out);
    for (int64_t i = 0; i < r.size(); ++i) {
      auto index = unflatten(i, out);
      r.data[i] = f(broadcastAt(*in[0], index), in.size() > 1 ? broadcastAt(*in[1], index) : 0.0);
    }
    return std::vector<Tensor>{r};
  };
  switch (op.kind) {
  case OpKind::Constant: {
    Tensor r = make(out);
    r.data.assign(r.data.size(), ir::floatAttr(op.attrs, "value"));
    return {r};
  }
  case OpKind::Add:
    return elementwise([](double a, double b) { return a + b; });
  case OpKind::Sub:
    return elementwise([](double a, double b) { return a - b; });
  case OpKind::Mul:
    return elementwise([](double a, double b) { return a * b; });
  case OpKind::Div:
    return elementwise([](double a, double b) { return a / b; });
  case OpKind::Neg:
    return elementwise([](double a, double) { return -a; });
  case OpKind::Gelu:
    return elementwise([](double x, double) { return x * normalCdf(x); });
  case OpKind::Silu:
    return elementwise([](double x, double) { return x * sigmoid(x); });
  case OpKind::Relu:
    return elementwise([](double x, double) { return x > 0 ? x : 0.0; });
  case OpKind::GeluGrad:
    return elementwise([](double x, double dy) { return dy * (normalCdf(x) + x * normalPdf(x)); });
  case OpKind::SiluGrad:
    return elementwise([](double x, double dy) {
      double s = sigmoid(x);
      return dy * (s + x * s * (1 - s));
    });
  case OpKind::ReluGrad:
    return elementwise([](double x, double dy) { return x > 0 ? dy : 0.0; });
  case OpKind::Broadcast:
  case OpKind::Reshard:
    return elementwise([](double a, double) { return a; });
  case OpKind::Reshape: {
    Tensor r = *in[0];
    r.shape = out;
    return {r};
  }
  case OpKind::MatMul: {
    const Tensor &a = *in[0], &b = *in[1];
    Tensor r = make(out);
    const int64_t K = a.shape.back();
    for (int64_t i = 0; i < r.size(); ++i) {
      auto index = unflatten(i, out);
      double sum = 0;
      for (int64_t k = 0; k < K; ++k) {
        auto ai = index, bi = index;
        ai.back() = k;         // [..., m, k]
        bi[bi.size() - 2] = k; // [..., k, n]
        sum += broadcastAt(a, ai) * broadcastAt(b, bi);
      }
      r.data[i] = sum;
    }
    return {r};
  }
  case OpKind::Transpose: {
    Tensor r = make(out);
    const int64_t d0 = ir::intAttr(op.attrs, "dim0"), d1 = ir::intAttr(op.attrs, "dim1");
    for (int64_t i = 0; i < r.size(); ++i) {
      auto index = unflatten(i, out);
      std::swap(index[d0], index[d1]);
      r.data[i] = in[0]->data[flatten(index, in[0]->shape)];
    }
    return {r};
  }
  case OpKind::Softmax: {
    const int64_t dim = ir::intAttr(op.attrs, "dim");
    Tensor r = make(out);
    const auto &x = *in[0];
    for (int64_t i = 0; i < r.size(); ++i) {
      auto index = unflatten(i, out);
      double peak = -1e300, total = 0;
      auto at = index;
      for (at[dim] = 0; at[dim] < x.shape[dim]; ++at[dim])
        peak = std::max(peak, x.data[flatten(at, x.shape)]);
      for (at[dim] = 0; at[dim] < x.shape[dim]; ++at[dim])
        total += std::exp(x.data[flatten(at, x.shape)] - peak);
      r.data[i] = std::exp(x.data[i] - peak) / total;
    }
    return {r};
  }
  case OpKind::RmsNorm:
  case OpKind::RmsNormGrad: {
    const Tensor &x = *in[0], &w = *in[1];
    const double eps = ir::floatAttr(op.attrs, "eps");
    Tensor y = make(x.shape), dx = make(x.shape), dw = make(w.shape);
    forRows(x, [&](int64_t start, int64_t n) {
      double ms = 0;
      for (int64_t j = 0; j < n; ++j)
        ms += x.data[start + j] * x.data[start + j] / static_cast<double>(n);
      const double r = 1 / std::sqrt(ms + eps);
      if (op.kind == OpKind::RmsNorm) {
        for (int64_t j = 0; j < n; ++j)
          y.data[start + j] = x.data[start + j] * r * w.data[j];
        return;
      }
      const Tensor &dy = *in[2];
      double dot = 0;
      for (int64_t j = 0; j < n; ++j) {
        dw.data[j] += dy.data[start + j] * x.data[start + j] * r;
        dot += dy.data[start + j] * w.data[j] * x.data[start + j] * r;
      }
      for (int64_t j = 0; j < n; ++j)
        dx.data[start + j] =
            r * (dy.data[start + j] * w.data[j] - x.data[start + j] * r * dot / static_cast<double>(n));
    });
    return op.kind == OpKind::RmsNorm ? std::vector<Tensor>{y} : std::vector<Tensor>{dx, dw};
  }
  case OpKind::LayerNorm:
  case OpKind::LayerNormGrad: {
    const Tensor &x = *in[0], &w = *in[1];
    const double eps = ir::floatAttr(op.attrs, "eps");
    Tensor y = make(x.shape), dx = make(x.shape), dw = make(w.shape), db = make(w.shape);
    forRows(x, [&](int64_t start, int64_t n) {
      double mean = 0, var = 0;
      for (int64_t j = 0; j < n; ++j)
        mean += x.data[start + j] / static_cast<double>(n);
      for (int64_t j = 0; j < n; ++j)
        var += (x.data[start + j] - mean) * (x.data[start + j] - mean) / static_cast<double>(n);
      const double r = 1 / std::sqrt(var + eps);
      if (op.kind == OpKind::LayerNorm) {
        for (int64_t j = 0; j < n; ++j)
          y.data[start + j] = (x.data[start + j] - mean) * r * w.data[j] + in[2]->data[j];
        return;
      }
      const Tensor &dy = *in[2];
      double sumG = 0, sumGX = 0;
      for (int64_t j = 0; j < n; ++j) {
        const double xhat = (x.data[start + j] - mean) * r, g = dy.data[start + j] * w.data[j];
        dw.data[j] += dy.data[start + j] * xhat;
        db.data[j] += dy.data[start + j];
        sumG += g;
        sumGX += g * xhat;
      }
      for (int64_t j = 0; j < n; ++j) {
        const double xhat = (x.data[start + j] - mean) * r, g = dy.data[start + j] * w.data[j];
        dx.data[start + j] = r * (g - sumG / static_cast<double>(n) - xhat * sumGX / static_cast<double>(n));
      }
    });
    return op.kind == OpKind::LayerNorm ? std::vector<Tensor>{y} : std::vector<Tensor>{dx, dw, db};
  }
  case OpKind::Embedding: {
    const Tensor &table = *in[0], &ids = *in[1];
    Tensor r = make(out);
    const int64_t D = table.shape[1];
    for (int64_t i = 0; i < ids.size(); ++i)
      for (int64_t d = 0; d < D; ++d)
        r.data[i * D + d] = table.data[static_cast<int64_t>(ids.data[i]) * D + d];
    return {r};
  }
  case OpKind::EmbeddingGrad: {
    const Tensor &ids = *in[0], &dy = *in[1];
    Tensor r = make(out);
    const int64_t D = out[1];
    for (int64_t i = 0; i < ids.size(); ++i)
      for (int64_t d = 0; d < D; ++d)
        r.data[static_cast<int64_t>(ids.data[i]) * D + d] += dy.data[i * D + d];
    return {r};
  }
  case OpKind::Unbind:
  case OpKind::Split: {
    const int64_t dim = ir::intAttr(op.attrs, "dim");
    std::vector<Tensor> results;
    int64_t start = 0;
    for (const ir::Value *result : op.results) {
      Tensor r = make(shapeOf(*result));
      for (int64_t i = 0; i < r.size(); ++i) {
        auto index = unflatten(i, r.shape);
        if (op.kind == OpKind::Unbind)
          index.insert(index.begin() + dim, start);
        else
          index[dim] += start;
        r.data[i] = in[0]->data[flatten(index, in[0]->shape)];
      }
      start += op.kind == OpKind::Unbind ? 1 : r.shape[dim];
      results.push_back(r);
    }
    return results;
  }
  case OpKind::Concat:
  case OpKind::Slice:
  case OpKind::Pad: {
    const int64_t dim = ir::intAttr(op.attrs, "dim");
    Tensor r = make(out);
    if (op.kind == OpKind::Concat) {
      int64_t start = 0;
      for (const Tensor *part : in) {
        for (int64_t i = 0; i < part->size(); ++i) {
          auto index = unflatten(i, part->shape);
          index[dim] += start;
          r.data[flatten(index, out)] = part->data[i];
        }
        start += part->shape[dim];
      }
    } else {
      const int64_t shift =
          op.kind == OpKind::Slice ? ir::intAttr(op.attrs, "start") : -ir::intAttr(op.attrs, "before");
      for (int64_t i = 0; i < r.size(); ++i) {
        auto index = unflatten(i, out);
        index[dim] += shift;
        if (index[dim] >= 0 && index[dim] < in[0]->shape[dim])
          r.data[i] = in[0]->data[flatten(index, in[0]->shape)];
      }
    }
    return {r};
  }
  case OpKind::Sum:
  case OpKind::Mean: {
    const Tensor &x = *in[0];
    auto dims = ir::listAttr(op.attrs, "dims");
    std::vector<bool> reduced(x.shape.size(), dims.empty());
    int64_t count = 1;
    for (const auto &d : dims)
      reduced[*d.constant()] = true;
    for (size_t d = 0; d < x.shape.size(); ++d)
      if (reduced[d])
        count *= x.shape[d];
    Tensor r = make(out);
    for (int64_t i = 0; i < x.size(); ++i) {
      auto index = unflatten(i, x.shape);
      std::vector<int64_t> to;
      for (size_t d = 0; d < index.size(); ++d)
        if (!reduced[d])
          to.push_back(index[d]);
        else if (ir::boolAttr(op.attrs, "keepdim"))
          to.push_back(0);
      r.data[flatten(to, out)] += x.data[i] / (op.kind == OpKind::Mean ? static_cast<double>(count) : 1.0);
    }
    return {r};
  }
  case OpKind::Attention:
  case OpKind::AttentionGrad: {
    const Tensor &q = *in[0], &k = *in[1], &v = *in[2];
    const auto p = partsOf(q, k, v);
    const double scale = ir::floatAttr(op.attrs, "scale");
    const auto probs = attentionProbabilities(q, k, p, ir::boolAttr(op.attrs, "causal"), scale);
    const int64_t group = p.H / p.Hk;
    auto P = [&](int64_t b, int64_t h, int64_t s, int64_t t) { return probs[((b * p.H + h) * p.S + s) * p.T + t]; };
    if (op.kind == OpKind::Attention) {
      Tensor o = make(out);
      for (int64_t b = 0; b < p.B; ++b)
        for (int64_t s = 0; s < p.S; ++s)
          for (int64_t h = 0; h < p.H; ++h)
            for (int64_t d = 0; d < p.Dv; ++d) {
              double sum = 0;
              for (int64_t t = 0; t < p.T; ++t)
                sum += P(b, h, s, t) * v.data[((b * p.T + t) * p.Hk + h / group) * p.Dv + d];
              o.data[((b * p.S + s) * p.H + h) * p.Dv + d] = sum;
            }
      return {o};
    }
    const Tensor &dy = *in[3];
    Tensor dq = make(q.shape), dk = make(k.shape), dv = make(v.shape);
    for (int64_t b = 0; b < p.B; ++b)
      for (int64_t h = 0; h < p.H; ++h)
        for (int64_t s = 0; s < p.S; ++s) {
          std::vector<double> dP(static_cast<size_t>(p.T));
          double rowDot = 0;
          for (int64_t t = 0; t < p.T; ++t) {
            double sum = 0;
            for (int64_t d = 0; d < p.Dv; ++d) {
              const double g = dy.data[((b * p.S + s) * p.H + h) * p.Dv + d];
              sum += g * v.data[((b * p.T + t) * p.Hk + h / group) * p.Dv + d];
              dv.data[((b * p.T + t) * p.Hk + h / group) * p.Dv + d] += P(b, h, s, t) * g;
            }
            dP[t] = sum;
            rowDot += sum * P(b, h, s, t);
          }
          for (int64_t t = 0; t < p.T; ++t) {
            const double dS = P(b, h, s, t) * (dP[t] - rowDot) * scale;
            for (int64_t d = 0; d < p.D; ++d) {
              dq.data[((b * p.S + s) * p.H + h) * p.D + d] += dS * k.data[((b * p.T + t) * p.Hk + h / group) * p.D + d];
              dk.data[((b * p.T + t) * p.Hk + h / group) * p.D + d] += dS * q.data[((b * p.S + s) * p.H + h) * p.D + d];
            }
          }
        }
    return {dq, dk, dv};
  }
  case OpKind::CrossEntropy:
  case OpKind::CrossEntropyGrad: {
    const Tensor &logits = *in[0], &targets = *in[1];
    // The mean is over `tokens` positions when given (a device's piece of the batch divides by
    // the global token count, so pieces add up to the global mean), else over the local ones.
    const int64_t V = logits.shape.back(), N = ir::intAttr(op.attrs, "tokens", logits.size() / V);
    Tensor loss = make({}), grad = make(logits.shape);
    const double upstream = op.kind == OpKind::CrossEntropyGrad ? in[2]->data[0] : 1.0;
    for (int64_t n = 0; n < logits.size() / V; ++n) {
      double peak = -1e300, total = 0;
      for (int64_t c = 0; c < V; ++c)
        peak = std::max(peak, logits.data[n * V + c]);
      for (int64_t c = 0; c < V; ++c)
        total += std::exp(logits.data[n * V + c] - peak);
      const auto target = static_cast<int64_t>(targets.data[n]);
      loss.data[0] += (std::log(total) + peak - logits.data[n * V + target]) / static_cast<double>(N);
      for (int64_t c = 0; c < V; ++c)
        grad.data[n * V + c] = upstream *
                               (std::exp(logits.data[n * V + c] - peak) / total - (c == target ? 1.0 : 0.0)) /
                               static_cast<double>(N);
    }
    return {op.kind == OpKind::CrossEntropy ? loss : grad};
  }
  default:
    throw std::runtime_error("the reference evaluator has no " + std::string(ir::opInfo(op.kind).name));
  }
}

} // namespace

std::map<const ir::Value *, Tensor> evaluate(const ir::Graph &graph, const std::map<std::string, Tensor> &leaves) {
  std::map<const ir::Value *, Tensor> values;
  for (const auto &op : graph.ops()) {
    if (op->kind == OpKind::Param || op->kind == OpKind::Input) {
      values[op->result()] = leaves.at(op->result()->name);
      continue;
    }
    std::vector<const Tensor *> in;
    for (const ir::Value *operand : op->operands)
      in.push_back(&values.at(operand));
    auto results = run(*op, in);
    for (size_t i = 0; i < op->results.size(); ++i)
      values[op->results[i]] = std::move(results[i]);
  }
  return values;
}

} // namespace hspmd::testing
