// RandomAnnotation.h - test support: random valid HSPMD annotations on up to 16 devices:
// 1-3 disjoint subgroups of 1-4 devices, each a mesh of split, duplicate and partial axes,
// under a dup, partial or split placement (explicit sizes, ratios, or even pieces).
#pragma once

#include "ir/Annotation.h"

#include <algorithm>
#include <numeric>
#include <random>

namespace hspmd::testing {

inline ir::Annotation randomAnnotation(std::mt19937 &rng, const std::vector<int64_t> &shape, bool allowPartial = true) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  std::vector<int> ids(16);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  ir::Annotation annotation;
  const int groups = pick(1, 3);
  size_t next = 0;
  for (int g = 0; g < groups; ++g) {
    ir::LocalAnnotation local;
    int size = pick(1, 4);
    local.devices.assign(ids.begin() + static_cast<long>(next), ids.begin() + static_cast<long>(next + size));
    next += static_cast<size_t>(size);
    while (size > 1 || local.axes.empty()) {
      int count = size == 4 && pick(0, 1) ? 2 : size;
      auto kind = static_cast<ir::AxisKind>(pick(0, allowPartial ? 2 : 1));
      local.axes.push_back(ir::MeshAxis{kind, pick(0, static_cast<int>(shape.size()) - 1), count});
      size /= count;
    }
    annotation.subgroups.push_back(local);
  }
  annotation.hetero.kind =
      static_cast<ir::HeteroKind>(pick(0, allowPartial ? 2 : 1) == 1 ? 2 : pick(0, allowPartial ? 1 : 0));
  if (annotation.hetero.kind == ir::HeteroKind::Split) {
    annotation.hetero.dim = pick(0, static_cast<int>(shape.size()) - 1);
    int mode = pick(0, 2);
    if (mode == 1) {
      annotation.hetero.ratio = true;
      for (int g = 0; g < groups; ++g)
        annotation.hetero.sizes.push_back(pick(1, 4));
    } else if (mode == 2) {
      int64_t left = shape[annotation.hetero.dim];
      for (int g = 0; g + 1 < groups; ++g) {
        int64_t size = pick(0, static_cast<int>(left));
        annotation.hetero.sizes.push_back(size);
        left -= size;
      }
      annotation.hetero.sizes.push_back(left);
    }
  }
  return annotation;
}

} // namespace hspmd::testing
