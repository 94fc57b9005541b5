// Launch.h - how the CUDA kernels of runtime/gpu/ are launched, as host-side arithmetic that
// needs no GPU (tested on any machine): grid-stride loops over elements, one block per row
// for the row kernels (norms, cross-entropy), and the strides of numpy broadcasting packed
// into a fixed-size struct a kernel takes by value.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace hspmd::runtime::gpu {

struct LaunchShape {
  int64_t blocks = 0; // 0: nothing to launch
  int threads = 0;
  bool operator==(const LaunchShape &) const = default;
};

/// Threads per block of the elementwise kernels.
inline constexpr int kElementThreads = 256;
/// At most this many blocks: a grid-stride loop covers the rest (every SM of the largest GPUs
/// busy several times over, without a launch sized by billions of elements).
inline constexpr int64_t kMaxBlocks = 65536;

/// A grid-stride loop over `n` elements: enough blocks to give each thread one element, at
/// most kMaxBlocks. Given 1000: 4 blocks of 256; given 0: nothing.
inline LaunchShape elementwiseLaunch(int64_t n) {
  if (n <= 0)
    return {};
  const int64_t blocks = (n + kElementThreads - 1) / kElementThreads;
  return {blocks < kMaxBlocks ? blocks : kMaxBlocks, kElementThreads};
}

/// One block per row (grid-stride over rows past kMaxBlocks), its threads a multiple of a
/// warp covering the row's `columns` up to 1024 (each thread strides over the rest). Given
/// 8 rows of 64: 8 blocks of 64; 3 rows of 5000: 3 of 1024; rows of 1: 32 threads.
inline LaunchShape rowLaunch(int64_t rows, int64_t columns) {
  if (rows <= 0)
    return {};
  int threads = 32;
  while (threads < 1024 && threads < columns)
    threads *= 2;
  return {rows < kMaxBlocks ? rows : kMaxBlocks, threads};
}

/// The broadcast strides of up to kMaxRank dimensions: `out` the result's shape, `a` and `b`
/// each operand's strides over it (0 where it repeats), aligned at the right.
inline constexpr int kMaxRank = 8;
struct BroadcastStrides {
  int rank = 0;
  int64_t out[kMaxRank] = {}, a[kMaxRank] = {}, b[kMaxRank] = {};
};

/// The strides for `a` and `b` broadcast to `out` (numpy rules). Given a [2, 3], b [3], out
/// [2, 3]: a {3, 1}, b {0, 1}. Throws std::invalid_argument for shapes that do not broadcast or
/// a rank over kMaxRank.
inline BroadcastStrides broadcastStrides(const std::vector<int64_t> &a, const std::vector<int64_t> &b,
                                         const std::vector<int64_t> &out) {
  if (out.size() > static_cast<size_t>(kMaxRank))
    throw std::invalid_argument("rank " + std::to_string(out.size()) + " is over the GPU kernels' " +
                                std::to_string(kMaxRank));
  BroadcastStrides s;
  s.rank = static_cast<int>(out.size());
  auto fill = [&](const std::vector<int64_t> &shape, int64_t *strides) {
    if (shape.size() > out.size())
      throw std::invalid_argument("an operand has a higher rank than the result");
    int64_t stride = 1;
    for (size_t k = 0; k < shape.size(); ++k) {
      const size_t d = out.size() - 1 - k, e = shape.size() - 1 - k;
      if (shape[e] != out[d] && shape[e] != 1)
        throw std::invalid_argument("extent " + std::to_string(shape[e]) + " does not broadcast to " +
                                    std::to_string(out[d]));
      strides[d] = shape[e] == 1 ? 0 : stride;
      stride *= shape[e];
    }
  };
  for (size_t d = 0; d < out.size(); ++d)
    s.out[d] = out[d];
  fill(a, s.a);
  fill(b, s.b);
  return s;
}

/// A strided copy: for every index i of `size`, dst[dstBase + i . dst] = src[srcBase + i . src]
/// (in elements). Box copies between buffers and transposes are both this.
struct StridedCopy {
  int rank = 0;
  int64_t size[kMaxRank] = {}, src[kMaxRank] = {}, dst[kMaxRank] = {};
  int64_t srcBase = 0, dstBase = 0, count = 0;
};

