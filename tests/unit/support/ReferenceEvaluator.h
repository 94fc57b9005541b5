// ReferenceEvaluator.h - test support: evaluates a graph with concrete shapes in double
// precision, one straightforward loop nest per op (forward and backward ops). It is the
// oracle for gradient checks; speed is no concern.
#pragma once

#include "ir/Graph.h"

#include <map>
#include <random>
#include <string>
#include <vector>

namespace hspmd::testing {

struct Tensor {
  std::vector<int64_t> shape;
  std::vector<double> data;
  int64_t size() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
};

/// Random parameters and inputs for `graph` by name: floats from N(0, 0.5^2), integers (token
/// ids) uniform below `vocab`.
std::map<std::string, Tensor> randomLeaves(const ir::Graph &graph, std::mt19937 &rng, int64_t vocab);

/// Values of every op result, given the parameters and inputs by name.
std::map<const ir::Value *, Tensor> evaluate(const ir::Graph &graph, const std::map<std::string, Tensor> &leaves);

} // namespace hspmd::testing
