// last.json, beside a run's last.pt: where the run stands (the global step, the epochs done, the
// batches of the epoch in progress) in a form dl-launch reads without LibTorch, whose restart
// line names the step it resumes from. dl-train writes it after each last.pt, atomically, with
// last.pt's size: a note whose size no longer matches last.pt (a kill between the two writes) is
// not believed. Untrusted like everything in the workspace: a malformed or oversized note is
// ignored, never an error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dl {

struct CheckpointNote {
  std::int64_t step = 0;                      // optimizer steps taken in the run
  std::int64_t epochs_done = 0;               // epochs completed
  std::optional<std::int64_t> epoch_batches;  // inside an epoch: its batches taken
  std::int64_t bytes = 0;                     // last.pt's size when the note was written
  // The recipe the run trained with, which a resume on other hardware keeps: the samples of one
  // optimizer step over every rank, --lr as given, and the learning rate it became over the ranks
  // (--lr-scaling). Absent in notes written before they were recorded.
  std::optional<std::int64_t> global_batch;
  std::optional<double> lr, base_lr;
};

inline constexpr const char* kCheckpointNoteName = "last.json";

std::string render_checkpoint_note(const CheckpointNote& note);
// nullopt for anything but a note as render_checkpoint_note writes it (bounded: 4 KiB).
std::optional<CheckpointNote> parse_checkpoint_note(const std::string& text);

// The note beside `last_pt` ("<dir>/last.json") when it describes that file as it is now
// (its size); nullopt otherwise (absent, unreadable, not a regular file, malformed, stale).
std::optional<CheckpointNote> read_checkpoint_note(const std::string& last_pt);

// "step 60, batch 60 of epoch 1" or "step 120, after epoch 2".
std::string describe_checkpoint_note(const CheckpointNote& note);

}  // namespace dl
