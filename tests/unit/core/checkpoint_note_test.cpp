// last.json: written and read back; a note that is malformed, oversized, negative, a link, a FIFO
// or stale (its size no longer last.pt's) is not believed; the words of the restart line.
#include "core/checkpoint_note.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "support/files.h"
#include "support/temp_dir.h"

namespace dl::test {
namespace {

TEST(CheckpointNote, RoundTripsAndDescribesWhereTheRunStands) {
  CheckpointNote inside;
  inside.step = 60;
  inside.epochs_done = 0;
  inside.epoch_batches = 60;
  inside.bytes = 1234;
  const auto back = parse_checkpoint_note(render_checkpoint_note(inside));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->step, 60);
  EXPECT_EQ(back->epoch_batches, 60);
  EXPECT_EQ(back->bytes, 1234);
  EXPECT_EQ(describe_checkpoint_note(*back), "step 60, batch 60 of epoch 1");
  CheckpointNote end;
  end.step = 120;
  end.epochs_done = 2;
  EXPECT_EQ(describe_checkpoint_note(*parse_checkpoint_note(render_checkpoint_note(end))),
            "step 120, after epoch 2");
  EXPECT_FALSE(back->global_batch.has_value()) << "a note without the recipe has none";
}

// The recipe a resume keeps: the global batch and the learning rates, exactly (0.1 x 3 too).
TEST(CheckpointNote, CarriesTheRecipeExactly) {
  CheckpointNote note;
  note.step = 5;
  note.bytes = 10;
  note.global_batch = 96;
  note.lr = 0.1;
  note.base_lr = 0.1 * 3;
  const auto back = parse_checkpoint_note(render_checkpoint_note(note));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->global_batch, 96);
  EXPECT_EQ(back->lr, 0.1);
  EXPECT_EQ(back->base_lr, 0.1 * 3);
  const std::string head = "{\"step\": 1, \"epochs_done\": 0, \"last_pt_bytes\": 1, ";
  for (const char* bad : {"\"global_batch\": 0}", "\"global_batch\": 1.5}", "\"lr\": 0}",
                          "\"lr\": -0.1}", "\"base_lr\": \"x\"}", "\"lr\": null}"}) {
    EXPECT_FALSE(parse_checkpoint_note(head + bad).has_value()) << bad;
  }
}

TEST(CheckpointNote, MalformedNotesAreNotBelieved) {
  for (const char* bad : {"", "[]", "{}", "{\"step\": 1}",
                          "{\"step\": -1, \"epochs_done\": 0, "
                          "\"last_pt_bytes\": 1}",
                          "{\"step\": \"x\", \"epochs_done\": 0, "
                          "\"last_pt_bytes\": 1}",
                          "{\"step\": 1, \"epochs_done\": 0, "
                          "\"last_pt_bytes\": 1, \"epoch_batches\": 1.5}",
                          "not json",
                          // INT64_MAX epochs: "epoch epochs_done + 1" would overflow (seen while
                          // writing checkpoint_note_fuzz); no count past 2^53 is a run's
                          "{\"step\": 1, \"epochs_done\": 9223372036854775807, "
                          "\"last_pt_bytes\": 1, \"epoch_batches\": 1}",
                          "{\"step\": 9007199254740992, \"epochs_done\": 0, "
                          "\"last_pt_bytes\": 1}"}) {
    EXPECT_FALSE(parse_checkpoint_note(bad).has_value()) << bad;
  }
  EXPECT_TRUE(parse_checkpoint_note("{\"step\": 9007199254740991, \"epochs_done\": 0, "
                                    "\"last_pt_bytes\": 1}")
                  .has_value());
  EXPECT_FALSE(parse_checkpoint_note(std::string(5000, ' ') + "{}").has_value());
}

TEST(CheckpointNote, ReadBesideLastPtOnlyWhenItDescribesThatFile) {
  TempDir run;
  const std::string last = run / "last.pt";
  write_file(last, std::string(100, 'x'));
  CheckpointNote note;
  note.step = 7;
  note.bytes = 100;
  write_file(run / "last.json", render_checkpoint_note(note));
  ASSERT_TRUE(read_checkpoint_note(last).has_value());
  EXPECT_EQ(read_checkpoint_note(last)->step, 7);
  // Stale: last.pt was replaced after the note (a kill between the two writes).
  write_file(last, std::string(101, 'x'));
  EXPECT_FALSE(read_checkpoint_note(last).has_value());
  write_file(last, std::string(100, 'x'));
  // A link or a FIFO in the note's place is neither followed nor waited on.
  write_file(run / "elsewhere.json", render_checkpoint_note(note));
  ASSERT_EQ(::unlink((run / "last.json").c_str()), 0);
  ASSERT_EQ(::symlink((run / "elsewhere.json").c_str(), (run / "last.json").c_str()), 0);
  EXPECT_FALSE(read_checkpoint_note(last).has_value());
  ASSERT_EQ(::unlink((run / "last.json").c_str()), 0);
  ASSERT_EQ(::mkfifo((run / "last.json").c_str(), 0600), 0);
  EXPECT_FALSE(read_checkpoint_note(last).has_value());
}

}  // namespace
}  // namespace dl::test
