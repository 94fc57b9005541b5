// Topology.cpp - the cluster's links as a Boost graph and the bandwidth between two devices
// (planner/Topology.h).
#include "planner/Topology.h"

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/dijkstra_shortest_paths.hpp>

#include <algorithm>
#include <functional>
#include <limits>

namespace hspmd::planner {

Topology::Topology(const Cluster &cluster) : devices_(static_cast<int>(cluster.devices.size())) {
  using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, boost::no_property,
                                      boost::property<boost::edge_weight_t, double>>;
  // Vertices: the devices, then one switch per node, then the network.
  const int nodes = static_cast<int>(cluster.nodes.size());
  const int network = devices_ + nodes;
  Graph graph(static_cast<size_t>(network + 1));
  for (const Device &device : cluster.devices)
    boost::add_edge(static_cast<size_t>(device.id), static_cast<size_t>(devices_ + device.node),
                    cluster.typeOf(device.id).intraNodeGBps, graph);
  for (int n = 0; n < nodes; ++n) {
    const double uplink = cluster.nodes[static_cast<size_t>(n)].networkGBps > 0
                              ? cluster.nodes[static_cast<size_t>(n)].networkGBps
                              : cluster.interNodeGBps;
    boost::add_edge(static_cast<size_t>(devices_ + n), static_cast<size_t>(network), uplink, graph);
  }
  // Widest paths from every device: Dijkstra where a path's value is its narrowest link
  // (combine = min) and a wider path is better (compare = greater).
  widest_.assign(static_cast<size_t>(devices_) * static_cast<size_t>(devices_), 0.0);
  std::vector<double> width(boost::num_vertices(graph));
  for (int source = 0; source < devices_; ++source) {
    boost::dijkstra_shortest_paths(graph, static_cast<size_t>(source),
                                   boost::distance_map(width.data())
                                       .distance_compare(std::greater<double>())
                                       .distance_combine([](double a, double b) { return std::min(a, b); })
                                       .distance_inf(0.0)
                                       .distance_zero(std::numeric_limits<double>::infinity()));
    for (int target = 0; target < devices_; ++target)
      widest_[static_cast<size_t>(source * devices_ + target)] = width[static_cast<size_t>(target)];
  }
}

double Topology::bandwidth(int a, int b) const {
  if (a < 0 || b < 0 || a >= devices_ || b >= devices_)
    return 0;
  return widest_[static_cast<size_t>(a * devices_ + b)];
}

} // namespace hspmd::planner
