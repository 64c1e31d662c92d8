// dl-train's half of `dl-launch doctor` (doctor_mode.h): decoding, reading and copying measured
// on this build, this data and this device.
#include "train/modes/doctor_mode.h"

#include <ATen/ATen.h>
#include <torch/cuda.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/json.h"
#include "core/seconds_since.h"
#include "data/image_decode.h"
#include "data/image_header.h"
#include "data/jpeg_region.h"
#include "data/remote_store.h"
#include "data/sample_source.h"
#include "data/shard_pack.h"
#include "data/skip_reason.h"
#include "train/dist/collectives.h"
#include "train/run/config.h"
#include "train/run/data_setup.h"

namespace dl::train {
namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// One line of JSON members, in order: the launcher reads the last line that is an object.
class Line {
 public:
  Line& add(const std::string& key, const std::string& raw) {
    out_ << (first_ ? "" : ",") << JsonWriter::escape(key) << ":" << raw;
    first_ = false;
    return *this;
  }
  Line& text(const std::string& key, const std::string& v) {
    return add(key, JsonWriter::escape(v));
  }
  Line& number(const std::string& key, double v) {
    std::ostringstream s;
    s.precision(6);
    s << (std::isfinite(v) ? v : 0.0);
    return add(key, s.str());
  }
  Line& integer(const std::string& key, std::int64_t v) { return add(key, std::to_string(v)); }
  std::string object() const { return "{" + out_.str() + "}"; }

 private:
  std::ostringstream out_;
  bool first_ = true;
};

// --- JPEG decoding ------------------------------------------------------------------------------

// A photo-like 1024x768 JPEG (smooth shapes, fine noise) at quality 90: what decoding costs where
// the data has no JPEGs of its own. Made through pack's encoder from a PPM; nullopt without
// OpenCV.
std::optional<std::vector<std::uint8_t>> synthetic_photo() {
  const int w = 1024, h = 768;
  const std::string header = "P6\n" + std::to_string(w) + " " + std::to_string(h) + "\n255\n";
  std::vector<std::uint8_t> bytes(header.begin(), header.end());
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> noise(-10, 10);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const double a = std::sin(x / 37.0 + y / 53.0), b = std::cos(x / 91.0 - y / 29.0);
      const int base[3] = {static_cast<int>(128 + 70 * a), static_cast<int>(120 + 60 * b),
                           static_cast<int>(110 + 40 * a * b)};
      for (int c = 0; c < 3; ++c) {
        bytes.push_back(static_cast<std::uint8_t>(std::clamp(base[c] + noise(rng), 0, 255)));
      }
    }
  }
  try {
    if (!data::shrink_to_jpeg(bytes, std::max(w, h), 90)) return std::nullopt;
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
  return bytes;
}

// The faster of two decodes through `t`, in ms; nullopt when the bytes do not decode.
std::optional<double> decode_ms(const std::vector<std::uint8_t>& bytes, const data::Transform& t,
                                std::int64_t max_pixels, std::vector<std::uint8_t>& dst) {
  double best = -1;
  for (int round = 0; round < 2; ++round) {
    std::mt19937 rng(7);
    const auto start = Clock::now();
    if (!data::decode_image(bytes.data(), bytes.size(), t, rng, max_pixels, dst.data())) {
      return std::nullopt;
    }
    const double ms = 1000 * seconds_since(start);
    best = best < 0 ? ms : std::min(best, ms);
  }
  return best;
}

// Up to `wanted` of the source's files that are JPEGs, spread over it.
std::vector<std::vector<std::uint8_t>> sample_jpegs(const data::SampleSource& source, int wanted) {
  std::vector<std::vector<std::uint8_t>> files;
  const std::int64_t n = source.size();
  const std::int64_t tries = std::min<std::int64_t>(n, 4 * wanted);
  std::string ext;
  for (std::int64_t k = 0; k < tries && static_cast<int>(files.size()) < wanted; ++k) {
    std::vector<std::uint8_t> bytes;
    if (!source.encoded_file(k * n / tries, bytes, &ext)) return files;  // in memory
    if (data::looks_like_jpeg(bytes.data(), bytes.size())) files.push_back(std::move(bytes));
  }
  return files;
}

