// The workspace's memory of batch-size searches (<workspace>/.dl/batch-cache.json), so that the
// next start with the same model, input, precision, device and LibTorch trains at once instead of
// probing again. A missing, unreadable or malformed cache is an empty one: it never fails a launch.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "launcher/plan.h"

namespace dl {

class DirFd;

// What a search's answer depends on. Two starts with equal keys get the same answer.
struct BatchCacheKey {
  std::string model;      // "cnn", or a TorchScript file with its size and modification time
  std::string input;      // "1x28x28", or where the data comes from when the shape is not known
  std::string precision;  // the plan's
  std::string device;     // "cpu" or "cuda"
  std::string gpu;        // the GPU's name and total memory; "" on the CPU
  std::string budget;     // "6442450944 bytes", or "free memory less 10%" on a GPU
  std::string torch;      // LibTorch version of dl-train ("1.13.0")
  std::string objective;  // "fastest" or "largest" (--batch-objective)
  std::string at_most;    // the search's bound when a rank's share of --global-batch sets it

  // One line, "model=cnn; input=1x28x28; ...": compared as a whole, readable in the file.
  std::string text() const;
};

using BatchCacheEntries = std::vector<std::pair<std::string, BatchSearchRecord>>;  // key text

// A cache file's text; nullopt when it is missing, unreadable or not a regular file (a FIFO
// planted under the name is not waited on).
std::optional<std::string> read_cache_text(const std::string& path);

// <workspace>/.dl/batch-cache.json
std::string batch_cache_path(const std::string& workspace);

std::string render_batch_cache(const BatchCacheEntries& entries);
// The entries of a cache file's text; empty when it is malformed.
BatchCacheEntries parse_batch_cache(const std::string& text);

// The record stored under `key`, marked cached; nullopt when there is none.
std::optional<BatchSearchRecord> lookup_batch_cache(const std::string& path,
                                                    const std::string& key);

// Stores `record` under `key` in the workspace's .dl/batch-cache.json, keeping the other keys (the
// most recent kMaxEntries), creating .dl/ when needed (a link there is refused); written
// atomically. Throws UserError 73 when it cannot be written.
void store_batch_cache(const DirFd& workspace, const std::string& key,
                       const BatchSearchRecord& record);

constexpr std::size_t kMaxCacheEntries = 32;

// `entries` with `key`'s record replaced by `record`, put last (newest), and only the
// kMaxCacheEntries newest kept: what both workspace caches store.
template <typename Record>
std::vector<std::pair<std::string, Record>> with_newest(
    std::vector<std::pair<std::string, Record>> entries, const std::string& key, Record record) {
  std::vector<std::pair<std::string, Record>> kept;
  for (auto& e : entries) {
    if (e.first != key) kept.push_back(std::move(e));
  }
  kept.emplace_back(key, std::move(record));
  if (kept.size() > kMaxCacheEntries) {
    kept.erase(kept.begin(), kept.end() - static_cast<std::ptrdiff_t>(kMaxCacheEntries));
  }
  return kept;
}

}  // namespace dl
