// Autodiff.h - autodiff: appends the backward graph of a scalar loss to the graph.
//
// Not yet in the pass pipeline: placing backward ops on the stage of their forward op (and
// deducing their annotations there) is the next step of the programs issue. The pass is
// complete on its own and checked numerically against finite differences
// (tests/unit/passes/AutodiffTest.cpp).
#pragma once

#include "ir/Graph.h"
#include "passes/PassSupport.h"

#include <map>
#include <string>

namespace hspmd::passes {

struct Gradients {
  /// Parameter name -> its gradient, named "grad.<parameter>". A parameter the loss does not
  /// depend on has none.
  std::map<std::string, ir::Value *> params;
};

/// Differentiates `loss` (a scalar) with respect to every parameter. Gradients of a value
/// used several times (tied embeddings) are summed into one.
Gradients buildGradients(ir::Graph &graph, ir::Value *loss);

} // namespace hspmd::passes
