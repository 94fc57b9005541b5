// The cluster topology: widest paths through node switches and the network.
#include "planner/Topology.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace hspmd::planner;

TEST(Topology, BandwidthIsTheWidestPathsNarrowestLink) {
  const auto path = std::filesystem::temp_directory_path() / ("hspmd_topology_" + std::to_string(::getpid()) + ".toml");
  std::ofstream(path) << R"(name = "two_nodes"
inter_node_gbps = 25.0

[[nodes]]
type = "fast"
devices = 2

[[nodes]]
type = "slow"
devices = 2
network_gbps = 10.0

[types.fast]
bf16_tflops = 989.0
memory_gib = 80.0
hbm_gbps = 3350.0
intra_node_gbps = 450.0

[types.slow]
bf16_tflops = 312.0
memory_gib = 80.0
hbm_gbps = 2039.0
intra_node_gbps = 100.0
)";
  std::vector<ClusterError> errors;
  auto cluster = loadCluster(path.string(), "stdlib/devices.toml", errors);
  std::filesystem::remove(path);
  ASSERT_TRUE(cluster) << (errors.empty() ? "" : errors[0].message);
  const Topology topology(*cluster);
  EXPECT_DOUBLE_EQ(topology.bandwidth(0, 1), 450.0); // through node 0's switch
  EXPECT_DOUBLE_EQ(topology.bandwidth(2, 3), 100.0); // through node 1's switch
  EXPECT_DOUBLE_EQ(topology.bandwidth(0, 2), 10.0);  // node 1's uplink is the narrowest
  EXPECT_DOUBLE_EQ(topology.bandwidth(3, 1), 10.0);
  EXPECT_DOUBLE_EQ(topology.bandwidth(0, 9), 0.0); // not in the cluster
}
