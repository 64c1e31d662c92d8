// WebDataset shards: brace expansion and shard lists; the tar listing on good archives (ustar
// prefixes, GNU long names, pax paths) and on hostile ones (`..` and absolute names, links,
// FIFOs, a bad checksum, a truncated file, a member declaring more bytes than the file holds,
// an oversized member); the sample source's grouping by key, its count of samples without an
// image or a class or with a bad class, and samples that decode as the same JPEG in a folder.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "data/data_error.h"
#include "data/data_set.h"
#include "data/file_list_source.h"
#include "data/shard_list.h"
#include "data/shard_pack.h"
#include "data/shard_source.h"
#include "data/tar_listing.h"
#include "data/tar_writer.h"
#include "support/files.h"
#include "support/temp_dir.h"

#if DL_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#endif

namespace dl::test {
namespace {

using namespace dl::data;

// One ustar header block: name (or name and prefix), size, type; checksum computed unless
// `bad_checksum`.
std::string header(const std::string& name, std::uint64_t size, char type = '0',
                   bool bad_checksum = false, const std::string& prefix = "") {
  std::string b(512, '\0');
  std::memcpy(&b[0], name.data(), std::min<std::size_t>(name.size(), 100));
  std::memcpy(&b[100], "0000644", 7);
  std::memcpy(&b[108], "0000000", 7);
  std::memcpy(&b[116], "0000000", 7);
  char size_field[13];
  std::snprintf(size_field, sizeof size_field, "%011llo", static_cast<unsigned long long>(size));
  std::memcpy(&b[124], size_field, 11);
  std::memcpy(&b[136], "00000000000", 11);
  b[156] = type;
  std::memcpy(&b[257], "ustar", 6);
  std::memcpy(&b[263], "00", 2);
  std::memcpy(&b[345], prefix.data(), std::min<std::size_t>(prefix.size(), 155));
  std::memset(&b[148], ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : b) sum += c;
  if (bad_checksum) sum += 1;
  char sum_field[8];
  std::snprintf(sum_field, sizeof sum_field, "%06o", sum);
  std::memcpy(&b[148], sum_field, 7);
  return b;
}

std::string padded(const std::string& data) {
  return data + std::string((512 - data.size() % 512) % 512, '\0');
}

std::string member(const std::string& name, const std::string& data, char type = '0') {
  return header(name, data.size(), type) + padded(data);
}

std::string end_of_archive() {
  return std::string(1024, '\0');
}

TarListing list(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY);
  EXPECT_GE(fd, 0) << path;
  const off_t size = lseek(fd, 0, SEEK_END);
  TarListing l = list_tar(fd, static_cast<std::uint64_t>(size));
  close(fd);
  return l;
}

TEST(ShardList, BracesExpandAsWebDatasetWritesThem) {
  EXPECT_EQ(expand_braces("a-{000..002}.tar"),
            (std::vector<std::string>{"a-000.tar", "a-001.tar", "a-002.tar"}));
  EXPECT_EQ(expand_braces("s{8..10}"), (std::vector<std::string>{"s8", "s9", "s10"}));
  EXPECT_EQ(expand_braces("s{08..10}"), (std::vector<std::string>{"s08", "s09", "s10"}));
  EXPECT_EQ(expand_braces("{x,y}-{0..1}"), (std::vector<std::string>{"x-0", "x-1", "y-0", "y-1"}));
  EXPECT_EQ(expand_braces("plain.tar"), (std::vector<std::string>{"plain.tar"}));
  for (const char* bad : {"a{1..", "a}1{", "a{3..1}", "a{x..y}", "a{}", "a{{1,2}}"}) {
    EXPECT_THROW(expand_braces(bad), std::invalid_argument) << bad;
  }
  EXPECT_THROW(expand_braces("{0..99}", 50), std::invalid_argument);
  // A range past the limit is refused from its ends, before a name is made (ten million names
  // took a second and half a gigabyte to build and then refuse: seen while writing
  // shard_list_fuzz).
  try {
    expand_braces("s-{0..9999999}.tar", 1000);
    ADD_FAILURE() << "ten million names were not refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "shards s-{0..9999999}.tar: {0..9999999}: more than 1000 names; expected at most "
                 "1000 (a .shards list, one a line, names more)");
  }
  EXPECT_EQ(expand_braces("{1..1000}", 1000).size(), 1000u);
}

