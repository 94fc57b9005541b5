// Files.h - what an input path is, asked before it is opened: every input of hspmd (a model, a
// plan, a cluster, data, a checkpoint, a fault trace, lengths) is read whole, from a file.
#pragma once

#include <string>

namespace hspmd::ir {

/// Why `path` cannot be read as an input file: "it is a directory", or "it is not a regular
/// file ..." for a device or a pipe (reading /dev/zero never ends; opening a pipe waits for a
/// writer). "" where it can be, and where nothing is there: callers say that in their own words.
std::string notAFile(const std::string &path);

} // namespace hspmd::ir
