// last.json: render, parse, read beside last.pt (checkpoint_note.h).
#include "core/checkpoint_note.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>

#include "core/files.h"
#include "core/json.h"

namespace dl {
namespace {

constexpr std::size_t kMaxNoteBytes = 4096;
// Counts beyond 2^53 are not a run's (and JSON readers lose integers past it); the bound also
// keeps "epoch epochs_done + 1" from overflowing.
constexpr std::int64_t kMaxCount = (std::int64_t{1} << 53) - 1;

}  // namespace

std::string render_checkpoint_note(const CheckpointNote& note) {
  JsonWriter w;
  w.begin_object();
  w.key("step").value(note.step);
  w.key("epochs_done").value(note.epochs_done);
  if (note.epoch_batches) w.key("epoch_batches").value(*note.epoch_batches);
  w.key("last_pt_bytes").value(note.bytes);
  if (note.global_batch) w.key("global_batch").value(*note.global_batch);
  if (note.lr) w.key("lr").value(*note.lr);
  if (note.base_lr) w.key("base_lr").value(*note.base_lr);
  w.end_object();
  return w.str();
}

std::optional<CheckpointNote> parse_checkpoint_note(const std::string& text) {
  if (text.size() > kMaxNoteBytes) return std::nullopt;
  const auto json = parse_json(text);
  if (!json || !json->is_object()) return std::nullopt;
  auto whole = [&](const char* key) -> std::optional<std::int64_t> {
    const JsonValue* v = json->find(key);
    if (v == nullptr) return std::nullopt;
    const auto n = v->as_i64();
    if (!n || *n < 0 || *n > kMaxCount) return std::nullopt;
    return n;
  };
  const auto step = whole("step");
  const auto epochs = whole("epochs_done");
  const auto bytes = whole("last_pt_bytes");
  if (!step || !epochs || !bytes) return std::nullopt;
  CheckpointNote note;
  note.step = *step;
  note.epochs_done = *epochs;
  note.bytes = *bytes;
  if (json->find("epoch_batches") != nullptr) {
    note.epoch_batches = whole("epoch_batches");
    if (!note.epoch_batches) return std::nullopt;
  }
  if (json->find("global_batch") != nullptr) {
    note.global_batch = whole("global_batch");
    if (!note.global_batch || *note.global_batch == 0) return std::nullopt;
  }
  // A learning rate is a positive finite number.
  auto rate = [&](const char* key, std::optional<double>* out) {
    const JsonValue* v = json->find(key);
    if (v == nullptr) return true;
    *out = v->as_double();
    return out->has_value() && std::isfinite(**out) && **out > 0;
  };
  if (!rate("lr", &note.lr) || !rate("base_lr", &note.base_lr)) return std::nullopt;
  return note;
}

std::optional<CheckpointNote> read_checkpoint_note(const std::string& last_pt) {
  const std::string path = parent_directory(last_pt) + "/" + kCheckpointNoteName;
  // Neither a link nor a FIFO is followed or waited on.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  struct stat st {};
  std::string text;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
      st.st_size <= static_cast<off_t>(kMaxNoteBytes)) {
    text.resize(static_cast<std::size_t>(st.st_size));
    const ssize_t n = ::read(fd, text.data(), text.size());
    text.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  }
  ::close(fd);
  auto note = parse_checkpoint_note(text);
  struct stat pt {};
  if (!note || stat(last_pt.c_str(), &pt) != 0 || !S_ISREG(pt.st_mode) ||
      pt.st_size != note->bytes) {
    return std::nullopt;
  }
  return note;
}

std::string describe_checkpoint_note(const CheckpointNote& note) {
  if (note.epoch_batches) {
    return "step " + std::to_string(note.step) + ", batch " + std::to_string(*note.epoch_batches) +
           " of epoch " + std::to_string(note.epochs_done + 1);
  }
  return "step " + std::to_string(note.step) + ", after epoch " + std::to_string(note.epochs_done);
}

}  // namespace dl
