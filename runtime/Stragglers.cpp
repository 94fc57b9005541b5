// Stragglers.cpp - which device has become slower than it was (runtime/Stragglers.h).
#include "runtime/Stragglers.h"

#include <algorithm>

namespace hspmd::runtime {

namespace {

double median(std::vector<double> values) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

} // namespace

StragglerWatch::Verdict StragglerWatch::observe(int64_t step, const std::map<int, double> &seconds) {
  Verdict verdict;
  ++steps_;
  if (steps_ <= options_.warmup)
    return verdict;
  if (baseline_.empty()) { // calibrating
    for (const auto &[device, s] : seconds)
      calibration_[device].push_back(s);
    if (steps_ == options_.warmup + options_.baselineSteps) {
      for (const auto &[device, values] : calibration_)
        if (double m = median(values); m > 0)
          baseline_[device] = m;
      calibration_.clear();
    }
    return verdict;
  }
  std::map<int, double> ratio; // each device's time against its baseline
  for (const auto &[device, s] : seconds)
    if (auto b = baseline_.find(device); b != baseline_.end())
      ratio[device] = s / b->second;
  std::vector<double> all;
  for (const auto &[device, r] : ratio)
    all.push_back(r);
  const double typical = median(all);
  if (typical <= 0)
    return verdict;
  for (const auto &[device, r] : ratio) {
    const double relative = r / typical;
    auto &streak = streaks_[device];
    const bool off = relative >= options_.threshold || relative <= 1 / options_.threshold;
    // A streak is one direction: slower then faster is two.
    const bool sameWay = streak.empty() || (relative > 1) == (streak.back().second > 1);
    if (off && sameWay) {
      streak.emplace_back(step, relative);
      continue;
    }
    if (!streak.empty() && static_cast<int>(streak.size()) < options_.persistence) {
      std::vector<double> values;
      for (const auto &[at, value] : streak)
        values.push_back(value);
      verdict.flickers.push_back({device, streak.front().first, streak.back().first, median(values)});
    }
    streak.clear();
    if (off)
      streak.emplace_back(step, relative);
  }
  for (const auto &[device, streak] : streaks_)
    if (static_cast<int>(streak.size()) >= options_.persistence) {
      std::vector<double> values;
      for (const auto &[at, value] : streak)
        values.push_back(value);
      verdict.straggler = Streak{device, streak.front().first, streak.back().first, median(values)};
      break;
    }
  return verdict;
}

void StragglerWatch::restart() {
  steps_ = 0;
  calibration_.clear();
  baseline_.clear();
  streaks_.clear();
}

void StragglerWatch::accept(const Streak &streak) {
  if (auto b = baseline_.find(streak.device); b != baseline_.end())
    b->second *= streak.ratio;
  streaks_.erase(streak.device);
}

double StragglerWatch::speed(int device) const {
  auto it = speeds_.find(device);
  return it == speeds_.end() ? 1.0 : it->second;
}

void StragglerWatch::adopt(const Streak &streak) {
  speeds_[streak.device] = speed(streak.device) / streak.ratio;
}

} // namespace hspmd::runtime
