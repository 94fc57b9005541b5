// The kernels' speed paths (runtime/kernels/): the vectorisable exp and erf against the C
// library, the blocked attention kernel on shapes of several query and key blocks (causal in
// global positions, grouped KV heads, documents) against a plain double-precision loop nest,
// and results that do not depend on the number of kernel threads (bit for bit).
#include "runtime/Kernels.h"
#include "runtime/kernels/Math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <vector>

extern "C" void openblas_set_num_threads(int);
extern "C" int openblas_get_num_threads(void);
extern "C" int blas_thread_shutdown_(void) __attribute__((weak));
extern "C" void cblas_sgemm(int order, int transA, int transB, int m, int n, int k, float alpha, const float *a,
                            int lda, const float *b, int ldb, float beta, float *c, int ldc);

using namespace hspmd;
using runtime::TensorView;

namespace {

int processTasks() {
  int tasks = 0;
  for ([[maybe_unused]] const auto &task : std::filesystem::directory_iterator("/proc/self/task"))
    ++tasks;
  return tasks;
}

// hspmc stops OpenBLAS's own threads first (they spin for a while after it loads, in every
// process): OpenBLAS runs one thread, and the threads a multi-threaded product started end.
TEST(KernelThreads, QuietBlasEndsOpenBlasThreads) {
  if (!blas_thread_shutdown_ || runtime::kernels::processThreads() < 2)
    GTEST_SKIP() << "OpenBLAS without its pthreads server, or one core: it starts no threads";
  openblas_set_num_threads(2);
  const int n = 512;
  std::vector<float> a(static_cast<size_t>(n) * n, 1.0f), c(a.size(), 0.0f);
  cblas_sgemm(101, 111, 111, n, n, n, 1.0f, a.data(), n, a.data(), n, 0.0f, c.data(), n); // row-major, no transposes
  EXPECT_EQ(c[0], static_cast<float>(n));
  const int running = processTasks();
  runtime::kernels::quietBlas();
  EXPECT_EQ(openblas_get_num_threads(), 1);
  EXPECT_LT(processTasks(), running);
}

TEST(KernelMath, ExpAndErfFollowTheCLibrary) {
  double worstExp = 0, worstErf = 0;
  for (double x = -87.0; x <= 0.0; x += 0.0137) {
    const double want = std::exp(x);
    worstExp = std::max(worstExp, std::abs(runtime::kernels::expNonPositive(static_cast<float>(x)) -
                                           std::exp(static_cast<double>(static_cast<float>(x)))) /
                                      want);
  }
  for (double x = -6.0; x <= 6.0; x += 0.001)
    worstErf = std::max(worstErf, std::abs(runtime::kernels::erfRational(static_cast<float>(x)) -
                                           std::erf(static_cast<double>(static_cast<float>(x)))));
  EXPECT_LT(worstExp, 4e-7);
  EXPECT_LT(worstErf, 5e-7);
  EXPECT_EQ(runtime::kernels::expNonPositive(0.0f), 1.0f);
  EXPECT_EQ(runtime::kernels::erfRational(10.0f), 1.0f);
  EXPECT_EQ(runtime::kernels::erfRational(-10.0f), -1.0f);
}

struct Buffer {
  std::vector<float> data;
  std::vector<int64_t> shape;
  TensorView view() { return TensorView{data.data(), ir::DType::F32, shape}; }
};

Buffer randomBuffer(std::vector<int64_t> shape, std::mt19937 &rng) {
  Buffer b{{}, std::move(shape)};
  int64_t n = 1;
  for (int64_t d : b.shape)
    n *= d;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t i = 0; i < n; ++i)
    b.data.push_back(normal(rng));
  return b;
}

Buffer zeros(std::vector<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return Buffer{std::vector<float>(static_cast<size_t>(n), 0.0f), std::move(shape)};
}

// An attention problem: q [B, S, H, D], k/v [B, T, Hk, D], dy [B, S, H, D], causal at the
// offsets, with documents when `starts` is given ([B, seq] block starts).
struct Problem {
  int64_t B, S, T, H, Hk, D, queryOffset, keyOffset, seq;
  std::vector<int32_t> starts;
};

