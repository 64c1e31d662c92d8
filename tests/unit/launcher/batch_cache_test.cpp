// The workspace's batch-size cache: what the key tells apart, the file's round trip, lookups and
// stores in a real directory (other keys kept, newest last, bounded), and that a damaged file is
// an empty cache rather than a failed launch.
#include "launcher/batch_cache.h"
#include "launcher/batch_tuner.h"

#include "core/dir_fd.h"
#include "support/temp_dir.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace dl::test {
namespace {

namespace fs = std::filesystem;

BatchCacheKey cnn_key() {
  BatchCacheKey k;
  k.model = "cnn";
  k.input = "Fashion-MNIST 1x28x28";
  k.precision = "fp32";
  k.device = "cpu";
  k.budget = "314572800 bytes";
  k.torch = "1.13.0";
  k.objective = "fastest";
  return k;
}

BatchSearchRecord record(std::int64_t batch) {
  BatchSearchRecord r;
  r.result.batch = batch;
  r.result.reason = "fit 1 bytes/sample";
  r.result.fixed_bytes = 2.5e8;
  r.result.per_sample_bytes = 6.5e5;
  r.budget = 314572800;
  r.budget_reason = "from --memory-budget";
  r.max_batch = 60000;
  r.seconds = 6.25;
  r.searched_at = "2026-11-30T05:00:00Z";
  ProbeResult fits;
  fits.batch = batch;
  fits.peak_bytes = 300000000;
  fits.step_seconds = 0.05;
  ProbeResult oom;
  oom.batch = batch + 8;
  oom.out_of_memory = true;
  ProbeResult crashed;
  crashed.batch = batch * 2;
  crashed.error = "killed by signal 9 \"quoted\"";
  r.result.trials = {fits, oom, crashed};
  r.result.choice = {batch, batch, batch, 6240.0, "the largest that fits, 6240 samples/s"};
  return r;
}

class BatchCacheFiles : public ::testing::Test {
 protected:
  TempDir tmp_;
  std::string read(const std::string& path) {
    std::ifstream in(path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::string ws_ = tmp_.path();
};

TEST(BatchCacheKeyText, EveryPartTellsKeysApart) {
  const std::string base = cnn_key().text();
  EXPECT_EQ(base,
            "model=cnn; input=Fashion-MNIST 1x28x28; precision=fp32; device=cpu; "
            "budget=314572800 bytes; libtorch=1.13.0; objective=fastest");
  auto changed = [&](auto change) {
    BatchCacheKey k = cnn_key();
    change(k);
    return k.text();
  };
  EXPECT_NE(changed([](BatchCacheKey& k) { k.model = "resnet18"; }), base);
  EXPECT_NE(changed([](BatchCacheKey& k) { k.input = "3x224x224"; }), base);
  EXPECT_NE(changed([](BatchCacheKey& k) { k.precision = "bf16"; }), base);
  EXPECT_NE(changed([](BatchCacheKey& k) { k.budget = "1 bytes"; }), base);
  EXPECT_NE(changed([](BatchCacheKey& k) { k.torch = "2.1.0"; }), base);
  EXPECT_NE(changed([](BatchCacheKey& k) { k.objective = "largest"; }), base);
  const std::string a100 = changed([](BatchCacheKey& k) {
    k.device = "cuda";
    k.gpu = "NVIDIA A100-SXM4-80GB, 85899345920 bytes";
  });
  const std::string v100 = changed([](BatchCacheKey& k) {
    k.device = "cuda";
    k.gpu = "Tesla V100-SXM2-16GB, 17179869184 bytes";
  });
  EXPECT_NE(a100, v100);
  EXPECT_NE(a100.find("gpu=NVIDIA A100"), std::string::npos) << a100;
}

TEST(BatchCacheFormat, RoundTrip) {
  const BatchCacheEntries entries = {{"key one", record(312)}, {"key two", record(64)}};
  const BatchCacheEntries back = parse_batch_cache(render_batch_cache(entries));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].first, "key one");
  const BatchSearchRecord& r = back[0].second;
  const BatchSearchRecord want = record(312);
  EXPECT_EQ(r.result.batch, 312);
  EXPECT_EQ(r.result.reason, want.result.reason);
  EXPECT_DOUBLE_EQ(r.result.fixed_bytes, want.result.fixed_bytes);
  EXPECT_DOUBLE_EQ(r.result.per_sample_bytes, want.result.per_sample_bytes);
  EXPECT_EQ(r.budget, want.budget);
  EXPECT_EQ(r.budget_reason, want.budget_reason);
  EXPECT_EQ(r.max_batch, 60000);
  EXPECT_DOUBLE_EQ(r.seconds, 6.25);
  EXPECT_EQ(r.searched_at, want.searched_at);
  ASSERT_EQ(r.result.trials.size(), 3u);
  EXPECT_EQ(r.result.trials[0].peak_bytes, 300000000u);
  EXPECT_DOUBLE_EQ(r.result.trials[0].step_seconds, 0.05);
  EXPECT_TRUE(r.result.trials[1].out_of_memory);
  EXPECT_EQ(r.result.trials[2].error, "killed by signal 9 \"quoted\"");
  EXPECT_EQ(back[1].second.result.batch, 64);
  EXPECT_EQ(r.result.choice.batch, 312);
  EXPECT_EQ(r.result.choice.largest, 312);
  EXPECT_EQ(r.result.choice.fastest, 312);
  EXPECT_DOUBLE_EQ(r.result.choice.best_rate, 6240.0);
  EXPECT_EQ(r.result.choice.why, want.result.choice.why);
}

TEST(BatchCacheFormat, DamagedTextIsAnEmptyCache) {
  for (const char* bad :
       {"", "{", "not json", "[]", "{\"format\": \"other\", \"version\": 1, \"entries\": []}",
        "{\"format\": \"dl-batch-cache\", \"version\": 99, \"entries\": []}",
        "{\"format\": \"dl-batch-cache\", \"version\": 1, \"entries\": {}}"}) {
    EXPECT_TRUE(parse_batch_cache(bad).empty()) << bad;
  }
  // An entry without an answer is skipped, the good one kept.
  const std::string mixed =
      "{\"format\": \"dl-batch-cache\", \"version\": 1, \"entries\": ["
      "{\"key\": \"a\", \"batch\": 0, \"trials\": []},"
      "{\"key\": \"b\", \"batch\": 16, \"trials\": []}]}";
  const auto entries = parse_batch_cache(mixed);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].first, "b");
}

