// StopReport.h - what a threads run says when a signal stops it (runtime/Run.h runThreads).
//
// A SIGINT (Ctrl-C), SIGTERM (a scheduler's kill) or SIGHUP (a closed terminal) ends a run at
// once, as before; the process now says so first, with what it kept:
//
//   hspmc train: error: stopped by SIGINT; the last checkpoint is run.ckpt, saved after step 10
//   (--load it to go on)
//
// and exits as the signal would (128 + its number to a shell). Only signals whose action is
// the default are taken (nohup's ignored SIGHUP stays ignored). MPI runs are ended by mpirun,
// and hspmc train's launcher reports those (runtime/MpiRun.h).
#pragma once

#include <cstdint>
#include <string>

namespace hspmd::runtime {

class StopReport {
public:
  /// Installs the handlers; `program` begins the message ("hspmc train", a binary's path).
  explicit StopReport(const std::string &program);
  /// Puts the actions back as they were.
  ~StopReport();
  StopReport(const StopReport &) = delete;
  StopReport &operator=(const StopReport &) = delete;

  /// A checkpoint was written: the message names it from now on.
  static void saved(const std::string &path, int64_t step);
};

} // namespace hspmd::runtime
