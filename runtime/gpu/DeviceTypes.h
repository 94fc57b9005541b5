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

} // namespace hspmd::runtime::gpu