TEST(ShardList, FoldersListsAndPatternsNameTheShards) {
  TempDir dir;
  for (const char* name : {"b-001.tar", "b-000.tar"}) write_file(dir.file(name), end_of_archive());
  write_file(dir.file("notes.md"), "not a shard\n");
  EXPECT_TRUE(names_shards(dir.path()));
  EXPECT_EQ(shard_paths(dir.path()),
            (std::vector<std::string>{dir.file("b-000.tar"), dir.file("b-001.tar")}));
  EXPECT_EQ(shard_paths(dir.file("b-{000..001}.tar")).size(), 2u);
  write_file(dir.file("list.shards"), "# two shards\nb-001.tar\n\n" + dir.file("b-000.tar") + "\n");
  EXPECT_EQ(shard_paths(dir.file("list.shards")),
            (std::vector<std::string>{dir.file("b-001.tar"), dir.file("b-000.tar")}));
  EXPECT_EQ(shard_paths("file://" + dir.file("b-000.tar")),
            (std::vector<std::string>{dir.file("b-000.tar")}));
  // A missing shard is MissingData naming it; remote ones are refused in one line.
  try {
    shard_paths(dir.file("b-{000..002}.tar"));
    FAIL() << "a missing shard must throw";
  } catch (const MissingData& e) {
    EXPECT_NE(std::string(e.what()).find("b-002.tar"), std::string::npos) << e.what();
  }
  // Remote shards are named, not fetched, until they are read; a remote folder is refused.
  EXPECT_EQ(shard_paths("s3://bucket/train-{0..1}.tar"),
            (std::vector<std::string>{"s3://bucket/train-0.tar", "s3://bucket/train-1.tar"}));
  EXPECT_EQ(shard_paths("https://host/train.tar"),
            std::vector<std::string>{"https://host/train.tar"});
  EXPECT_THROW(shard_paths("https://host/set/"), DataError);
  write_file(dir.file("mixed.shards"), "b-000.tar\nhttps://host/x.tar\n");
  EXPECT_THROW(shard_paths(dir.file("mixed.shards")), DataError);
  // A class folder beside .tar files: an ImageFolder, not shards.
  ASSERT_EQ(0, mkdir(dir.file("cat").c_str(), 0755));
  EXPECT_FALSE(names_shards(dir.path()));
}

TEST(TarListing, ReadsUstarPrefixesGnuLongNamesAndPaxPaths) {
  TempDir dir;
  const std::string long_name = std::string(120, 'n') + ".jpg";
  const std::string pax_record = "27 path=pax/dir/sample.cls\n";
  ASSERT_EQ(pax_record.size(), 27u);
  std::string tar = member("a.jpg", "AAAA") + header("b.cls", 1, '0', false, "deep/dir") +
                    padded("7") + member("././@LongLink", long_name + '\0', 'L') +
                    member("truncated-name", "L", '0') + member("PaxHeaders/x", pax_record, 'x') +
                    member("short", "9", '0') + member("folder/", "", '5') + end_of_archive();
  write_file(dir.file("s.tar"), tar);
  const TarListing l = list(dir.file("s.tar"));
  EXPECT_TRUE(l.complete);
  EXPECT_TRUE(l.problems.empty()) << l.problems.front();
  ASSERT_EQ(l.members.size(), 4u);
  EXPECT_EQ(l.members[0].name, "a.jpg");
  EXPECT_EQ(l.members[0].offset, 512u);
  EXPECT_EQ(l.members[0].size, 4u);
  EXPECT_EQ(l.members[1].name, "deep/dir/b.cls");
  EXPECT_EQ(l.members[2].name, long_name);
  EXPECT_EQ(l.members[3].name, "pax/dir/sample.cls");
}

