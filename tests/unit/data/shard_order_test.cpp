// The shard-wise epoch order: each rank's count fixed and equal, the ranks' shares disjoint and
// covering the set (but for the division's remainder), whole shards read in runs, the shard order
// and the buffer changing from epoch to epoch and fixed by the seed, validation's shares adding
// up to the whole set; and the remote shards' read-ahead cache with a fake download: the budget
// held, shards downloaded once when they fit, a failed download rethrown and tried again.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <numeric>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "data/data_error.h"
#include "data/s3_request.h"
#include "data/shard_cache.h"
#include "data/shard_order.h"
#include "support/files.h"
#include "support/temp_dir.h"

namespace dl::test {
namespace {

using namespace dl::data;

// The shard each sample index lies in, for counts in index order.
std::vector<int> shard_of(const std::vector<std::int64_t>& counts) {
  std::vector<int> out;
  for (std::size_t s = 0; s < counts.size(); ++s) out.insert(out.end(), counts[s], int(s));
  return out;
}

const std::vector<std::int64_t> kCounts = {100, 37, 100, 64, 100, 3, 100, 99, 100, 50};

TEST(ShardOrder, RanksGetEqualDisjointSharesThatCoverTheSet) {
  const std::int64_t total = std::accumulate(kCounts.begin(), kCounts.end(), std::int64_t{0});
  for (int world : {1, 2, 3, 4}) {
    std::set<std::int64_t> seen;
    for (int rank = 0; rank < world; ++rank) {
      ShardOrderSpec spec;
      spec.world = world;
      spec.rank = rank;
      spec.seed = 7;
      spec.buffer = 50;
      const auto order = shard_epoch_indices(kCounts, spec, 3);
      EXPECT_EQ(static_cast<std::int64_t>(order.size()), total / world);
      EXPECT_EQ(shard_epoch_size(kCounts, spec), total / world);
      for (const std::int64_t i : order) {
        ASSERT_GE(i, 0);
        ASSERT_LT(i, total);
        EXPECT_TRUE(seen.insert(i).second) << "index " << i << " twice (world " << world << ")";
      }
    }
    EXPECT_EQ(static_cast<std::int64_t>(seen.size()), total - total % world) << "world " << world;
  }
}

TEST(ShardOrder, ValidationSharesAddUpToTheWholeSetInFileOrder) {
  const std::int64_t total = std::accumulate(kCounts.begin(), kCounts.end(), std::int64_t{0});
  std::vector<std::int64_t> all;
  for (int rank = 0; rank < 3; ++rank) {
    ShardOrderSpec spec;
    spec.world = 3;
    spec.rank = rank;
    spec.shuffle = false;
    spec.equal_shares = false;
    const auto mine = shard_epoch_indices(kCounts, spec, 5);
    EXPECT_EQ(static_cast<std::int64_t>(mine.size()), shard_epoch_size(kCounts, spec));
    all.insert(all.end(), mine.begin(), mine.end());
  }
  std::vector<std::int64_t> expected(static_cast<std::size_t>(total));
  std::iota(expected.begin(), expected.end(), std::int64_t{0});
  EXPECT_EQ(all, expected);
}

TEST(ShardOrder, WithoutABufferEachShardIsReadWholeInOneRun) {
  const auto shard = shard_of(kCounts);
  ShardOrderSpec spec;
  spec.seed = 11;
  const auto order = shard_epoch_indices(kCounts, spec, 0);
  // The shard changes exactly once per shard, and within one the samples come in file order.
  int changes = 0;
  for (std::size_t k = 1; k < order.size(); ++k) {
    const int a = shard[static_cast<std::size_t>(order[k - 1])];
    const int b = shard[static_cast<std::size_t>(order[k])];
    if (a != b) {
      ++changes;
    } else {
      EXPECT_EQ(order[k], order[k - 1] + 1);
    }
  }
  EXPECT_EQ(changes, static_cast<int>(kCounts.size()) - 1);
}

TEST(ShardOrder, TheBufferMixesShardsButKeepsReadsLocal) {
  const std::vector<std::int64_t> counts(40, 100);
  const auto shard = shard_of(counts);
  ShardOrderSpec spec;
  spec.seed = 11;
  spec.buffer = 150;
  const auto order = shard_epoch_indices(counts, spec, 0);
  ShardOrderSpec plain = spec;
  plain.buffer = 0;
  EXPECT_NE(order, shard_epoch_indices(counts, plain, 0));
  // Any window of 64 reads touches a few shards (the buffer holds 150 samples: its residents
  // come from the last shards, with a geometric tail of stragglers), never most of the 40.
  std::size_t most = 0;
  for (std::size_t k = 0; k + 64 <= order.size(); k += 64) {
    std::set<int> shards;
    for (std::size_t j = k; j < k + 64; ++j)
      shards.insert(shard[static_cast<std::size_t>(order[j])]);
    most = std::max(most, shards.size());
  }
  EXPECT_GE(most, 2u);
  EXPECT_LE(most, 12u);
  std::printf("shuffle buffer 150 over 40 shards of 100: at most %zu shards in 64 reads\n", most);
}

TEST(ShardOrder, EpochsDifferAndTheSeedFixesThem) {
  ShardOrderSpec spec;
  spec.seed = 3;
  spec.buffer = 100;
  const auto a0 = shard_epoch_indices(kCounts, spec, 0);
  EXPECT_EQ(a0, shard_epoch_indices(kCounts, spec, 0));
  EXPECT_NE(a0, shard_epoch_indices(kCounts, spec, 1));
  ShardOrderSpec other = spec;
  other.seed = 4;
  EXPECT_NE(a0, shard_epoch_indices(kCounts, other, 0));
  ShardOrderSpec unshuffled = spec;
  unshuffled.shuffle = false;
  std::vector<std::int64_t> identity(a0.size());
  std::iota(identity.begin(), identity.end(), std::int64_t{0});
  EXPECT_EQ(shard_epoch_indices(kCounts, unshuffled, 2), identity);
}

TEST(ShardOrder, RefusesARankOutsideTheWorld) {
  ShardOrderSpec spec;
  spec.world = 2;
  spec.rank = 2;
  EXPECT_THROW(shard_epoch_indices(kCounts, spec, 0), std::invalid_argument);
}

// A download as fetch_object gives it: `size` bytes of `value` in a memory file.
RemoteObject memory_object(std::uint64_t size, std::uint8_t value) {
  const int fd = memfd_create("test-shard", MFD_CLOEXEC);
  std::vector<std::uint8_t> bytes(static_cast<std::size_t>(size), value);
  EXPECT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  return RemoteObject{fd, size};
}

std::uint8_t first_byte(const ShardFile& f) {
  std::uint8_t b = 0;
  EXPECT_EQ(pread(f.fd, &b, 1, 0), 1);
  return b;
}

TEST(ShardCache, ReadsAheadWithinTheBudgetAndDownloadsEachShardOncePerPass) {
  constexpr std::uint64_t kShard = 1000;
  std::atomic<int> fetches{0};
  std::atomic<std::uint64_t> live{0}, most{0};
  std::map<int, int> per_shard;
  std::mutex m;
  ShardCache cache(
      std::vector<std::uint64_t>(10, kShard),
      [&](std::uint32_t i) {
        ++fetches;
        {
          std::lock_guard<std::mutex> lock(m);
          ++per_shard[static_cast<int>(i)];
        }
        return memory_object(kShard, static_cast<std::uint8_t>(i));
      },
      3 * kShard, 2);
  std::vector<std::uint32_t> reads;
  for (std::uint32_t s = 0; s < 10; ++s) reads.insert(reads.end(), 5, s);
  cache.plan(reads);
  for (const std::uint32_t s : reads) {
    const auto file = cache.acquire(s);
    EXPECT_EQ(first_byte(*file), s);
    cache.release(s);
  }
  const ShardCacheStats stats = cache.stats();
  EXPECT_EQ(stats.fetches, 10);
  EXPECT_LE(stats.peak_bytes, 3 * kShard);
  for (const auto& [shard, n] : per_shard) EXPECT_EQ(n, 1) << "shard " << shard;
}

TEST(ShardCache, ASetThatFitsIsDownloadedOnceForManyEpochs) {
  std::atomic<int> fetches{0};
  ShardCache cache(
      std::vector<std::uint64_t>(4, 100),
      [&](std::uint32_t i) {
        ++fetches;
        return memory_object(100, static_cast<std::uint8_t>(i));
      },
      1000, 2);
  for (int epoch = 0; epoch < 3; ++epoch) {
    const std::vector<std::uint32_t> reads = {3, 3, 1, 0, 2, 2};
    cache.plan(reads);
    for (const std::uint32_t s : reads) {
      EXPECT_EQ(first_byte(*cache.acquire(s)), s);
      cache.release(s);
    }
  }
  EXPECT_EQ(fetches.load(), 4);
}

TEST(ShardCache, AFailedDownloadIsRethrownAndTriedAgain) {
  std::atomic<int> calls{0};
  ShardCache cache(
      std::vector<std::uint64_t>(2, 100),
      [&](std::uint32_t i) -> RemoteObject {
        if (i == 1 && calls++ == 0) {
          throw DataError("http://127.0.0.1/b.tar: HTTP 503 (after 7 tries)");
        }
        return memory_object(100, static_cast<std::uint8_t>(i));
      },
      1000, 1);
  try {
    cache.acquire(1);
    FAIL() << "the first download's failure was not rethrown";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("HTTP 503"), std::string::npos);
  }
  EXPECT_EQ(first_byte(*cache.acquire(1)), 1);
  EXPECT_EQ(first_byte(*cache.acquire(0)), 0);
}

TEST(ShardCache, ManyReadersOfOneShardWaitForOneDownload) {
  std::atomic<int> fetches{0};
  ShardCache cache(
      std::vector<std::uint64_t>(1, 100),
      [&](std::uint32_t) {
        ++fetches;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        return memory_object(100, 9);
      },
      1000, 2);
  std::vector<std::thread> readers;
  std::atomic<int> good{0};
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&] { good += first_byte(*cache.acquire(0)) == 9; });
  }
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(good.load(), 4);
  EXPECT_EQ(fetches.load(), 1);
}

