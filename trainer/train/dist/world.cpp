// Totals and broadcasts over the ranks (world.h).
#include "train/dist/world.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <map>

namespace dl::train {

World::World(std::shared_ptr<Collectives> group)
    : group_(std::move(group)), rank_(group_->rank()), size_(group_->size()) {}

void World::reduce(BatchTotals& totals) const {
  if (!group_) return;
  // One collective: the count of correct samples is exact in a double up to 2^53.
  const at::Tensor all =
      torch::stack({totals.loss_sum.to(torch::kDouble), totals.correct.to(torch::kDouble),
                    torch::full({}, static_cast<double>(totals.samples),
                                totals.loss_sum.options().dtype(torch::kDouble))});
  group_->sum(all);
  totals.loss_sum = all[0].clone();
  totals.correct = all[1].to(torch::kLong);
  totals.samples = static_cast<std::int64_t>(all[2].item<double>());
}

std::int64_t World::sum(std::int64_t value) const {
  if (!group_) return value;
  const at::Tensor t = torch::full({1}, value, torch::kLong);
  const at::Tensor on_device = group_->backend() == "nccl" ? t.cuda() : t;
  group_->sum(on_device);
  return on_device.cpu().item<std::int64_t>();
}

std::int64_t World::min(std::int64_t value) const {
  if (!group_) return value;
  const at::Tensor t = torch::full({1}, -value, torch::kLong);
  const at::Tensor on_device = group_->backend() == "nccl" ? t.cuda() : t;
  group_->max(on_device);
  return -on_device.cpu().item<std::int64_t>();
}

void World::broadcast_from_first(const std::vector<at::Tensor>& tensors) const {
  if (!group_) return;
  torch::NoGradGuard no_grad;
  // One flat broadcast per dtype and device rather than one per tensor.
  std::map<std::pair<int, std::string>, std::vector<at::Tensor>> groups;
  for (const auto& t : tensors) {
    groups[{static_cast<int>(t.scalar_type()), t.device().str()}].push_back(t);
  }
  for (auto& [kind, members] : groups) {
    std::vector<at::Tensor> flat_parts;
    for (const auto& t : members) flat_parts.push_back(t.detach().reshape({-1}));
    const at::Tensor flat = torch::cat(flat_parts);
    group_->broadcast(flat, 0);
    std::int64_t offset = 0;
    for (auto& t : members) {
      t.detach().copy_(flat.narrow(0, offset, t.numel()).view(t.sizes()));
      offset += t.numel();
    }
  }
}

std::vector<char> World::broadcast_from_first(std::vector<char> bytes) const {
  if (!group_) return bytes;
  const auto count = static_cast<std::int64_t>(bytes.size());
  at::Tensor size = torch::full({1}, rank_ == 0 ? count : 0, torch::kLong);
  const bool nccl = group_->backend() == "nccl";
  if (nccl) size = size.cuda();
  group_->broadcast(size, 0);
  const std::int64_t n = size.cpu().item<std::int64_t>();
  at::Tensor data = torch::zeros({n}, torch::kUInt8);
  if (rank_ == 0) std::memcpy(data.data_ptr(), bytes.data(), bytes.size());
  if (nccl) data = data.cuda();
  group_->broadcast(data, 0);
  data = data.cpu();
  bytes.resize(static_cast<std::size_t>(n));
  std::memcpy(bytes.data(), data.data_ptr(), bytes.size());
  return bytes;
}

}  // namespace dl::train
