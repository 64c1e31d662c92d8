// WebDataset shards as a sample source (see shard_source.h).
#include "data/shard_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "data/data_error.h"
#include "data/file_bytes.h"
#include "data/image_decode.h"
#include "data/remote_store.h"
#include "data/shard_cache.h"
#include "data/shard_list.h"
#include "data/tar_listing.h"

namespace dl::data {
namespace {

constexpr std::int64_t kMaxClasses = 1000000;
constexpr std::uint64_t kMaxLabelBytes = 64;
// A worker's read buffer keeps its capacity from sample to sample, unless an unusually large
// image grew it beyond this.
constexpr std::size_t kKeptBufferBytes = std::size_t{64} << 20;

struct ShardSample {
  std::uint32_t shard = 0;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;
  std::int64_t label = 0;
  std::string name;  // the image member's name, for the report of samples that failed
};

// A file descriptor closed when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// A shard open for reading: a local file's descriptor, or a remote shard's bytes in memory.
// Local descriptors are closed with it; no allocation a sample read.
struct OpenShard {
  int fd = -1;
  std::uint64_t size = 0;
  bool local = false;
  std::shared_ptr<const ShardFile> remote;
  OpenShard() = default;
  OpenShard(OpenShard&& o) noexcept
      : fd(std::exchange(o.fd, -1)), size(o.size), local(o.local), remote(std::move(o.remote)) {}
  OpenShard(const OpenShard&) = delete;
  OpenShard& operator=(const OpenShard&) = delete;
  OpenShard& operator=(OpenShard&&) = delete;
  ~OpenShard() {
    if (local && fd >= 0) close(fd);
  }
};

// O_NONBLOCK: a FIFO put in a shard's place must not hang the open; fstat then refuses it.
int open_regular(const std::string& path, std::uint64_t* size) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return -1;
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    errno = EINVAL;
    return -1;
  }
  *size = static_cast<std::uint64_t>(st.st_size);
  return fd;
}

// WebDataset's split of a member name: the key is the path up to the first dot of the file name,
// the field the rest, lower-cased ("a/b/x.y.JPG" -> "a/b/x", "y.jpg"). False without a dot.
bool split_name(const std::string& name, std::string* key, std::string* field) {
  const std::size_t slash = name.rfind('/');
  const std::size_t dot = name.find('.', slash == std::string::npos ? 0 : slash + 1);
  if (dot == std::string::npos || dot + 1 >= name.size()) return false;
  *key = name.substr(0, dot);
  *field = name.substr(dot + 1);
  std::transform(field->begin(), field->end(), field->begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return true;
}

bool image_field(const std::string& field) {
  return field == "jpg" || field == "jpeg" || field == "png" || field == "webp";
}

// A class as webdataset writes it: the integer in ASCII, whitespace around it allowed.
bool parse_label(const std::string& text, std::int64_t* out) {
  std::size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  std::int64_t v = 0;
  const std::size_t start = i;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    v = v * 10 + (text[i] - '0');
    if (v >= kMaxClasses) return false;
  }
  if (i == start) return false;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  if (i != text.size()) return false;
  *out = v;
  return true;
}

// What indexing one shard found wrong, for its one warning line.
struct ShardCounts {
  std::int64_t no_image = 0;
  std::int64_t no_label = 0;
  std::int64_t bad_label = 0;
};

class ShardSource : public SampleSource {
 public:
  ShardSource(std::vector<std::string> shards, std::vector<ShardSample> samples, int num_classes,
              std::string description, std::int64_t max_pixels,
              std::unique_ptr<ShardCache> cache = nullptr,
              std::size_t entropy_index_bytes = kDefaultEntropyIndexBytes)
      : shards_(std::move(shards)),
        samples_(std::move(samples)),
        cache_(std::move(cache)),
        num_classes_(num_classes),
        description_(std::move(description)),
        max_pixels_(max_pixels),
        max_bytes_(static_cast<std::uint64_t>(max_pixels) * 8 + (std::uint64_t{64} << 20)),
        entropy_index_(static_cast<std::int64_t>(samples_.size()), entropy_index_bytes) {}

  std::int64_t size() const override { return static_cast<std::int64_t>(samples_.size()); }
  int num_classes() const override { return num_classes_; }
  ImageShape native_shape() const override { return ImageShape{3, 0, 0}; }
  std::int64_t label(std::int64_t index) const override {
    return samples_[static_cast<std::size_t>(index)].label;
  }
  std::string describe() const override { return description_; }
  std::vector<std::int64_t> shard_counts() const override {
    std::vector<std::int64_t> counts(shards_.size(), 0);
    for (const ShardSample& s : samples_) ++counts[s.shard];
    return counts;
  }
  void plan_reads(const std::vector<std::int64_t>& order) const override {
    if (!cache_) return;
    std::vector<std::uint32_t> reads;
    reads.reserve(order.size());
    for (const std::int64_t i : order) {
      if (i >= 0 && i < size()) reads.push_back(samples_[static_cast<std::size_t>(i)].shard);
    }
    cache_->plan(reads);
  }
  std::string remote_summary() const override {
    if (!cache_) return {};
    const ShardCacheStats s = cache_->stats();
    return std::to_string(s.fetches) + " shard downloads, " + std::to_string(s.waits) +
           " waits for one, " + std::to_string(s.peak_bytes >> 20) + " MiB held at most";
  }
  DecodeScales decode_scales() const override { return read_scale_counters(decode_scales_); }
  std::size_t entropy_index_bytes() const override { return entropy_index_.bytes(); }

