// Normalisations over the last dimension and softmax: RMSNorm and LayerNorm with their
// gradients (dx, and dw/db summed over this device's rows), accumulating in double. Rows run
// in parallel; dw and db add fixed chunks of rows, then the chunks' sums in order.
#include "runtime/Kernels.h"
#include "runtime/kernels/Parallel.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace hspmd::runtime::kernels {

namespace {

// Calls row(r, dw, db) for every row, in parallel chunks of rows; with `sums` > 0, each chunk
// adds into its own `sums` doubles (dw, then db), and the chunks' sums go into the outputs in
// chunk order (the same bits with any number of threads).
template <typename Row> void forRows(int64_t rows, int64_t n, int sums, std::vector<float *> outputs, Row row) {
  const int64_t grain = std::max<int64_t>(16, rows / 64);
  const int64_t chunks = (rows + grain - 1) / grain;
  std::vector<double> partial(static_cast<size_t>(sums > 0 ? chunks * n * sums : 0), 0.0);
  parallelFor(rows, grain, [&](int64_t begin, int64_t end) {
    double *own = sums > 0 ? partial.data() + begin / grain * n * sums : nullptr;
    for (int64_t r = begin; r < end; ++r)
      row(r, own, own ? own + n : nullptr);
  });
  for (int s = 0; s < sums; ++s)
    for (int64_t j = 0; j < n; ++j) {
      double total = 0;
      for (int64_t c = 0; c < chunks; ++c)
        total += partial[static_cast<size_t>((c * sums + s) * n + j)];
      outputs[static_cast<size_t>(s)][j] = static_cast<float>(total);
    }
}

void rmsnorm(const ir::AttrMap &attrs, In in, In out, bool grad) {
  const float *x = in[0].f32(), *w = in[1].f32();
  const int64_t n = in[0].shape.empty() ? 1 : in[0].shape.back(), rows = in[0].numel() / std::max<int64_t>(n, 1);
  const double eps = ir::floatAttr(attrs, "eps", 1e-5);
  forRows(rows, n, grad ? 1 : 0, grad ? std::vector<float *>{out[1].f32()} : std::vector<float *>{},
          [&](int64_t row, double *dw, double *) {
            const float *xr = x + row * n;
            double ms = 0;
            for (int64_t j = 0; j < n; ++j)
              ms += static_cast<double>(xr[j]) * xr[j];
            const double r = 1 / std::sqrt(ms / static_cast<double>(n) + eps);
            if (!grad) {
              float *y = out[0].f32() + row * n;
              for (int64_t j = 0; j < n; ++j)
                y[j] = static_cast<float>(xr[j] * r * w[j]);
              return;
            }
            const float *dy = in[2].f32() + row * n;
            double dot = 0;
            for (int64_t j = 0; j < n; ++j) {
              dw[j] += dy[j] * xr[j] * r;
              dot += static_cast<double>(dy[j]) * w[j] * xr[j] * r;
            }
            float *dx = out[0].f32() + row * n;
            for (int64_t j = 0; j < n; ++j)
              dx[j] = static_cast<float>(r * (dy[j] * w[j] - xr[j] * r * dot / static_cast<double>(n)));
          });
}

void layernorm(const ir::AttrMap &attrs, In in, In out, bool grad) {
  const float *x = in[0].f32(), *w = in[1].f32();
  const int64_t n = in[0].shape.empty() ? 1 : in[0].shape.back(), rows = in[0].numel() / std::max<int64_t>(n, 1);
  const double eps = ir::floatAttr(attrs, "eps", 1e-5);
  forRows(rows, n, grad ? 2 : 0, grad ? std::vector<float *>{out[1].f32(), out[2].f32()} : std::vector<float *>{},
          [&](int64_t row, double *dw, double *db) {
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
              return;
            }
            const float *dy = in[2].f32() + row * n;
            double sumG = 0, sumGX = 0;
            for (int64_t j = 0; j < n; ++j) {
              const double xhat = (xr[j] - mean) * r, g = static_cast<double>(dy[j]) * w[j];
              dw[j] += dy[j] * xhat;
              db[j] += dy[j];
              sumG += g;
              sumGX += g * xhat;
            }
            float *dx = out[0].f32() + row * n;
            for (int64_t j = 0; j < n; ++j) {
              const double xhat = (xr[j] - mean) * r, g = static_cast<double>(dy[j]) * w[j];
              dx[j] =
                  static_cast<float>(r * (g - sumG / static_cast<double>(n) - xhat * sumGX / static_cast<double>(n)));
            }
          });
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
