// Fuzzes the last.json reader (parse_checkpoint_note), which dl-launch reads from a run folder of
// the workspace to say where a run resumes, and dl-train to keep a resumed run's recipe. The input
// is the note's text. nullopt is the documented refusal; a note it accepts holds no negative count
// and no learning rate that is not positive, and renders back to a text that parses to the same
// note (what dl-train writes, dl-launch reads).
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/checkpoint_note.h"
#include "fuzz_files.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const auto note = dl::parse_checkpoint_note(text);
  if (!note) return 0;
  if (note->step < 0 || note->epochs_done < 0 || note->bytes < 0 ||
      (note->epoch_batches && *note->epoch_batches < 0) ||
      (note->global_batch && *note->global_batch <= 0) || (note->lr && !(*note->lr > 0)) ||
      (note->base_lr && !(*note->base_lr > 0))) {
    __builtin_trap();
  }
  const auto again = dl::parse_checkpoint_note(dl::render_checkpoint_note(*note));
  if (!again || again->step != note->step || again->epochs_done != note->epochs_done ||
      again->bytes != note->bytes || again->epoch_batches != note->epoch_batches ||
      again->global_batch != note->global_batch || again->lr != note->lr ||
      again->base_lr != note->base_lr) {
    __builtin_trap();
  }
  dl::fuzz::sink =
      static_cast<std::int64_t>(dl::describe_checkpoint_note(*note).size()) + note->step;
  return 0;
}
