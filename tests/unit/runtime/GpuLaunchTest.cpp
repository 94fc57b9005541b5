// Host-side arithmetic of the CUDA kernels (runtime/gpu/Launch.h), tested without a GPU:
// launch shapes that cover every element and row, and numpy broadcasting as strides.
#include "runtime/Communicator.h"
#include "runtime/gpu/DeviceTypes.h"
#include "runtime/gpu/Launch.h"

#include <gtest/gtest.h>

using namespace hspmd::runtime::gpu;

TEST(GpuLaunch, ElementwiseCoversEveryElementWithinTheBlockCap) {
  EXPECT_EQ(elementwiseLaunch(0), (LaunchShape{0, 0}));
  EXPECT_EQ(elementwiseLaunch(1), (LaunchShape{1, 256}));
  EXPECT_EQ(elementwiseLaunch(1000), (LaunchShape{4, 256}));
  EXPECT_EQ(elementwiseLaunch(1024), (LaunchShape{4, 256}));
  EXPECT_EQ(elementwiseLaunch(int64_t{1} << 40), (LaunchShape{kMaxBlocks, 256})); // the grid-stride loop does the rest
}

TEST(GpuLaunch, RowsGetABlockEachOfWarpMultiples) {
  EXPECT_EQ(rowLaunch(8, 64), (LaunchShape{8, 64}));
  EXPECT_EQ(rowLaunch(3, 5000), (LaunchShape{3, 1024}));
  EXPECT_EQ(rowLaunch(5, 1), (LaunchShape{5, 32}));
  EXPECT_EQ(rowLaunch(5, 100), (LaunchShape{5, 128}));
  EXPECT_EQ(rowLaunch(0, 100), (LaunchShape{0, 0}));
  EXPECT_EQ(rowLaunch(int64_t{1} << 20, 64).blocks, kMaxBlocks);
}