// Decoding per core through the training transform: at full size (as PIL decodes) and at the
// crop's scale (libjpeg's scaled decoding, dl-train's default).
std::string decode_figures(const DataSetup* d, const TrainConfig& config, bool full) {
  Line line;
  // Evaluation's transform: the whole image resized and centre-cropped, so that every file costs
  // a whole decode (training's random crops decode a random part of it).
  data::Transform t;
  t.out = {3, 224, 224};
  std::vector<std::vector<std::uint8_t>> files;
  if (d != nullptr) {
    files = sample_jpegs(*d->train, full ? 64 : 16);
    if (!files.empty()) t = d->eval_transform;
  }
  std::string source = "the data's JPEGs";
  if (files.empty()) {
    auto photo = synthetic_photo();
    if (!photo)
      return Line()
          .text("note", "no JPEG in the data and no encoder (OpenCV) in this build")
          .object();
    files.push_back(std::move(*photo));
    source = "a synthetic 1024x768 photo (quality 90)";
  }
  std::vector<std::uint8_t> dst(t.out.bytes());
  std::vector<double> full_ms, scaled_ms;
  double megapixels = 0;
  for (const auto& bytes : files) {
    data::Transform whole = t;
    whole.scaled_decode = false;
    data::Transform scaled = t;
    scaled.scaled_decode = true;
    const auto a = decode_ms(bytes, whole, config.max_image_pixels, dst);
    const auto b = decode_ms(bytes, scaled, config.max_image_pixels, dst);
    if (!a || !b) continue;
    full_ms.push_back(*a);
    scaled_ms.push_back(*b);
    megapixels +=
        static_cast<double>(data::read_image_header(bytes.data(), bytes.size()).pixels()) / 1e6;
  }
  if (full_ms.empty()) return Line().text("note", "none of the sampled JPEGs decodes").object();
  const double fm = median(full_ms), sm = median(scaled_ms);
  line.text("source", source)
      .integer("files", static_cast<std::int64_t>(full_ms.size()))
      .number("megapixels", megapixels / static_cast<double>(full_ms.size()))
      .integer("output_side", std::max(t.out.height, t.out.width))
      .number("full_ms", fm)
      .number("scaled_ms", sm)
      .number("full_per_core", 1000 / fm)
      .number("scaled_per_core", 1000 / sm);
  return line.object();
}

// --- reading the data
// -----------------------------------------------------------------------------

// Bytes this process has had fetched from storage (/proc/self/io's read_bytes: the page cache's
// hits are not in it); nullopt where the kernel does not say.
std::optional<std::uint64_t> storage_read_bytes() {
  std::ifstream io("/proc/self/io");
  std::string key;
  std::uint64_t value = 0;
  while (io >> key >> value) {
    if (key == "read_bytes:") return value;
  }
  return std::nullopt;
}

// Whether the source holds its samples in memory (IDX, CIFAR: no file per sample): its sample 0
// loads though it has no file to read.
bool in_memory(const DataSetup& d) {
  std::vector<std::uint8_t> dst(d.eval_transform.out.bytes());
  std::mt19937 rng(1);
  return d.train->size() > 0 && d.train->load(0, d.eval_transform, rng, dst.data());
}

// "path: unreadable (Permission denied)": why sample `index` does not load, as the loader says.
std::string first_failure(const DataSetup& d, std::int64_t index) {
  std::vector<std::uint8_t> dst(d.eval_transform.out.bytes());
  std::mt19937 rng(1);
  if (d.train->load(index, d.eval_transform, rng, dst.data()))
    return "sample " + std::to_string(index);
  for (const data::SkippedFile& f : d.train->failures()) {
    if (f.index != index) continue;
    return f.path + ": " + data::skip_reason_name(f.reason) +
           (f.detail.empty() ? "" : " (" + f.detail + ")");
  }
  return "sample " + std::to_string(index);
}

// The training files spread over the set, read twice through the loader's own file access (the
// first read is as cold as the page cache leaves it, the second warm), within a byte and a time
// budget.
std::string read_figures(const DataSetup& d, bool full) {
  const data::SampleSource& source = *d.train;
  const std::int64_t n = source.size();
  const std::uint64_t budget = (full ? 1024ull : 128ull) << 20;
  const double time_budget = full ? 60 : 10;
  const std::int64_t wanted = std::min<std::int64_t>(n, full ? 8192 : 1024);
  std::vector<std::int64_t> picked;
  std::vector<std::uint8_t> bytes;
  std::string ext;
  std::uint64_t total = 0;
  std::vector<std::int64_t> unreadable;
  const auto before = storage_read_bytes();
  const auto start = Clock::now();
  for (std::int64_t k = 0; k < wanted && total < budget && seconds_since(start) < time_budget;
       ++k) {
    const std::int64_t index = wanted > 0 ? k * n / wanted : 0;
    if (!source.encoded_file(index, bytes, &ext)) {
      if (k == 0 && in_memory(d)) {
        return Line().text("note", d.kind + " data is read whole when training starts").object();
      }
      unreadable.push_back(index);
      continue;
    }
    picked.push_back(index);
    total += bytes.size();
  }
  const double first = seconds_since(start);
  const auto after = storage_read_bytes();
  Line line;
  if (!unreadable.empty()) {
    // A run skips them, and fails past max-bad-fraction: the first one named, as the loader
    // names it (load() records the path and the reason).
    line.integer("unreadable", static_cast<std::int64_t>(unreadable.size()))
        .integer("tried", static_cast<std::int64_t>(unreadable.size() + picked.size()))
        .text("unreadable_example", first_failure(d, unreadable.front()));
  }
  if (picked.empty() || total == 0) return line.text("note", "no file of the data read").object();
  const auto again = Clock::now();
  for (const std::int64_t index : picked) source.encoded_file(index, bytes, &ext);
  const double second = seconds_since(again);
  const auto mb = static_cast<double>(total) / 1e6;
  line.integer("files", static_cast<std::int64_t>(picked.size()))
      .integer("bytes", static_cast<std::int64_t>(total))
      .number("first_mb_s", mb / std::max(first, 1e-9))
      .number("second_mb_s", mb / std::max(second, 1e-9));
  if (before && after) {
    line.number("from_storage", std::min(1.0, static_cast<double>(*after - *before) / 1e6 / mb));
  }
  return line.object();
}

