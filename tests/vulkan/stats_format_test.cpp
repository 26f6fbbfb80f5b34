// format_stats(vulkan::Stats): the ring's table and the Vulkan side's, every title with dot
// leaders and every value in one column across both (no device needed).
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <variant>

#include "staging/vulkan/ring.hpp"

namespace staging::vulkan {
namespace {

TEST(FormatStats, BothTablesGiveEveryTitleDotLeadersAndShareOneValueColumn) {
  ByteRingStats bytes;
  bytes.would_blocks_by_cause[1] = 987654;  // "would-block answers (Fragmentation)"
  for (const std::variant<StagingStats, ByteRingStats>& strategy :
       {std::variant<StagingStats, ByteRingStats>{StagingStats{}},
        std::variant<StagingStats, ByteRingStats>{bytes}}) {
    Stats stats;
    stats.strategy = strategy;
    std::istringstream table(format_stats(stats));
    std::string line;
    std::size_t width = 0;
    int headings = 0;
    while (std::getline(table, line)) {
      if (line.rfind("  ", 0) != 0) {  // "byte ring:", "vulkan:"
        ++headings;
        continue;
      }
      EXPECT_NE(line.find(" ..."), std::string::npos) << "fewer than three dots: " << line;
      if (width == 0) width = line.size();
      EXPECT_EQ(line.size(), width) << "value out of column: " << line;
    }
    EXPECT_EQ(headings, 2);
  }
}

}  // namespace
}  // namespace staging::vulkan