/// Row-major strides of `shape`.
inline std::vector<int64_t> rowMajorStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * shape[d];
  return strides;
}

/// The box of extent `size` at `srcLo` in a tensor of `srcShape` copied to `dstLo` in one of
/// `dstShape` (runtime::copyBox's contract). Given a [1:3, 2:5] box of a [4, 6] tensor copied to
/// [0, 0] of a [2, 3] one: bases 8 and 0, strides {6, 1} and {3, 1}, 6 elements.
inline StridedCopy boxCopy(const std::vector<int64_t> &srcShape, const std::vector<int64_t> &srcLo,
                           const std::vector<int64_t> &dstShape, const std::vector<int64_t> &dstLo,
                           const std::vector<int64_t> &size) {
  if (size.size() > static_cast<size_t>(kMaxRank))
    throw std::invalid_argument("rank " + std::to_string(size.size()) + " is over the GPU kernels' " +
                                std::to_string(kMaxRank));
  StridedCopy c;
  c.rank = static_cast<int>(size.size());
  const std::vector<int64_t> from = rowMajorStrides(srcShape), to = rowMajorStrides(dstShape);
  c.count = 1;
  for (size_t d = 0; d < size.size(); ++d) {
    c.size[d] = size[d];
    c.src[d] = from[d];
    c.dst[d] = to[d];
    c.srcBase += srcLo[d] * from[d];
    c.dstBase += dstLo[d] * to[d];
    c.count *= size[d];
  }
  return c;
}

/// Dimensions d0 and d1 of a tensor of `shape` swapped, into a dense result: the result's
/// index walks the source with those two strides swapped. Given [2, 3, 4], 1, 2: size
/// {2, 4, 3}, source strides {12, 1, 4}, result strides {12, 3, 1}.
inline StridedCopy transposeCopy(std::vector<int64_t> shape, size_t d0, size_t d1) {
  if (d0 >= shape.size() || d1 >= shape.size())
    throw std::invalid_argument("dimension out of range");
  std::vector<int64_t> strides = rowMajorStrides(shape);
  std::swap(strides[d0], strides[d1]);
  std::swap(shape[d0], shape[d1]);
  StridedCopy c =
      boxCopy(shape, std::vector<int64_t>(shape.size(), 0), shape, std::vector<int64_t>(shape.size(), 0), shape);
  for (size_t d = 0; d < shape.size(); ++d)
    c.src[d] = strides[d];
  return c;
}

/// A sum over some dimensions: each result element (kept dimensions, in order) adds the
/// source elements over the reduced ones. Given [2, 3, 4] summed over {1}: kept sizes {2, 4},
/// strides {12, 1}; reduced size {3}, stride {4}; 3 terms each.
struct Reduction {
  int keptRank = 0, reducedRank = 0;
  int64_t keptSize[kMaxRank] = {}, keptStride[kMaxRank] = {}, reducedSize[kMaxRank] = {}, reducedStride[kMaxRank] = {};
  int64_t results = 1, terms = 1;
};

/// `reduced`: per dimension of `shape`, whether it is summed away.
inline Reduction reduction(const std::vector<int64_t> &shape, const std::vector<bool> &reduced) {
  if (shape.size() > static_cast<size_t>(kMaxRank) || reduced.size() != shape.size())
    throw std::invalid_argument("a reduction of rank " + std::to_string(shape.size()) + " the GPU kernels cannot do");
  Reduction r;
  const std::vector<int64_t> strides = rowMajorStrides(shape);
  for (size_t d = 0; d < shape.size(); ++d) {
    if (reduced[d]) {
      r.reducedSize[r.reducedRank] = shape[d];
      r.reducedStride[r.reducedRank++] = strides[d];
      r.terms *= shape[d];
    } else {
      r.keptSize[r.keptRank] = shape[d];
      r.keptStride[r.keptRank++] = strides[d];
      r.results *= shape[d];
    }
  }
  return r;
}

} // namespace hspmd::runtime::gpu