  bool load(std::int64_t index, const Transform& t, std::mt19937& rng,
            std::uint8_t* dst) const override {
    thread_local std::vector<std::uint8_t> encoded;
    const ShardSample& s = samples_[static_cast<std::size_t>(index)];
    const bool done = load_sample(s, index, encoded, t, rng, dst);
    if (encoded.capacity() > kKeptBufferBytes) std::vector<std::uint8_t>().swap(encoded);
    return done;
  }

  bool encoded_file(std::int64_t index, std::vector<std::uint8_t>& bytes,
                    std::string* extension) const override {
    const ShardSample& s = samples_[static_cast<std::size_t>(index)];
    const OpenShard shard = open_shard(s.shard);
    if (cache_) cache_->release(s.shard);
    if (shard.fd < 0 || s.size > max_bytes_ || s.offset + s.size > shard.size) return false;
    bytes.resize(static_cast<std::size_t>(s.size));
    std::string key;
    if (!read_fully_at(shard.fd, s.offset, bytes.data(), s.size) ||
        !split_name(s.name, &key, extension)) {
      return false;
    }
    return true;
  }

  SkipReason skip_reason(std::int64_t index) const override {
    std::lock_guard<std::mutex> lock(failed_mutex_);
    const auto it = failed_.find(index);
    return it == failed_.end() ? SkipReason::kUndecodable : it->second.reason;
  }

  std::vector<SkippedFile> failures() const override {
    std::lock_guard<std::mutex> lock(failed_mutex_);
    std::vector<SkippedFile> out;
    for (const auto& entry : failed_) out.push_back(entry.second);
    return out;
  }

 private:
  bool load_sample(const ShardSample& s, std::int64_t index, std::vector<std::uint8_t>& encoded,
                   const Transform& t, std::mt19937& rng, std::uint8_t* dst) const {
    if (s.size > max_bytes_) {
      return fail(index, SkipReason::kTooLarge, std::to_string(s.size) + " bytes");
    }
    const OpenShard shard = open_shard(s.shard);
    if (cache_) cache_->release(s.shard);
    if (shard.fd < 0) return fail(index, SkipReason::kUnreadable, std::strerror(errno));
    encoded.resize(static_cast<std::size_t>(s.size));
    // A shard that shrank since it was indexed gives what is left: a short read is unreadable.
    if (s.offset + s.size > shard.size ||
        !read_fully_at(shard.fd, s.offset, encoded.data(), s.size)) {
      return fail(index, SkipReason::kUnreadable, "the shard is shorter than when it was indexed");
    }
    DecodeFailure failure;
    EntropyLease lease(&entropy_index_, index);
    if (!decode_image(encoded.data(), encoded.size(), t, rng, max_pixels_, dst, &failure,
                      &decode_scales_, &lease)) {
      return fail(index, failure.reason, std::move(failure.detail));
    }
    if (any_failed_.load(std::memory_order_relaxed)) {
      std::lock_guard<std::mutex> lock(failed_mutex_);
      failed_.erase(index);
    }
    return true;
  }

  // The shard's bytes: the local file opened now, or the remote shard from the cache (waiting for
  // its download; what the download ended with is thrown, one line naming the URL).
  OpenShard open_shard(std::uint32_t index) const {
    OpenShard shard;
    if (cache_) {
      shard.remote = cache_->acquire(index);
      shard.fd = shard.remote->fd;
      shard.size = shard.remote->size;
    } else {
      shard.fd = open_regular(shards_[index], &shard.size);
      shard.local = true;
    }
    return shard;
  }

  bool fail(std::int64_t index, SkipReason reason, std::string detail) const {
    const ShardSample& s = samples_[static_cast<std::size_t>(index)];
    std::lock_guard<std::mutex> lock(failed_mutex_);
    failed_[index] = SkippedFile{index, shards_[s.shard] + ":" + s.name, reason, std::move(detail)};
    any_failed_.store(true, std::memory_order_relaxed);
    return false;
  }

  std::vector<std::string> shards_;
  std::vector<ShardSample> samples_;
  std::unique_ptr<ShardCache> cache_;  // remote shards only
  int num_classes_;
  std::string description_;
  std::int64_t max_pixels_;
  std::uint64_t max_bytes_;
  mutable ScaleCounters decode_scales_{};
  mutable std::mutex failed_mutex_;
  mutable std::map<std::int64_t, SkippedFile> failed_;
  mutable std::atomic<bool> any_failed_{false};
  // Where each JPEG's Huffman decoding can resume (jpeg_entropy.h), kept across epochs.
  mutable EntropyIndexStore entropy_index_;
};

