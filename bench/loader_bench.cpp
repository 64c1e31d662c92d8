// Loader throughput on an ImageFolder of JPEGs, the C++ half of the loader comparison (the Python
// half is bench/reference/loader_reference.py; bench/pipeline_bench.sh runs both alternately).
//
//   --mode loader  dl::data::Loader as dl-train uses it: RandomResizedCrop 224 + flip, batch 64,
//                  shuffled, and the consumer turns each batch into normalized float32 CHW, the
//                  work torchvision's ToTensor + Normalize do, so both sides end at the same
//                  tensor.
//   --mode decode  the ceiling: the same files read and fully decoded (cv::imdecode, colour) by the
//                  same number of threads, nothing else.
//
// "workers 0" means the work runs on the calling thread, as torch's DataLoader(num_workers=0);
// otherwise `workers` threads do it. OpenCV's own thread pool is off in both modes, so the thread
// count is what the table says. Each run times its last epoch (the first ones warm the page cache
// and the buffers) and prints one line: `images_per_second <value>`.
//
//   loader_bench --data DIR --mode loader|decode [--workers N] [--epochs N] [--batch N]
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "data/data_error.h"
#include "data/file_bytes.h"
#include "data/image_folder.h"
#include "data/loader.h"
#include "data/resize.h"

namespace {

using Clock = std::chrono::steady_clock;

// ImageNet statistics, as the reference's Normalize uses.
constexpr float kMean[3] = {0.485f, 0.456f, 0.406f};
constexpr float kStd[3] = {0.229f, 0.224f, 0.225f};

double loader_epoch(dl::data::Loader& loader, int epoch, std::vector<float>& normalized) {
  loader.start_epoch(epoch);
  const auto t0 = Clock::now();
  std::int64_t images = 0;
  float scale[3], shift[3];
  for (int k = 0; k < 3; ++k) {
    scale[k] = 1.0f / (255.0f * kStd[k]);
    shift[k] = -kMean[k] / kStd[k];
  }
  while (auto batch = loader.next()) {
    const std::size_t plane = static_cast<std::size_t>(batch->shape().height) *
                              static_cast<std::size_t>(batch->shape().width);
    const std::size_t n = batch->image_bytes();
    if (normalized.size() < n) normalized.resize(n);
    const std::uint8_t* src = batch->images();
    for (std::size_t i = 0; i < n; i += plane) {
      const int k = static_cast<int>((i / plane) % 3);
      for (std::size_t j = 0; j < plane; ++j) {
        normalized[i + j] = static_cast<float>(src[i + j]) * scale[k] + shift[k];
      }
    }
    images += batch->n();
  }
  return static_cast<double>(images) / std::chrono::duration<double>(Clock::now() - t0).count();
}

double decode_epoch(const std::vector<std::string>& files, int workers) {
  std::atomic<std::size_t> next{0};
  std::atomic<std::int64_t> decoded{0};
  auto work = [&] {
    std::vector<std::uint8_t> bytes;
    for (std::size_t i; (i = next.fetch_add(1)) < files.size();) {
      if (!dl::data::read_file_into(files[i], bytes)) continue;
      const cv::Mat image = cv::imdecode(
          cv::Mat(1, static_cast<int>(bytes.size()), CV_8UC1, bytes.data()), cv::IMREAD_COLOR);
      if (!image.empty()) decoded.fetch_add(1);
    }
  };
  const auto t0 = Clock::now();
  if (workers == 0) {
    work();
  } else {
    std::vector<std::thread> threads;
    for (int w = 0; w < workers; ++w) threads.emplace_back(work);
    for (auto& t : threads) t.join();
  }
  return static_cast<double>(decoded.load()) /
         std::chrono::duration<double>(Clock::now() - t0).count();
}

int usage_error(const std::string& message) {
  std::fprintf(stderr,
               "loader_bench: %s (usage: loader_bench --data DIR --mode loader|decode "
               "[--workers N] [--epochs N] [--batch N])\n",
               message.c_str());
  return 64;
}

int whole_number(const char* text, int lo, int hi) {
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  return (*end == '\0' && v >= lo && v <= hi) ? static_cast<int>(v) : -1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string data, mode;
  int workers = 0, epochs = 2, batch = 64;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--data" && has_value) {
      data = argv[++i];
    } else if (a == "--mode" && has_value) {
      mode = argv[++i];
    } else if ((a == "--workers" || a == "--epochs" || a == "--batch") && has_value) {
      const int v = whole_number(argv[++i], a == "--workers" ? 0 : 1, 4096);
      if (v < 0) return usage_error(a + " '" + argv[i] + "': expected a whole number");
      (a == "--workers" ? workers : a == "--epochs" ? epochs : batch) = v;
    } else {
      return usage_error("unknown argument '" + a + "'");
    }
  }
  if (data.empty()) return usage_error("--data DIR is required");
  if (mode != "loader" && mode != "decode") return usage_error("--mode must be loader or decode");

  cv::setNumThreads(0);
  dl::data::set_resize_threads(1);
  try {
    const auto source = dl::data::open_image_folder(data);
    double rate = 0;
    if (mode == "decode") {
      std::vector<std::string> files;
      for (const auto& entry : std::filesystem::recursive_directory_iterator(data)) {
        if (entry.is_regular_file()) files.push_back(entry.path().string());
      }
      for (int e = 0; e < epochs; ++e) rate = decode_epoch(files, workers);
    } else {
      dl::data::LoaderConfig c;
      c.batch_size = batch;
      c.workers = workers;
      c.shuffle = true;
      c.drop_last = true;
      c.seed = 1;
      c.transform.out = dl::data::ImageShape{3, 224, 224};
      c.transform.train = true;
      dl::data::Loader loader(*source, c);
      std::vector<float> normalized;
      for (int e = 0; e < epochs; ++e) rate = loader_epoch(loader, e, normalized);
    }
    std::printf("images_per_second %.1f\n", rate);
  } catch (const dl::data::DataError& e) {
    std::fprintf(stderr, "loader_bench: %s\n", e.what());
    return 66;
  }
  return 0;
}
