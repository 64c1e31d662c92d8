// The cache file: {"format": "dl-script-cache", "version": 1, "entries": [{"key": ...,
// "speaks_protocol": ..., "workers": ..., "trials": [...]}, ...]}, newest entry last.
#include "launcher/script_cache.h"

#include <stdexcept>

#include "core/dir_fd.h"
#include "core/files.h"
#include "core/json.h"
#include "launcher/batch_cache.h"

namespace dl {
namespace {

constexpr const char* kFormat = "dl-script-cache";
constexpr int kVersion = 1;
constexpr const char* kFileName = "script-cache.json";

}  // namespace

std::string script_cache_path(const std::string& workspace) {
  return workspace + "/.dl/" + kFileName;
}

std::string render_script_cache(const ScriptCacheEntries& entries) {
  JsonWriter w;
  w.begin_object();
  w.key("format").value(kFormat).key("version").value(kVersion);
  w.key("entries").begin_array();
  for (const auto& [key, r] : entries) {
    w.begin_object();
    w.key("key").value(key);
    w.key("speaks_protocol").value(r.speaks_protocol);
    w.key("no_handshake").value(r.no_handshake);
    w.key("workers_searched").value(r.workers_searched);
    w.key("workers").value(r.workers.workers).key("reason").value(r.workers.reason);
    w.key("seconds").value(r.seconds).key("probed_at").value(r.probed_at);
    w.key("trials").begin_array();
    for (const auto& t : r.workers.trials) {
      w.begin_object();
      w.key("workers").value(t.workers).key("samples_per_second").value(t.samples_per_second);
      w.key("host_bytes").value(t.host_bytes);
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.str();
}

ScriptCacheEntries parse_script_cache(const std::string& text) {
  ScriptCacheEntries entries;
  const auto doc = parse_json(text);
  if (!doc || doc->get_string("format", "") != kFormat || doc->get_i64("version", 0) != kVersion)
    return entries;
  const JsonValue* list = doc->find("entries");
  if (list == nullptr || !list->is_array()) return entries;
  for (const auto& e : list->items()) {
    const std::string key = e.get_string("key", "");
    const JsonValue* trials = e.find("trials");
    if (key.empty() || trials == nullptr || !trials->is_array()) continue;
    ScriptProbeRecord r;
    r.speaks_protocol = e.get_bool("speaks_protocol", false);
    r.no_handshake = e.get_string("no_handshake", "");
    r.workers_searched = e.get_bool("workers_searched", false);
    r.workers.workers = static_cast<int>(e.get_i64("workers", -1));
    r.workers.reason = e.get_string("reason", "");
    r.seconds = e.get_double("seconds", 0);
    r.probed_at = e.get_string("probed_at", "");
    if (r.workers_searched && (r.workers.workers < 0 || r.workers.workers > 4096)) continue;
    for (const auto& t : trials->items()) {
      WorkerTrial trial;
      trial.workers = static_cast<int>(t.get_i64("workers", 0));
      trial.samples_per_second = t.get_double("samples_per_second", 0);
      trial.host_bytes = t.get_u64("host_bytes", 0);
      r.workers.trials.push_back(trial);
    }
    entries.emplace_back(key, std::move(r));
  }
  return entries;
}

std::optional<ScriptProbeRecord> lookup_script_cache(const std::string& path,
                                                     const std::string& key) {
  const auto text = read_cache_text(path);
  if (!text) return std::nullopt;
  for (auto& [k, r] : parse_script_cache(*text)) {
    if (k != key) continue;
    r.cached = true;
    return r;
  }
  return std::nullopt;
}

void store_script_cache(const DirFd& workspace, const std::string& key,
                        const ScriptProbeRecord& record) {
  const DirFd dot = workspace.subdir(".dl");
  ScriptCacheEntries entries;
  if (const auto text = read_cache_text(script_cache_path(workspace.path()))) {
    entries = parse_script_cache(*text);
  }
  ScriptProbeRecord stored = record;
  stored.cached = false;
  dot.write_file(kFileName,
                 render_script_cache(with_newest(std::move(entries), key, std::move(stored))));
}

}  // namespace dl
