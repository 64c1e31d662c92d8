// The exit-code table: one source for both programs' --help and the reference's table.
#include "core/errors.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "support/build_paths.h"
#include "support/files.h"

namespace dl::test {
namespace {

TEST(ExitCodes, TheReferenceShowsTheTableTheCodeHas) {
  const std::string path = std::string(dl::test::kSourceDir) + "/docs/reference.md";
  const std::string doc = read_file(path);
  const std::string begin = "<!-- exit-codes:begin -->\n";
  const std::string end = "<!-- exit-codes:end -->";
  const auto from = doc.find(begin);
  const auto to = doc.find(end);
  ASSERT_NE(from, std::string::npos) << path << " has no " << begin;
  ASSERT_NE(to, std::string::npos) << path << " has no " << end;
  EXPECT_EQ(doc.substr(from + begin.size(), to - from - begin.size()), exit_code_table())
      << path << " is out of date: put the table above between its markers";
}

TEST(ExitCodes, EveryNamedCodeHasARowAndEachRowAMeaning) {
  std::set<std::string> rows;
  for (const ExitCodeRow& row : kExitCodes) {
    rows.insert(std::string(row.code));
    EXPECT_FALSE(row.launch.empty() && row.train.empty()) << row.code;
  }
  for (int code : {exit_code::kOk, exit_code::kUsage, exit_code::kBadConfig, exit_code::kBadData,
                   exit_code::kMissing, exit_code::kUnavailable, exit_code::kInternal,
                   exit_code::kCantWrite, exit_code::kNoPermission, exit_code::kDiverged,
                   exit_code::kNotExecutable, exit_code::kNotFound}) {
    EXPECT_EQ(rows.count(std::to_string(code)), 1u) << code;
  }
}

TEST(ExitCodes, HelpListsOnlyTheCodesAProgramUses) {
  const std::string launch = exit_code_help(Program::kLaunch);
  const std::string train = exit_code_help(Program::kTrain);
  EXPECT_NE(launch.find("  127    the command"), std::string::npos) << launch;
  EXPECT_EQ(launch.find("  80 "), std::string::npos) << launch;
  EXPECT_NE(train.find("  80     the loss became NaN"), std::string::npos) << train;
  EXPECT_EQ(train.find("  127 "), std::string::npos) << train;
}

TEST(UserErrors, BecomeTheirCodeAndOneLineAndAnythingElseAnInternalError) {
  std::string said;
  bool internal = false;
  const auto say = [&](const std::string& line, bool is_internal) {
    said = line;
    internal = is_internal;
  };
  EXPECT_EQ(run_reporting_errors([]() -> int { throw UserError(66, "data: not found"); }, say), 66);
  EXPECT_EQ(said, "data: not found");
  EXPECT_FALSE(internal);
  EXPECT_EQ(run_reporting_errors([]() -> int { throw std::logic_error("bug"); }, say), 70);
  EXPECT_EQ(said, "internal error: bug (please report it)");
  EXPECT_TRUE(internal);
  EXPECT_EQ(run_reporting_errors([] { return 3; }, say), 3);
}

}  // namespace
}  // namespace dl::test
