// The cache file: {"format": "dl-batch-cache", "version": 1, "entries": [{"key": ..., "batch": ...,
// "trials": [...]}, ...]}, newest entry last.
#include "launcher/batch_cache.h"

#include <stdexcept>
#include <vector>

#include "core/dir_fd.h"
#include "core/errors.h"
#include "core/files.h"
#include "core/json.h"

namespace dl {
namespace {

constexpr const char* kFormat = "dl-batch-cache";
constexpr int kVersion = 1;

}  // namespace

std::optional<std::string> read_cache_text(const std::string& path) {
  try {
    const std::vector<char> bytes = read_whole_file(path);
    return std::string(bytes.begin(), bytes.end());
  } catch (const std::runtime_error&) {
    return std::nullopt;
  }
}

std::string BatchCacheKey::text() const {
  return "model=" + model + "; input=" + input + "; precision=" + precision + "; device=" + device +
         (gpu.empty() ? "" : "; gpu=" + gpu) + "; budget=" + budget + "; libtorch=" + torch +
         "; objective=" + objective + (at_most.empty() ? "" : "; at-most=" + at_most);
}

constexpr const char* kCacheFileName = "batch-cache.json";

std::string batch_cache_path(const std::string& workspace) {
  return workspace + "/.dl/" + kCacheFileName;
}

std::string render_batch_cache(const BatchCacheEntries& entries) {
  JsonWriter w;
  w.begin_object();
  w.key("format").value(kFormat).key("version").value(kVersion);
  w.key("entries").begin_array();
  for (const auto& [key, r] : entries) {
    w.begin_object();
    w.key("key").value(key);
    w.key("batch").value(r.result.batch).key("objective").value(r.objective);
    w.key("reason").value(r.result.reason);
    w.key("budget_bytes").value(r.budget).key("budget_reason").value(r.budget_reason);
    w.key("max_batch").value(r.max_batch).key("max_reason").value(r.max_reason);
    w.key("fixed_bytes").value(r.result.fixed_bytes);
    w.key("per_sample_bytes").value(r.result.per_sample_bytes);
    const BatchChoice& c = r.result.choice;
    w.key("largest").value(c.largest).key("fastest").value(c.fastest);
    w.key("best_rate").value(c.best_rate).key("why").value(c.why);
    w.key("seconds").value(r.seconds).key("searched_at").value(r.searched_at);
    w.key("trials").begin_array();
    for (const auto& t : r.result.trials) {
      w.begin_object();
      w.key("batch").value(t.batch).key("out_of_memory").value(t.out_of_memory);
      w.key("peak_bytes").value(t.peak_bytes).key("step_seconds").value(t.step_seconds);
      w.key("error").value(t.error);
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.str();
}

BatchCacheEntries parse_batch_cache(const std::string& text) {
  BatchCacheEntries entries;
  const auto doc = parse_json(text);
  if (!doc || doc->get_string("format", "") != kFormat || doc->get_i64("version", 0) != kVersion)
    return entries;
  const JsonValue* list = doc->find("entries");
  if (list == nullptr || !list->is_array()) return entries;
  for (const auto& e : list->items()) {
    const std::string key = e.get_string("key", "");
    const JsonValue* trials = e.find("trials");
    if (key.empty() || trials == nullptr || !trials->is_array()) continue;
    BatchSearchRecord r;
    r.result.batch = e.get_i64("batch", 0);
    if (r.result.batch <= 0) continue;
    r.result.reason = e.get_string("reason", "");
    r.objective = e.get_string("objective", "largest");
    r.result.fixed_bytes = e.get_double("fixed_bytes", 0);
    r.result.per_sample_bytes = e.get_double("per_sample_bytes", 0);
    r.result.choice.batch = r.result.batch;
    r.result.choice.largest = e.get_i64("largest", r.result.batch);
    r.result.choice.fastest = e.get_i64("fastest", 0);
    r.result.choice.best_rate = e.get_double("best_rate", 0);
    r.result.choice.why = e.get_string("why", "");
    r.budget = e.get_u64("budget_bytes", 0);
    r.budget_reason = e.get_string("budget_reason", "");
    r.max_batch = e.get_i64("max_batch", 0);
    r.max_reason = e.get_string("max_reason", "the data set");
    r.seconds = e.get_double("seconds", 0);
    r.searched_at = e.get_string("searched_at", "");
    for (const auto& t : trials->items()) {
      ProbeResult p;
      p.batch = t.get_i64("batch", 0);
      p.out_of_memory = t.get_bool("out_of_memory", false);
      p.peak_bytes = t.get_u64("peak_bytes", 0);
      p.step_seconds = t.get_double("step_seconds", 0);
      p.error = t.get_string("error", "");
      r.result.trials.push_back(p);
    }
    entries.emplace_back(key, std::move(r));
  }
  return entries;
}

std::optional<BatchSearchRecord> lookup_batch_cache(const std::string& path,
                                                    const std::string& key) {
  const auto text = read_cache_text(path);
  if (!text) return std::nullopt;
  for (auto& [k, r] : parse_batch_cache(*text)) {
    if (k != key) continue;
    r.cached = true;
    r.cache_file = path;
    return r;
  }
  return std::nullopt;
}

void store_batch_cache(const DirFd& workspace, const std::string& key,
                       const BatchSearchRecord& record) {
  const DirFd dot = workspace.subdir(".dl");
  BatchCacheEntries entries;
  if (const auto text = read_cache_text(batch_cache_path(workspace.path()))) {
    entries = parse_batch_cache(*text);
  }
  BatchSearchRecord stored = record;
  stored.cached = false;
  stored.cache_written = false;
  stored.cache_file.clear();
  dot.write_file(kCacheFileName,
                 render_batch_cache(with_newest(std::move(entries), key, std::move(stored))));
}

}  // namespace dl
