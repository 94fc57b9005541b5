// Cluster.cpp - reading cluster files and device types with toml++, and their checks
// (planner/Cluster.h).
#include "planner/Cluster.h"

#include "ir/Annotation.h"
#include "ir/Files.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <toml++/toml.h>

#include <fstream>
#include <sstream>

namespace hspmd::planner {

namespace {
ir::Location where(const std::string &path, const toml::source_region &region) {
  return ir::Location{path, static_cast<uint32_t>(region.begin.line), static_cast<uint32_t>(region.begin.column), 1};
}

std::optional<toml::table> parseToml(const std::string &path, std::vector<ClusterError> &errors) {
  if (std::string why = ir::notAFile(path); !why.empty()) {
    errors.push_back({ir::Location{path, 0, 0, 1}, "cannot read '" + path + "': " + why});
    return std::nullopt;
  }
  if (!std::ifstream(path)) {
    errors.push_back({ir::Location{path, 0, 0, 1}, "cannot read '" + path + "'"});
    return std::nullopt;
  }
  try {
    return toml::parse_file(path);
  } catch (const toml::parse_error &error) {
    ir::Location loc = where(path, error.source());
    if (!loc.isKnown())
      loc = ir::Location{path, 0, 0, 1};
    errors.push_back({loc, std::string(error.description())});
    return std::nullopt;
  }
}

// A rate or a size of a cluster file (GB/s, TFLOP/s, GiB): finite and within these bounds, so
// that a typo of many digits (1e-300 GB/s) is an error rather than steps of 1e300 seconds.
constexpr double kLeastQuantity = 1e-6, kMostQuantity = 1e7;
// The most devices a cluster has in all: planning a cluster of a million devices takes about
// 9 s and 2 GB (docs/language.md); a file of more nodes is refused rather than run out of memory.
using ir::kMostDevices;

// "" where `value` is such a quantity, else the error for `key`.
std::string quantityError(const char *key, std::optional<double> value) {
  if (value && std::isfinite(*value) && *value >= kLeastQuantity && *value <= kMostQuantity)
    return "";
  return std::string("'") + key + "' must be a number from 0.000001 to 10000000";
}

bool readNumber(const std::string &path, const toml::table &table, const char *key, double &out,
                std::vector<ClusterError> &errors, const toml::source_region &owner) {
  const toml::node *node = table.get(key);
  if (!node) {
    errors.push_back({where(path, owner), std::string("missing key '") + key + "'"});
    return false;
  }
  auto value = node->value<double>();
  if (std::string error = quantityError(key, value); !error.empty()) {
    errors.push_back({where(path, node->source()), error});
    return false;
  }
  out = *value;
  return true;
}

size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// A key the format does not know is an error (a typo would otherwise be ignored silently),
// naming the nearest known key.
bool knownKeys(const std::string &path, const toml::table &table, std::initializer_list<const char *> known,
               const std::string &where_, std::vector<ClusterError> &errors) {
  bool ok = true;
  for (const auto &[key, value] : table) {
    const std::string name(key.str());
    if (std::any_of(known.begin(), known.end(), [&](const char *k) { return name == k; }))
      continue;
    std::string nearest = *known.begin();
    for (const char *k : known)
      if (editDistance(name, k) < editDistance(name, nearest))
        nearest = k;
    std::string list;
    for (const char *k : known)
      list += (list.empty() ? "" : ", ") + std::string(k);
    errors.push_back(
        {where(path, value.source()),
         "unknown key '" + name + "' in " + where_ +
             (editDistance(name, nearest) <= 2 ? "; did you mean '" + nearest + "'?" : " (known keys: " + list + ")")});
    ok = false;
  }
  return ok;
}

bool readTypes(const std::string &path, const toml::table &root, std::map<std::string, DeviceType> &types,
               std::vector<ClusterError> &errors) {
  const toml::node *node = root.get("types");
  if (!node)
    return true;
  const toml::table *table = node->as_table();
  if (!table) {
    errors.push_back({where(path, node->source()), "'types' must be a table of device types"});
    return false;
  }
  bool ok = true;
  for (const auto &[key, value] : *table) {
    const toml::table *spec = value.as_table();
    std::string name(key.str());
    if (!spec) {
      errors.push_back({where(path, value.source()), "device type '" + name + "' must be a table"});
      ok = false;
      continue;
    }
    DeviceType type;
    type.name = name;
    ok &= knownKeys(path, *spec, {"bf16_tflops", "memory_gib", "hbm_gbps", "intra_node_gbps"},
                    "device type '" + name + "'", errors);
    ok &= readNumber(path, *spec, "bf16_tflops", type.bf16Tflops, errors, spec->source());
    ok &= readNumber(path, *spec, "memory_gib", type.memoryGiB, errors, spec->source());
    ok &= readNumber(path, *spec, "hbm_gbps", type.hbmGBps, errors, spec->source());
    ok &= readNumber(path, *spec, "intra_node_gbps", type.intraNodeGBps, errors, spec->source());
    types[name] = type;
  }
  return ok;
}
} // namespace

std::optional<std::map<std::string, DeviceType>> loadDeviceTypes(const std::string &path,
                                                                 std::vector<ClusterError> &errors) {
  auto root = parseToml(path, errors);
  if (!root)
    return std::nullopt;
  std::map<std::string, DeviceType> types;
  if (!root->get("types")) {
    errors.push_back({ir::Location{path, 1, 1, 1}, "a device types file needs [types.NAME] tables"});
    return std::nullopt;
  }
  if (!readTypes(path, *root, types, errors))
    return std::nullopt;
  return types;
}

std::optional<Cluster> loadCluster(const std::string &path, const std::string &deviceTypesPath,
                                   std::vector<ClusterError> &errors) {
  auto root = parseToml(path, errors);
  if (!root)
    return std::nullopt;
  Cluster cluster;
  if (!deviceTypesPath.empty()) {
    auto types = loadDeviceTypes(deviceTypesPath, errors);
    if (!types)
      return std::nullopt;
    cluster.types = *types;
  }
  if (!readTypes(path, *root, cluster.types, errors))
    return std::nullopt;
  if (!knownKeys(path, *root, {"name", "inter_node_gbps", "overlap_communication", "collectives", "nodes", "types"},
                 "a cluster file", errors))
    return std::nullopt;
  cluster.name = root->get("name") ? root->get("name")->value_or(std::string()) : "";
  if (!readNumber(path, *root, "inter_node_gbps", cluster.interNodeGBps, errors, root->source()))
    return std::nullopt;
  if (const toml::node *overlap = root->get("overlap_communication")) {
    if (!overlap->is_boolean()) {
      errors.push_back({where(path, overlap->source()), "'overlap_communication' must be true or false"});
      return std::nullopt;
    }
    cluster.overlapCommunication = overlap->value_or(true);
  }
  if (const toml::node *collectives = root->get("collectives")) {
    const std::string kind = collectives->value_or(std::string());
    if (kind != "ring" && kind != "exchange") {
      errors.push_back({where(path, collectives->source()), "'collectives' must be \"ring\" or \"exchange\""});
      return std::nullopt;
    }
    cluster.exchangeCollectives = kind == "exchange";
  }
  const toml::array *nodes = root->get("nodes") ? root->get("nodes")->as_array() : nullptr;
  if (!nodes || nodes->empty()) {
    errors.push_back({ir::Location{path, 1, 1, 1}, "a cluster file needs at least one [[nodes]] entry"});
    return std::nullopt;
  }
  for (const toml::node &entry : *nodes) {
    const toml::table *table = entry.as_table();
    if (!table) {
      errors.push_back({where(path, entry.source()), "each node must be a table"});
      return std::nullopt;
    }
    if (!knownKeys(path, *table, {"name", "type", "devices", "network_gbps"}, "a node", errors))
      return std::nullopt;
    Node node;
    node.name = table->get("name") ? table->get("name")->value_or(std::string()) : "";
    const toml::node *type = table->get("type");
    if (!type || !type->is_string()) {
      errors.push_back({where(path, table->source()), "a node needs a 'type' string"});
      return std::nullopt;
    }
    node.type = type->value_or(std::string());
    if (!cluster.types.count(node.type)) {
      // Type names are short (H20, H200, H800): only a difference of case is taken for a slip.
      auto lower = [](std::string text) {
        std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
        return text;
      };
      std::string meant, list;
      for (const auto &[name, ignored] : cluster.types) {
        if (lower(name) == lower(node.type))
          meant = name;
        list += (list.empty() ? "" : ", ") + name;
      }
      errors.push_back(
          {where(path, type->source()),
           "unknown device type '" + node.type + "'" +
               (!meant.empty() ? "; did you mean '" + meant + "'?"
                               : " (known types: " + list + "; a cluster file may add its own as [types.NAME])")});
      return std::nullopt;
    }
    const toml::node *count = table->get("devices");
    auto devices = count ? count->value<int64_t>() : std::nullopt;
    if (!devices || *devices < 1 || *devices > 4096) {
      errors.push_back({where(path, count ? count->source() : table->source()),
                        "a node needs 'devices', a count between 1 and 4096"});
      return std::nullopt;
    }
    node.devices = static_cast<int>(*devices);
    if (static_cast<int64_t>(cluster.devices.size()) + node.devices > kMostDevices) {
      errors.push_back(
          {where(path, count->source()),
           "this node takes the cluster past " + std::to_string(kMostDevices) + " devices, the most a cluster has"});
      return std::nullopt;
    }
    if (const toml::node *uplink = table->get("network_gbps")) {
      auto value = uplink->value<double>();
      if (std::string error = quantityError("network_gbps", value); !error.empty()) {
        errors.push_back({where(path, uplink->source()), error});
        return std::nullopt;
      }
      node.networkGBps = *value;
    }
    if (node.name.empty())
      node.name = "node" + std::to_string(cluster.nodes.size());
    for (int i = 0; i < node.devices; ++i)
      cluster.devices.push_back(
          Device{static_cast<int>(cluster.devices.size()), static_cast<int>(cluster.nodes.size()), node.type});
    cluster.nodes.push_back(node);
  }
  return cluster;
}

std::string writeCluster(const Cluster &cluster, const std::string &comment) {
  toml::table root{{"name", cluster.name},
                   {"inter_node_gbps", cluster.interNodeGBps},
                   {"overlap_communication", cluster.overlapCommunication},
                   {"collectives", cluster.exchangeCollectives ? "exchange" : "ring"}};
  toml::array nodes;
  toml::table types;
  for (const Node &node : cluster.nodes) {
    toml::table entry{{"name", node.name}, {"type", node.type}, {"devices", node.devices}};
    if (node.networkGBps > 0)
      entry.insert("network_gbps", node.networkGBps);
    nodes.push_back(std::move(entry));
    const DeviceType &type = cluster.types.at(node.type);
    types.insert(node.type, toml::table{{"bf16_tflops", type.bf16Tflops},
                                        {"memory_gib", type.memoryGiB},
                                        {"hbm_gbps", type.hbmGBps},
                                        {"intra_node_gbps", type.intraNodeGBps}});
  }
  root.insert("nodes", std::move(nodes));
  root.insert("types", std::move(types));
  std::ostringstream out;
  if (!comment.empty())
    out << "# " << comment << "\n";
  out << root << "\n";
  return out.str();
}

bool checkTomlFile(const std::string &path, const std::string &deviceTypesPath, std::vector<ClusterError> &errors) {
  auto root = parseToml(path, errors);
  if (!root)
    return false;
  if (root->get("nodes"))
    return loadCluster(path, deviceTypesPath, errors).has_value();
  return loadDeviceTypes(path, errors).has_value();
}

} // namespace hspmd::planner
