// The zip walk that guards LibTorch's zip reader: archives LibTorch writes pass, and so do small
// compressed records (torch.jit.save's code); compressed records that together declare more than
// the limit are a bomb, named with the record that crosses it, in a plain archive and behind
// zip64's end records; a directory that runs past the file, a missing end record and every cut of
// a real archive are corrupt; and the three readers of archives (checkpoints, --init-from weights,
// TorchScript models) refuse a bomb before LibTorch reads it, each with its one line.
#include "model/zip_scan.h"

#include "core/errors.h"
#include "model/builders.h"
#include "model/checkpoint.h"
#include "model/model.h"
#include "model/weights_file.h"

#include "support/files.h"
#include "support/temp_dir.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <ATen/core/Dict.h>
#include <ATen/core/ivalue.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace dl::test {
namespace {

using dl::model::kMaxInflatedBytes;
using dl::model::scan_zip_records;
using dl::model::ZipScan;
using Verdict = ZipScan::Verdict;

ZipScan scan(const std::vector<char>& bytes) {
  return scan_zip_records(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
}

void put(std::vector<char>& out, std::uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>(value >> (8 * i) & 0xff));
}

struct Entry {
  std::string name;
  int method = 0;
  std::string data;
  std::uint64_t declared = kDataSize;  // the uncompressed size the directory claims

  static constexpr std::uint64_t kDataSize = ~std::uint64_t{0};  // data.size()
  std::uint64_t uncompressed() const { return declared == kDataSize ? data.size() : declared; }
};

// An archive as the zip format lays it out: local headers and data, the central directory, then
// (zip64) the zip64 end record and its locator, and the end record. With zip64 the end record
// holds the "see zip64" values (0xffff entries, 0xffffffff offset) as zip64 writers put there.
std::vector<char> make_zip(const std::vector<Entry>& entries, bool zip64 = false) {
  std::vector<char> out;
  std::vector<std::uint64_t> local_at;
  for (const Entry& e : entries) {
    local_at.push_back(out.size());
    put(out, 0x04034b50, 4);
    put(out, 20, 2);  // version needed
    put(out, 0, 2);   // flags
    put(out, static_cast<std::uint64_t>(e.method), 2);
    put(out, 0, 4);  // time, date
    put(out, 0, 4);  // CRC-32 (not looked at)
    put(out, e.data.size(), 4);
    put(out, e.data.size(), 4);
    put(out, e.name.size(), 2);
    put(out, 0, 2);
    out.insert(out.end(), e.name.begin(), e.name.end());
    out.insert(out.end(), e.data.begin(), e.data.end());
  }
  const std::uint64_t directory_at = out.size();
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    put(out, 0x02014b50, 4);
    put(out, 20, 2);  // version made by
    put(out, 20, 2);  // version needed
    put(out, 0, 2);
    put(out, static_cast<std::uint64_t>(e.method), 2);
    put(out, 0, 4);
    put(out, 0, 4);
    put(out, e.data.size(), 4);
    put(out, e.uncompressed(), 4);
    put(out, e.name.size(), 2);
    put(out, 0, 2);  // extra
    put(out, 0, 2);  // comment
    put(out, 0, 2);  // disk
    put(out, 0, 2);  // internal attributes
    put(out, 0, 4);  // external attributes
    put(out, local_at[i], 4);
    out.insert(out.end(), e.name.begin(), e.name.end());
  }
  const std::uint64_t directory_size = out.size() - directory_at;
  if (zip64) {
    const std::uint64_t zip64_at = out.size();
    put(out, 0x06064b50, 4);
    put(out, 44, 8);  // size of the rest of the record
    put(out, 45, 2);
    put(out, 45, 2);
    put(out, 0, 4);
    put(out, 0, 4);
    put(out, entries.size(), 8);
    put(out, entries.size(), 8);
    put(out, directory_size, 8);
    put(out, directory_at, 8);
    put(out, 0x07064b50, 4);
    put(out, 0, 4);
    put(out, zip64_at, 8);
    put(out, 1, 4);  // disks
  }
  put(out, 0x06054b50, 4);
  put(out, 0, 2);
  put(out, 0, 2);
  put(out, zip64 ? 0xffff : entries.size(), 2);
  put(out, zip64 ? 0xffff : entries.size(), 2);
  put(out, zip64 ? 0xffffffff : directory_size, 4);
  put(out, zip64 ? 0xffffffff : directory_at, 4);
  put(out, 0, 2);  // comment
  return out;
}

