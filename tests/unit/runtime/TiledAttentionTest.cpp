// The tiled attention kernels of the GPU (runtime/gpu/TiledAttention.cuh), compiled for the host
// and run on CPU threads (runtime/gpu/Emulation.h), against the CPU kernel within 1e-5 relative
// (GpuKernels.Attention's bound on a GPU): any machine, CI included. On a GPU,
// GpuKernels.Attention runs them for real.
#include "runtime/gpu/TiledAttention.cuh"
#include "runtime/Kernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace hspmd;
namespace tiled = runtime::gpu::tiled;

namespace {

struct Case {
  std::string name;
  int64_t B, S, T, H, Hk, D, Dv;
  bool causal;
  int64_t queryOffset, keyOffset;
  std::vector<int32_t> starts; // documents: [B, seq] block starts; empty: none
  int64_t seq = 0;
  unsigned blocks = 3; // fewer than the items: the grid-stride loop takes the rest
};

std::vector<float> randoms(size_t count, std::mt19937 &random) {
  std::uniform_real_distribution<float> values(-2, 2);
  std::vector<float> out(count);
  for (float &x : out)
    x = values(random);
  return out;
}

void expectNear(const std::vector<float> &got, const std::vector<float> &want, const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-5 * std::max(1.0f, std::fabs(want[i]))) << what << " element " << i;
}

void check(const Case &c) {
  SCOPED_TRACE(c.name);
  std::mt19937 random(11);
  const auto q = randoms(static_cast<size_t>(c.B * c.S * c.H * c.D), random);
  const auto k = randoms(static_cast<size_t>(c.B * c.T * c.Hk * c.D), random);
  const auto v = randoms(static_cast<size_t>(c.B * c.T * c.Hk * c.Dv), random);
  const auto dy = randoms(static_cast<size_t>(c.B * c.S * c.H * c.Dv), random);
  ir::AttrMap attrs{{"causal", c.causal}, {"query_offset", c.queryOffset}, {"key_offset", c.keyOffset}};
  runtime::KernelContext context;
  if (!c.starts.empty()) {
    context.blockStarts = c.starts.data();
    context.seq = c.seq;
  }
  auto view = [](const std::vector<float> &data, std::vector<int64_t> shape) {
    return runtime::TensorView{const_cast<float *>(data.data()), ir::DType::F32, std::move(shape)};
  };
  const std::vector<int64_t> qShape{c.B, c.S, c.H, c.D}, kShape{c.B, c.T, c.Hk, c.D}, vShape{c.B, c.T, c.Hk, c.Dv},
      yShape{c.B, c.S, c.H, c.Dv};
  std::vector<float> y(dy.size()), dq(q.size()), dk(k.size()), dv(v.size());
  const std::vector<runtime::TensorView> forwardIn{view(q, qShape), view(k, kShape), view(v, vShape)},
      forwardOut{view(y, yShape)}, backwardIn{view(q, qShape), view(k, kShape), view(v, vShape), view(dy, yShape)},
      backwardOut{view(dq, qShape), view(dk, kShape), view(dv, vShape)};
  runtime::runKernel("attention", attrs, forwardIn, forwardOut, context);
  runtime::runKernel("attention_grad", attrs, backwardIn, backwardOut, context);

  const runtime::gpu::AttentionDims n{c.B,
                                      c.S,
                                      c.T,
                                      c.H,
                                      c.Hk,
                                      c.D,
                                      c.Dv,
                                      c.H / c.Hk,
                                      static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.D))),
                                      c.causal,
                                      c.queryOffset,
                                      c.keyOffset,
                                      c.seq,
                                      c.starts.empty() ? nullptr : c.starts.data()};
  ASSERT_TRUE(tiled::takes(c.D, c.Dv));
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(c.blocks, tiled::items(n)));
  std::vector<float> gy(y.size(), -7.0f), gdq(q.size(), -7.0f), gdk(k.size(), 0.0f), gdv(v.size(), 0.0f);
  runtime::gpu::emulation::launch(blocks, tiled::kThreads, tiled::forwardSharedBytes(c.D, c.Dv),
                                  tiled::attentionForward, n, q.data(), k.data(), v.data(), gy.data());
  expectNear(gy, y, "y");
  runtime::gpu::emulation::launch(blocks, tiled::kThreads, tiled::backwardSharedBytes(c.D, c.Dv),
                                  tiled::attentionBackward, n, q.data(), k.data(), v.data(), dy.data(), gdq.data(),
                                  gdk.data(), gdv.data());
  expectNear(gdq, dq, "dq");
  expectNear(gdk, dk, "dk");
  expectNear(gdv, dv, "dv");
}

} // namespace

TEST(TiledAttention, MatchesTheCpuKernel) {
  // Documents of a batch of 2 rows x 80 tokens: row 0 split at 30 and 61, row 1 one document.
  std::vector<int32_t> starts(160);
  for (int32_t i = 0; i < 80; ++i)
    starts[static_cast<size_t>(i)] = i < 30 ? 0 : i < 61 ? 30 : 61;
  const std::vector<Case> cases = {
      {"causal, one tile", 1, 16, 16, 2, 2, 8, 8, true, 0, 0, {}},
      // Rows and keys past a tile, GQA (4 query heads on 2 KV heads), D != Dv.
      {"causal, GQA, 70 rows", 2, 70, 70, 4, 2, 16, 12, true, 0, 0, {}},
      {"not causal", 1, 45, 45, 2, 1, 8, 8, false, 0, 0, {}},
      // A context-parallel piece: the second half's queries over every key.
      {"piece, query offset", 2, 40, 80, 2, 2, 8, 8, true, 40, 0, {}},
      // Keys of a later piece: the first rows see none of them (their output and dQ zero).
      {"piece, key offset", 1, 64, 32, 2, 2, 8, 8, true, 0, 20, {}},
      {"documents", 2, 80, 80, 2, 1, 8, 8, true, 0, 0, starts, 80},
      {"documents, piece", 2, 40, 40, 2, 1, 8, 8, true, 40, 40, starts, 80},
      // The largest heads the tiled kernels take.
      {"heads of 128", 1, 40, 40, 1, 1, 128, 128, true, 0, 0, {}, 0, 2},
      // GpuKernels.Attention's largest tiled case: 10 key tiles, 4 heads adding to each KV head.
      {"GpuKernels.Attention's", 2, 150, 300, 4, 2, 128, 128, true, 150, 0, {}, 0, 3},
  };
  for (const Case &c : cases)
    check(c);
}

// The row kernels stay for heads larger than kMaxHead (their launch is in AttentionKernels.cu).
TEST(TiledAttention, TakesHeadsUpTo128) {
  EXPECT_TRUE(tiled::takes(64, 64));
  EXPECT_TRUE(tiled::takes(128, 128));
  EXPECT_FALSE(tiled::takes(160, 128));
  EXPECT_FALSE(tiled::takes(128, 256));
  EXPECT_FALSE(tiled::takes(0, 8));
}