// Forward output and dq, dk, dv, in double, by the definition.
std::vector<std::vector<double>> reference(const Problem &p, const Buffer &q, const Buffer &k, const Buffer &v,
                                           const Buffer &dy) {
  std::vector<double> y(q.data.size(), 0), dq(q.data.size(), 0), dk(k.data.size(), 0), dv(v.data.size(), 0);
  const double scale = 1 / std::sqrt(static_cast<double>(p.D));
  auto at = [](int64_t b, int64_t s, int64_t h, int64_t d, int64_t S, int64_t H, int64_t D) {
    return static_cast<size_t>(((b * S + s) * H + h) * D + d);
  };
  for (int64_t b = 0; b < p.B; ++b)
    for (int64_t h = 0; h < p.H; ++h)
      for (int64_t s = 0; s < p.S; ++s) {
        const int64_t kh = h / (p.H / p.Hk), pos = p.queryOffset + s;
        std::vector<double> prob(static_cast<size_t>(p.T), 0);
        double peak = -INFINITY, total = 0;
        auto sees = [&](int64_t t) {
          const int64_t key = p.keyOffset + t;
          return key <= pos && (p.starts.empty() || key >= p.starts[static_cast<size_t>(b * p.seq + pos)]);
        };
        for (int64_t t = 0; t < p.T; ++t)
          if (sees(t)) {
            double dot = 0;
            for (int64_t d = 0; d < p.D; ++d)
              dot += q.data[at(b, s, h, d, p.S, p.H, p.D)] * double(k.data[at(b, t, kh, d, p.T, p.Hk, p.D)]);
            prob[static_cast<size_t>(t)] = dot * scale;
            peak = std::max(peak, dot * scale);
          }
        for (int64_t t = 0; t < p.T; ++t)
          if (sees(t))
            total += prob[static_cast<size_t>(t)] = std::exp(prob[static_cast<size_t>(t)] - peak);
        for (int64_t t = 0; t < p.T; ++t)
          prob[static_cast<size_t>(t)] = sees(t) ? prob[static_cast<size_t>(t)] / total : 0.0;
        // y = P v; dP = dy v^T; dS = P (dP - sum P dP); dq = dS k scale; dk += dS q scale; dv += P dy
        std::vector<double> dP(static_cast<size_t>(p.T), 0);
        double rowDot = 0;
        for (int64_t t = 0; t < p.T; ++t) {
          for (int64_t d = 0; d < p.D; ++d) {
            y[at(b, s, h, d, p.S, p.H, p.D)] += prob[static_cast<size_t>(t)] * v.data[at(b, t, kh, d, p.T, p.Hk, p.D)];
            dP[static_cast<size_t>(t)] +=
                dy.data[at(b, s, h, d, p.S, p.H, p.D)] * double(v.data[at(b, t, kh, d, p.T, p.Hk, p.D)]);
          }
          rowDot += prob[static_cast<size_t>(t)] * dP[static_cast<size_t>(t)];
        }
        for (int64_t t = 0; t < p.T; ++t) {
          const double ds = prob[static_cast<size_t>(t)] * (dP[static_cast<size_t>(t)] - rowDot) * scale;
          for (int64_t d = 0; d < p.D; ++d) {
            dq[at(b, s, h, d, p.S, p.H, p.D)] += ds * k.data[at(b, t, kh, d, p.T, p.Hk, p.D)];
            dk[at(b, t, kh, d, p.T, p.Hk, p.D)] += ds * q.data[at(b, s, h, d, p.S, p.H, p.D)];
            dv[at(b, t, kh, d, p.T, p.Hk, p.D)] +=
                prob[static_cast<size_t>(t)] * dy.data[at(b, s, h, d, p.S, p.H, p.D)];
          }
        }
      }
  return {y, dq, dk, dv};
}

// The kernel's forward output and gradients with `threads` kernel threads.
std::vector<std::vector<float>> kernel(const Problem &p, Buffer q, Buffer k, Buffer v, Buffer dy, int threads) {
  const int before = runtime::kernels::kernelThreads();
  runtime::kernels::setKernelThreads(threads);
  const ir::AttrMap attrs = {{"causal", true}, {"query_offset", p.queryOffset}, {"key_offset", p.keyOffset}};
  runtime::KernelContext context;
  if (!p.starts.empty()) {
    context.blockStarts = p.starts.data();
    context.seq = p.seq;
  }
  Buffer y = zeros(q.shape), dq = zeros(q.shape), dk = zeros(k.shape), dv = zeros(v.shape);
  std::vector<TensorView> in = {q.view(), k.view(), v.view()}, out = {y.view()};
  runtime::runKernel("attention", attrs, in, out, context);
  in.push_back(dy.view());
  out = {dq.view(), dk.view(), dv.view()};
  runtime::runKernel("attention_grad", attrs, in, out, context);
  runtime::kernels::setKernelThreads(before);
  return {y.data, dq.data, dk.data, dv.data};
}

