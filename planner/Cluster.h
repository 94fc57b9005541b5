// Cluster.h - cluster files: device types (stdlib/devices.toml or inline) and nodes of
// devices. Read with toml++.
//
//   name = "h800x16_h20x32"
//   inter_node_gbps = 25.0          # network bandwidth per device, GB/s
//   overlap_communication = true    # optional: communication overlaps computation (default)
//   collectives = "ring"            # optional: "ring" (NCCL, default) or "exchange" (the
//                                   # CPU runtimes: one rendezvous, each member sums or copies
//                                   # every piece into its output)
//   [[nodes]]
//   type = "H800"                   # a type from stdlib/devices.toml or [types.NAME] below
//   devices = 8                     # device ids are given in order, node after node
//   network_gbps = 50.0             # optional: this node's uplink (else inter_node_gbps)
//   [types.MyGPU]                   # optional inline types, same keys as devices.toml
//   bf16_tflops = 312.0
//   memory_gib = 80.0
//   hbm_gbps = 2039.0
//   intra_node_gbps = 300.0
#pragma once

#include "ir/Location.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hspmd::planner {

struct DeviceType {
  std::string name;
  double bf16Tflops = 0; // dense bf16 peak
  double memoryGiB = 0;
  double hbmGBps = 0;
  double intraNodeGBps = 0; // NVLink / PCIe bandwidth between devices of one node
};

struct Device {
  int id = 0;
  int node = 0;
  std::string type;
};

struct Node {
  std::string name;
  std::string type;
  int devices = 0;
  double networkGBps = 0; // the node's uplink to the network (0: the cluster's inter_node_gbps)
};

struct Cluster {
  std::string name;
  double interNodeGBps = 0;
  bool overlapCommunication = true; // collectives on their own stream (false: the CPU backend)
  bool exchangeCollectives = false; // collectives = "exchange": one rendezvous per collective
  std::map<std::string, DeviceType> types;
  std::vector<Node> nodes;
  std::vector<Device> devices;
  const DeviceType &typeOf(int device) const { return types.at(devices.at(device).type); }
};

struct ClusterError {
  ir::Location loc;
  std::string message;
};

/// Reads a file of `[types.NAME]` tables.
std::optional<std::map<std::string, DeviceType>> loadDeviceTypes(const std::string &path,
                                                                 std::vector<ClusterError> &errors);
/// Reads a cluster file; its types come from `deviceTypesPath` plus its own [types] tables.
std::optional<Cluster> loadCluster(const std::string &path, const std::string &deviceTypesPath,
                                   std::vector<ClusterError> &errors);

/// The cluster as a cluster file that loadCluster reads back to it: every type its nodes use
/// written inline, names quoted by toml++ (a node named `a"b` or a type named `my.gpu` stay
/// one string), numbers to full precision. `comment` (one line, may be empty) heads the file.
std::string writeCluster(const Cluster &cluster, const std::string &comment);

/// `hspmc check` on a .toml file: a cluster file when it has [[nodes]], else a file of
/// device types. Returns whether it is valid.
bool checkTomlFile(const std::string &path, const std::string &deviceTypesPath, std::vector<ClusterError> &errors);

} // namespace hspmd::planner
