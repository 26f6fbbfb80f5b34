// HostTopology from a sysfs tree laid out in a temporary directory (two nodes, SMT siblings, a
// CPU outside the process's mask), and from this machine's own /sys.
#include "staging/detail/core/host_topology.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace staging {
namespace {

namespace fs = std::filesystem;

TEST(ParseCpuList, RangesSinglesAndErrors) {
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11\n"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse_cpu_list("5"), (std::vector<int>{5}));
  EXPECT_EQ(parse_cpu_list("\n"), std::vector<int>{});
  EXPECT_EQ(parse_cpu_list("3,1,3"), (std::vector<int>{1, 3}));
  EXPECT_FALSE(parse_cpu_list("3-1").has_value());
  EXPECT_FALSE(parse_cpu_list("a").has_value());
  EXPECT_FALSE(parse_cpu_list("1,,2").has_value());
  EXPECT_FALSE(parse_cpu_list("-1").has_value());
}

struct FakeSys {
  fs::path root;
  FakeSys() {
    root =
        fs::temp_directory_path() /
        ("staging-topology-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "-" + std::to_string(reinterpret_cast<std::uintptr_t>(this)));
    fs::create_directories(root);
  }
  ~FakeSys() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  void write(const std::string& rel, const std::string& text) {
    const fs::path p = root / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
};

// 2 nodes x 4 cores x 2 threads: node0 cpus 0-3,8-11; node1 4-7,12-15; siblings c and c+8.
TEST(HostTopology, NodesCoresFirstAndTheAffinityMask) {
  FakeSys sys;
  sys.write("devices/system/node/node0/cpulist", "0-3,8-11\n");
  sys.write("devices/system/node/node1/cpulist", "4-7,12-15\n");
  sys.write("devices/system/node/possible", "0-1\n");  // not a node directory: ignored
  for (int c = 0; c < 16; ++c) {
    const int a = c % 8, b = a + 8;
    sys.write("devices/system/cpu/cpu" + std::to_string(c) + "/topology/thread_siblings_list",
              std::to_string(a) + "," + std::to_string(b) + "\n");
  }
  std::vector<int> allowed;
  for (int c = 0; c < 16; ++c)
    if (c != 2) allowed.push_back(c);  // CPU 2 outside the mask
  const HostTopology t = HostTopology::read(sys.root.string(), allowed);
  ASSERT_EQ(t.nodes.size(), 2u);
  EXPECT_TRUE(t.multi_node());
  EXPECT_EQ(t.nodes[0].id, 0);
  EXPECT_EQ(t.nodes[0].cpus, (std::vector<int>{0, 1, 3, 10, 8, 9, 11}));
  EXPECT_EQ(t.nodes[1].cpus, (std::vector<int>{4, 5, 6, 7, 12, 13, 14, 15}));
  EXPECT_EQ(t.cpus(1), t.nodes[1].cpus);
  EXPECT_EQ(t.cpus(-1).size(), 15u);
  EXPECT_EQ(t.cpus(7).size(), 15u);  // no such node: the whole host
  EXPECT_EQ(t.node(7), nullptr);
}

TEST(HostTopology, WithoutSysfsOneNodeHoldsTheMask) {
  FakeSys sys;
  const HostTopology t = HostTopology::read(sys.root.string(), std::vector<int>{0, 1, 5});
  ASSERT_EQ(t.nodes.size(), 1u);
  EXPECT_FALSE(t.multi_node());
  EXPECT_EQ(t.nodes[0].cpus, (std::vector<int>{0, 1, 5}));
}

TEST(HostTopology, ThisMachine) {
  const HostTopology t = HostTopology::read();
  ASSERT_FALSE(t.nodes.empty());
  for (const auto& n : t.nodes)
    EXPECT_FALSE(n.cpus.empty());
  const std::vector<int> all = t.cpus(-1);
  EXPECT_TRUE(pin_current_thread(all));  // the whole mask is always allowed
  EXPECT_FALSE(pin_current_thread({}));
}

}  // namespace
}  // namespace staging