TEST(GpuLaunch, BroadcastStridesFollowNumpy) {
  const BroadcastStrides s = broadcastStrides({2, 3}, {3}, {2, 3});
  EXPECT_EQ(s.rank, 2);
  EXPECT_EQ(std::vector<int64_t>(s.a, s.a + 2), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(std::vector<int64_t>(s.b, s.b + 2), (std::vector<int64_t>{0, 1}));
  const BroadcastStrides t = broadcastStrides({4, 1, 5}, {3, 1}, {4, 3, 5});
  EXPECT_EQ(std::vector<int64_t>(t.a, t.a + 3), (std::vector<int64_t>{5, 0, 1}));
  EXPECT_EQ(std::vector<int64_t>(t.b, t.b + 3), (std::vector<int64_t>{0, 1, 0}));
  EXPECT_THROW(broadcastStrides({2, 3}, {4}, {2, 3}), std::invalid_argument);
  EXPECT_THROW(broadcastStrides({1, 1, 1, 1, 1, 1, 1, 1, 1}, {1}, {1, 1, 1, 1, 1, 1, 1, 1, 1}), std::invalid_argument);
}

TEST(GpuLaunch, BoxCopiesAndTransposesAreStridedCopies) {
  const StridedCopy box = boxCopy({4, 6}, {1, 2}, {2, 3}, {0, 0}, {2, 3});
  EXPECT_EQ(box.srcBase, 8);
  EXPECT_EQ(box.dstBase, 0);
  EXPECT_EQ(std::vector<int64_t>(box.src, box.src + 2), (std::vector<int64_t>{6, 1}));
  EXPECT_EQ(std::vector<int64_t>(box.dst, box.dst + 2), (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(box.count, 6);
  const StridedCopy t = transposeCopy({2, 3, 4}, 1, 2);
  EXPECT_EQ(std::vector<int64_t>(t.size, t.size + 3), (std::vector<int64_t>{2, 4, 3}));
  EXPECT_EQ(std::vector<int64_t>(t.src, t.src + 3), (std::vector<int64_t>{12, 1, 4}));
  EXPECT_EQ(std::vector<int64_t>(t.dst, t.dst + 3), (std::vector<int64_t>{12, 3, 1}));
  EXPECT_EQ(t.count, 24);
  EXPECT_THROW(transposeCopy({2, 3}, 0, 2), std::invalid_argument);
}

TEST(GpuLaunch, ReductionsSplitKeptAndReducedDimensions) {
  const Reduction r = reduction({2, 3, 4}, {false, true, false});
  EXPECT_EQ(r.keptRank, 2);
  EXPECT_EQ(std::vector<int64_t>(r.keptSize, r.keptSize + 2), (std::vector<int64_t>{2, 4}));
  EXPECT_EQ(std::vector<int64_t>(r.keptStride, r.keptStride + 2), (std::vector<int64_t>{12, 1}));
  EXPECT_EQ(r.reducedRank, 1);
  EXPECT_EQ(r.reducedSize[0], 3);
  EXPECT_EQ(r.reducedStride[0], 4);
  EXPECT_EQ(r.results, 8);
  EXPECT_EQ(r.terms, 3);
}

// The names CUDA gives data-center GPUs, mapped to stdlib/devices.toml's types.
TEST(GpuDeviceTypes, CudaNamesMapToClusterTypes) {
  const std::vector<std::string> types{"H100", "H800", "H20", "H200", "A100", "A800", "L40S", "cpu"};
  EXPECT_EQ(deviceTypeOf("NVIDIA H100 80GB HBM3", types), "H100");
  EXPECT_EQ(deviceTypeOf("NVIDIA A100-SXM4-80GB", types), "A100");
  EXPECT_EQ(deviceTypeOf("NVIDIA A800 80GB PCIe", types), "A800");
  EXPECT_EQ(deviceTypeOf("NVIDIA H200", types), "H200");
  EXPECT_EQ(deviceTypeOf("NVIDIA H20", types), "H20");
  EXPECT_EQ(deviceTypeOf("NVIDIA H800", types), "H800");
  EXPECT_EQ(deviceTypeOf("NVIDIA L40S", types), "L40S");
  EXPECT_EQ(deviceTypeOf("nvidia h100 nvl", types), "H100");
  EXPECT_EQ(deviceTypeOf("NVIDIA GeForce RTX 4090", types), std::nullopt);
  EXPECT_EQ(deviceTypeOf("NVIDIA H200", {"H20"}), std::nullopt);
}

// A process whose GPU is not the type its plan was made for says so; a plan made for CPU
// threads (or a type that is not a GPU's) run on a GPU says nothing.
TEST(GpuDeviceTypes, AGpuOfAnotherTypeThanPlannedIsNamed) {
  const std::vector<std::string> gpus{"H100", "H800", "H20", "H200", "A100", "A800", "L40S"};
  EXPECT_EQ(gpuTypeMismatch(3, "NVIDIA H100 80GB HBM3", "H100", gpus), "");
  EXPECT_EQ(gpuTypeMismatch(3, "NVIDIA A100-SXM4-80GB", "H100", gpus),
            "device 3 runs on 'NVIDIA A100-SXM4-80GB' (A100), but the plan was made for an H100 there: its layers, "
            "shares and memory are for that");
  EXPECT_EQ(gpuTypeMismatch(0, "NVIDIA GeForce RTX 4090", "A100", gpus),
            "device 0 runs on 'NVIDIA GeForce RTX 4090' (not a type of the plan's cluster), but the plan was made for "
            "an A100 there: its layers, shares and memory are for that");
  EXPECT_EQ(gpuTypeMismatch(1, "NVIDIA H200", "cpu", gpus), "");
}

// What hspmc train --device gpu and the --target cuda binaries wrap their offloads in: each
// device whose GPU is not its plan's type is named once per plan, however many offloads it
// makes; the offload made is the one given.
TEST(GpuDeviceTypes, EachDeviceOnAnotherTypeIsNamedOncePerPlan) {
  struct Named : hspmd::runtime::HostOffload {
    using HostOffload::HostOffload;
    std::string name() const override { return "NVIDIA A100-SXM4-80GB"; }
  };
  std::map<int, hspmd::ir::DeviceProgram> plan, other;
  plan[0].device = 0;
  plan[1].device = 1;
  other[1].device = 1;
  int made = 0;
  const hspmd::runtime::OffloadFactory checked = warningOfGpuTypes(
      [&](const hspmd::runtime::OffloadSite &site) {
        ++made;
        return std::make_unique<Named>(site.program);
      },
      {{&plan, {{0, "H100"}, {1, "A100"}}}, {&other, {{1, "H100"}}}}, {"H100", "A100"}, "hspmc train");
  hspmd::runtime::ThreadsWorld world({0, 1});
  ::testing::internal::CaptureStderr();
  for (int twice = 0; twice < 2; ++twice) {
    EXPECT_EQ(checked({plan.at(0), plan, world.communicator(0)})->name(), "NVIDIA A100-SXM4-80GB");
    checked({plan.at(1), plan, world.communicator(1)});
    checked({other.at(1), other, world.communicator(1)});
  }
  EXPECT_EQ(::testing::internal::GetCapturedStderr(),
            "hspmc train: warning: device 0 runs on 'NVIDIA A100-SXM4-80GB' (A100), but the plan was made for an H100 "
            "there: its layers, shares and memory are for that\n"
            "hspmc train: warning: device 1 runs on 'NVIDIA A100-SXM4-80GB' (A100), but the plan was made for an H100 "
            "there: its layers, shares and memory are for that\n");
  EXPECT_EQ(made, 6);
}
