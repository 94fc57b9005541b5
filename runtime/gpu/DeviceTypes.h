// DeviceTypes.h - which device type of a cluster file (stdlib/devices.toml: H100, A100, ...)
// a GPU is, from the name CUDA gives it (cudaDeviceProp::name): each process of a run on
// GPUs of several kinds reads its own. Host-side; tested without a GPU.
#pragma once

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
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

} // namespace hspmd::runtime::gpu
