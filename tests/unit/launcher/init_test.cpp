// Where `dl-launch init` looks for the workspace template, and what it says when there is none.
#include "launcher/init.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/errors.h"
#include "support/build_paths.h"

namespace dl::test {
namespace {

TEST(InitTemplate, SearchOrderIsInstallThenImageThenSourceTree) {
  const auto c = template_candidates(nullptr, "/usr/local/bin");
  ASSERT_GE(c.size(), 3u);
  EXPECT_EQ(c[0], "/usr/local/bin/../share/dl/workspace_template");
  EXPECT_EQ(c[1], "/opt/dl/workspace_template");
  EXPECT_EQ(c[2], dl::test::kTemplateSource);
  EXPECT_EQ(template_candidates("", "/usr/local/bin"), c) << "an empty DL_TEMPLATE_DIR is unset";
}

TEST(InitTemplate, TemplateDirFromTheEnvironmentIsTheOnlyPlace) {
  // A wrong DL_TEMPLATE_DIR is an error, not a quiet fall-back to another template.
  EXPECT_EQ(template_candidates("/site/template", "/usr/local/bin"),
            std::vector<std::string>{"/site/template"});
}

TEST(InitTemplate, FindsTheFirstDirectoryWithADlConf) {
  EXPECT_EQ(find_template({"/nonexistent/a", dl::test::kTemplateSource}),
            std::string(dl::test::kTemplateSource));
}

TEST(InitTemplate, NoneFoundNamesEveryPlaceAndExits66) {
  try {
    find_template({"/nonexistent/a", "/nonexistent/b"});
    FAIL() << "expected UserError";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code(), exit_code::kMissing);
    const std::string what = e.what();
    EXPECT_NE(what.find("/nonexistent/a, /nonexistent/b"), std::string::npos) << what;
    EXPECT_NE(what.find("DL_TEMPLATE_DIR"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace dl::test
