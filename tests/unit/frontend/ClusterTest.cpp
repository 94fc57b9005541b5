// ClusterTest.cpp - cluster files: device types, nodes and links, and their errors.
#include "planner/Cluster.h"
#include "planner/PlanSet.h"

#include "TestSupport.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace hspmd::planner;
using hspmd::testing::writeTemp;

namespace {

TEST(Cluster, ExampleClustersLoad) {
  std::vector<ClusterError> errors;
  auto cluster = loadCluster("examples/clusters/h800x16_h20x32.toml", "stdlib/devices.toml", errors);
  ASSERT_TRUE(cluster) << (errors.empty() ? "" : errors[0].message);
  EXPECT_EQ(cluster->devices.size(), 48u);
  EXPECT_EQ(cluster->nodes.size(), 6u);
  EXPECT_EQ(cluster->devices[15].type, "H800");
  EXPECT_EQ(cluster->devices[16].type, "H20");
  EXPECT_EQ(cluster->devices[16].node, 2);
  EXPECT_EQ(cluster->typeOf(47).memoryGiB, 96.0);
  EXPECT_EQ(cluster->interNodeGBps, 50.0);
}

TEST(Cluster, InlineTypesAndErrorsWithLocations) {
  std::vector<ClusterError> errors;
  auto inlineTypes = writeTemp(
      "hspmd_inline.toml", "inter_node_gbps = 10.0\n[[nodes]]\ntype = \"X\"\ndevices = 2\n"
                           "[types.X]\nbf16_tflops = 1.0\nmemory_gib = 2.0\nhbm_gbps = 3.0\nintra_node_gbps = 4.0\n");
  auto cluster = loadCluster(inlineTypes, "stdlib/devices.toml", errors);
  ASSERT_TRUE(cluster);
  EXPECT_EQ(cluster->typeOf(1).hbmGBps, 3.0);

  auto unknownType =
      writeTemp("hspmd_unknown.toml", "inter_node_gbps = 10.0\n[[nodes]]\ntype = \"Z80\"\ndevices = 2\n");
  errors.clear();
  EXPECT_FALSE(loadCluster(unknownType, "stdlib/devices.toml", errors));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].loc.line, 3u);
  EXPECT_EQ(errors[0].message,
            "unknown device type 'Z80' (known types: A100, A800, H100, H20, H200, H800, L40S, cpu; a "
            "cluster file may add its own as [types.NAME])");
  auto misspelt = writeTemp("hspmd_misspelt.toml", "inter_node_gbps = 10.0\n[[nodes]]\ntype = \"h100\"\ndevices = 2\n");
  errors.clear();
  EXPECT_FALSE(loadCluster(misspelt, "stdlib/devices.toml", errors));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message, "unknown device type 'h100'; did you mean 'H100'?");

  auto badCount = writeTemp("hspmd_count.toml", "inter_node_gbps = 10.0\n[[nodes]]\ntype = \"H100\"\ndevices = 0\n");
  errors.clear();
  EXPECT_FALSE(loadCluster(badCount, "stdlib/devices.toml", errors));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].loc.line, 4u);
  EXPECT_EQ(errors[0].message, "a node needs 'devices', a count between 1 and 4096");

  std::string huge = "inter_node_gbps = 10.0\n";
  for (int node = 0; node < 257; ++node) // 257 x 4096 devices: one node more than 2^20 devices
    huge += "[[nodes]]\ntype = \"H100\"\ndevices = 4096\n";
  auto tooMany = writeTemp("hspmd_too_many.toml", huge);
  errors.clear();
  EXPECT_FALSE(loadCluster(tooMany, "stdlib/devices.toml", errors));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].loc.line, 2u + 3u * 256u + 2u); // the devices of the 257th node
  EXPECT_EQ(errors[0].message, "this node takes the cluster past 1048576 devices, the most a cluster has");

  auto collectives = writeTemp("hspmd_collectives.toml", "inter_node_gbps = 10.0\ncollectives = \"tree\"\n"
                                                         "[[nodes]]\ntype = \"H100\"\ndevices = 2\n");
  errors.clear();
  EXPECT_FALSE(loadCluster(collectives, "stdlib/devices.toml", errors));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].loc.line, 2u);
  EXPECT_EQ(errors[0].message, "'collectives' must be \"ring\" or \"exchange\"");
  errors.clear();
  auto cpu = loadCluster("examples/clusters/cpu4.toml", "stdlib/devices.toml", errors);
  ASSERT_TRUE(cpu);
  EXPECT_TRUE(cpu->exchangeCollectives);
  EXPECT_FALSE(cpu->overlapCommunication);
  EXPECT_FALSE(cluster->exchangeCollectives); // the default: NCCL's rings

  auto syntax = writeTemp("hspmd_syntax.toml", "inter_node_gbps = = 1\n");
  errors.clear();
  EXPECT_FALSE(loadCluster(syntax, "stdlib/devices.toml", errors));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].loc.line, 1u);

  auto missingKey = writeTemp("hspmd_types.toml", "[types.Y]\nbf16_tflops = 1.0\nmemory_gib = 2.0\nhbm_gbps = 3.0\n");
  errors.clear();
  EXPECT_FALSE(checkTomlFile(missingKey, "", errors));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].message, "missing key 'intra_node_gbps'");
}

