// DeviceTypes.h - which device type of a cluster file (stdlib/devices.toml: H100, A100, ...)
// a GPU is, from the name CUDA gives it (cudaDeviceProp::name): each process of a run on
// GPUs of several kinds reads its own. Host-side; tested without a GPU.
#pragma once

#include "runtime/Offload.h"

#include <algorithm>
#include <cctype>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace hspmd::runtime::gpu {

/// The type of `types` that names the GPU called `gpuName`: the first word of the name (split
/// at spaces and dashes, case aside) that is a type. Given "NVIDIA A100-SXM4-80GB" and
/// {"H100", "A100"}: "A100"; "NVIDIA H200" is not an "H20". None when no word is a type.
inline std::optional<std::string> deviceTypeOf(const std::string &gpuName, const std::vector<std::string> &types) {
  auto upper = [](std::string text) {
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    return text;
  };
  std::string word;
  auto match = [&]() -> std::optional<std::string> {
    for (const std::string &type : types)
      if (!word.empty() && upper(type) == upper(word))
        return type;
    return std::nullopt;
  };
  for (char c : gpuName + " ") {
    if (c == ' ' || c == '-') {
      if (auto type = match())
        return type;
      word.clear();
    } else {
      word += c;
    }
  }
  return std::nullopt;
}

/// What device `device`'s process says when the GPU it runs on, called `gpuName`, is not the
/// type `planned` its plan's cluster gives it: the plan's layers, shares and memory were
/// chosen for that type. "" when it is, or when `planned` is not one of the GPU types `types`
/// (a plan made for CPU threads, run on a GPU).
inline std::string gpuTypeMismatch(int device, const std::string &gpuName, const std::string &planned,
                                   const std::vector<std::string> &types) {
  if (std::find(types.begin(), types.end(), planned) == types.end())
    return "";
  const std::optional<std::string> actual = deviceTypeOf(gpuName, types);
  if (actual == planned)
    return "";
  const bool an = std::string("AEFHILMNORSX").find(planned[0]) != std::string::npos; // "an H100", as spoken
  return "device " + std::to_string(device) + " runs on '" + gpuName + "' (" +
         (actual ? *actual : std::string("not a type of the plan's cluster")) + "), but the plan was made for " +
         (an ? "an " : "a ") + planned + " there: its layers, shares and memory are for that";
}

/// The device types a plan's cluster gives its devices, by the plan's programs.
using PlanDeviceTypes = std::vector<std::pair<const std::map<int, ir::DeviceProgram> *, std::map<int, std::string>>>;

/// `offload`, which also says on stderr (`who`: warning: ..., once per device and plan) where a
/// device's GPU is not the type its plan gives it (gpuTypeMismatch against `types`).
inline OffloadFactory warningOfGpuTypes(OffloadFactory offload, PlanDeviceTypes planned, std::vector<std::string> types,
                                        std::string who) {
  struct Told {
    std::mutex mutex;
    std::set<std::pair<int, const void *>> said;
  };
  auto told = std::make_shared<Told>();
  return [=](const OffloadSite &site) {
    std::unique_ptr<Offload> made = offload(site);
    for (const auto &[plan, devices] : planned)
      if (plan == &site.plan)
        if (auto type = devices.find(site.program.device); type != devices.end()) {
          const std::string why = gpuTypeMismatch(site.program.device, made->name(), type->second, types);
          const std::lock_guard<std::mutex> lock(told->mutex);
          if (!why.empty() && told->said.insert({site.program.device, plan}).second)
            std::cerr << who << ": warning: " << why << "\n";
        }
    return made;
  };
}

} // namespace hspmd::runtime::gpu
