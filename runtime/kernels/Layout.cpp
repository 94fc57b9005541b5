// Layout kernels: reshape, transpose, unbind/split/concat, slice/pad, and the sum and mean
// reductions.
#include "runtime/Kernels.h"
#include "runtime/Regions.h"

#include <algorithm>
#include <cblas.h>
#include <cstring>

namespace hspmd::runtime::kernels {

namespace {

int elementBytes(const TensorView &t) {
  return t.dtype == ir::DType::I64 ? 8 : t.dtype == ir::DType::F32 ? 4 : t.dtype == ir::DType::I32 ? 4 : 2;
}

void transpose(const ir::AttrMap &attrs, const TensorView &x, const TensorView &y) {
  const auto d0 = static_cast<size_t>(ir::intAttr(attrs, "dim0")), d1 = static_cast<size_t>(ir::intAttr(attrs, "dim1"));
  expect(d0 < x.shape.size() && d1 < x.shape.size(), "transpose", "dimension out of range");
  // y[i] = x[swap(i)]: walk y in order with x's strides permuted.
  auto strides = stridesOf(x.shape);
  std::swap(strides[d0], strides[d1]);
  const int bytes = elementBytes(x);
  if (x.dtype == ir::DType::F32 && std::max(d0, d1) + 1 == x.shape.size() && std::min(d0, d1) + 2 == x.shape.size()) {
    // The last two dimensions swap: a batch of matrix transposes, by OpenBLAS's out-of-place
    // transposing copy (bench_runtime: 0.42-0.64x of memcpy's speed, a tiled loop 0.14-0.20x).
    const int64_t rows = x.shape[x.shape.size() - 2], cols = x.shape.back();
    const int64_t count = rows * cols == 0 ? 0 : x.numel() / (rows * cols);
    const auto *src = static_cast<const float *>(x.data);
    auto *dst = static_cast<float *>(y.data);
    for (int64_t m = 0; m < count; ++m, src += rows * cols, dst += rows * cols)
      cblas_somatcopy(CblasRowMajor, CblasTrans, static_cast<blasint>(rows), static_cast<blasint>(cols), 1.0f, src,
                      static_cast<blasint>(cols), dst, static_cast<blasint>(rows));
    return;
  }
  const auto *src = static_cast<const char *>(x.data);
  auto *dst = static_cast<char *>(y.data);
  const size_t rank = y.shape.size();
  const int64_t total = y.numel();
  std::vector<int64_t> index(rank, 0);
  int64_t at = 0;
  for (int64_t i = 0; i < total; ++i) {
    std::memcpy(dst + i * bytes, src + at * bytes, static_cast<size_t>(bytes));
    for (size_t d = rank; d-- > 0;) {
      at += strides[d];
      if (++index[d] < y.shape[d])
        break;
      at -= strides[d] * y.shape[d];
      index[d] = 0;
    }
  }
}

// Copies `part` into (concat) or out of (split) `whole` at `offset` along `dim`.
void along(const TensorView &whole, const TensorView &part, size_t dim, int64_t offset, bool intoWhole) {
  std::vector<int64_t> lo(whole.shape.size(), 0), zero(part.shape.size(), 0);
  lo[dim] = offset;
  if (intoWhole)
    copyBox(elementBytes(part), part.data, part.shape, zero, whole.data, whole.shape, lo, part.shape);
  else
    copyBox(elementBytes(part), whole.data, whole.shape, lo, part.data, part.shape, zero, part.shape);
}

void reduce(const std::string &op, const ir::AttrMap &attrs, const TensorView &x, const TensorView &y) {
  const auto dims = ir::listAttr(attrs, "dims");
  std::vector<bool> reduced(x.shape.size(), dims.empty());
  for (const auto &d : dims)
    reduced.at(static_cast<size_t>(d.constant().value_or(0))) = true;
  // The result's strides seen from x's index space: 0 along reduced dimensions.
  std::vector<int64_t> kept;
  for (size_t d = 0; d < x.shape.size(); ++d)
    kept.push_back(reduced[d] ? 1 : x.shape[d]);
  auto strides = stridesOf(kept);
  int64_t count = 1;
  for (size_t d = 0; d < x.shape.size(); ++d)
    if (reduced[d]) {
      strides[d] = 0;
      count *= x.shape[d];
    }
  // Leading dimensions summed away: column sums of a [rows, columns] matrix, row by row.
  size_t leading = 0;
  while (leading < reduced.size() && reduced[leading])
    ++leading;
  bool rest = leading > 0;
  for (size_t d = leading; d < reduced.size(); ++d)
    rest = rest && !reduced[d] && !ir::boolAttr(attrs, "keepdim");
  if (rest) {
    const int64_t columns = y.numel(), rows = x.numel() / std::max<int64_t>(columns, 1);
    float *dst = y.f32();
    std::memset(dst, 0, static_cast<size_t>(columns) * 4);
    for (int64_t r = 0; r < rows; ++r) {
      const float *row = x.f32() + r * columns;
      for (int64_t c = 0; c < columns; ++c)
        dst[c] += row[c];
    }
    if (op == "mean")
      for (int64_t c = 0; c < columns; ++c)
        dst[c] /= static_cast<float>(rows);
    return;
  }
  std::vector<double> sums(static_cast<size_t>(y.numel()), 0.0);
  const float *src = x.f32();
  std::vector<int64_t> index(x.shape.size(), 0);
  int64_t at = 0;
  const int64_t total = x.numel();
  for (int64_t i = 0; i < total; ++i) {
    sums[static_cast<size_t>(at)] += src[i];
    for (size_t d = x.shape.size(); d-- > 0;) {
      at += strides[d];
      if (++index[d] < x.shape[d])
        break;
      at -= strides[d] * x.shape[d];
      index[d] = 0;
    }
  }
  const double scale = op == "mean" && count > 0 ? 1.0 / static_cast<double>(count) : 1.0;
  for (size_t i = 0; i < sums.size(); ++i)
    y.f32()[i] = static_cast<float>(sums[i] * scale);
}

} // namespace

std::vector<PartAlong> partsAlong(bool unbind, size_t dim, In parts) {
  std::vector<PartAlong> walked;
  int64_t offset = 0;
  for (const TensorView &part : parts) {
    TensorView view = part;
    if (unbind) // the removed dimension, as size 1
      view.shape.insert(view.shape.begin() + static_cast<long>(dim), 1);
    expect(dim < view.shape.size(), unbind ? "unbind" : "split or concat", "dimension out of range");
    walked.push_back({view, offset});
    offset += view.shape[dim];
  }
  return walked;
}

bool layout(const std::string &op, const ir::AttrMap &attrs, In in, In out) {
  if (op == "reshape") {
    expect(in[0].numel() == out[0].numel(), op, "element counts differ");
    if (in[0].data != out[0].data)
      std::memmove(out[0].data, in[0].data, static_cast<size_t>(in[0].numel() * elementBytes(in[0])));
  } else if (op == "transpose") {
    transpose(attrs, in[0], out[0]);
  } else if (op == "unbind" || op == "split") {
    const auto dim = static_cast<size_t>(ir::intAttr(attrs, "dim"));
    for (const PartAlong &part : partsAlong(op == "unbind", dim, out))
      along(in[0], part.view, dim, part.offset, false);
  } else if (op == "concat") {
    const auto dim = static_cast<size_t>(ir::intAttr(attrs, "dim"));
    for (const PartAlong &part : partsAlong(false, dim, in))
      along(out[0], part.view, dim, part.offset, true);
  } else if (op == "slice" || op == "pad") {
    const auto dim = static_cast<size_t>(ir::intAttr(attrs, "dim"));
    if (op == "slice") {
      std::vector<int64_t> lo(in[0].shape.size(), 0), zero(lo);
      lo[dim] = ir::intAttr(attrs, "start");
      copyBox(elementBytes(in[0]), in[0].data, in[0].shape, lo, out[0].data, out[0].shape, zero, out[0].shape);
    } else {
      std::memset(out[0].data, 0, static_cast<size_t>(out[0].numel() * elementBytes(out[0])));
      along(out[0], in[0], dim, ir::intAttr(attrs, "before"), true);
    }
  } else if (op == "sum" || op == "mean") {
    reduce(op, attrs, in[0], out[0]);
  } else {
    return false;
  }
  return true;
}

} // namespace hspmd::runtime::kernels