// --- host to device
// ---------------------------------------------------------------------------------

// The best of five copies of 256 MiB from pageable and from pinned memory to the GPU.
std::string copy_figures(const TrainConfig& config) {
  if (config.device == "cpu" || !torch::cuda::is_available()) {
    return Line().text("note", "no CUDA device").object();
  }
  const c10::Device device =
      config.device.rfind("cuda", 0) == 0 ? c10::Device(config.device) : c10::Device("cuda:0");
  const std::int64_t n = 256ll << 20;
  const auto rate = [&](bool pinned) {
    const at::Tensor host =
        at::ones({n}, at::TensorOptions().dtype(at::kByte).pinned_memory(pinned));
    double best = 0;
    for (int i = 0; i < 6; ++i) {
      torch::cuda::synchronize(device.index());
      const auto start = Clock::now();
      const at::Tensor on = host.to(device, /*non_blocking=*/pinned);
      torch::cuda::synchronize(device.index());
      if (i > 0)
        best = std::max(best,
                        static_cast<double>(n) / 1e9 / seconds_since(start));  // the first warms up
    }
    return best;
  };
  return Line()
      .text("device", device.str())
      .integer("bytes", n)
      .number("pageable_gb_s", rate(false))
      .number("pinned_gb_s", rate(true))
      .object();
}

}  // namespace

int run_doctor(const TrainConfig& config, bool full) {
  std::optional<DataSetup> d;
  std::string data_error, read = Line().text("note", "the data did not open").object();
  int data_exit = 0;
  if (data::is_remote(config.data)) {
    read = Line().text("note", "remote data: a run's time breakdown measures its wait").object();
  } else {
    try {
      d = setup_data(config);
      read = read_figures(*d, full);
    } catch (const UserError& e) {
      data_error = e.what();
      data_exit = e.code();
    }
  }
  Line line;
  line.add("decode", decode_figures(d ? &*d : nullptr, config, full))
      .add("read", read)
      .add("copy", copy_figures(config));
  if (d) line.text("data", d->location).text("data_kind", d->kind);
  if (!data_error.empty()) line.text("data_error", data_error).integer("data_exit", data_exit);
  std::cout << line.object() << std::endl;
  return 0;
}

int run_exchange_bench(const TrainConfig& config, bool full) {
  const DistContract contract = read_contract();
  const bool cuda = config.device != "cpu" && torch::cuda::is_available();
  const c10::Device device =
      cuda ? c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(contract.local_rank))
           : c10::Device(c10::kCPU);
  GroupOptions options;
  options.backend = config.dist_backend;
  options.rendezvous_seconds = 60;
  options.collective_seconds = 60;
  const auto group = Collectives::connect(contract, options, device);
  const std::int64_t bytes = (full ? 256ll : 64ll) << 20;
  at::Tensor t = at::ones({bytes / 4}, at::TensorOptions().dtype(at::kFloat).device(device));
  std::vector<double> times;
  for (int i = 0; i < (full ? 12 : 6); ++i) {
    if (cuda) torch::cuda::synchronize(device.index());
    const auto start = Clock::now();
    group->sum(t);
    if (cuda) torch::cuda::synchronize(device.index());
    if (i >= 2) times.push_back(seconds_since(start));  // two to warm up
  }
  if (contract.rank == 0) {
    const double s = median(times), n = contract.world_size;
    const double algbw = static_cast<double>(bytes) / 1e9 / s;
    // nccl-tests' bus bandwidth: what each link carries in a ring allreduce.
    std::cout << Line()
                     .text("backend", group->backend())
                     .integer("ranks", contract.world_size)
                     .integer("bytes", bytes)
                     .number("seconds", s)
                     .number("algbw_gb_s", algbw)
                     .number("busbw_gb_s", algbw * 2 * (n - 1) / n)
                     .object()
              << std::endl;
  }
  return 0;
}

}  // namespace dl::train
