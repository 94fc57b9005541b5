// Bf16.h - bfloat16 on the host: the storage type of activations and their messages under
// `--precision bf16` (docs/runtime.md). A bf16 value is a float's upper 16 bits, rounded to
// the nearest (ties to even) as CUDA's __float2bfloat16 does; the kernels compute in float on
// widened copies (runKernel) and round what they write.
#pragma once

#include <cstdint>
#include <cstring>

namespace hspmd::runtime {

inline uint16_t toBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) // NaN stays a (quiet) NaN
    return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

inline float fromBf16(uint16_t value) {
  const uint32_t bits = static_cast<uint32_t>(value) << 16;
  float out;
  std::memcpy(&out, &bits, 4);
  return out;
}

// Whole arrays, written without branches so that the compiler can vectorize them (toBf16's
// rounding, element by element).
inline void widenBf16(const void *from, float *to, int64_t count) {
  const auto *in = static_cast<const uint16_t *>(from);
  for (int64_t i = 0; i < count; ++i) {
    const uint32_t bits = static_cast<uint32_t>(in[i]) << 16;
    std::memcpy(to + i, &bits, 4);
  }
}

inline void narrowToBf16(const float *from, void *to, int64_t count) {
  auto *out = static_cast<uint16_t *>(to);
  for (int64_t i = 0; i < count; ++i) {
    uint32_t bits;
    std::memcpy(&bits, from + i, 4);
    const uint32_t rounded = (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16, quiet = (bits >> 16) | 0x40u;
    out[i] = static_cast<uint16_t>((bits & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);
  }
}

} // namespace hspmd::runtime