// Numbers must be finite and within 1e-6 to 1e7 (TOML has nan and inf; a rate of 1e-300
// GB/s made steps of 1e300 seconds); a key the format does not know is
// an error naming the nearest known key, where a typo would otherwise be ignored.
TEST(Cluster, NotANumberAndUnknownKeysAreErrors) {
  struct Case {
    std::string text;
    unsigned line;
    std::string message;
  };
  const std::string node = "[[nodes]]\ntype = \"H100\"\ndevices = 2\n";
  const std::vector<Case> cases = {
      {"inter_node_gbps = nan\n" + node, 1, "'inter_node_gbps' must be a number from 0.000001 to 10000000"},
      {"inter_node_gbps = inf\n" + node, 1, "'inter_node_gbps' must be a number from 0.000001 to 10000000"},
      {"inter_node_gbps = 1e-300\n" + node, 1, "'inter_node_gbps' must be a number from 0.000001 to 10000000"},
      {"inter_node_gbps = 10.0\n[[nodes]]\ntype = \"H100\"\ndevices = 2\nnetwork_gbps = 1e300\n", 5,
       "'network_gbps' must be a number from 0.000001 to 10000000"},
      {"inter_node_gbps = 10.0\n[[nodes]]\ntype = \"H100\"\ndevices = 2\nnetwork_gbps = -inf\n", 5,
       "'network_gbps' must be a number from 0.000001 to 10000000"},
      {"inter_node_gbps = 10.0\n[[nodes]]\ntype = \"X\"\ndevices = 2\n[types.X]\nbf16_tflops = nan\n"
       "memory_gib = 2.0\nhbm_gbps = 3.0\nintra_node_gbps = 4.0\n",
       6, "'bf16_tflops' must be a number from 0.000001 to 10000000"},
      {"inter_node_gbps = 10.0\n[[nodes]]\ntype = \"H100\"\ndevcies = 8\n", 4,
       "unknown key 'devcies' in a node; did you mean 'devices'?"},
      {"inter_nod_gbps = 10.0\n" + node, 1,
       "unknown key 'inter_nod_gbps' in a cluster file; did you mean 'inter_node_gbps'?"},
      {"inter_node_gbps = 10.0\ncolour = \"red\"\n" + node, 2,
       "unknown key 'colour' in a cluster file (known keys: name, inter_node_gbps, overlap_communication, collectives, "
       "nodes, types)"},
      {"inter_node_gbps = 10.0\n[[nodes]]\ntype = \"X\"\ndevices = 2\n[types.X]\nbf16_tflop = 1.0\n"
       "memory_gib = 2.0\nhbm_gbps = 3.0\nintra_node_gbps = 4.0\nbf16_tflops = 1.0\n",
       6, "unknown key 'bf16_tflop' in device type 'X'; did you mean 'bf16_tflops'?"},
  };
  for (const Case &c : cases) {
    std::vector<ClusterError> errors;
    EXPECT_FALSE(loadCluster(writeTemp("hspmd_bad.toml", c.text), "stdlib/devices.toml", errors)) << c.text;
    ASSERT_EQ(errors.size(), 1u) << c.text;
    EXPECT_EQ(errors[0].loc.line, c.line) << c.text;
    EXPECT_EQ(errors[0].message, c.message) << c.text;
  }
}

TEST(Cluster, DeviceTypesFileIsComplete) {
  std::vector<ClusterError> errors;
  auto types = loadDeviceTypes("stdlib/devices.toml", errors);
  ASSERT_TRUE(types);
  for (const char *name : {"H100", "H800", "H20", "A100", "cpu"})
    EXPECT_TRUE(types->count(name)) << name;
  EXPECT_GT(types->at("H800").bf16Tflops, 6 * types->at("H20").bf16Tflops);
}

