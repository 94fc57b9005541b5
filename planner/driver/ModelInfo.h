// ModelInfo.h - what a training run needs to know of the model beyond its DevicePrograms
// (`hspmc train` compiles and runs them with the runtime's executor).
#pragma once

#include "ir/Graph.h"
#include "runtime/Run.h"

#include <string>

namespace hspmd::driver {

/// The parameters (global shapes, initialisers), global batch and vocabulary of a model.
runtime::ModelInfo modelInfo(const ir::Graph &graph);

} // namespace hspmd::driver
