// Launch.h - how the CUDA kernels of runtime/gpu/ are launched, as host-side arithmetic that
// needs no GPU (tested on any machine): grid-stride loops over elements, one block per row
// for the row kernels (norms, cross-entropy), and the strides of numpy broadcasting packed
// into a fixed-size struct a kernel takes by value.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
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

} // namespace hspmd::runtime::gpu