// writeCluster's file reads back to the cluster it was written from, every type inline (read
// without stdlib/devices.toml), whatever its names hold: --recover auto writes the survivors'
// cluster this way, and a node named with a quote had made a file that did not parse.
TEST(Cluster, WrittenClusterReadsBack) {
  std::vector<std::string> files;
  for (const auto &entry : std::filesystem::directory_iterator("examples/clusters"))
    files.push_back(entry.path().string());
  files.push_back(writeTemp("hspmd_write_names.toml",
                            "name = \"a \\\"quoted\\\" name\"\ninter_node_gbps = 12.5\ncollectives = \"exchange\"\n"
                            "[[nodes]]\nname = \"lo\\\"c\\nal\"\ntype = \"my.gpu x\"\ndevices = 3\nnetwork_gbps = 0.1\n"
                            "[[nodes]]\ntype = \"H20\"\ndevices = 1\n"
                            "[types.\"my.gpu x\"]\nbf16_tflops = 0.3\nmemory_gib = 1e-3\nhbm_gbps = 7.25\n"
                            "intra_node_gbps = 3.0\n"));
  ASSERT_GT(files.size(), 5u);
  for (const std::string &file : files) {
    std::vector<ClusterError> errors;
    const auto cluster = loadCluster(file, "stdlib/devices.toml", errors);
    ASSERT_TRUE(cluster) << file << ": " << (errors.empty() ? "" : errors[0].message);
    const std::string text = writeCluster(*cluster, "written from " + file);
    const auto back = loadCluster(writeTemp("hspmd_written.toml", text), "", errors);
    ASSERT_TRUE(back) << text << (errors.empty() ? "" : errors[0].message);
    EXPECT_EQ(back->name, cluster->name) << file;
    EXPECT_EQ(back->interNodeGBps, cluster->interNodeGBps) << file;
    EXPECT_EQ(back->overlapCommunication, cluster->overlapCommunication) << file;
    EXPECT_EQ(back->exchangeCollectives, cluster->exchangeCollectives) << file;
    ASSERT_EQ(back->nodes.size(), cluster->nodes.size()) << file;
    for (size_t n = 0; n < cluster->nodes.size(); ++n) {
      const Node &a = cluster->nodes[n], &b = back->nodes[n];
      EXPECT_EQ(b.name, a.name) << file;
      EXPECT_EQ(b.type, a.type) << file;
      EXPECT_EQ(b.devices, a.devices) << file;
      EXPECT_EQ(b.networkGBps, a.networkGBps) << file;
      const DeviceType &x = cluster->types.at(a.type), &y = back->types.at(b.type);
      EXPECT_EQ(y.bf16Tflops, x.bf16Tflops) << file;
      EXPECT_EQ(y.memoryGiB, x.memoryGiB) << file;
      EXPECT_EQ(y.hbmGBps, x.hbmGBps) << file;
      EXPECT_EQ(y.intraNodeGBps, x.intraNodeGBps) << file;
    }
    EXPECT_EQ(back->devices.size(), cluster->devices.size()) << file;
  }
}

// A plan set hspmc plan --length-distribution writes reads back to its plans, whatever the
// names of the files (a quote, a line break in its folder's name, which the comment naming
// the set's path had carried into the TOML).
TEST(PlanSet, WrittenPlanSetReadsBack) {
  const auto folder = std::filesystem::temp_directory_path() / "hspmd_plan \"set\"\nfolder";
  std::filesystem::create_directories(folder);
  const std::vector<std::string> plans = {"a.hspmd", "b \"quoted\".hspmd", "c\\d.hspmd"};
  for (const std::string &plan : plans)
    std::ofstream(folder / plan) << "// a plan\n";
  const std::string path = (folder / "x.planset.toml").string();
  ASSERT_TRUE(writePlanSet(path, plans, "Written by a test\r\nof two lines."));
  std::vector<ClusterError> errors;
  const auto set = readPlanSet(path, errors);
  ASSERT_TRUE(set) << (errors.empty() ? "" : errors[0].message);
  ASSERT_EQ(set->plans.size(), plans.size());
  for (size_t k = 0; k < plans.size(); ++k)
    EXPECT_EQ(set->plans[k], (folder / plans[k]).string());
  std::filesystem::remove_all(folder);
}

} // namespace