TEST(TarListing, RefusesWhatLeavesTheArchiveAndStopsAtDamage) {
  TempDir dir;
  // Refused members, the listing going on past them.
  write_file(dir.file("evil.tar"), member("../up.jpg", "x") + member("/etc/abs.jpg", "x") +
                                       member("a/../../b.jpg", "x") + header("link.jpg", 0, '2') +
                                       header("fifo.jpg", 0, '6') + member("ok.jpg", "fine") +
                                       end_of_archive());
  TarListing l = list(dir.file("evil.tar"));
  ASSERT_EQ(l.members.size(), 1u);
  EXPECT_EQ(l.members[0].name, "ok.jpg");
  ASSERT_EQ(l.problems.size(), 5u);
  EXPECT_NE(l.problems[0].find("'../up.jpg'"), std::string::npos) << l.problems[0];
  EXPECT_NE(l.problems[0].find("leaves the archive"), std::string::npos) << l.problems[0];
  EXPECT_NE(l.problems[3].find("symbolic link (not followed)"), std::string::npos);
  EXPECT_NE(l.problems[4].find("FIFO"), std::string::npos);
  EXPECT_TRUE(l.complete);

  // A tar bomb: a 1 KB file whose member claims 4 GiB. Nothing past it is trusted.
  write_file(dir.file("bomb.tar"),
             member("first.jpg", "1") + header("huge.jpg", std::uint64_t{1} << 32) + "tail");
  l = list(dir.file("bomb.tar"));
  ASSERT_EQ(l.members.size(), 1u);
  EXPECT_FALSE(l.complete);
  ASSERT_EQ(l.problems.size(), 1u);
  EXPECT_NE(l.problems[0].find("declaring 4294967296 bytes"), std::string::npos) << l.problems[0];

  // Truncated inside a header, and a header whose checksum fails.
  const std::string good = member("a.jpg", "1234");
  write_file(dir.file("cut.tar"), good + header("b.jpg", 4).substr(0, 300));
  l = list(dir.file("cut.tar"));
  EXPECT_EQ(l.members.size(), 1u);
  EXPECT_FALSE(l.complete);
  EXPECT_NE(l.problems.at(0).find("cut short"), std::string::npos);
  write_file(dir.file("sum.tar"), good + header("b.jpg", 4, '0', true) + padded("1234"));
  l = list(dir.file("sum.tar"));
  EXPECT_EQ(l.members.size(), 1u);
  EXPECT_NE(l.problems.at(0).find("checksum"), std::string::npos);

  // A member over the size limit is refused; the next one is read.
  TarLimits small;
  small.max_member_bytes = 3;
  write_file(dir.file("big.tar"), good + member("c.jpg", "12") + end_of_archive());
  const int fd = open(dir.file("big.tar").c_str(), O_RDONLY);
  l = list_tar(fd, static_cast<std::uint64_t>(lseek(fd, 0, SEEK_END)), small);
  close(fd);
  ASSERT_EQ(l.members.size(), 1u);
  EXPECT_EQ(l.members[0].name, "c.jpg");
  EXPECT_NE(l.problems.at(0).find("more than 3"), std::string::npos);
}

#if DL_HAVE_OPENCV

std::string jpeg(int seed, int rows = 64, int cols = 80) {
  cv::Mat image(rows, cols, CV_8UC3);
  cv::randu(image, cv::Scalar::all(seed), cv::Scalar::all(255));
  std::vector<std::uint8_t> bytes;
  EXPECT_TRUE(cv::imencode(".jpg", image, bytes));
  return std::string(bytes.begin(), bytes.end());
}

