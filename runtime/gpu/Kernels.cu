// Kernels.cu - the GPU's kernels (GpuKernels.h): runKernel (Dispatch.cuh's dispatch: bf16
// widened around the kernels that do not take it), matrix products through cuBLAS (no TF32: fp32 products; bf16
// ones on tensor cores under --precision bf16), and the GPU's memory, streams and devices. The
// other kernels are KernelTable.cuh's (also run on CPU threads by the tests).
#include "runtime/gpu/Dispatch.cuh"
#include "runtime/gpu/GpuKernels.h"
#include "runtime/gpu/KernelTable.cuh"
#include "runtime/gpu/MatmulKernels.cuh"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <type_traits>

namespace hspmd::runtime::gpu {

void check(cudaError_t status, const char *what) {
  if (status != cudaSuccess)
    throw KernelError(std::string(what) + ": " + cudaGetErrorString(status));
}

namespace {

using kernels::expect;

// cuBLAS, loaded when a stream first needs it (cublas()): linked, its libcublasLt's static
// initializers cost every process 60 ms as it starts, every hspmc command included.
#define HSPMD_SYMBOL_NAME(f) HSPMD_SYMBOL_NAME2(f) // cublas_v2.h's macros (cublasSgemm_v2) expanded
#define HSPMD_SYMBOL_NAME2(f) #f
struct Blas {
  decltype(&cublasCreate) create = nullptr;
  decltype(&cublasDestroy) destroy = nullptr;
  decltype(&cublasSetStream) setStream = nullptr;
  decltype(&cublasSetMathMode) setMathMode = nullptr;
  decltype(&cublasSgemm) sgemm = nullptr;
  // cublasGemmEx's C entry point (C++ also sees an inline overload taking a cudaDataType)
  cublasStatus_t (*gemmEx)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void *,
                           const void *, cudaDataType, int, const void *, cudaDataType, int, const void *, void *,
                           cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t) = nullptr;
  decltype(&cublasGetStatusString) statusString = nullptr;
};

const Blas &cublas() {
  static const Blas loaded = [] {
    // The toolkit's cuBLAS this was compiled against: by its soname (the executable's run path
    // names the toolkit's library folder), else in that folder.
    const std::string name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    void *library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
#ifdef HSPMD_CUBLAS_DIR
    if (!library)
      library = dlopen((std::string(HSPMD_CUBLAS_DIR) + "/" + name).c_str(), RTLD_NOW | RTLD_LOCAL);
#endif
    if (!library)
      throw KernelError("cannot load cuBLAS (" + name + "): " + dlerror());
    auto symbol = [&](const char *symbolName) {
      void *found = dlsym(library, symbolName);
      if (!found)
        throw KernelError(name + " has no " + symbolName);
      return found;
    };
    Blas b;
    b.create = reinterpret_cast<decltype(b.create)>(symbol(HSPMD_SYMBOL_NAME(cublasCreate)));
    b.destroy = reinterpret_cast<decltype(b.destroy)>(symbol(HSPMD_SYMBOL_NAME(cublasDestroy)));
    b.setStream = reinterpret_cast<decltype(b.setStream)>(symbol(HSPMD_SYMBOL_NAME(cublasSetStream)));
    b.setMathMode = reinterpret_cast<decltype(b.setMathMode)>(symbol(HSPMD_SYMBOL_NAME(cublasSetMathMode)));
    b.sgemm = reinterpret_cast<decltype(b.sgemm)>(symbol(HSPMD_SYMBOL_NAME(cublasSgemm)));
    b.gemmEx = reinterpret_cast<decltype(b.gemmEx)>(symbol(HSPMD_SYMBOL_NAME(cublasGemmEx)));
    b.statusString = reinterpret_cast<decltype(b.statusString)>(symbol(HSPMD_SYMBOL_NAME(cublasGetStatusString)));
    return b; // the library stays loaded for the process
  }();
  return loaded;
}

void checkBlas(cublasStatus_t status, const char *what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw KernelError(std::string(what) + ": " + cublas().statusString(status));
}

cudaStream_t streamOf(const GpuStream &s) {
  return static_cast<cudaStream_t>(s.stream());
}

// A product on cuBLAS (MatmulKernels.cuh's GemmArgs: column-major, either operand transposed). fp32:
// cublasSgemm (the handle's pedantic math: no TF32). bf16 operands (--precision bf16):
// cublasGemmEx on tensor cores, f32 accumulation, the result in its own type (bf16 activations,
// f32 weight gradients).
struct CublasGemm {
  cublasHandle_t handle;
  void operator()(const GemmArgs &g) const {
    const float one = 1.0f, zero = 0.0f;
    const cublasOperation_t opA = g.transA ? CUBLAS_OP_T : CUBLAS_OP_N, opB = g.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (!g.bf16Operands) {
      checkBlas(cublas().sgemm(handle, opA, opB, g.m, g.n, g.k, &one, static_cast<const float *>(g.A), g.lda,
                               static_cast<const float *>(g.B), g.ldb, &zero, static_cast<float *>(g.C), g.ldc),
                "cublasSgemm");
      return;
    }
    checkBlas(cublas().gemmEx(handle, opA, opB, g.m, g.n, g.k, &one, g.A, CUDA_R_16BF, g.lda, g.B, CUDA_R_16BF, g.ldb,
                              &zero, g.C, g.bf16Result ? CUDA_R_16BF : CUDA_R_32F, g.ldc, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT),
              "cublasGemmEx");
  }
};

// The handle's math mode for one bf16 product: cuBLAS's default (tensor cores), the pedantic
// one restored after it for the fp32 products.
class TensorCoreMath {
public:
  explicit TensorCoreMath(cublasHandle_t handle) : handle_(handle) {
    checkBlas(cublas().setMathMode(handle_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  }
  ~TensorCoreMath() { cublas().setMathMode(handle_, CUBLAS_PEDANTIC_MATH); }
  TensorCoreMath(const TensorCoreMath &) = delete;
  TensorCoreMath &operator=(const TensorCoreMath &) = delete;

private:
  cublasHandle_t handle_;
};

// y = a b (MatmulKernels.cuh) on cuBLAS, a bf16 product on tensor cores.
void matmul(In in, In out, const GpuStream &s) {
  auto handle = static_cast<cublasHandle_t>(s.blas());
  std::optional<TensorCoreMath> math;
  if (std::any_of(in.begin(), in.end(), [](const TensorView &t) { return t.dtype == ir::DType::BF16; }) ||
      out[0].dtype == ir::DType::BF16)
    math.emplace(handle);
  matmulWith(CublasGemm{handle}, in, out, streamOf(s));
}

} // namespace

bool gpuAvailable(std::string *why) {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    if (why)
      *why = std::string("CUDA: ") + cudaGetErrorString(status);
    return false;
  }
  if (count == 0) {
    if (why)
      *why = "CUDA sees no GPU";
    return false;
  }
  return true;
}

int gpuCount() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

void useGpu(int ordinal) {
  check(cudaSetDevice(ordinal), "cudaSetDevice");
}

std::string gpuName(int device) {
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, device), "cudaGetDeviceProperties");
  return properties.name;
}

