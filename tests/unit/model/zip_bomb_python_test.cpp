// A zip bomb that Python's torch.load reads (labels "integration;python;slow": PythonInterop.*):
// torch.save's file of a 1 GiB tensor of zeros, its records recompressed by Python's zipfile with
// deflate, is about 1 MB. LibTorch's zip reader would allocate and inflate the whole gibibyte
// before anything is checked; the checkpoint and weights readers refuse it from its central
// directory, with one line each, and the process's peak resident memory does not grow by it.
#include "core/errors.h"
#include "model/checkpoint.h"
#include "model/weights_file.h"

#include "support/files.h"
#include "support/python.h"
#include "support/temp_dir.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace dl::test {
namespace {

constexpr const char* kMakeBomb = R"(
import io
import sys
import zipfile
import torch

out = sys.argv[1]
saved = io.BytesIO()
torch.save({"fc.weight": torch.zeros(2 ** 28)}, saved)
with zipfile.ZipFile(saved) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
    for name in src.namelist():
        dst.writestr(name, src.read(name))
# A file torch.load reads as it would the original: not merely a damaged archive.
assert torch.load(out)["fc.weight"].numel() == 2 ** 28
print("OK")
)";

long peak_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

TEST(PythonInteropZipBomb, ADeflatedGibibyteIsRefusedFromTheDirectoryAlone) {
  if (!kPythonHasTorch) GTEST_SKIP() << kNoTorch;
  TempDir dir;
  write_file(dir / "make.py", kMakeBomb);
  const Result made = run_python(dir / "make.py", {dir / "bomb.pth"});
  ASSERT_EQ(made.code, 0) << made.out << made.err;
  const std::string bytes = read_file(dir / "bomb.pth");
  ASSERT_LT(bytes.size(), 8u << 20) << "not a bomb: deflate left " << bytes.size() << " bytes";

  const long before = peak_rss_kib();
  try {
    dl::model::read_weights_file(dir / "bomb.pth");
    FAIL() << "the bomb was read as weights";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), exit_code::kBadData);
    const std::string line = e.what();
    EXPECT_EQ(line.rfind("--init-from " + dir / "bomb.pth" + ": record ", 0), 0u) << line;
    EXPECT_NE(line.find("is compressed (deflate)"), std::string::npos) << line;
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  }
  try {
    dl::model::parse_checkpoint(std::vector<char>(bytes.begin(), bytes.end()), "last.pt");
    FAIL() << "the bomb was read as a checkpoint";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("checkpoint last.pt: record ", 0), 0u) << e.what();
  }
  const long grown_mib = (peak_rss_kib() - before) / 1024;
  std::cout << "zip bomb: " << bytes.size() << " bytes on disk, 1024 MiB inflated; peak RSS grew "
            << grown_mib << " MiB while both readers refused it\n";
  EXPECT_LT(grown_mib, 64);
}

}  // namespace
}  // namespace dl::test
