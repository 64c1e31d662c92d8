// An events file written by EventFile, read back by tools that are not ours: the framing and its
// CRCs checked with python3-crcmod, each record decoded by protoc --decode_raw
// (tests/helpers/tfevents_decode.py). And the file is never written through a planted link.
#include "report/event_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "core/dir_fd.h"
#include "support/build_paths.h"
#include "support/process.h"
#include "support/temp_dir.h"

namespace dl::report {
namespace {

std::string host() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(EventFile, NameIsTensorBoards) {
  EXPECT_EQ(events_file_name(1700000000.75, "node-1"), "events.out.tfevents.1700000000.node-1");
  EXPECT_EQ(events_file_name(5, "a/b"), "events.out.tfevents.5.a_b");
}

TEST(EventFile, DecodedByProtocWithIntactCrcs) {
  test::TempDir dir;
  std::string path;
  {
    EventFile events(DirFd::open(dir.path()), 1700000000.5);
    path = events.path();
    events.add({{"train/loss", 0.5f}, {"train/acc", 0.25f}}, 10, 1700000001.0);
    events.add({{"val/acc", 1.0f}}, 300, 1700000002.0);
  }
  EXPECT_EQ(path, dir / ("events.out.tfevents.1700000000." + host()));
  const test::Result r = test::run({dl::test::kTfeventsDecode, path});
  if (r.code == 77) GTEST_SKIP() << r.err;
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  // protoc prints fixed64 and fixed32 as hex: 1700000000.5 is 0x41d954fc40200000, 0.5f is
  // 0x3f000000, 0.25f 0x3e800000, 1.0f 0x3f800000.
  const std::string expected =
      "record 0 (24 bytes, CRCs ok)\n"
      "1: 0x41d954fc40200000\n"
      "3: \"brain.Event:2\"\n"
      "record 1 (50 bytes, CRCs ok)\n"
      "1: 0x41d954fc40400000\n"
      "2: 10\n"
      "5 {\n"
      "  1 {\n"
      "    1: \"train/loss\"\n"
      "    2: 0x3f000000\n"
      "  }\n"
      "  1 {\n"
      "    1: \"train/acc\"\n"
      "    2: 0x3e800000\n"
      "  }\n"
      "}\n"
      "record 2 (30 bytes, CRCs ok)\n"
      "1: 0x41d954fc40800000\n"
      "2: 300\n"
      "5 {\n"
      "  1 {\n"
      "    1: \"val/acc\"\n"
      "    2: 0x3f800000\n"
      "  }\n"
      "}\n"
      "3 records\n";
  EXPECT_EQ(r.out, expected);
}

TEST(EventFile, CorruptedByteIsCaughtByTheIndependentCheck) {
  // The decoder must be able to fail: flip one byte of the payload and it names the record.
  test::TempDir dir;
  std::string path;
  {
    EventFile events(DirFd::open(dir.path()), 1700000000);
    path = events.path();
    events.add({{"x", 2.0f}}, 1, 1700000000);
  }
  std::string bytes = read_file(path);
  bytes[bytes.size() - 6] ^= 0x01;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  const test::Result r = test::run({dl::test::kTfeventsDecode, path});
  if (r.code == 77) GTEST_SKIP() << r.err;
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("record 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("data CRC"), std::string::npos) << r.err;
}

TEST(EventFile, PlantedLinkIsNotWrittenThrough) {
  test::TempDir dir;
  const std::string victim = dir / "victim";
  std::ofstream(victim) << "keep";
  const std::string name = events_file_name(1700000000, host());
  ASSERT_EQ(symlink(victim.c_str(), (dir / name).c_str()), 0);
  EventFile events(DirFd::open(dir.path()), 1700000000);
  EXPECT_EQ(events.path(), dir / (name + ".1"));
  EXPECT_EQ(read_file(victim), "keep");
  struct stat st {};
  ASSERT_EQ(lstat(events.path().c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
}

TEST(EventFile, EachEventIsOnDiskAsSoonAsAdded) {
  // Nothing is buffered in the process: a crash right after add() loses nothing.
  test::TempDir dir;
  EventFile events(DirFd::open(dir.path()), 1700000000);
  const auto before = read_file(events.path()).size();
  events.add({{"x", 1.0f}}, 1, 1700000000);
  EXPECT_GT(read_file(events.path()).size(), before);
}

}  // namespace
}  // namespace dl::report