TEST(S3Request, AddressesAnEndpointPathStyleAndAwsVirtualHosted) {
  std::map<std::string, std::string> env = {{"AWS_ENDPOINT_URL", "http://127.0.0.1:9000/"},
                                            {"AWS_ACCESS_KEY_ID", "AK"},
                                            {"AWS_SECRET_ACCESS_KEY", "SK"},
                                            {"AWS_REGION", "eu-west-1"}};
  S3Request r = s3_request("s3://bucket/set/train 000.tar", env);
  EXPECT_EQ(r.url, "http://127.0.0.1:9000/bucket/set/train%20000.tar");
  EXPECT_EQ(r.region, "eu-west-1");
  EXPECT_EQ(r.access_key, "AK");
  EXPECT_EQ(r.secret_key, "SK");
  env.erase("AWS_ENDPOINT_URL");
  env["AWS_ENDPOINT_URL_S3"] = "https://s3.example";
  EXPECT_EQ(s3_request("s3://b/k.tar", env).url, "https://s3.example/b/k.tar");
  env.erase("AWS_ENDPOINT_URL_S3");
  EXPECT_EQ(s3_request("s3://b/k.tar", env).url, "https://b.s3.eu-west-1.amazonaws.com/k.tar");
  EXPECT_THROW(s3_request("s3://bucket", env), DataError);
  EXPECT_THROW(s3_request("s3:///key", env), DataError);
}

