// ElementwiseKernels.cuh - the elementwise kernels of the GPU (Kernels.cu's "add" ... "relu",
// "broadcast", "constant"): grid-stride loops with numpy broadcasting, each operand and the
// result in f32 or in bf16 storage (Bf16Bits), computed in f32. A bf16 operand is read as its
// float (exact) and a bf16 result rounded to the nearest, ties to even, quiet NaNs kept: the
// rounding of runtime/Bf16.h, so that a kernel on bf16 tensors writes bit for bit what the f32
// kernel on widened copies, rounded, writes (what runKernel did for every kernel before), at
// a third of the memory traffic: an op on bf16 activations reads and writes 2 bytes an element
// instead of widening to 4, computing, and rounding back.
//
// Compiled by nvcc for Kernels.cu, and by the host compiler for
// tests/unit/runtime/GpuEmulatedKernelsTest.cpp, which runs them on CPU threads
// (runtime/gpu/Emulation.h).
#pragma once

#include "runtime/gpu/Emulation.h"
#include "runtime/gpu/Launch.h"

#include <cstdint>
#include <cstring>
#include <math.h>

namespace hspmd::runtime::gpu {

/// A bf16 element in memory: a float's upper 16 bits.
struct Bf16Bits {
  uint16_t bits;
};

HSPMD_HOST_DEVICE inline float floatOfBits(uint32_t bits) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(bits);
#else
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
#endif
}
HSPMD_HOST_DEVICE inline uint32_t bitsOfFloat(float value) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(value);
#else
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
#endif
}

HSPMD_HOST_DEVICE inline float loadElement(float x) {
  return x;
}
HSPMD_HOST_DEVICE inline float loadElement(Bf16Bits x) {
  return floatOfBits(static_cast<uint32_t>(x.bits) << 16);
}
HSPMD_HOST_DEVICE inline void storeElement(float *at, float value) {
  *at = value;
}
/// `value` rounded to bf16 as runtime/Bf16.h rounds it (to the nearest, ties to even; NaNs quiet).
HSPMD_HOST_DEVICE inline uint16_t bf16BitsOf(float value) {
  const uint32_t bits = bitsOfFloat(value);
  return static_cast<uint16_t>((bits & 0x7fffffffu) > 0x7f800000u ? (bits >> 16) | 0x40u
                                                                  : (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}
HSPMD_HOST_DEVICE inline void storeElement(Bf16Bits *at, float value) {
  at->bits = bf16BitsOf(value);
}

// The ops, as runtime/kernels/Elementwise.cpp's in float.
struct Add {
  HSPMD_HOST_DEVICE float operator()(float a, float b) const { return a + b; }
};
struct Sub {
  HSPMD_HOST_DEVICE float operator()(float a, float b) const { return a - b; }
};
struct Mul {
  HSPMD_HOST_DEVICE float operator()(float a, float b) const { return a * b; }
};
struct Div {
  HSPMD_HOST_DEVICE float operator()(float a, float b) const { return a / b; }
};
struct First { // broadcast: the first operand's element
  HSPMD_HOST_DEVICE float operator()(float a, float) const { return a; }
};
struct GeluGrad {
  HSPMD_HOST_DEVICE float operator()(float x, float dy) const {
    const float cdf = 0.5f * (1.0f + erff(x * static_cast<float>(M_SQRT1_2)));
    const float pdf = expf(-0.5f * x * x) * static_cast<float>(0.5 * M_2_SQRTPI * M_SQRT1_2);
    return dy * (cdf + x * pdf);
  }
};
struct SiluGrad {
  HSPMD_HOST_DEVICE float operator()(float x, float dy) const {
    const float s = 1.0f / (1.0f + expf(-x));
    return dy * (s + x * s * (1 - s));
  }
};
struct ReluGrad {
  HSPMD_HOST_DEVICE float operator()(float x, float dy) const { return x > 0 ? dy : 0.0f; }
};
struct Neg {
  HSPMD_HOST_DEVICE float operator()(float x) const { return -x; }
};
struct Gelu {
  HSPMD_HOST_DEVICE float operator()(float x) const {
    return x * 0.5f * (1.0f + erff(x * static_cast<float>(M_SQRT1_2)));
  }
};
struct Silu {
  HSPMD_HOST_DEVICE float operator()(float x) const { return x / (1.0f + expf(-x)); }
};
struct Relu {
  HSPMD_HOST_DEVICE float operator()(float x) const { return x > 0 ? x : 0.0f; }
};

template <typename A, typename B, typename Y, typename F>
HSPMD_KERNEL void binaryKernel(const A *a, const B *b, Y *y, int64_t n, BroadcastStrides s, F f) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t rest = i, ia = 0, ib = 0;
    for (int d = s.rank - 1; d >= 0; --d) {
      const int64_t at = rest % s.out[d];
      rest /= s.out[d];
      ia += at * s.a[d];
      ib += at * s.b[d];
    }
    storeElement(y + i, f(loadElement(a[ia]), loadElement(b[ib])));
  }
}

template <typename X, typename Y, typename F> HSPMD_KERNEL void unaryKernel(const X *x, Y *y, int64_t n, F f) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    storeElement(y + i, f(loadElement(x[i])));
}

template <typename Y> HSPMD_KERNEL void fillKernel(Y *y, int64_t n, float value) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    storeElement(y + i, value);
}

} // namespace hspmd::runtime::gpu
