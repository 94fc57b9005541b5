// Regions.h - copying boxes between dense row-major tensors: slices of a buffer into a
// message and back, parts of one layout into another, concat/split along a dimension.
#pragma once

#include "ir/Annotation.h"

#include <cstdint>
#include <vector>

namespace hspmd::runtime {

/// `index` - `origin`, element by element (a missing element of `origin` is 0): where a global
/// index lies in a buffer whose region starts at `origin`, or a box's extent from its hi and lo.
std::vector<int64_t> minus(const std::vector<int64_t> &index, const std::vector<int64_t> &origin);

/// Copies (or, with `add`, adds: f32, or bf16 when `elementBytes` is 2) the box of extent `size` starting at `srcLo` in
/// `src` (of shape `srcShape`) to the box starting at `dstLo` in `dst`. Innermost contiguous
/// runs move with memcpy.
void copyBox(int elementBytes, const void *src, const std::vector<int64_t> &srcShape, const std::vector<int64_t> &srcLo,
             void *dst, const std::vector<int64_t> &dstShape, const std::vector<int64_t> &dstLo,
             const std::vector<int64_t> &size, bool add = false);

} // namespace hspmd::runtime
