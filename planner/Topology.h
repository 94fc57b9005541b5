// Topology.h - the links of a cluster as a graph (Boost.Graph): every device joins its
// node's switch at its type's intra-node bandwidth (NVLink, PCIe); every node's switch joins
// the network at the node's uplink bandwidth (`network_gbps` of a [[nodes]] entry, else the
// cluster's `inter_node_gbps`). The bandwidth between two devices is that of the widest path
// between them: the path whose narrowest link is widest.
#pragma once

#include "planner/Cluster.h"

#include <vector>

namespace hspmd::planner {

class Topology {
public:
  explicit Topology(const Cluster &cluster);
  /// GB/s of the widest path between two devices (0 when one is not in the cluster).
  double bandwidth(int a, int b) const;
  int devices() const { return devices_; }

private:
  int devices_ = 0;
  std::vector<double> widest_; // devices x devices
};

} // namespace hspmd::planner
