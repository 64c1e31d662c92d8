// Which loader dl-train uses, decided by measurement: LibTorch's torch::data::DataLoader (a
// Dataset whose get() returns one tensor per sample, a RandomSampler, Stack<> collation) against
// dl::data::Loader (whole batches assembled by long-lived workers into reused buffers), on the
// same source, transform, batch size and worker counts, alternating the two in one sitting.
//
//   loader_choice_bench [--data DIR] [--workers "0 1 2"] [--repeat N] [--augment]
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/data_location.h"
#include "data/idx.h"
#include "data/loader.h"

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kBatch = 64;

// The idiomatic LibTorch data set over the same SampleSource.
class TorchDataset : public torch::data::datasets::Dataset<TorchDataset> {
 public:
  TorchDataset(const dl::data::SampleSource& source, dl::data::Transform t)
      : source_(&source), t_(t) {}
  torch::data::Example<> get(size_t index) override {
    auto image = torch::empty({t_.out.channels, t_.out.height, t_.out.width}, torch::kUInt8);
    std::mt19937 rng(static_cast<std::uint32_t>(index));
    source_->load(static_cast<std::int64_t>(index), t_, rng, image.data_ptr<std::uint8_t>());
    return {image, torch::tensor(source_->label(static_cast<std::int64_t>(index)), torch::kLong)};
  }
  torch::optional<size_t> size() const override { return static_cast<size_t>(source_->size()); }

 private:
  const dl::data::SampleSource* source_;
  dl::data::Transform t_;
};

double ours(const dl::data::SampleSource& source, const dl::data::Transform& t, int workers) {
  dl::data::LoaderConfig c;
  c.batch_size = kBatch;
  c.workers = workers;
  c.shuffle = true;
  c.drop_last = true;
  c.seed = 1;
  c.transform = t;
  dl::data::Loader loader(source, c);
  loader.start_epoch(0);
  const auto t0 = Clock::now();
  std::int64_t samples = 0, checksum = 0;
  while (auto b = loader.next()) {
    samples += b->n();
    checksum += b->labels()[0];
  }
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (checksum < 0) std::puts("");
  return static_cast<double>(samples) / s;
}

double libtorch(const dl::data::SampleSource& source, const dl::data::Transform& t, int workers) {
  auto dataset = TorchDataset(source, t).map(torch::data::transforms::Stack<>());
  auto loader = torch::data::make_data_loader<torch::data::samplers::RandomSampler>(
      std::move(dataset),
      torch::data::DataLoaderOptions(kBatch).workers(static_cast<size_t>(workers)).drop_last(true));
  const auto t0 = Clock::now();
  std::int64_t samples = 0, checksum = 0;
  for (auto& batch : *loader) {
    samples += batch.data.size(0);
    checksum += batch.target[0].item<std::int64_t>();
  }
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (checksum < 0) std::puts("");
  return static_cast<double>(samples) / s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = dl::default_data_dir();
  std::string worker_list = "0 1 2";
  int repeat = 3;
  bool augment = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--data" && i + 1 < argc) {
      dir = argv[++i];
    } else if (a == "--workers" && i + 1 < argc) {
      worker_list = argv[++i];
    } else if (a == "--repeat" && i + 1 < argc) {
      repeat = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--augment") {
      augment = true;
    } else {
      std::fprintf(stderr,
                   "loader_choice_bench: unknown argument '%s' (expected --data DIR, --workers "
                   "\"0 1\", --repeat N or --augment)\n",
                   argv[i]);
      return 64;
    }
  }
  torch::set_num_threads(1);
  auto source = dl::data::open_mnist_dir(dir, true);
  dl::data::Transform t;
  t.out = source->native_shape();
  t.train = augment;

  std::printf("loader only, %s (%lld samples), batch %d, %s, %d repetitions (samples/s)\n\n",
              dir.c_str(), static_cast<long long>(source->size()), kBatch,
              augment ? "RandomResizedCrop + flip" : "no augmentation", repeat);
  std::printf("| workers | dl::data::Loader | torch::data::DataLoader | ratio |\n");
  std::printf("|---------|------------------|-------------------------|-------|\n");
  std::istringstream in(worker_list);
  for (int w; in >> w;) {
    std::vector<double> a, b;
    for (int r = 0; r < repeat; ++r) {  // alternate, so drift hits both alike
      a.push_back(ours(*source, t, w));
      b.push_back(libtorch(*source, t, w));
    }
    std::printf("| %7d | %16.0f | %23.0f | %5.2f |\n", w, median(a), median(b),
                median(a) / median(b));
  }
  return 0;
}
