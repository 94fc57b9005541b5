// Stragglers.h - hspmc train --stragglers: which device has become slower (or faster) than
// it was, from each step's compute times (docs/elastic.md, "Stragglers").
//
// Every device of a run feeds the same per-step times (each device's kernel time in the
// step, exchanged among the live devices) and so reaches the same verdicts: no agreement is
// needed to decide that a device is slow. A device's time is compared with its own baseline
// (the median of its first steps under the plan, after a warm-up step), relative to the
// other devices' (the median ratio): a machine that slows down as a whole slows no device
// relative to the others. A device is off when its relative time is at least `threshold`
// (or at most 1 / threshold); it is a straggler once it has been off `persistence` steps in a
// row. A shorter run of off steps (a flicker) is reported and changes nothing.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace hspmd::runtime {

class StragglerWatch {
public:
  struct Options {
    double threshold = 1.5; // a step at least this much slower (or faster) is off
    int persistence = 3;    // off this many steps in a row: a straggler
    int warmup = 1;         // steps of a plan not measured
    int baselineSteps = 3;  // steps whose median is a device's baseline
  };
  /// A run of off steps of one device.
  struct Streak {
    int device = 0;
    int64_t first = 0, last = 0; // steps
    double ratio = 1;            // median relative time over the streak (2: twice as slow)
  };
  /// What one step showed.
  struct Verdict {
    std::vector<Streak> flickers;    // streaks that ended shorter than `persistence`
    std::optional<Streak> straggler; // the device (lowest id first) that has been off long enough
  };

  explicit StragglerWatch(Options options) : options_(options) {}
  StragglerWatch() : StragglerWatch(Options{}) {}

  /// Step `step`'s compute seconds of each device that has work under the plan.
  Verdict observe(int64_t step, const std::map<int, double> &seconds);
  /// A new plan: baselines and streaks start again (the devices' speeds are kept).
  void restart();
  /// The device's time now is its new normal (the run stays on its plan): its baseline is
  /// the streak's, and its streak ends.
  void accept(const Streak &streak);
  /// A device's speed relative to its type, as measured so far (1: as the profile; 0.5: half).
  double speed(int device) const;
  /// After a switch made for `streak`: its device's speed is what the streak measured.
  void adopt(const Streak &streak);
  const std::map<int, double> &speeds() const { return speeds_; }

private:
  Options options_;
  int64_t steps_ = 0; // under the plan
  std::map<int, std::vector<double>> calibration_;
  std::map<int, double> baseline_;
  std::map<int, std::vector<std::pair<int64_t, double>>> streaks_; // device -> (step, relative time)
  std::map<int, double> speeds_;
};

} // namespace hspmd::runtime