TEST(ShardSource, SamplesAreKeysWithAnImageAndAClassAndTheRestIsCounted) {
  TempDir dir;
  std::vector<std::string> jpegs;
  for (int i = 0; i < 4; ++i) jpegs.push_back(jpeg(i * 20));
  const std::string tar =
      member("s/000.jpg", jpegs[0]) + member("s/000.cls", "1\n") + member("s/000.json", "{}") +
      member("s/001.cls", "0") + member("s/001.JPEG", jpegs[1]) +   // field order and case free
      member("s/002.jpg", jpegs[2]) +                               // no class
      member("s/003.cls", "2") +                                    // no image
      member("s/004.jpg", jpegs[3]) + member("s/004.cls", "two") +  // not a number
      member("s/005.jpg", jpegs[3]) + member("s/005.cls", "-1") +   // negative
      member("s/006.jpg", jpegs[3]) + member("s/006.cls", " 3 ") + member("../x.jpg", "x") +
      end_of_archive();
  write_file(dir.file("train-000.tar"), tar);
  std::vector<std::string> warnings;
  ImageFileOptions options;
  options.warn = [&](const std::string& line) { warnings.push_back(line); };
  const auto source = open_shards(dir.file("train-000.tar"), options);
  ASSERT_EQ(source->size(), 3);
  EXPECT_EQ(source->label(0), 1);
  EXPECT_EQ(source->label(1), 0);
  EXPECT_EQ(source->label(2), 3);
  EXPECT_EQ(source->num_classes(), 4);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("4 sample(s) left out (1 without an image, 1 without a class, 2 with "
                             "a class that is not a whole number"),
            std::string::npos)
      << warnings[0];
  EXPECT_NE(warnings[0].find("'../x.jpg'"), std::string::npos) << warnings[0];
  EXPECT_NE(source->describe().find("1 shard(s), 3 samples, 4 classes"), std::string::npos)
      << source->describe();

  // Each sample is its JPEG as a folder would give it, for training and evaluation alike.
  write_file(dir.file("one.jpg"), jpegs[1]);
  const auto folder = make_file_list_source({{dir.file("one.jpg"), 0}}, dir.path(), "ImageFolder");
  for (bool train : {true, false}) {
    Transform t;
    t.out = ImageShape{3, 32, 32};
    t.train = train;
    std::mt19937 rng_a(9), rng_b(9);
    std::vector<std::uint8_t> a(t.out.bytes()), b(t.out.bytes());
    ASSERT_TRUE(source->load(1, t, rng_a, a.data()));
    ASSERT_TRUE(folder->load(0, t, rng_b, b.data()));
    EXPECT_EQ(a, b) << (train ? "train" : "eval");
  }
}

TEST(ShardSource, AShardWithoutSamplesIsOneLineAndAFolderOfShardsHasTwoParts) {
  TempDir dir;
  write_file(dir.file("empty.tar"), member("a.txt", "no images") + end_of_archive());
  try {
    open_shards(dir.file("empty.tar"));
    FAIL() << "shards without a sample must throw";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("no sample with an image"), std::string::npos) << e.what();
  }
  // train/ and val/ of shards: open_data_set's two parts; a corrupt image is skipped and named.
  ASSERT_EQ(0, mkdir(dir.file("set").c_str(), 0755));
  ASSERT_EQ(0, mkdir(dir.file("set/train").c_str(), 0755));
  ASSERT_EQ(0, mkdir(dir.file("set/val").c_str(), 0755));
  write_file(dir.file("set/train/train-0.tar"), member("k0.jpg", jpeg(1)) + member("k0.cls", "0") +
                                                    member("k1.jpg", "not a jpeg") +
                                                    member("k1.cls", "1") + end_of_archive());
  write_file(dir.file("set/val/val-0.tar"), member("v0.png", std::string("\x89PNG junk")) +
                                                member("v0.cls", "1") + member("v1.jpg", jpeg(2)) +
                                                member("v1.cls", "0") + end_of_archive());
  DataSet set = open_data_set(dir.file("set"));
  EXPECT_EQ(set.kind, "shards");
  EXPECT_TRUE(set.files());
  ASSERT_NE(set.val, nullptr);
  EXPECT_EQ(set.train->size(), 2);
  EXPECT_EQ(set.val->size(), 2);
  Transform t;
  t.out = ImageShape{3, 16, 16};
  std::mt19937 rng(1);
  std::vector<std::uint8_t> out(t.out.bytes());
  EXPECT_TRUE(set.train->load(0, t, rng, out.data()));
  EXPECT_FALSE(set.train->load(1, t, rng, out.data()));
  EXPECT_EQ(set.train->skip_reason(1), SkipReason::kNotAnImage);
  ASSERT_EQ(set.train->failures().size(), 1u);
  EXPECT_EQ(set.train->failures()[0].path, dir.file("set/train/train-0.tar") + ":k1.jpg");
  // A brace pattern through open_data_set too.
  EXPECT_EQ(open_data_set(dir.file("set/train/train-{0..0}.tar")).train->size(), 2);
}

