// Math.h - branch-free float functions for the kernels' vectorised loops (the C library's are
// calls, which keep a loop scalar). Compiled with -fno-trapping-math (runtime/CMakeLists.txt),
// their clamps become vector selects.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

namespace hspmd::runtime::kernels {

/// exp(x) for x <= 0 (a softmax's shifted scores, a normal density's exponent): 2^k e^r with
/// |r| <= ln 2 / 2, e^r by its degree-6 Taylor polynomial (relative error under 2e-7); below
/// -87, exp(-87) (about 1.6e-38); above 0, 1.
inline float expNonPositive(float x) {
  x = std::min(std::max(x, -87.0f), 0.0f);
  // k = round(x / ln 2) by the float adder (1.5 x 2^23 leaves no fraction bits), no call.
  const float k = (x * 1.44269504f + 12582912.0f) - 12582912.0f;
  const float r = x - k * 0.693359375f + k * 2.12194440e-4f;
  float p = 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const auto bits = static_cast<int32_t>(k + 127.0f) << 23;
  float scale;
  std::memcpy(&scale, &bits, 4);
  return p * scale;
}

/// erf(x) as a rational function of x (Eigen's and TensorFlow's float erf: an odd numerator of
/// degree 13 over an even denominator of degree 8, on x clamped to [-4, 4], where erf is +-1 in
/// floats; within a few float ulps of erf).
inline float erfRational(float x) {
  x = std::min(std::max(x, -4.0f), 4.0f);
  const float x2 = x * x;
  float p = -2.72614225801306e-10f;
  p = p * x2 + 2.77068142495902e-08f;
  p = p * x2 + -2.10102402082508e-06f;
  p = p * x2 + -5.69250639462346e-05f;
  p = p * x2 + -7.34990630326855e-04f;
  p = p * x2 + -2.95459980854025e-03f;
  p = p * x2 + -1.60960333262415e-02f;
  float q = -1.45660718464996e-05f;
  q = q * x2 + -2.13374055278905e-04f;
  q = q * x2 + -1.68282697438203e-03f;
  q = q * x2 + -7.37332916720468e-03f;
  q = q * x2 + -1.42647390514189e-02f;
  return x * p / q;
}

} // namespace hspmd::runtime::kernels
