// GeneratedDevice.h - all that a device source `hspmc build` writes includes (device_N.cpp:
// its program's text and its phase functions), so that each compiles in a fraction of a second
// (with runtime/Executor.h it took 2.5 s, all of it the headers).
#pragma once

#include <cstddef>

namespace hspmd::runtime {

class DeviceExecutor;

namespace generated {

/// Runs instruction `index` of the executor's program for micro-batch `microbatch`
/// (DeviceExecutor::instruction).
void instruction(DeviceExecutor &executor, size_t index, int microbatch);

} // namespace generated
} // namespace hspmd::runtime
