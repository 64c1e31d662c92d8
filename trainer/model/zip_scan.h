// A walk over a zip archive's central directory, the one LibTorch's zip reader (miniz) uses, that
// refuses a zip bomb before LibTorch reads any record. PyTorchStreamReader::getRecord allocates a
// record's declared uncompressed size and inflates into it, so a deflated record of zeros, which
// expands about 1000-fold, turns a 1 MB checkpoint or weights file into a gibibyte of resident
// memory and seconds of CPU before anything is checked. torch.save and LibTorch's pickle_save
// store every record uncompressed (never larger than the file itself); torch.jit.save compresses
// only a model's code and debug records, kilobytes to megabytes. So the records stored compressed
// may together declare at most kMaxInflatedBytes. No LibTorch here: plain bytes in, a verdict out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dl::model {

// What the compressed records of one archive may declare in all, uncompressed.
constexpr std::uint64_t kMaxInflatedBytes = std::uint64_t{256} << 20;

struct ZipScan {
  enum class Verdict {
    kSafe,     // stored records, and compressed ones within kMaxInflatedBytes: LibTorch may read it
    kBomb,     // compressed records declare more than kMaxInflatedBytes: refuse the file
    kCorrupt,  // the central directory cannot be walked as miniz would: refuse the file
  };
  Verdict verdict = Verdict::kSafe;
  std::string why;  // one line, "" for kSafe
};

// The verdict on the `size`-byte archive at `data`. The central directory is found where miniz
// finds it (the end record nearest the end of the file, its zip64 records where they are), and
// every one of its entries is looked at, so a record LibTorch can ask for is one this has seen.
ZipScan scan_zip_records(const std::uint8_t* data, std::size_t size);

// The same for a file's bytes in memory.
inline ZipScan scan_zip_records(const std::vector<char>& bytes) {
  return scan_zip_records(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
}

}  // namespace dl::model