std::pair<int64_t, int64_t> gpuMemory() {
  size_t free = 0, total = 0;
  check(cudaMemGetInfo(&free, &total), "cudaMemGetInfo");
  return {static_cast<int64_t>(free), static_cast<int64_t>(total)};
}

bool loadBlas(std::string *why) {
  try {
    cublas();
    return true;
  } catch (const KernelError &e) {
    if (why)
      *why = e.what();
    return false;
  }
}

GpuStream::GpuStream() {
  cublas(); // before the stream: a cuBLAS that cannot be loaded leaves nothing behind
  cudaStream_t stream = nullptr;
  check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  stream_ = stream;
  cublasHandle_t handle = nullptr;
  checkBlas(cublas().create(&handle), "cublasCreate");
  blas_ = handle;
  checkBlas(cublas().setStream(handle, stream), "cublasSetStream");
  // fp32 products stay fp32 (no TF32 tensor cores): results comparable with the CPU's.
  checkBlas(cublas().setMathMode(handle, CUBLAS_PEDANTIC_MATH), "cublasSetMathMode");
  check(cudaMalloc(&fault_, sizeof(int64_t)), "cudaMalloc");
  check(cudaMemset(fault_, 0, sizeof(int64_t)), "cudaMemset");
}

GpuStream::~GpuStream() {
  if (fault_)
    cudaFree(fault_);
  if (blas_)
    cublas().destroy(static_cast<cublasHandle_t>(blas_));
  if (stream_)
    cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

void GpuStream::synchronize() {
  const auto stream = static_cast<cudaStream_t>(stream_);
  int64_t fault = 0;
  check(cudaMemcpyAsync(&fault, fault_, sizeof fault, cudaMemcpyDeviceToHost, stream), "cudaMemcpyAsync");
  check(cudaStreamSynchronize(stream), "a kernel on the GPU");
  if (fault != 0)
    check(cudaMemsetAsync(fault_, 0, sizeof fault, stream), "cudaMemsetAsync"); // the next step starts clean
  throwFault(fault);
}

DeviceBuffer::DeviceBuffer(int64_t bytes) {
  if (const cudaError_t status = cudaMalloc(&data_, static_cast<size_t>(std::max<int64_t>(bytes, 1)));
      status != cudaSuccess) {
    cudaGetLastError(); // a caller that can do without the memory goes on: the next check must not see this
    check(status, "cudaMalloc");
  }
}

DeviceBuffer::~DeviceBuffer() {
  cudaFree(data_);
}

void DeviceBuffer::upload(const void *host, int64_t bytes, int64_t offset) {
  check(cudaMemcpy(static_cast<char *>(data_) + offset, host, static_cast<size_t>(bytes), cudaMemcpyHostToDevice),
        "cudaMemcpy to the GPU");
}

void DeviceBuffer::download(void *host, int64_t bytes, int64_t offset) const {
  check(cudaMemcpy(host, static_cast<const char *>(data_) + offset, static_cast<size_t>(bytes), cudaMemcpyDeviceToHost),
        "cudaMemcpy from the GPU");
}

void copyBox(int elementBytes, const void *src, const std::vector<int64_t> &srcShape, const std::vector<int64_t> &srcLo,
             void *dst, const std::vector<int64_t> &dstShape, const std::vector<int64_t> &dstLo,
             const std::vector<int64_t> &size, bool add, GpuStream &stream) {
  stridedCopy(src, dst, elementBytes, boxCopy(srcShape, srcLo, dstShape, dstLo, size), add, streamOf(stream));
  check(cudaGetLastError(), "a copy on the GPU");
}

void zeroBytes(void *dst, int64_t bytes, GpuStream &stream) {
  check(cudaMemsetAsync(dst, 0, static_cast<size_t>(bytes), streamOf(stream)), "cudaMemsetAsync");
}

void copyToGpu(void *dst, const void *src, int64_t bytes, GpuStream &stream) {
  check(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyHostToDevice, streamOf(stream)),
        "cudaMemcpyAsync to the GPU");
  stream.synchronize();
}

