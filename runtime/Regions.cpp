// Regions.cpp - copying boxes between row-major tensors (runtime/Regions.h).
#include "runtime/Regions.h"
#include "runtime/Bf16.h"

#include <algorithm>
#include <cstring>

namespace hspmd::runtime {

std::vector<int64_t> minus(const std::vector<int64_t> &index, const std::vector<int64_t> &origin) {
  std::vector<int64_t> out(index.size());
  for (size_t i = 0; i < index.size(); ++i)
    out[i] = index[i] - (i < origin.size() ? origin[i] : 0);
  return out;
}

void copyBox(int elementBytes, const void *src, const std::vector<int64_t> &srcShape, const std::vector<int64_t> &srcLo,
             void *dst, const std::vector<int64_t> &dstShape, const std::vector<int64_t> &dstLo,
             const std::vector<int64_t> &size, bool add) {
  const size_t rank = size.size();
  for (int64_t s : size)
    if (s <= 0)
      return;
  // Adding: float elements, or bf16 ones (2 bytes) added in float and rounded.
  auto addRun = [elementBytes](const char *a, char *b, int64_t count) {
    if (elementBytes == 2) {
      const auto *x = reinterpret_cast<const uint16_t *>(a);
      auto *y = reinterpret_cast<uint16_t *>(b);
      for (int64_t i = 0; i < count; ++i)
        y[i] = toBf16(fromBf16(y[i]) + fromBf16(x[i]));
      return;
    }
    const auto *x = reinterpret_cast<const float *>(a);
    auto *y = reinterpret_cast<float *>(b);
    for (int64_t i = 0; i < count; ++i)
      y[i] += x[i];
  };
  if (rank == 0) {
    if (add)
      addRun(static_cast<const char *>(src), static_cast<char *>(dst), 1);
    else
      std::memcpy(dst, src, static_cast<size_t>(elementBytes));
    return;
  }
  // Element strides of both tensors.
  std::vector<int64_t> srcStride(rank, 1), dstStride(rank, 1);
  for (size_t d = rank; d-- > 1;) {
    srcStride[d - 1] = srcStride[d] * srcShape[d];
    dstStride[d - 1] = dstStride[d] * dstShape[d];
  }
  // Merge trailing dimensions that are whole in both tensors into one contiguous run.
  size_t inner = rank - 1;
  int64_t run = size[inner];
  while (inner > 0 && size[inner] == srcShape[inner] && size[inner] == dstShape[inner] && srcLo[inner] == 0 &&
         dstLo[inner] == 0) {
    --inner;
    run *= size[inner];
  }
  int64_t srcAt = 0, dstAt = 0;
  for (size_t d = 0; d < rank; ++d) {
    srcAt += srcLo[d] * srcStride[d];
    dstAt += dstLo[d] * dstStride[d];
  }
  std::vector<int64_t> index(inner, 0);
  const auto *from = static_cast<const char *>(src);
  auto *to = static_cast<char *>(dst);
  while (true) {
    if (add) {
      addRun(from + srcAt * elementBytes, to + dstAt * elementBytes, run);
    } else {
      std::memcpy(to + dstAt * elementBytes, from + srcAt * elementBytes, static_cast<size_t>(run * elementBytes));
    }
    size_t d = inner;
    while (d-- > 0) {
      srcAt += srcStride[d];
      dstAt += dstStride[d];
      if (++index[d] < size[d])
        break;
      srcAt -= srcStride[d] * size[d];
      dstAt -= dstStride[d] * size[d];
      index[d] = 0;
    }
    if (d == static_cast<size_t>(-1))
      return;
  }
}

} // namespace hspmd::runtime
