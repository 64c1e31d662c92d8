// dl-launch evaluate|predict: which arguments stay with the launcher (its options and the
// training settings, with their values) and which go to dl-train (--checkpoint, --split, --out,
// --top-k, the paths, everything after --).
#include "launcher/checkpoint_command.h"

#include <gtest/gtest.h>

#include "launcher/options.h"

namespace dl {
namespace {

std::optional<CheckpointCommand> split(std::vector<const char*> argv) {
  return split_checkpoint_command(static_cast<int>(argv.size()), argv.data(), option_takes_value);
}

using Args = std::vector<std::string>;

TEST(CheckpointCommand, OnlyEvaluateAndPredict) {
  EXPECT_FALSE(split({"dl-launch", "--epochs", "3"}).has_value());
  EXPECT_FALSE(split({"dl-launch"}).has_value());
  EXPECT_EQ(split({"dl-launch", "evaluate"})->word, "evaluate");
}

TEST(CheckpointCommand, SplitsLauncherAndTrainerArguments) {
  const auto c = split({"dl-launch", "predict", "--workspace", "/ws", "--checkpoint", "runs/a.pt",
                        "--dry-run", "photos", "--top-k=3", "--batch-size", "32", "-c", "x.conf",
                        "one.png", "--out", "p.csv", "--", "-odd.png"});
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->word, "predict");
  EXPECT_EQ(c->launcher_args, (Args{"dl-launch", "--workspace", "/ws", "--dry-run", "--batch-size",
                                    "32", "-c", "x.conf"}));
  EXPECT_EQ(c->trainer_args, (Args{"--checkpoint", "runs/a.pt", "photos", "--top-k=3", "one.png",
                                   "--out", "p.csv", "-odd.png"}));
}

TEST(CheckpointCommand, FlagsTakeNoValue) {
  EXPECT_TRUE(option_takes_value("workers"));
  EXPECT_TRUE(option_takes_value("c"));
  EXPECT_FALSE(option_takes_value("dry-run"));
  EXPECT_FALSE(option_takes_value("json"));
  EXPECT_FALSE(option_takes_value("no-such-option"));
}

}  // namespace
}  // namespace dl
