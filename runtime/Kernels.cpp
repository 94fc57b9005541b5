// Kernels.cpp - the CPU kernels, forward and backward, and the optimizers (runtime/Kernels.h).
#include "runtime/Kernels.h"
#include "runtime/Bf16.h"
#include "runtime/kernels/Parallel.h"

#include <algorithm>
#include <atomic>
#include <omp.h>

extern "C" void openblas_set_num_threads(int);
extern "C" int blas_thread_shutdown_(void) __attribute__((weak)); // not in every OpenBLAS build

namespace hspmd::runtime {

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

namespace kernels {

namespace {
std::atomic<int> &threadCount() {
  static std::atomic<int> threads{processThreads()};
  return threads;
}
} // namespace

int processThreads() {
  static const int threads = std::max(1, omp_get_max_threads()); // before anyone sets a count
  return threads;
}

void quietBlas() {
  openblas_set_num_threads(1);
  if (blas_thread_shutdown_) // OpenBLAS built with pthreads: its server's threads end
    blas_thread_shutdown_();
}

int kernelThreads() {
  return threadCount().load(std::memory_order_relaxed);
}

void setKernelThreads(int threads) {
  threadCount().store(std::max(1, threads), std::memory_order_relaxed);
}

std::vector<int64_t> stridesOf(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;)
    strides[d - 1] = strides[d] * shape[d];
  return strides;
}

std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &shape, const std::vector<int64_t> &to) {
  std::vector<int64_t> strides(to.size(), 0);
  const auto own = stridesOf(shape);
  const size_t offset = to.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d)
    strides[offset + d] = shape[d] == 1 ? 0 : own[d];
  return strides;
}

void expect(bool condition, const std::string &op, const std::string &what) {
  if (!condition)
    throw KernelError("kernel " + op + ": " + what);
}

} // namespace kernels

void runKernel(const std::string &op, const ir::AttrMap &attrs, std::span<const TensorView> inputs,
               std::span<const TensorView> outputs, const KernelContext &context) {
  using namespace kernels;
  // A kernel with only empty results (a device holding none of an unequal split) has nothing
  // to write.
  if (!outputs.empty() &&
      std::all_of(outputs.begin(), outputs.end(), [](const TensorView &t) { return t.numel() == 0; }))
    return;
  // bf16 tensors: the kernel runs in float on widened copies, and what it wrote is rounded
  // back (outputs are widened too: a kernel may add to what its output holds). The copies are
  // the calling thread's, kept from call to call; conversions run on the kernels' threads.
  auto bf16 = [](const TensorView &t) { return t.dtype == ir::DType::BF16; };
  if (std::any_of(inputs.begin(), inputs.end(), bf16) || std::any_of(outputs.begin(), outputs.end(), bf16)) {
    thread_local std::vector<std::vector<float>> wide;
    size_t used = 0;
    auto widened = [&](std::span<const TensorView> views) {
      std::vector<TensorView> out(views.begin(), views.end());
      for (TensorView &t : out)
        if (bf16(t)) {
          if (wide.size() <= used)
            wide.emplace_back();
          std::vector<float> &copy = wide[used++];
          copy.resize(static_cast<size_t>(t.numel()));
          const auto *from = static_cast<const char *>(t.data);
          parallelFor(t.numel(), 1 << 15, [&](int64_t begin, int64_t end) {
            widenBf16(from + 2 * begin, copy.data() + begin, end - begin);
          });
          t = TensorView{copy.data(), ir::DType::F32, t.shape};
        }
      return out;
    };
    const std::vector<TensorView> in = widened(inputs), out = widened(outputs);
    runKernel(op, attrs, in, out, context);
    for (size_t i = 0; i < outputs.size(); ++i)
      if (bf16(outputs[i])) {
        auto *to = static_cast<char *>(outputs[i].data);
        const float *from = out[i].f32();
        parallelFor(outputs[i].numel(), 1 << 15,
                    [&](int64_t begin, int64_t end) { narrowToBf16(from + begin, to + 2 * begin, end - begin); });
      }
    return;
  }
  if (elementwise(op, attrs, inputs, outputs) || matmul(op, attrs, inputs, outputs) ||
      layout(op, attrs, inputs, outputs) || norms(op, attrs, inputs, outputs) ||
      attention(op, attrs, inputs, outputs, context) || embeddingAndLoss(op, attrs, inputs, outputs, context) ||
      optimizer(op, attrs, inputs, outputs, context))
    return;
  throw KernelError("no CPU kernel named '" + op + "'");
}

std::vector<std::string> kernelNames() {
  return {"constant", "add", "sub", "mul", "div", "neg", "gelu", "silu", "relu", "gelu_grad", "silu_grad", "relu_grad",
          "matmul", "reshape", "transpose", "broadcast", "sum", "mean", "unbind", "split", "concat", "slice", "pad",
          "softmax", "rmsnorm", "layernorm", "rmsnorm_grad", "layernorm_grad", "attention", "attention_grad",
          "embedding", "embedding_grad", "cross_entropy", "cross_entropy_grad", "adamw", "sgd",
          // the steps of the vocabulary-parallel cross-entropy (runtime/kernels/EmbeddingAndLoss.cpp)
          "vocab_parallel_max", "vocab_parallel_sums", "vocab_parallel_loss", "vocab_parallel_grad"};
}

} // namespace hspmd::runtime