// A checkpoint-like archive LibTorch writes (torch::jit::pickle_save: stored records).
std::vector<char> real_archive() {
  c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
  dict.insert("w", at::arange(1000, at::kFloat));
  dict.insert("epoch", int64_t{3});
  return torch::jit::pickle_save(dict);
}

// `archive` with every central directory entry's method set to deflate, as a zip tool
// recompressing the file would mark them (the data is left as it is: it is never inflated here).
std::vector<char> marked_deflated(std::vector<char> archive) {
  const std::string signature("PK\x01\x02", 4);
  const std::string text(archive.begin(), archive.end());
  int marked = 0;
  for (std::size_t at = text.find(signature); at != std::string::npos;
       at = text.find(signature, at + 1)) {
    archive[at + 10] = 8;
    ++marked;
  }
  EXPECT_GT(marked, 0);
  return archive;
}

TEST(ZipScan, ArchivesLibTorchWritesAreSafe) {
  const ZipScan real = scan(real_archive());
  EXPECT_EQ(real.verdict, Verdict::kSafe) << real.why;
  EXPECT_EQ(real.why, "");
  EXPECT_EQ(scan(make_zip({{"a/data.pkl", 0, "x"}, {"a/data/0", 0, std::string(64, 'y')}})).verdict,
            Verdict::kSafe);
  EXPECT_EQ(scan(make_zip({{"a/data.pkl", 0, "x"}}, true)).verdict, Verdict::kSafe);
  EXPECT_EQ(scan(make_zip({})).verdict, Verdict::kSafe);
}

TEST(ZipScan, SmallCompressedRecordsAreSafe) {
  // torch.jit.save deflates a model's code and debug records; a zip tool may deflate them all.
  EXPECT_EQ(scan(marked_deflated(real_archive())).verdict, Verdict::kSafe);
  EXPECT_EQ(scan(make_zip({{"m/code/__torch__.py", 8, "zz", 1 << 20}})).verdict, Verdict::kSafe);
  EXPECT_EQ(scan(make_zip({{"m/data/0", 8, "zz", kMaxInflatedBytes}})).verdict, Verdict::kSafe);
}

TEST(ZipScan, ABombIsNamedWithTheRecordThatCrossesTheLimit) {
  const ZipScan z =
      scan(make_zip({{"a/data.pkl", 0, "x"}, {"a/data/0", 8, "zz", std::uint64_t{1} << 30}}));
  EXPECT_EQ(z.verdict, Verdict::kBomb);
  EXPECT_EQ(z.why,
            "record a/data/0 is compressed (deflate) and the archive's compressed records would "
            "inflate to 1024 MiB, more than the 256 MiB allowed (a zip bomb?); torch.save stores "
            "tensors uncompressed");
  EXPECT_EQ(scan(make_zip({{"x", 8, "zz", kMaxInflatedBytes + 1}})).verdict, Verdict::kBomb);
  // The records add up: two of 200 MiB are a bomb at the second.
  const ZipScan two =
      scan(make_zip({{"a/data/0", 8, "zz", 200u << 20}, {"a/data/1", 8, "zz", 200u << 20}}));
  EXPECT_EQ(two.verdict, Verdict::kBomb);
  EXPECT_EQ(two.why.rfind("record a/data/1 is compressed (deflate) and the archive's compressed "
                          "records would inflate to 400 MiB",
                          0),
            0u)
      << two.why;
  // A zip64 size stands in the 32-bit field as 0xffffffff: 4 GiB or more.
  EXPECT_NE(scan(make_zip({{"x", 8, "zz", 0xffffffff}})).why.find("inflate to 4 GiB or more"),
            std::string::npos);
  EXPECT_NE(scan(make_zip({{"x", 12, "", 1u << 30}})).why.find("(bzip2)"), std::string::npos);
  EXPECT_NE(scan(make_zip({{"x", 99, "", 1u << 30}})).why.find("(method 99)"), std::string::npos);
  // Stored records count for nothing: miniz holds them to their compressed size, in the file.
  EXPECT_EQ(scan(make_zip({{"x", 0, "zz", 1u << 30}})).verdict, Verdict::kSafe);
}

