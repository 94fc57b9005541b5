// Topology.cpp - the bandwidth between two devices of a cluster (planner/Topology.h).
#include "planner/Topology.h"

#include <algorithm>
#include <limits>

namespace hspmd::planner {

Topology::Topology(const Cluster &cluster) {
  for (const Device &device : cluster.devices) {
    node_.push_back(device.node);
    toSwitch_.push_back(cluster.typeOf(device.id).intraNodeGBps);
  }
  for (const Node &node : cluster.nodes)
    uplink_.push_back(node.networkGBps > 0 ? node.networkGBps : cluster.interNodeGBps);
}

double Topology::bandwidth(int a, int b) const {
  const int n = devices();
  if (a < 0 || b < 0 || a >= n || b >= n)
    return 0;
  if (a == b)
    return std::numeric_limits<double>::infinity();
  const auto x = static_cast<size_t>(a), y = static_cast<size_t>(b);
  const double throughSwitch = std::min(toSwitch_[x], toSwitch_[y]);
  if (node_[x] == node_[y])
    return throughSwitch;
  return std::min({throughSwitch, uplink_[static_cast<size_t>(node_[x])], uplink_[static_cast<size_t>(node_[y])]});
}

} // namespace hspmd::planner
