// PlanMemory.h - plan-memory: places every buffer of a DeviceProgram in one arena, reusing
// the space of buffers no longer live.
#pragma once

#include "ir/DeviceProgram.h"

namespace hspmd::passes {

/// Parameters and inputs live for the whole program; any other buffer from the instruction
/// that first writes it to the last that reads it. Buffers are placed largest first at the
/// lowest offset that overlaps no buffer live at the same time (first fit). Sets each
/// buffer's offset and the program's peak; returns the peak in bytes.
int64_t planMemory(ir::DeviceProgram &program);

} // namespace hspmd::passes
