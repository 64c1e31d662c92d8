// Slurm's hostlist syntax: plain names, bracketed ranges with their padding, several ranges in one
// name, suffixes after a range, and the malformed lists that must be refused; the per-node task
// counts of SLURM_TASKS_PER_NODE.
#include "launcher/hostlist.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dl::test {
namespace {

using Hosts = std::vector<std::string>;

TEST(Hostlist, PlainNamesInOrder) {
  EXPECT_EQ(expand_hostlist("gpu-a1"), Hosts({"gpu-a1"}));
  EXPECT_EQ(expand_hostlist("b,a,c"), Hosts({"b", "a", "c"}));
  EXPECT_EQ(expand_hostlist("10.0.0.5,10.0.0.6"), Hosts({"10.0.0.5", "10.0.0.6"}));
}

TEST(Hostlist, RangesKeepTheirPadding) {
  EXPECT_EQ(expand_hostlist("node[01-04,07]"),
            Hosts({"node01", "node02", "node03", "node04", "node07"}));
  EXPECT_EQ(expand_hostlist("n[8-11]"), Hosts({"n8", "n9", "n10", "n11"}));
  EXPECT_EQ(expand_hostlist("n[098-101]"), Hosts({"n098", "n099", "n100", "n101"}));
  EXPECT_EQ(expand_hostlist("n[5]"), Hosts({"n5"}));
}

TEST(Hostlist, TheIssuesExample) {
  EXPECT_EQ(expand_hostlist("node[01-04,07],gpu-a1,x[1-2]-ib"),
            Hosts({"node01", "node02", "node03", "node04", "node07", "gpu-a1", "x1-ib", "x2-ib"}));
  EXPECT_EQ(first_host("node[01-04,07],gpu-a1,x[1-2]-ib"), "node01");
}

TEST(Hostlist, SeveralRangesInOneNameGiveEveryCombination) {
  EXPECT_EQ(expand_hostlist("rack[1-2]-n[01-02]"),
            Hosts({"rack1-n01", "rack1-n02", "rack2-n01", "rack2-n02"}));
}

TEST(Hostlist, FirstHost) {
  EXPECT_EQ(first_host("gpu-a1"), "gpu-a1");
  EXPECT_EQ(first_host("node[3-4],other"), "node3");
  EXPECT_EQ(first_host(" node[3-4] "), "node3");
}

TEST(Hostlist, MalformedListsAreRefused) {
  for (const char* bad :
       {"", "node[01-04", "node01-04]", "node[04-01]", "node[]", "node[a-b]", "a,,b", "a,",
        "node[1-2[3]]", "node[1-]", "node[-2]", "two words", "node[1-9999999]"}) {
    EXPECT_FALSE(expand_hostlist(bad).has_value()) << bad;
    EXPECT_FALSE(first_host(bad).has_value()) << bad;
  }
}

// The limit counts every item, plain names too (hostlist_fuzz found "n[0-999999],m" expanding
// to kMaxHosts + 1).
TEST(Hostlist, TheLimitCountsEveryItem) {
  EXPECT_EQ(expand_hostlist("n[0-999999]")->size(), kMaxHosts);
  EXPECT_FALSE(expand_hostlist("n[0-999999],m").has_value());
  EXPECT_FALSE(expand_hostlist("m,n[0-999999]").has_value());
  EXPECT_FALSE(first_host("n[0-999999],m").has_value());
}

TEST(TasksPerNode, CountsAndRepeats) {
  EXPECT_EQ(expand_tasks_per_node("4"), std::vector<int>({4}));
  EXPECT_EQ(expand_tasks_per_node("2(x3),1"), std::vector<int>({2, 2, 2, 1}));
  EXPECT_EQ(expand_tasks_per_node("8(x2)"), std::vector<int>({8, 8}));
  for (const char* bad : {"", "0", "x", "2(x0)", "2(x3", "2(3)", "-1", "2,,1"}) {
    EXPECT_FALSE(expand_tasks_per_node(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace dl::test