void checkAttention(const Problem &p) {
  std::mt19937 rng(5);
  const Buffer q = randomBuffer({p.B, p.S, p.H, p.D}, rng), k = randomBuffer({p.B, p.T, p.Hk, p.D}, rng),
               v = randomBuffer({p.B, p.T, p.Hk, p.D}, rng), dy = randomBuffer({p.B, p.S, p.H, p.D}, rng);
  const auto want = reference(p, q, k, v, dy);
  const auto one = kernel(p, q, k, v, dy, 1), four = kernel(p, q, k, v, dy, 4);
  const char *names[] = {"out", "dq", "dk", "dv"};
  for (size_t r = 0; r < 4; ++r) {
    EXPECT_EQ(one[r], four[r]) << names[r] << " differs between 1 and 4 threads";
    double worst = 0;
    size_t where = 0;
    for (size_t i = 0; i < want[r].size(); ++i) {
      const double error = std::abs(one[r][i] - want[r][i]) / (1e-2 + std::abs(want[r][i]));
      if (error > worst) {
        worst = error;
        where = i;
      }
    }
    EXPECT_LT(worst, 2e-4) << names[r] << "[" << where << "] = " << one[r][where] << ", reference " << want[r][where];
  }
}

// 300 queries and keys: five query blocks of 64 and two key blocks of 256 (the several-block
// path of the backward pass), grouped heads.
TEST(KernelBlocks, AttentionOverSeveralBlocksMatchesTheDefinition) {
  checkAttention(Problem{2, 300, 300, 4, 2, 8, 0, 0, 300, {}});
}

// A context-parallel piece: queries 100..229 of the sequence against keys 0..179 (some rows see
// every key, some none of a block), one block of keys.
TEST(KernelBlocks, AttentionAtOffsetsMatchesTheDefinition) {
  checkAttention(Problem{1, 130, 180, 2, 2, 8, 100, 0, 300, {}});
  checkAttention(Problem{1, 64, 100, 2, 1, 8, 0, 40, 140, {}}); // rows before the first key see nothing
}

// Documents of 37, 250, 13 and 300 tokens packed in rows of 300: block-diagonal causal masks,
// several key blocks.
TEST(KernelBlocks, AttentionWithDocumentsMatchesTheDefinition) {
  Problem p{2, 300, 300, 2, 2, 8, 0, 0, 300, {}};
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t s = 0; s < 300; ++s)
      p.starts.push_back(static_cast<int32_t>(b == 1 ? 0 : s < 37 ? 0 : s < 287 ? 37 : 287));
  checkAttention(p);
}

// Matmuls split over threads (by rows, by columns) and the elementwise kernels give the same
// bits with 1 and 3 threads.
TEST(KernelBlocks, ResultsDoNotDependOnTheThreads) {
  const int before = runtime::kernels::kernelThreads();
  std::mt19937 rng(9);
  for (auto [M, K, N] : {std::tuple<int64_t, int64_t, int64_t>{700, 96, 200}, {20, 300, 900}}) {
    Buffer a = randomBuffer({M, K}, rng), b = randomBuffer({K, N}, rng);
    std::vector<std::vector<float>> results;
    for (int threads : {1, 3}) {
      runtime::kernels::setKernelThreads(threads);
      Buffer y = zeros({M, N});
      std::vector<TensorView> in = {a.view(), b.view()}, out = {y.view()};
      runtime::runKernel("matmul", {}, in, out);
      results.push_back(y.data);
    }
    EXPECT_EQ(results[0], results[1]) << M << "x" << K << "x" << N;
  }
  Buffer x = randomBuffer({300000}, rng), dy = randomBuffer({300000}, rng);
  for (const char *op : {"gelu", "gelu_grad", "add"}) {
    std::vector<std::vector<float>> results;
    for (int threads : {1, 3}) {
      runtime::kernels::setKernelThreads(threads);
      Buffer y = zeros({300000});
      std::vector<TensorView> in = {x.view()}, out = {y.view()};
      if (std::string(op) != "gelu")
        in.push_back(dy.view());
      runtime::runKernel(op, {}, in, out);
      results.push_back(y.data);
    }
    EXPECT_EQ(results[0], results[1]) << op;
  }
  runtime::kernels::setKernelThreads(before);
}

} // namespace
