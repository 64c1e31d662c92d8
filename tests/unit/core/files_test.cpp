// Atomic writes and the temporaries that killed writers leave: which files count as stale
// (regular, named "<name>.tmp.<digits>", unlocked), and that nothing else is removed or followed;
// whole-file reads, which refuse a FIFO, a directory or a device without waiting on it.
#include "core/files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "support/files.h"
#include "support/temp_dir.h"

namespace dl {
namespace {

using test::file_exists;
using test::list_dir;
using test::read_file;
using test::TempDir;
using test::write_file;

using Names = std::vector<std::string>;

TEST(StaleTemporaries, UnlockedRegularTemporariesAreRemoved) {
  TempDir dir;
  write_file(dir / "last.pt", "whole");
  write_file(dir / "last.pt.tmp.123", "half");
  write_file(dir / "last.pt.tmp.99999999", "half");
  EXPECT_EQ(remove_stale_temporaries(dir / "last.pt"),
            (Names{"last.pt.tmp.123", "last.pt.tmp.99999999"}));
  EXPECT_EQ(list_dir(dir.path()), Names{"last.pt"});
  EXPECT_EQ(read_file(dir / "last.pt"), "whole");
}

TEST(StaleTemporaries, OtherNamesStay) {
  TempDir dir;
  const Names others = {"best.pt.tmp.1",     "last.pt",     "last.pt.tmp.",   "last.pt.tmp.12a",
                        "last.pt.tmp.1.old", "last.pt.tmp", "xlast.pt.tmp.1", "last.pt.tmp.-1"};
  for (const std::string& name : others) write_file(dir / name, "x");
  EXPECT_EQ(remove_stale_temporaries(dir / "last.pt"), Names{});
  EXPECT_EQ(list_dir(dir.path()).size(), others.size());
}

// A write in progress holds its temporary locked (in this process or another): never removed.
TEST(StaleTemporaries, LockedTemporaryStays) {
  TempDir dir;
  const std::string busy = dir / "last.pt.tmp.42";
  write_file(busy, "being written");
  const int fd = ::open(busy.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX), 0);
  EXPECT_EQ(remove_stale_temporaries(dir / "last.pt"), Names{});
  EXPECT_TRUE(file_exists(busy));
  ::close(fd);  // the writer is gone: now it is stale
  EXPECT_EQ(remove_stale_temporaries(dir / "last.pt"), Names{"last.pt.tmp.42"});
}

// Links, directories and FIFOs with a temporary's name are not ours: they stay, and a link's
// target is neither removed nor opened (opening a FIFO would block).
TEST(StaleTemporaries, LinksDirectoriesAndFifosStay) {
  TempDir dir;
  TempDir outside;
  write_file(outside / "precious", "keep");
  ASSERT_EQ(::symlink((outside / "precious").c_str(), (dir / "last.pt.tmp.1").c_str()), 0);
  ASSERT_EQ(::symlink((outside / "gone").c_str(), (dir / "last.pt.tmp.2").c_str()), 0);
  ASSERT_EQ(::mkdir((dir / "last.pt.tmp.3").c_str(), 0755), 0);
  ASSERT_EQ(::mkfifo((dir / "last.pt.tmp.4").c_str(), 0644), 0);
  EXPECT_EQ(remove_stale_temporaries(dir / "last.pt"), Names{});
  EXPECT_EQ(list_dir(dir.path()),
            (Names{"last.pt.tmp.1", "last.pt.tmp.2", "last.pt.tmp.3", "last.pt.tmp.4"}));
  EXPECT_EQ(read_file(outside / "precious"), "keep");
}

TEST(StaleTemporaries, MissingDirectoryIsNothingToDo) {
  EXPECT_EQ(remove_stale_temporaries("/nonexistent/dir/last.pt"), Names{});
}

// Each atomic write clears what killed writers of the same file left, and leaves nothing itself.
TEST(AtomicWrite, RemovesStaleTemporariesAndLeavesNone) {
  TempDir dir;
  write_file(dir / "plan.json.tmp.7", "{\"half");
  write_file(dir / "other.json.tmp.7", "not ours");
  write_file_atomic(dir / "plan.json", "{}\n");
  EXPECT_EQ(list_dir(dir.path()), (Names{"other.json.tmp.7", "plan.json"}));
  EXPECT_EQ(read_file(dir / "plan.json"), "{}\n");
}

// A link planted under the temporary's name is not written through.
TEST(AtomicWrite, DoesNotWriteThroughALinkedTemporary) {
  TempDir dir;
  TempDir outside;
  write_file(outside / "precious", "keep");
  const std::string temp = dir / ("plan.json.tmp." + std::to_string(::getpid()));
  ASSERT_EQ(::symlink((outside / "precious").c_str(), temp.c_str()), 0);
  EXPECT_THROW(write_file_atomic(dir / "plan.json", "{}\n"), std::runtime_error);
  EXPECT_EQ(read_file(outside / "precious"), "keep");
  EXPECT_FALSE(file_exists(dir / "plan.json"));
}

TEST(ReadWholeFile, ReadsARegularFileWhole) {
  TempDir dir;
  const std::string big(200000, 'x');  // more than one read's buffer
  write_file(dir.file("f"), big + "end");
  const std::vector<char> bytes = read_whole_file(dir.file("f"));
  EXPECT_EQ(std::string(bytes.begin(), bytes.end()), big + "end");
}

TEST(ReadWholeFile, RefusesWhatIsNotARegularFileWithoutWaiting) {
  TempDir dir;
  ASSERT_EQ(mkfifo(dir.file("fifo").c_str(), 0644), 0);  // no writer: a blocking open would hang
  auto reason = [](const std::string& path) {
    try {
      read_whole_file(path);
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("read");
  };
  EXPECT_EQ(reason(dir.file("fifo")), "is a FIFO, not a regular file");
  EXPECT_EQ(reason(dir.path()), "is a directory, not a regular file");
  EXPECT_EQ(reason("/dev/null"), "is a character device, not a regular file");
  EXPECT_EQ(reason(dir.file("missing")), "No such file or directory");
}

}  // namespace
}  // namespace dl
