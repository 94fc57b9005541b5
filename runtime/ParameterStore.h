// ParameterStore.h - parameters and optimizer state as whole (global) tensors, independent
// of any plan: devices copy their regions in and out, so a checkpoint saved under one plan
// loads under any other. Initial values come from the model's init attributes and a seed.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace hspmd::runtime {

struct CheckpointError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A parameter of the model: its global shape and how it starts ("normal" with `std`,
/// "zeros", "ones").
struct ParamSpec {
  std::string name;
  std::vector<int64_t> shape;
  std::string init = "normal";
  double std = 0.02;
};

struct GlobalTensor {
  std::vector<int64_t> shape;
  std::vector<float> data;
};

struct ParameterStore {
  std::string model;                           // the model's name and parameter list, checked on load
  int64_t step = 0;                            // optimizer steps taken
  std::map<std::string, GlobalTensor> tensors; // "wte", "wte.adam_m", ...

  /// Fresh parameters: each drawn from its own stream (seed and name), the same under
  /// every plan; no optimizer state yet (it starts at zero).
  static ParameterStore initial(const std::string &model, const std::vector<ParamSpec> &params, uint64_t seed);
  /// A fingerprint of a model: its name and each parameter's name and shape.
  static std::string fingerprint(const std::string &modelName, const std::vector<ParamSpec> &params);

  /// Writes a checkpoint: a JSON header line (model, step, tensor names and shapes) and
  /// the fp32 data, little-endian, in header order.
  void save(const std::string &path) const;
  /// Reads a checkpoint and checks it is of `model` (a fingerprint); throws CheckpointError
  /// naming the file and what differs.
  static ParameterStore load(const std::string &path, const std::string &model);
};

} // namespace hspmd::runtime
