// Normalisations over the last dimension and softmax: RMSNorm and LayerNorm with their
// gradients (dx, and dw/db summed over this device's rows), accumulating in double.
#include "runtime/Kernels.h"

#include <cmath>
#include <cstring>

namespace hspmd::runtime::kernels {

namespace {

void rmsnorm(const ir::AttrMap &attrs, In in, In out, bool grad) {
  const float *x = in[0].f32(), *w = in[1].f32();
  const int64_t n = in[0].shape.empty() ? 1 : in[0].shape.back(), rows = in[0].numel() / std::max<int64_t>(n, 1);
  const double eps = ir::floatAttr(attrs, "eps", 1e-5);
  std::vector<double> dw(grad ? static_cast<size_t>(n) : 0, 0.0);
  for (int64_t row = 0; row < rows; ++row) {
    const float *xr = x + row * n;
    double ms = 0;
    for (int64_t j = 0; j < n; ++j)
      ms += static_cast<double>(xr[j]) * xr[j];
    const double r = 1 / std::sqrt(ms / static_cast<double>(n) + eps);
    if (!grad) {
      float *y = out[0].f32() + row * n;
      for (int64_t j = 0; j < n; ++j)
        y[j] = static_cast<float>(xr[j] * r * w[j]);
      continue;
    }
    const float *dy = in[2].f32() + row * n;
    double dot = 0;
    for (int64_t j = 0; j < n; ++j) {
      dw[static_cast<size_t>(j)] += dy[j] * xr[j] * r;
      dot += static_cast<double>(dy[j]) * w[j] * xr[j] * r;
    }
    float *dx = out[0].f32() + row * n;
    for (int64_t j = 0; j < n; ++j)
      dx[j] = static_cast<float>(r * (dy[j] * w[j] - xr[j] * r * dot / static_cast<double>(n)));
  }
  if (grad)
    for (int64_t j = 0; j < n; ++j)
      out[1].f32()[j] = static_cast<float>(dw[static_cast<size_t>(j)]);
}

void layernorm(const ir::AttrMap &attrs, In in, In out, bool grad) {
  const float *x = in[0].f32(), *w = in[1].f32();
  const int64_t n = in[0].shape.empty() ? 1 : in[0].shape.back(), rows = in[0].numel() / std::max<int64_t>(n, 1);
  const double eps = ir::floatAttr(attrs, "eps", 1e-5);
  std::vector<double> dw(grad ? static_cast<size_t>(n) : 0, 0.0), db(dw);
  for (int64_t row = 0; row < rows; ++row) {
    const float *xr = x + row * n;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < n; ++j)
      mean += xr[j];
    mean /= static_cast<double>(n);
    for (int64_t j = 0; j < n; ++j)
      var += (xr[j] - mean) * (xr[j] - mean);
    const double r = 1 / std::sqrt(var / static_cast<double>(n) + eps);
    if (!grad) {
      float *y = out[0].f32() + row * n;
      const float *b = in[2].f32();
      for (int64_t j = 0; j < n; ++j)
        y[j] = static_cast<float>((xr[j] - mean) * r * w[j] + b[j]);
      continue;
    }
    const float *dy = in[2].f32() + row * n;
    double sumG = 0, sumGX = 0;
    for (int64_t j = 0; j < n; ++j) {
      const double xhat = (xr[j] - mean) * r, g = static_cast<double>(dy[j]) * w[j];
      dw[static_cast<size_t>(j)] += dy[j] * xhat;
      db[static_cast<size_t>(j)] += dy[j];
      sumG += g;
      sumGX += g * xhat;
    }
    float *dx = out[0].f32() + row * n;
    for (int64_t j = 0; j < n; ++j) {
      const double xhat = (xr[j] - mean) * r, g = static_cast<double>(dy[j]) * w[j];
      dx[j] = static_cast<float>(r * (g - sumG / static_cast<double>(n) - xhat * sumGX / static_cast<double>(n)));
    }
  }
  if (grad)
    for (int64_t j = 0; j < n; ++j) {
      out[1].f32()[j] = static_cast<float>(dw[static_cast<size_t>(j)]);
      out[2].f32()[j] = static_cast<float>(db[static_cast<size_t>(j)]);
    }
}

void softmax(const ir::AttrMap &attrs, const TensorView &x, const TensorView &y) {
  const auto dim = static_cast<size_t>(ir::intAttr(attrs, "dim"));
  expect(dim < x.shape.size(), "softmax", "dimension out of range");
  int64_t inner = 1, outer = 1;
  for (size_t d = dim + 1; d < x.shape.size(); ++d)
    inner *= x.shape[d];
  for (size_t d = 0; d < dim; ++d)
    outer *= x.shape[d];
  const int64_t n = x.shape[dim];
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const float *xr = x.f32() + o * n * inner + i;
      float *yr = y.f32() + o * n * inner + i;
      float peak = -INFINITY;
      for (int64_t j = 0; j < n; ++j)
        peak = std::max(peak, xr[j * inner]);
      double total = 0;
      for (int64_t j = 0; j < n; ++j)
        total += std::exp(static_cast<double>(xr[j * inner] - peak));
      for (int64_t j = 0; j < n; ++j)
        yr[j * inner] = static_cast<float>(std::exp(static_cast<double>(xr[j * inner] - peak)) / total);
    }
}

} // namespace

bool norms(const std::string &op, const ir::AttrMap &attrs, In in, In out) {
  if (op == "rmsnorm" || op == "rmsnorm_grad")
    rmsnorm(attrs, in, out, op == "rmsnorm_grad");
  else if (op == "layernorm" || op == "layernorm_grad")
    layernorm(attrs, in, out, op == "layernorm_grad");
  else if (op == "softmax")
    softmax(attrs, in[0], out[0]);
  else
    return false;
  return true;
}

} // namespace hspmd::runtime::kernels
