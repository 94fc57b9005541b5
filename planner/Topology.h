// Topology.h - the links of a cluster: every device joins its node's switch at its type's
// intra-node bandwidth (NVLink, PCIe); every node's switch joins the network at the node's
// uplink bandwidth (`network_gbps` of a [[nodes]] entry, else the cluster's
// `inter_node_gbps`). The bandwidth between two devices is that of the widest path between
// them: the path whose narrowest link is widest. The links form a tree (devices, their node's
// switch, the network), so the path between two devices is the only one: through their switch
// when they share a node, else up to the network and down again. Memory and time per query do
// not grow with the cluster (a table of widest paths between every two devices, as this was,
// took 4 GB and 20 s of `hspmc plan` at 16384 devices, and more memory than the machine at 65536).
#pragma once

#include "planner/Cluster.h"

#include <vector>

namespace hspmd::planner {

class Topology {
public:
  explicit Topology(const Cluster &cluster);
  /// GB/s of the widest path between two devices (0 when one is not in the cluster; infinite
  /// from a device to itself).
  double bandwidth(int a, int b) const;
  /// The least bandwidth(a, b) over two distinct members of `group` (distinct devices), in one
  /// pass over it; infinite for a group of one.
  double leastBandwidth(const std::vector<int> &group) const;
  int devices() const { return static_cast<int>(node_.size()); }
  /// Whether two devices of the cluster share a node (false when one is not in it).
  bool sameNode(int a, int b) const {
    const int n = devices();
    return a >= 0 && b >= 0 && a < n && b < n && node_[static_cast<size_t>(a)] == node_[static_cast<size_t>(b)];
  }

private:
  std::vector<int> node_;        // device -> its node
  std::vector<double> toSwitch_; // device -> its link to the node's switch (its type's intra-node GB/s)
  std::vector<double> uplink_;   // node -> its switch's link to the network
};

} // namespace hspmd::planner
