// ModelInfo.h - what a training run needs to know of the model beyond its DevicePrograms
// (`hspmc train` compiles and runs them with the runtime's executor).
#pragma once

#include "frontend/Diagnostics.h"
#include "ir/Graph.h"
#include "runtime/Run.h"

#include <string>

namespace hspmd::driver {

/// The parameters (global shapes, initialisers), global batch and vocabulary of a model.
runtime::ModelInfo modelInfo(const ir::Graph &graph);

/// Whether `hspmc train` (and a built binary) can feed the model: its inputs are `tokens`
/// and `targets` ([B, S] integers, what --data gives). (That it returns one number, the
/// loss, lint checks: HS117.) Reports each input it cannot feed at the model's code, with
/// `command` naming who needs it. Returns whether there was none.
bool checkTrainable(const ir::Graph &graph, const std::string &command, frontend::DiagnosticEngine &diags);

} // namespace hspmd::driver