// Indexes the samples of shard `path`, open as `fd` (`size` bytes), into `out`; what it refused
// goes into the warning line.
void index_shard(int fd, std::uint64_t size, const std::string& path, std::uint32_t shard,
                 std::vector<ShardSample>& out, const ImageFileOptions& options) {
  const TarListing listing = list_tar(fd, size);
  ShardCounts counts;
  // Consecutive members with one key make a sample, as webdataset groups them.
  std::string key;
  bool open_sample = false;
  ShardSample current;
  bool has_image = false, has_label = false, label_ok = true;
  auto close_sample = [&] {
    if (!open_sample) return;
    if (!has_image) {
      ++counts.no_image;
    } else if (!has_label) {
      ++counts.no_label;
    } else if (!label_ok) {
      ++counts.bad_label;
    } else {
      out.push_back(current);
    }
    open_sample = false;
  };
  for (const TarMember& m : listing.members) {
    std::string k, field;
    if (!split_name(m.name, &k, &field)) continue;  // no field: webdataset skips it too
    if (!open_sample || k != key) {
      close_sample();
      key = k;
      open_sample = true;
      current = ShardSample{shard, 0, 0, 0, {}};
      has_image = has_label = false;
      label_ok = true;
    }
    if (image_field(field) && !has_image) {
      has_image = true;
      current.offset = m.offset;
      current.size = m.size;
      current.name = m.name;
    } else if (field == "cls" && !has_label) {
      has_label = true;
      std::string text(static_cast<std::size_t>(std::min(m.size, kMaxLabelBytes + 1)), '\0');
      label_ok =
          m.size <= kMaxLabelBytes &&
          read_fully_at(fd, m.offset, reinterpret_cast<std::uint8_t*>(text.data()), text.size()) &&
          parse_label(text, &current.label);
    }
  }
  close_sample();
  const std::int64_t dropped = counts.no_image + counts.no_label + counts.bad_label;
  if ((dropped > 0 || !listing.problems.empty()) && options.warn) {
    std::string line = "shard " + printable_path(path) + ":";
    if (dropped > 0) {
      line += " " + std::to_string(dropped) + " sample(s) left out (" +
              std::to_string(counts.no_image) + " without an image, " +
              std::to_string(counts.no_label) + " without a class, " +
              std::to_string(counts.bad_label) + " with a class that is not a whole number below " +
              std::to_string(kMaxClasses) + ")";
    }
    if (!listing.problems.empty()) {
      line += (dropped > 0 ? ";" : "") + std::string(" ") +
              std::to_string(listing.problems.size()) +
              " problem(s), the first: " + listing.problems.front();
    }
    options.warn(line);
  }
}

}  // namespace

std::unique_ptr<SampleSource> open_shards(const std::string& location,
                                          const ImageFileOptions& options) {
  const std::vector<std::string> shards = shard_paths(location);
  if (shards.size() > std::numeric_limits<std::uint32_t>::max()) {
    throw DataError("shards " + printable_path(location) + ": too many shards");
  }
  std::vector<ShardSample> samples;
  std::vector<std::uint64_t> sizes;
  const bool remote = !shards.empty() && is_remote(shards.front());
  RemoteOptions fetch_options = remote ? remote_options_from_environment() : RemoteOptions{};
  fetch_options.warn = options.warn;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const auto index = static_cast<std::uint32_t>(i);
    if (remote) {
      // Listed from a download of the whole shard, which is then let go: the epochs stream.
      const ShardFile file = [&] {
        const RemoteObject object = fetch_object(shards[i], fetch_options);
        return ShardFile(object.fd, object.size);
      }();
      index_shard(file.fd, file.size, shards[i], index, samples, options);
      sizes.push_back(file.size);
      continue;
    }
    std::uint64_t size = 0;
    const Fd fd(open_regular(shards[i], &size));
    if (fd.get() < 0) {
      throw DataError("shard " + printable_path(shards[i]) +
                      ": cannot be read: " + std::strerror(errno));
    }
    index_shard(fd.get(), size, shards[i], index, samples, options);
  }
  if (samples.empty()) {
    throw DataError("shards " + printable_path(location) +
                    ": no sample with an image (jpg, jpeg, png, webp) and a class (cls) in " +
                    std::to_string(shards.size()) + " shard(s)");
  }
  std::int64_t max_label = 0;
  for (const ShardSample& s : samples) max_label = std::max(max_label, s.label);
  const int num_classes = static_cast<int>(max_label + 1);
  std::string description = "WebDataset shards " + printable_path(location) + " (" +
                            std::to_string(shards.size()) + " shard(s), " +
                            std::to_string(samples.size()) + " samples, " +
                            std::to_string(num_classes) + " classes)";
  std::unique_ptr<ShardCache> cache;
  if (remote) {
    cache = std::make_unique<ShardCache>(
        sizes,
        [shards, fetch_options](std::uint32_t i) { return fetch_object(shards[i], fetch_options); },
        options.read_ahead_bytes, options.downloads);
  }
  return std::make_unique<ShardSource>(shards, std::move(samples), num_classes,
                                       std::move(description), options.max_pixels, std::move(cache),
                                       options.entropy_index_bytes);
}

}  // namespace dl::data
