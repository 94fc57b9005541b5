// Autodiff.h - autodiff: appends the backward graph of a scalar loss to the graph.
//
// In the pass pipeline when a build trains (`hspmc dump-ir --train`): backward ops run on the
// stage of their forward op, and each parameter's gradient is brought to the parameter's
// layout (data-parallel gradient synchronisation). Checked numerically against finite
// differences (tests/unit/passes/AutodiffTest.cpp).
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
  /// Each backward op -> the forward op whose gradient rule made it (lower-plan runs it on
  /// that op's stage).
  std::map<const ir::Op *, const ir::Op *> origin;
};

/// Differentiates `loss` (a scalar) with respect to every parameter. Gradients of a value
/// used several times (tied embeddings) are summed into one.
Gradients buildGradients(ir::Graph &graph, ir::Value *loss);

} // namespace hspmd::passes
