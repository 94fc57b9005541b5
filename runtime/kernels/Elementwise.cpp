// Elementwise kernels: arithmetic with numpy broadcasting, activations and their gradients,
// constants and broadcasts. Same-shape loops run in parallel chunks (runtime/kernels/Parallel.h);
// GELU and its gradient use vectorisable erf and exp (runtime/kernels/Math.h).
#include "runtime/Kernels.h"
#include "runtime/kernels/Math.h"
#include "runtime/kernels/Parallel.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace hspmd::runtime::kernels {

namespace {

// Calls f(outIndex, aIndex, bIndex) for every output element, walking broadcast strides.
template <typename F>
void forBroadcast(const std::vector<int64_t> &out, const std::vector<int64_t> &aStrides,
                  const std::vector<int64_t> &bStrides, F f) {
  const size_t rank = out.size();
  int64_t total = 1;
  for (int64_t d : out)
    total *= d;
  if (total == 0)
    return;
  std::vector<int64_t> index(rank, 0);
  int64_t a = 0, b = 0;
  for (int64_t i = 0; i < total; ++i) {
    f(i, a, b);
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < out[d]) {
        a += aStrides[d];
        b += bStrides[d];
        break;
      }
      a -= aStrides[d] * (out[d] - 1);
      b -= bStrides[d] * (out[d] - 1);
      index[d] = 0;
    }
  }
}

template <typename F> void binary(In in, In out, F f) {
  const float *a = in[0].f32(), *b = in[1].f32();
  float *y = out[0].f32();
  if (in[0].shape == out[0].shape && in[1].shape == out[0].shape) {
    const int64_t n = out[0].numel();
    parallelFor(n, grainFor(n, 1), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        y[i] = f(a[i], b[i]);
    });
    return;
  }
  forBroadcast(out[0].shape, broadcastStrides(in[0].shape, out[0].shape), broadcastStrides(in[1].shape, out[0].shape),
               [&](int64_t i, int64_t ia, int64_t ib) { y[i] = f(a[ia], b[ib]); });
}

template <typename F> void unary(In in, In out, F f) {
  const float *x = in[0].f32();
  float *y = out[0].f32();
  const int64_t n = out[0].numel();
  parallelFor(n, grainFor(n, 1), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      y[i] = f(x[i]);
  });
}

void geluRange(const float *x, float *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = x[i] * 0.5f * (1.0f + erfRational(x[i] * static_cast<float>(M_SQRT1_2)));
}

void geluGradRange(const float *x, const float *dy, float *dx, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float cdf = 0.5f * (1.0f + erfRational(x[i] * static_cast<float>(M_SQRT1_2)));
    const float pdf = expNonPositive(-0.5f * x[i] * x[i]) * static_cast<float>(0.5 * M_2_SQRTPI * M_SQRT1_2);
    dx[i] = dy[i] * (cdf + x[i] * pdf);
  }
}

float sigmoid(float x) {
  return 1.0f / (1.0f + std::exp(-x));
}

} // namespace

bool elementwise(const std::string &op, const ir::AttrMap &attrs, In in, In out) {
  if (op == "constant") {
    const float value = static_cast<float>(ir::floatAttr(attrs, "value"));
    float *y = out[0].f32();
    for (int64_t i = 0; i < out[0].numel(); ++i)
      y[i] = value;
  } else if (op == "add") {
    binary(in, out, [](float a, float b) { return a + b; });
  } else if (op == "sub") {
    binary(in, out, [](float a, float b) { return a - b; });
  } else if (op == "mul") {
    binary(in, out, [](float a, float b) { return a * b; });
  } else if (op == "div") {
    binary(in, out, [](float a, float b) { return a / b; });
  } else if (op == "neg") {
    unary(in, out, [](float x) { return -x; });
  } else if (op == "gelu") {
    const int64_t n = out[0].numel();
    parallelFor(n, grainFor(n, 4),
                [&](int64_t begin, int64_t end) { geluRange(in[0].f32() + begin, out[0].f32() + begin, end - begin); });
  } else if (op == "silu") {
    unary(in, out, [](float x) { return x * sigmoid(x); });
  } else if (op == "relu") {
    unary(in, out, [](float x) { return x > 0 ? x : 0.0f; });
  } else if (op == "gelu_grad" && in[0].shape == out[0].shape && in[1].shape == out[0].shape) {
    const int64_t n = out[0].numel();
    parallelFor(n, grainFor(n, 4), [&](int64_t begin, int64_t end) {
      geluGradRange(in[0].f32() + begin, in[1].f32() + begin, out[0].f32() + begin, end - begin);
    });
  } else if (op == "gelu_grad") { // broadcast operands
    binary(in, out, [](float x, float dy) {
      float dx;
      geluGradRange(&x, &dy, &dx, 1);
      return dx;
    });
  } else if (op == "silu_grad") {
    binary(in, out, [](float x, float dy) {
      const float s = sigmoid(x);
      return dy * (s + x * s * (1 - s));
    });
  } else if (op == "relu_grad") {
    binary(in, out, [](float x, float dy) { return x > 0 ? dy : 0.0f; });
  } else if (op == "broadcast") {
    const float *x = in[0].f32();
    float *y = out[0].f32();
    expect(in[0].shape.size() <= out[0].shape.size(), op, "cannot broadcast to a lower rank");
    forBroadcast(out[0].shape, broadcastStrides(in[0].shape, out[0].shape), std::vector<int64_t>(out[0].shape.size()),
                 [&](int64_t i, int64_t ix, int64_t) { y[i] = x[ix]; });
  } else {
    return false;
  }
  return true;
}

} // namespace hspmd::runtime::kernels
