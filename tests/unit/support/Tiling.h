// Tiling.h - test support: checks, element by element, that an annotation's owned regions
// tile a small tensor: every element is held, its partial sums are numbered 0..k-1 without
// gaps, and no two devices hold the same (replica, partial) copy of it.
#pragma once

#include "ir/Annotation.h"
#include "ir/AnnotationText.h"

#include <set>
#include <string>
#include <type_traits>
#include <vector>

namespace hspmd::testing {

/// Calls f(index) for every element of a tensor of `shape`, last dimension fastest; a
/// callback that returns bool stops the walk by returning false.
template <typename F> void forEachIndex(const std::vector<int64_t> &shape, F f) {
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t d : shape)
    if (d == 0)
      return;
  while (true) {
    const std::vector<int64_t> &at = index;
    if constexpr (std::is_void_v<std::invoke_result_t<F &, const std::vector<int64_t> &>>)
      f(at);
    else if (!f(at))
      return;
    size_t d = shape.size();
    while (d > 0) {
      --d;
      if (++index[d] < shape[d])
        break;
      index[d] = 0;
      if (d == 0)
        return;
    }
    if (shape.empty())
      return;
  }
}

/// Returns "" when the annotation tiles `shape`, else what is wrong.
inline std::string tilingProblem(const ir::Annotation &annotation, const std::vector<int64_t> &shape) {
  const std::vector<int> devices = annotation.devices();
  std::vector<std::vector<ir::OwnedPiece>> pieces;
  for (int device : devices)
    pieces.push_back(ir::ownedRegion(annotation, shape, device));
  std::string problem;
  forEachIndex(shape, [&](const std::vector<int64_t> &index) {
    std::set<std::pair<int, int>> copies;
    std::set<int> partials;
    for (size_t i = 0; i < devices.size(); ++i) {
      if (pieces[i].empty())
        continue;
      const ir::Box &box = pieces[i][0].box;
      bool inside = true;
      for (size_t d = 0; d < shape.size(); ++d)
        inside = inside && index[d] >= box.lo[d] && index[d] < box.hi[d];
      if (!inside)
        continue;
      if (!copies.insert({pieces[i][0].replica, pieces[i][0].partial}).second)
        problem = "two devices hold the same copy under " + ir::printAnnotation(annotation);
      partials.insert(pieces[i][0].partial);
    }
    if (problem.empty() && partials.empty())
      problem = "an element has no holder under " + ir::printAnnotation(annotation);
    else if (problem.empty() && *partials.rbegin() + 1 != static_cast<int>(partials.size()))
      problem = "an element misses a partial sum under " + ir::printAnnotation(annotation);
    return problem.empty();
  });
  return problem;
}

} // namespace hspmd::testing
