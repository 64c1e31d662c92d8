// The skipped-samples report: grouped by reason in a fixed order, a few files named per reason,
// and names that are not UTF-8 (or hold control characters) escaped so the line stays one line of
// valid text.
#include "data/skip_reason.h"

#include <gtest/gtest.h>

namespace dl::test {
namespace {

using namespace dl::data;

TEST(SkipReport, GroupsByReasonAndNamesAFewFiles) {
  std::vector<SkippedFile> files;
  for (int i = 0; i < 5; ++i) {
    files.push_back({i, "gone" + std::to_string(i) + ".jpg", SkipReason::kUnreadable,
                     "No such file or directory"});
  }
  files.push_back({9, "bomb.jpg", SkipReason::kTooLarge, "60000x60000 pixels"});
  SkipCounts counts{};
  counts[static_cast<std::size_t>(SkipReason::kUnreadable)] = 5;
  counts[static_cast<std::size_t>(SkipReason::kTooLarge)] = 2;  // one file, two epochs' worth
  EXPECT_EQ(describe_skips(counts, files, 2),
            "5 unreadable (gone0.jpg: No such file or directory, gone1.jpg: No such file or "
            "directory and 3 more), 2 too many pixels (bomb.jpg: 60000x60000 pixels)");
  // Counts without files (another rank's): the numbers alone.
  EXPECT_EQ(describe_skips(counts, {}), "5 unreadable, 2 too many pixels");
}

TEST(SkipReport, PrintablePathEscapesWhatIsNotUtf8) {
  EXPECT_EQ(printable_path("plain/caf\xc3\xa9.jpg"), "plain/caf\xc3\xa9.jpg");  // UTF-8 stays
  EXPECT_EQ(printable_path("caf\xe9.jpg"), "caf\\xE9.jpg");                     // Latin-1
  EXPECT_EQ(printable_path("a\nb\x7f"), "a\\x0Ab\\x7F");
  EXPECT_EQ(printable_path("\xed\xa0\x80"), "\\xED\\xA0\\x80");  // a surrogate, not UTF-8
  EXPECT_EQ(printable_path("\xf0\x9f\x98\x80!"), "\xf0\x9f\x98\x80!");
  EXPECT_EQ(printable_path("\xc0\xaf"), "\\xC0\\xAF");  // overlong
}

}  // namespace
}  // namespace dl::test
