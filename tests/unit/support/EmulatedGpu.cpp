// EmulatedGpu.cpp - test support: runtime/gpu/GpuKernels.h on CPU threads, for the tests that run
// runtime/gpu/GpuOffload.cpp (compiled into the same test binary) without a GPU. "GPU memory" is
// host memory, a stream is nothing, and runKernel is Dispatch.cuh's dispatch over the kernel
// table with the products on a reference GEMM (ReferenceGemm.h) in place of cuBLAS: what
// Kernels.cu runs on a GPU, but for cuBLAS and the CUDA runtime. Launches run at most
// kBlocks blocks (runtime/gpu/Emulation.h's BlockCap: every kernel is a grid-stride loop).
#include "tests/unit/support/EmulatedGpu.h"
#include "runtime/gpu/Dispatch.cuh"
#include "runtime/gpu/GpuKernels.h"
#include "runtime/gpu/LayoutKernels.cuh"
#include "runtime/gpu/MatmulKernels.cuh"
#include "tests/unit/support/EmulatedKernelTable.h"
#include "tests/unit/support/ReferenceGemm.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>

namespace {

std::mutex allocated;
std::map<const void *, int64_t> sizes; // of the buffers alive (under `allocated`)
int64_t inUse = 0;

} // namespace

namespace hspmd::testing {

int64_t emulatedGpuInUse() {
  const std::lock_guard lock(allocated);
  return inUse;
}

const std::map<std::string, runtime::gpu::Runner> &emulatedKernelTable() {
  return runtime::gpu::kernelTable();
}

bool emulatedReadsBf16(const std::string &op, std::span<const runtime::TensorView> inputs,
                       std::span<const runtime::TensorView> outputs) {
  return runtime::gpu::readsBf16(op, inputs, outputs);
}

} // namespace hspmd::testing

namespace hspmd::runtime::gpu {

namespace {
constexpr int64_t kBlocks = 2;
} // namespace

bool gpuAvailable(std::string *) {
  return true;
}

int gpuCount() {
  return 1;
}

void useGpu(int) {}

std::string gpuName(int) {
  return "emulated GPU (CPU threads)";
}

std::pair<int64_t, int64_t> gpuMemory() {
  const int64_t limit = testing::emulatedGpuMemory;
  return {limit - testing::emulatedGpuInUse(), limit};
}

bool loadBlas(std::string *) {
  return true;
}

GpuStream::GpuStream() : fault_(new int64_t(0)) {}
GpuStream::~GpuStream() {
  delete fault_;
}
void GpuStream::synchronize() { // a stream is nothing: only the fault word to read
  throwFault(std::exchange(*fault_, 0));
}

DeviceBuffer::DeviceBuffer(int64_t bytes) {
  const std::lock_guard lock(allocated);
  if (const int64_t limit = testing::emulatedGpuMemory; limit > 0 && inUse + bytes > limit)
    throw KernelError("cudaMalloc: out of memory");
  data_ = std::calloc(static_cast<size_t>(std::max<int64_t>(bytes, 1)), 1);
  if (!data_)
    throw KernelError("out of memory for an emulated GPU buffer");
  sizes[data_] = bytes;
  inUse += bytes;
}

DeviceBuffer::~DeviceBuffer() {
  {
    const std::lock_guard lock(allocated);
    if (auto it = sizes.find(data_); it != sizes.end()) {
      inUse -= it->second;
      sizes.erase(it);
    }
  }
  std::free(data_);
}

void DeviceBuffer::upload(const void *host, int64_t bytes, int64_t offset) {
  std::memcpy(static_cast<char *>(data_) + offset, host, static_cast<size_t>(bytes));
}

void DeviceBuffer::download(void *host, int64_t bytes, int64_t offset) const {
  std::memcpy(host, static_cast<const char *>(data_) + offset, static_cast<size_t>(bytes));
}

void copyBox(int elementBytes, const void *src, const std::vector<int64_t> &srcShape, const std::vector<int64_t> &srcLo,
             void *dst, const std::vector<int64_t> &dstShape, const std::vector<int64_t> &dstLo,
             const std::vector<int64_t> &size, bool add, GpuStream &) {
  const emulation::BlockCap cap(kBlocks);
  stridedCopy(src, dst, elementBytes, boxCopy(srcShape, srcLo, dstShape, dstLo, size), add, nullptr);
}

void zeroBytes(void *dst, int64_t bytes, GpuStream &) {
  std::memset(dst, 0, static_cast<size_t>(bytes));
}

void copyToGpu(void *dst, const void *src, int64_t bytes, GpuStream &stream) {
  std::memcpy(dst, src, static_cast<size_t>(bytes));
  stream.synchronize(); // as Kernels.cu's
}

void copyToHost(void *dst, const void *src, int64_t bytes, GpuStream &stream) {
  std::memcpy(dst, src, static_cast<size_t>(bytes));
  stream.synchronize();
}

void roundToBf16(const float *in, void *out, int64_t n, GpuStream &) {
  const emulation::BlockCap cap(kBlocks);
  if (const LaunchShape shape = elementwiseLaunch(n); shape.blocks)
    launchKernel(shape.blocks, shape.threads, 0, nullptr, roundToBf16Kernel, in, static_cast<uint16_t *>(out), n);
}

void fusedMatmul(const FusedProduct &product, GpuStream &) {
  const emulation::BlockCap cap(kBlocks);
  fusedMatmulWith(testing::ReferenceGemm{}, product, nullptr);
}

std::vector<std::string> gpuKernelNames() {
  return dispatchedKernelNames();
}

void runKernel(const std::string &op, const ir::AttrMap &attrs, std::span<const TensorView> inputs,
               std::span<const TensorView> outputs, const KernelContext &context, GpuStream &stream) {
  const emulation::BlockCap cap(kBlocks);
  KernelContext checked = context;
  checked.fault = stream.fault();
  dispatchKernel(op, attrs, inputs, outputs, checked, nullptr,
                 [](In in, In out) { matmulWith(testing::ReferenceGemm{}, in, out, nullptr); });
}

} // namespace hspmd::runtime::gpu