TEST_F(BatchCacheFiles, AProbeMadeBeforeTheSearchCountsInItsTime) {
  // A program's first step probe is its handshake, made before the search and reused by it.
  TuneRequest t;
  t.probe.workspace = ws_;
  t.key = cnn_key();
  t.search.budget_bytes = 1000;
  t.use_cache = false;
  t.probe_fn = [](std::int64_t batch) {
    ProbeResult r;
    r.batch = batch;
    r.peak_bytes = 100 + 10 * static_cast<std::uint64_t>(batch);
    r.step_seconds = 0.01;
    if (batch == 8) r.earlier_seconds = 5;
    return r;
  };
  const BatchSearchRecord record = tune_batch_size(t);
  EXPECT_GT(record.result.batch, 8);
  EXPECT_GE(record.seconds, 5.0);
  EXPECT_LT(record.seconds, 6.0);
}

TEST_F(BatchCacheFiles, PathIsInTheWorkspacesDotDl) {
  EXPECT_EQ(batch_cache_path("/ws"), "/ws/.dl/batch-cache.json");
}

TEST_F(BatchCacheFiles, StoreThenLookUp) {
  const std::string path = batch_cache_path(ws_);
  const std::string key = cnn_key().text();
  EXPECT_FALSE(lookup_batch_cache(path, key)) << "no file yet";
  store_batch_cache(DirFd::open(ws_), key, record(312));
  ASSERT_TRUE(fs::exists(path));
  EXPECT_EQ(fs::directory_iterator(ws_ + "/.dl")->path().filename(), "batch-cache.json")
      << "no temporary file left behind";

  const auto hit = lookup_batch_cache(path, key);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->result.batch, 312);
  EXPECT_TRUE(hit->cached);
  EXPECT_EQ(hit->cache_file, path);
  EXPECT_EQ(hit->result.trials.size(), 3u);

  BatchCacheKey other = cnn_key();
  other.precision = "bf16";
  EXPECT_FALSE(lookup_batch_cache(path, other.text()));
}

TEST_F(BatchCacheFiles, StoreKeepsOtherKeysAndReplacesItsOwn) {
  const std::string path = batch_cache_path(ws_);
  store_batch_cache(DirFd::open(ws_), "a", record(100));
  store_batch_cache(DirFd::open(ws_), "b", record(200));
  store_batch_cache(DirFd::open(ws_), "a", record(104));
  const auto entries = parse_batch_cache(read(path));
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].first, "b");
  EXPECT_EQ(entries[1].first, "a") << "the newest last";
  EXPECT_EQ(entries[1].second.result.batch, 104);
}

TEST_F(BatchCacheFiles, StoreKeepsTheNewestEntriesOnly) {
  const std::string path = batch_cache_path(ws_);
  for (std::size_t i = 0; i < kMaxCacheEntries + 5; ++i) {
    store_batch_cache(DirFd::open(ws_), "key " + std::to_string(i), record(8));
  }
  const auto entries = parse_batch_cache(read(path));
  ASSERT_EQ(entries.size(), kMaxCacheEntries);
  EXPECT_EQ(entries.front().first, "key 5");
  EXPECT_EQ(entries.back().first, "key " + std::to_string(kMaxCacheEntries + 4));
}

TEST_F(BatchCacheFiles, DamagedFileIsReplacedOnTheNextStore) {
  const std::string path = batch_cache_path(ws_);
  fs::create_directories(ws_ + "/.dl");
  std::ofstream(path) << "{ half a file";
  EXPECT_FALSE(lookup_batch_cache(path, "a"));
  store_batch_cache(DirFd::open(ws_), "a", record(40));
  ASSERT_TRUE(lookup_batch_cache(path, "a"));
  EXPECT_EQ(lookup_batch_cache(path, "a")->result.batch, 40);
}

}  // namespace
}  // namespace dl::test
