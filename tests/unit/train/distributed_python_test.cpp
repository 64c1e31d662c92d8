// The sampler against Python's own (label "python"): torch.utils.data.DistributedSampler from
// python3-torch lists the indices of every rank over a grid of data set sizes, world sizes,
// seeds, epochs, shuffling and drop_last, and dl-train's lists must equal them one for one.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "support/files.h"
#include "support/python.h"
#include "support/temp_dir.h"
#include "train/dist/distributed_sampler.h"

namespace dl::test {
namespace {

constexpr const char* kSamplerGrid = R"(
import torch
from torch.utils.data import DistributedSampler

class Sized:
    def __init__(self, n): self.n = n
    def __len__(self): return self.n

for size in (1, 2, 5, 7, 64, 100, 1001):
    for world in (1, 2, 3, 4, 8):
        for seed in (0, 42, 12345):
            for epoch in (0, 1, 7):
                for shuffle in (True, False):
                    for drop_last in (False, True):
                        for rank in range(world):
                            s = DistributedSampler(Sized(size), num_replicas=world, rank=rank,
                                                   shuffle=shuffle, seed=seed, drop_last=drop_last)
                            s.set_epoch(epoch)
                            print(size, world, rank, seed, epoch, int(shuffle), int(drop_last),
                                  *list(s))
)";

TEST(DistributedSamplerPython, EveryRanksIndicesEqualTorchsDistributedSampler) {
  if (!kPythonHasTorch) GTEST_SKIP() << kNoTorch;
  TempDir dir;
  const std::string script = dir.path() + "/grid.py";
  write_file(script, kSamplerGrid);
  const Result r = run_python(script, {});
  ASSERT_EQ(r.code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  int compared = 0;
  while (std::getline(lines, line)) {
    std::istringstream in(line);
    std::int64_t size = 0, epoch = 0;
    int world = 0, rank = 0, shuffle = 0, drop_last = 0;
    std::uint64_t seed = 0;
    in >> size >> world >> rank >> seed >> epoch >> shuffle >> drop_last;
    std::vector<std::int64_t> expected;
    for (std::int64_t i; in >> i;) expected.push_back(i);
    train::ShardSpec spec;
    spec.world = world;
    spec.rank = rank;
    spec.seed = seed;
    spec.shuffle = shuffle != 0;
    spec.drop_last = drop_last != 0;
    ASSERT_EQ(train::distributed_indices(size, spec, static_cast<int>(epoch)), expected) << line;
    ++compared;
  }
  // 7 sizes x 3 seeds x 3 epochs x 2 x 2 x (1+2+3+4+8) ranks.
  EXPECT_EQ(compared, 7 * 3 * 3 * 2 * 2 * 18);
  std::cout << compared << " index lists equal Python's DistributedSampler\n";
}

}  // namespace
}  // namespace dl::test
