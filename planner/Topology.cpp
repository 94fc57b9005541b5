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

double Topology::leastBandwidth(const std::vector<int> &group) const {
  if (group.size() < 2)
    return std::numeric_limits<double>::infinity();
  // Every member is in some pair, so the slowest link to a switch counts; where the group
  // spans two nodes or more, every node of it is in a pair across nodes, so its uplink does.
  const int n = devices();
  double least = std::numeric_limits<double>::infinity(), uplinks = least;
  int firstNode = -1;
  bool acrossNodes = false;
  for (int d : group) {
    if (d < 0 || d >= n)
      return 0; // as bandwidth() to a device outside the cluster
    const auto x = static_cast<size_t>(d);
    least = std::min(least, toSwitch_[x]);
    uplinks = std::min(uplinks, uplink_[static_cast<size_t>(node_[x])]);
    if (firstNode < 0)
      firstNode = node_[x];
    acrossNodes = acrossNodes || node_[x] != firstNode;
  }
  return acrossNodes ? std::min(least, uplinks) : least;
}

} // namespace hspmd::planner
