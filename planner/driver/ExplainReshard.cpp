// ExplainReshard.cpp - `hspmc explain-reshard`: why a layout change communicates what it does.
#include "planner/driver/Driver.h"

#include "ir/AnnotationText.h"
#include "ir/JsonText.h"
#include "passes/Communication.h"
#include "planner/Cluster.h"
#include "planner/Estimates.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <set>
#include <sstream>

namespace hspmd::driver {

namespace {

constexpr size_t kMostExplainedDevices = 1024;

std::string microseconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f us", seconds * 1e6);
  return text;
}

} // namespace

bool explainReshard(const std::string &shapeText, const std::string &fromText, const std::string &toText,
                    const std::string &clusterFile, const std::string &dtypeName, bool json, std::ostream &out,
                    std::ostream &error) {
  std::vector<int64_t> shape;
  std::stringstream parts(shapeText);
  for (std::string part; std::getline(parts, part, ',');) {
    char *end = nullptr;
    long long size = std::strtoll(part.c_str(), &end, 10);
    if (part.empty() || *end != '\0' || size < 0 || size > (1LL << 40)) {
      error
          << "hspmc explain-reshard: error: --shape must be sizes from 0 to 2^40 separated by commas, like 8,16 (got '"
          << shapeText << "')\n";
      return false;
    }
    shape.push_back(size);
  }
  auto dtype = ir::dtypeFromName(dtypeName);
  if (!dtype) {
    error << "hspmc explain-reshard: error: unknown --dtype '" << dtypeName
          << "'; expected f32, bf16, f16, i32 or i64\n";
    return false;
  }
  if (!ir::checkedBytes(shape, *dtype)) {
    error << "hspmc explain-reshard: error: --shape " << shapeText << " of " << dtypeName << " is more than 256 TiB\n";
    return false;
  }
  ir::Annotation annotations[2];
  const std::string *texts[2] = {&fromText, &toText};
  const char *flags[2] = {"--from", "--to"};
  for (int i = 0; i < 2; ++i) {
    ir::TextError textError;
    auto parsed = ir::parseAnnotation(*texts[i], &textError);
    if (!parsed) {
      error << "hspmc explain-reshard: error: " << flags[i] << " '" << *texts[i] << "': " << textError.str() << "\n";
      return false;
    }
    // A reduction over n devices moves n^2 messages, each listed: beyond this the plan takes
    // minutes and gigabytes, and the listing is no explanation.
    if (const size_t devices = parsed->devices().size(); devices > kMostExplainedDevices) {
      error << "hspmc explain-reshard: error: " << flags[i] << " names " << devices
            << " devices; explain-reshard lists every message of a layout change, and explains layouts of at most "
            << kMostExplainedDevices << " devices\n";
      return false;
    }
    if (auto bad = ir::checkAnnotation(*parsed, shape)) {
      error << "hspmc explain-reshard: error: " << flags[i] << " '" << *texts[i] << "': " << bad->message << " ["
            << bad->code << "]\n";
      return false;
    }
    annotations[i] = *parsed;
  }
  std::optional<planner::Cluster> cluster;
  passes::LinkModel links;
  if (!clusterFile.empty()) {
    std::vector<planner::ClusterError> errors;
    cluster = planner::loadCluster(clusterFile, frontend::defaultStdlibDir() + "/devices.toml", errors);
    if (!cluster) {
      for (const auto &e : errors)
        error << e.loc.str() << ": error: " << e.message << "\n";
      return false;
    }
    const int count = static_cast<int>(cluster->devices.size());
    for (const auto &a : annotations)
      for (int d : a.devices())
        if (d >= count) {
          error << "hspmc explain-reshard: error: device " << d << " is not in the cluster (" << cluster->name
                << " has devices 0.." << count - 1 << ") [HS101]\n";
          return false;
        }
    links = planner::linkModel(*cluster);
  }
  passes::CommPlan plan = passes::planReshard(shape, ir::dtypeBytes(*dtype), annotations[0], annotations[1], links);
  int64_t lacking = 0;
  for (const auto &[device, bytes] : plan.lackingBytes)
    lacking += bytes;
  const bool moveOnly = plan.steps.size() == 1 && !plan.lackingBytes.empty();

  if (json) {
    nlohmann::json doc;
    doc["shape"] = shape;
    doc["dtype"] = dtypeName;
    doc["from"] = ir::printAnnotation(annotations[0]);
    doc["to"] = ir::printAnnotation(annotations[1]);
    doc["steps"] = nlohmann::json::array();
    for (const auto &step : plan.steps) {
      nlohmann::json s;
      s["kind"] = std::string(passes::commKindName(step.kind));
      s["groups"] = step.groups;
      s["from"] = ir::printAnnotation(step.from);
      s["to"] = ir::printAnnotation(step.to);
      nlohmann::json perDevice = nlohmann::json::object();
      for (int d : step.to.devices())
        perDevice[std::to_string(d)] = {{"sent", step.bytesSent.count(d) ? step.bytesSent.at(d) : 0},
                                        {"received", step.bytesReceived.count(d) ? step.bytesReceived.at(d) : 0}};
      for (const auto &[d, bytes] : step.bytesSent)
        if (!perDevice.contains(std::to_string(d)))
          perDevice[std::to_string(d)] = {{"sent", bytes}, {"received", 0}};
      s["bytes_per_device"] = perDevice;
      s["messages"] = nlohmann::json::array();
      for (const auto &m : step.messages) {
        std::vector<std::string> boxes;
        for (const auto &box : m.boxes)
          boxes.push_back(ir::printBox(box));
        s["messages"].push_back(
            {{"from", m.from}, {"to", m.to}, {"bytes", m.bytes}, {"add", m.add}, {"slices", boxes}});
      }
      s["seconds"] = step.seconds;
      doc["steps"].push_back(s);
    }
    doc["total_bytes"] = plan.totalBytes();
    doc["seconds"] = plan.seconds();
    if (moveOnly) {
      doc["lacking_bytes"] = lacking;
      doc["minimal"] = lacking == plan.totalBytes();
    }
    out << ir::jsonText(doc, 2) << "\n";
    return true;
  }

  out << "reshard " << ir::TensorType{*dtype, {shape.begin(), shape.end()}}.str() << "\n  from " << fromText
      << "\n  to   " << toText << "\n";
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const auto &step = plan.steps[i];
    out << "step " << i + 1 << ": " << passes::commKindName(step.kind);
    if (plan.steps.size() > 1)
      out << " (" << ir::printAnnotation(step.from) << " -> " << ir::printAnnotation(step.to) << ")";
    out << "\n";
    if (!step.groups.empty()) {
      out << "  groups:";
      for (const auto &group : step.groups)
        out << " " << ir::printDeviceList(group);
      out << "\n";
    }
    for (const auto &m : step.messages) {
      out << "  " << m.from << " -> " << m.to << (m.add ? " (add)" : "") << ": " << m.bytes << " bytes:";
      for (const auto &box : m.boxes)
        out << " " << ir::printBox(box);
      out << "\n";
    }
    out << "  bytes per device (sent / received):";
    std::set<int> devices;
    for (const auto &[d, b] : step.bytesSent)
      devices.insert(d);
    for (const auto &[d, b] : step.bytesReceived)
      devices.insert(d);
    if (devices.empty())
      out << " none";
    for (int d : devices)
      out << " " << d << ": " << (step.bytesSent.count(d) ? step.bytesSent.at(d) : 0) << " / "
          << (step.bytesReceived.count(d) ? step.bytesReceived.at(d) : 0);
    out << "\n  estimated time: " << microseconds(step.seconds) << "\n";
  }
  out << "total: " << plan.totalBytes() << " bytes received, " << microseconds(plan.seconds());
  if (moveOnly)
    out << "; the target devices lacked " << lacking << " bytes" << (lacking == plan.totalBytes() ? " (minimal)" : "");
  out << "\n";
  return true;
}

} // namespace hspmd::driver
