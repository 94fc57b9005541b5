// Files.h - what a path is, asked before it is opened: every input of hspmd (a model, a plan, a
// cluster, data, a checkpoint, a fault trace, lengths) is read whole, from a file; every output
// is checked before the work that ends in writing it.
#pragma once

#include <string>
#include <vector>

namespace hspmd::ir {

/// Why `path` cannot be read as an input file: "it is a directory", or "it is not a regular
/// file ..." for a device or a pipe (reading /dev/zero never ends; opening a pipe waits for a
/// writer). "" where it can be, and where nothing is there: callers say that in their own words.
std::string notAFile(const std::string &path);

/// Why a file cannot be written at `path` ("" where it can): asked before the work that ends
/// in writing it (hspmc plan's -o, hspmc train's --save, --losses, --trace), so that a mistyped
/// path fails at once rather than after the planning or the training. The file is opened (and,
/// where it did not exist, created and removed again): permissions alone do not say it, for
/// root or on a read-only or special file system.
std::string unwritable(const std::string &path);

/// A file a command reads, for readByTheCommand: where it is and what it is ("the training
/// data (--data)"). An empty path is none.
struct ReadFile {
  std::string path, what;
};
/// Why an output at `path` would destroy an input ("it is WHAT, which the command reads";
/// "" where it is none of `inputs`): the same file by any name (a link, `./a`). Asked with
/// unwritable: a slip of the hand wrote a checkpoint over the training data, a plan over its
/// model, a trace over the plan.
std::string readByTheCommand(const std::string &path, const std::vector<ReadFile> &inputs);

/// Writes `text` to `path`, replacing what was there; "" where every byte reached the file,
/// otherwise why not ("No space left on device"). The stream is closed before it is asked: a
/// full disk or a quota shows only when the last bytes are flushed, and a file checked before
/// that would be reported written while it is cut short. A regular file cut short is removed.
std::string writeWhole(const std::string &path, const std::string &text);

/// Flushes standard output; "" where everything printed reached it, otherwise why not. Every
/// command asks before it exits 0: `hspmc dump-ir ... > full-disk/ir.txt` must not succeed.
std::string unflushedOutput();

} // namespace hspmd::ir
