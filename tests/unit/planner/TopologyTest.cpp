// The cluster topology: widest paths through node switches and the network.
#include "planner/Topology.h"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/dijkstra_shortest_paths.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <numeric>
#include <random>

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

// The oracle: the cluster's links as a Boost graph (devices, a switch per node, the network)
// and Dijkstra's widest paths from every device (a path's value its narrowest link, wider
// better), against Topology's answer for every pair of devices of every example cluster.
TEST(Topology, EveryPairMatchesTheWidestPathsOfTheLinkGraph) {
  int clusters = 0;
  for (const auto &entry : std::filesystem::directory_iterator("examples/clusters")) {
    std::vector<ClusterError> errors;
    auto cluster = loadCluster(entry.path().string(), "stdlib/devices.toml", errors);
    ASSERT_TRUE(cluster) << entry.path() << ": " << (errors.empty() ? "" : errors[0].message);
    ++clusters;
    using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, boost::no_property,
                                        boost::property<boost::edge_weight_t, double>>;
    const size_t devices = cluster->devices.size(), nodes = cluster->nodes.size();
    Graph graph(devices + nodes + 1); // the devices, a switch per node, the network
    for (const Device &device : cluster->devices)
      boost::add_edge(static_cast<size_t>(device.id), devices + static_cast<size_t>(device.node),
                      cluster->typeOf(device.id).intraNodeGBps, graph);
    for (size_t n = 0; n < nodes; ++n)
      boost::add_edge(devices + n, devices + nodes,
                      cluster->nodes[n].networkGBps > 0 ? cluster->nodes[n].networkGBps : cluster->interNodeGBps,
                      graph);
    const Topology topology(*cluster);
    std::vector<double> width(boost::num_vertices(graph));
    for (size_t a = 0; a < devices; ++a) {
      boost::dijkstra_shortest_paths(graph, a,
                                     boost::distance_map(width.data())
                                         .distance_compare(std::greater<double>())
                                         .distance_combine([](double x, double y) { return std::min(x, y); })
                                         .distance_inf(0.0)
                                         .distance_zero(std::numeric_limits<double>::infinity()));
      for (size_t b = 0; b < devices; ++b)
        ASSERT_DOUBLE_EQ(topology.bandwidth(static_cast<int>(a), static_cast<int>(b)), width[b])
            << entry.path() << ": devices " << a << " and " << b;
    }
  }
  EXPECT_GE(clusters, 8);
}

// A collective's ring runs at the slowest link between two of its members: leastBandwidth
// answers in one pass what asking every pair answers, for random groups on every example
// cluster (one node or several, devices outside the cluster too).
TEST(Topology, TheLeastBandwidthOfAGroupIsItsSlowestPair) {
  std::mt19937 random(1207);
  int groups = 0;
  for (const auto &entry : std::filesystem::directory_iterator("examples/clusters")) {
    std::vector<ClusterError> errors;
    auto cluster = loadCluster(entry.path().string(), "stdlib/devices.toml", errors);
    ASSERT_TRUE(cluster) << entry.path();
    const Topology topology(*cluster);
    const int devices = topology.devices();
    for (int trial = 0; trial < 200; ++trial) {
      std::vector<int> all(static_cast<size_t>(devices) + 2);
      std::iota(all.begin(), all.end(), 0); // the last two ids are outside the cluster
      std::shuffle(all.begin(), all.end(), random);
      const size_t size =
          std::uniform_int_distribution<size_t>(1, trial % 2 ? all.size() : std::min<size_t>(all.size(), 4))(random);
      std::vector<int> group(all.begin(), all.begin() + static_cast<long>(size));
      if (trial % 3 == 0) // mostly inside the cluster
        std::erase_if(group, [&](int d) { return d >= devices; });
      double pairwise = std::numeric_limits<double>::infinity();
      for (int a : group)
        for (int b : group)
          if (a != b)
            pairwise = std::min(pairwise, topology.bandwidth(a, b));
      ASSERT_EQ(topology.leastBandwidth(group), pairwise) << entry.path() << ", " << group.size() << " members";
      ++groups;
    }
  }
  EXPECT_GE(groups, 1600);
}