// The writer's shards read back as the data set they were packed from, split at the size asked,
// byte for byte the same when packed again; a crash mid-shard leaves no shard under its name.
TEST(ShardPack, PackedShardsReadBackAsTheSourceAndAreTheSameBytesAgain) {
  TempDir dir;
  std::vector<LabelledFile> files;
  for (int i = 0; i < 7; ++i) {
    write_file(dir.file("f" + std::to_string(i) + ".jpg"), jpeg(i * 30));
    files.push_back({dir.file("f" + std::to_string(i) + ".jpg"), i % 3});
  }
  const auto folder = make_file_list_source(files, dir.path(), "ImageFolder");
  ASSERT_EQ(0, mkdir(dir.file("a").c_str(), 0755));
  ASSERT_EQ(0, mkdir(dir.file("b").c_str(), 0755));
  PackOptions options;
  options.shard_bytes = 20000;  // a few samples a shard
  options.out_dir = dir.file("a");
  const PackSummary a = pack_shards(*folder, options);
  options.out_dir = dir.file("b");
  const PackSummary b = pack_shards(*folder, options);
  EXPECT_EQ(a.samples, 7);
  EXPECT_EQ(a.classes, 3);
  ASSERT_GT(a.shards.size(), 1u);
  ASSERT_EQ(a.shards.size(), b.shards.size());
  for (std::size_t i = 0; i < a.shards.size(); ++i) {
    EXPECT_EQ(read_file(a.shards[i]), read_file(b.shards[i])) << a.shards[i];
  }
  const auto shards = open_shards(dir.file("a"));
  ASSERT_EQ(shards->size(), 7);
  Transform t;
  t.out = ImageShape{3, 24, 24};
  t.train = true;
  for (std::int64_t i = 0; i < 7; ++i) {
    EXPECT_EQ(shards->label(i), i % 3);
    std::mt19937 rng_a(static_cast<std::uint32_t>(i)), rng_b(static_cast<std::uint32_t>(i));
    std::vector<std::uint8_t> x(t.out.bytes()), y(t.out.bytes());
    ASSERT_TRUE(shards->load(i, t, rng_a, x.data()));
    ASSERT_TRUE(folder->load(i, t, rng_b, y.data()));
    EXPECT_EQ(x, y) << "sample " << i;
  }
  // A writer dropped before finish(): its partial file is gone and no shard appears.
  {
    TarWriter w(dir.file("a/cut.tar"));
    const std::uint8_t byte = 1;
    w.add("x.cls", &byte, 1);
  }
  EXPECT_FALSE(file_exists(dir.file("a/cut.tar")));
  EXPECT_FALSE(file_exists(dir.file("a/cut.tar.partial")));
  EXPECT_THROW(TarWriter(dir.file("a/t.tar")).add("../x", nullptr, 0), std::invalid_argument);
  EXPECT_THROW(TarWriter(dir.file("a/t.tar")).add("b/../../x", nullptr, 0), std::invalid_argument);
  EXPECT_THROW(TarWriter(dir.file("a/t.tar")).add("/x", nullptr, 0), std::invalid_argument);
  // A `..` inside a name is not a component: the reader lists such a member, so the writer
  // writes it.
  {
    TarWriter w(dir.file("a/dots.tar"));
    const std::uint8_t byte = 7;
    w.add("img..jpg", &byte, 1);
    w.finish();
  }
  EXPECT_TRUE(file_exists(dir.file("a/dots.tar")));
  // A rename that fails (a folder holds the shard's name) leaves no partial file behind.
  write_file(dir.file("a/taken.tar/inside"), "x");
  {
    TarWriter w(dir.file("a/taken.tar"));
    const std::uint8_t byte = 1;
    w.add("x.cls", &byte, 1);
    EXPECT_THROW(w.finish(), std::runtime_error);
  }
  EXPECT_FALSE(file_exists(dir.file("a/taken.tar.partial")));
}

#endif

}  // namespace
}  // namespace dl::test