TEST(S3Request, ReadsTheProfileFromTheSharedFilesAndGoesUnsignedWithout) {
  TempDir dir;
  write_file(dir.path() + "/credentials",
             "[default]\naws_access_key_id = DEF\naws_secret_access_key = DEFS\n"
             "[work]\naws_access_key_id=WK\naws_secret_access_key=WS\naws_session_token=TOK\n");
  write_file(dir.path() + "/config",
             "[default]\nregion = us-west-2\n[profile work]\nregion=ap-south-1\n");
  std::map<std::string, std::string> env = {
      {"AWS_SHARED_CREDENTIALS_FILE", dir.path() + "/credentials"},
      {"AWS_CONFIG_FILE", dir.path() + "/config"}};
  S3Request r = s3_request("s3://b/k", env);
  EXPECT_EQ(r.access_key, "DEF");
  EXPECT_EQ(r.region, "us-west-2");
  env["AWS_PROFILE"] = "work";
  r = s3_request("s3://b/k", env);
  EXPECT_EQ(r.access_key, "WK");
  EXPECT_EQ(r.secret_key, "WS");
  EXPECT_EQ(r.session_token, "TOK");
  EXPECT_EQ(r.region, "ap-south-1");
  env["AWS_ACCESS_KEY_ID"] = "ENVK";
  env["AWS_SECRET_ACCESS_KEY"] = "ENVS";
  EXPECT_EQ(s3_request("s3://b/k", env).access_key, "ENVK");  // the variables come first
  r = s3_request("s3://b/k", {{"HOME", dir.path() + "/nowhere"}});
  EXPECT_TRUE(r.access_key.empty());
  EXPECT_EQ(r.region, "us-east-1");
}

