// A stray word among dl-launch's arguments: a mistyped subcommand, a command without `--`, a
// flag's value given as a separate word. Option values and the command's own words are not.
#include "launcher/subcommand.h"

#include <gtest/gtest.h>

#include <vector>

#include "launcher/options.h"

namespace dl {
namespace {

std::optional<std::string> stray(std::vector<const char*> argv) {
  return stray_word(static_cast<int>(argv.size()), argv.data(), option_accepts_value);
}

TEST(Subcommand, AMistypedSubcommandGetsTheNearestOne) {
  EXPECT_EQ(*stray({"dl-launch", "evalute", "--workspace", "ws", "--", "/bin/echo", "hi"}),
            "'evalute' is not a subcommand or an option: did you mean evaluate?");
  EXPECT_EQ(*stray({"dl-launch", "predcit"}),
            "'predcit' is not a subcommand or an option: did you mean predict?");
  EXPECT_EQ(*stray({"dl-launch", "int", "ws"}),
            "'int' is not a subcommand or an option: did you mean init?");
}

TEST(Subcommand, AWordFarFromEverySubcommandSaysWhatGoesWhere) {
  const auto line = stray({"dl-launch", "frobnicate", "--dry-run"});
  ASSERT_TRUE(line);
  EXPECT_EQ(line->rfind("'frobnicate' is not a subcommand or an option; expected a subcommand", 0),
            0U)
      << *line;
  // A command typed without --.
  EXPECT_TRUE(stray({"dl-launch", "--workspace", "ws", "python3", "train.py"}));
  // A flag takes the word after it as its value (--resume false), but one word only.
  EXPECT_FALSE(stray({"dl-launch", "--resume", "false"}));
  EXPECT_EQ(stray({"dl-launch", "--resume", "false", "evalute"})->substr(0, 11), "'evalute' i");
  // The subcommand comes first.
  EXPECT_EQ(*stray({"dl-launch", "--workspace", "ws", "evaluate"}),
            "'evaluate' is not a subcommand or an option: did you mean dl-launch evaluate ...? "
            "(the subcommand comes first)");
}

TEST(Subcommand, OptionValuesSubcommandsAndTheCommandAreNoStrayWords) {
  EXPECT_FALSE(stray({"dl-launch"}));
  EXPECT_FALSE(stray({"dl-launch", "evaluate", "--checkpoint", "x.pt"}));
  EXPECT_FALSE(stray({"dl-launch", "init", "ws"}));
  EXPECT_FALSE(stray({"dl-launch", "--workspace", "ws", "--name", "a", "-c", "x.conf", "-n"}));
  EXPECT_FALSE(stray({"dl-launch", "--workspace=ws", "--epochs=2", "--resume"}));
  EXPECT_FALSE(stray({"dl-launch", "--workers", "2", "--", "python3", "train.py", "stray"}));
}

}  // namespace
}  // namespace dl