void copyToHost(void *dst, const void *src, int64_t bytes, GpuStream &stream) {
  check(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDeviceToHost, streamOf(stream)),
        "cudaMemcpyAsync from the GPU");
  stream.synchronize();
}

void roundToBf16(const float *in, void *out, int64_t n, GpuStream &stream) {
  if (const LaunchShape shape = elementwiseLaunch(n); shape.blocks)
    launchKernel(shape.blocks, shape.threads, 0, streamOf(stream), roundToBf16Kernel, in, static_cast<uint16_t *>(out),
                 n);
  check(cudaGetLastError(), "rounding to bf16 on the GPU");
}

void fusedMatmul(const FusedProduct &product, GpuStream &stream) {
  auto handle = static_cast<cublasHandle_t>(stream.blas());
  std::optional<TensorCoreMath> math;
  if (bf16Product(product))
    math.emplace(handle);
  fusedMatmulWith(CublasGemm{handle}, product, streamOf(stream));
  check(cudaGetLastError(), "a product on the GPU");
}

std::vector<std::string> gpuKernelNames() {
  return dispatchedKernelNames();
}

void runKernel(const std::string &op, const ir::AttrMap &attrs, std::span<const TensorView> inputs,
               std::span<const TensorView> outputs, const KernelContext &context, GpuStream &stream) {
  KernelContext checked = context;
  checked.fault = stream.fault();
  dispatchKernel(op, attrs, inputs, outputs, checked, streamOf(stream),
                 [&](In in, In out) { matmul(in, out, stream); });
}

} // namespace hspmd::runtime::gpu