// An s3:// URL may come from a remote shard list: a bucket that is not a bucket name ('@', '#',
// '?', ':', '/') would send a signed request to another host (https://a@evil.example#.s3...).
// A region becomes part of a host name as well, and credentials go into headers, where a CR or
// LF would add one. Each is refused with the one line naming where it came from.
TEST(S3Request, RefusesBucketsRegionsAndCredentialsThatWouldLeaveTheirPlace) {
  TempDir dir;
  const std::map<std::string, std::string> env = {{"AWS_REGION", "eu-west-1"}};
  for (const char* url : {"s3://a@evil.example#/k", "s3://evil.example:80/k", "s3://b?x/k",
                          "s3://b\r\nHost: x/k", "s3://b%40c/k"}) {
    EXPECT_THROW(s3_request(url, env), DataError) << url;
  }
  EXPECT_EQ(s3_request("s3://My_Legacy.bucket-1/k", env).host,
            "My_Legacy.bucket-1.s3.eu-west-1.amazonaws.com");
  for (const char* region : {"evil.example/x#", "eu-west-1.", "-eu", "eu west"}) {
    EXPECT_THROW(s3_request("s3://b/k", {{"AWS_REGION", region}}), DataError) << region;
  }
  write_file(dir.path() + "/config", "[default]\nregion = x.evil.example#\n");
  try {
    s3_request("s3://b/k", {{"AWS_CONFIG_FILE", dir.path() + "/config"}});
    ADD_FAILURE() << "a region with a '.' and a '#' was taken";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()), "AWS region 'x.evil.example#' (from " + dir.path() +
                                         "/config): expected letters, digits and '-', as in "
                                         "eu-west-1");
  }
  write_file(dir.path() + "/credentials",
             "[default]\naws_access_key_id = K\naws_secret_access_key = S\n"
             "aws_session_token = T\rX-Injected: 1\n");
  try {
    s3_request("s3://b/k", {{"AWS_SHARED_CREDENTIALS_FILE", dir.path() + "/credentials"}});
    ADD_FAILURE() << "a session token with a CR was taken";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()), "AWS credentials (" + dir.path() +
                                         "/credentials): the session token holds a control "
                                         "character; expected printable text");
  }
  EXPECT_THROW(
      s3_request("s3://b/k", {{"AWS_ACCESS_KEY_ID", "K\n"}, {"AWS_SECRET_ACCESS_KEY", "S"}}),
      DataError);
}

}  // namespace
}  // namespace dl::test