TEST(ZipScan, Zip64EndRecordsAreFollowed) {
  // The end record alone says 0xffff entries at 0xffffffff: only the zip64 record finds them.
  const ZipScan z = scan(make_zip({{"a/data.pkl", 0, "x"}, {"a/data/1", 8, "zz", 1u << 30}}, true));
  EXPECT_EQ(z.verdict, Verdict::kBomb) << z.why;
  EXPECT_NE(z.why.find("a/data/1"), std::string::npos) << z.why;
}

TEST(ZipScan, NamesThatAreNotTextAreEscaped) {
  const ZipScan z = scan(make_zip({{std::string("a/\xff\n", 4), 8, "", 1u << 30}}));
  EXPECT_EQ(z.why.rfind("record a/\\xff\\x0a is compressed", 0), 0u) << z.why;
  EXPECT_LT(scan(make_zip({{std::string(5000, 'n'), 8, "", 1u << 30}})).why.size(), 500u);
}

TEST(ZipScan, DirectoriesThatDoNotFitTheFileAreCorrupt) {
  EXPECT_EQ(scan({}).verdict, Verdict::kCorrupt);
  EXPECT_EQ(scan(std::vector<char>(100, 'x')).why,
            "zip archive: no end of central directory record (truncated?)");
  std::vector<char> bad = make_zip({{"a", 0, "x"}});
  bad[bad.size() - 6] = 0x7f;  // the directory's offset, far past the end
  EXPECT_EQ(scan(bad).verdict, Verdict::kCorrupt);
  EXPECT_NE(scan(bad).why.find("runs past the end of the"), std::string::npos) << scan(bad).why;
  std::vector<char> more = make_zip({{"a", 0, "x"}});
  more[more.size() - 12] = 2;  // two entries claimed, one there
  EXPECT_EQ(scan(more).why,
            "zip archive: central directory entry 1 of 2 is cut short or has no signature");
}

TEST(ZipScan, EveryCutOfARealArchiveIsCorrupt) {
  // A cut loses the end record, so no cut reaches the entries (found compressed if it did).
  const std::vector<char> whole = marked_deflated(real_archive());
  for (std::size_t cut = 0; cut < whole.size(); ++cut) {
    const std::vector<char> part(whole.begin(), whole.begin() + static_cast<long>(cut));
    EXPECT_EQ(scan(part).verdict, Verdict::kCorrupt) << cut;
  }
}

TEST(ZipScan, EveryReaderRefusesABombBeforeLibTorchReadsIt) {
  TempDir dir;
  // As torch.save lays a file out, with data/0 deflated and claiming a gibibyte.
  const std::vector<char> bomb = make_zip({{"archive/data.pkl", 0, "\x80\x02}."},
                                           {"archive/data/0", 8, "zz", 1u << 30},
                                           {"archive/version", 0, "3\n"}});
  const std::string text(bomb.begin(), bomb.end());
  write_file(dir / "last.pt", text);

  try {
    dl::model::parse_checkpoint(bomb, "last.pt");
    FAIL() << "a bomb was read as a checkpoint";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("checkpoint last.pt: record ", 0), 0u) << e.what();
    EXPECT_NE(std::string(e.what()).find("is compressed (deflate)"), std::string::npos);
  }
  try {
    dl::model::read_weights_file(dir / "last.pt");
    FAIL() << "a bomb was read as weights";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), exit_code::kBadData);
    EXPECT_EQ(std::string(e.what()).rfind("--init-from " + dir / "last.pt" + ": record ", 0), 0u)
        << e.what();
  }
  try {
    dl::model::load_torchscript(dir / "last.pt");
    FAIL() << "a bomb was read as a TorchScript model";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("is compressed (deflate)"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dl::test
