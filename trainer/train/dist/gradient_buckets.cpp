// Bucketed gradient averaging with overlap (gradient_buckets.h).
#include "train/dist/gradient_buckets.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/types.h>
#include <torch/utils.h>

#include <stdexcept>

namespace dl::train {

struct GradientBuckets::Bucket {
  std::vector<std::size_t> params;
  at::Tensor flat;             // the gradients of `params`, back to back
  std::size_t pending = 0;     // gradients not copied in yet this step
  std::function<void()> wait;  // set once started
};

// Runs after the gradient accumulator of one parameter added this backward's gradient to .grad.
class GradientBuckets::ReadyHook final : public torch::autograd::FunctionPostHook {
 public:
  ReadyHook(GradientBuckets* owner, std::size_t param) : owner_(owner), param_(param) {}

  torch::autograd::variable_list operator()(
      const torch::autograd::variable_list& outputs,
      const torch::autograd::variable_list& /*inputs*/) override {
    owner_->on_gradient(param_);
    return outputs;
  }

 private:
  GradientBuckets* owner_;
  std::size_t param_;
};

std::vector<std::vector<std::size_t>> assign_buckets(const std::vector<at::Tensor>& params,
                                                     const BucketOptions& options) {
  std::vector<std::vector<std::size_t>> buckets;
  std::size_t bytes = 0;
  for (std::size_t k = params.size(); k-- > 0;) {
    const at::Tensor& p = params[k];
    const std::size_t size = static_cast<std::size_t>(p.numel()) * p.element_size();
    const std::size_t cap = buckets.size() == 1 ? options.first_bucket_bytes : options.bucket_bytes;
    const bool fits = !buckets.empty() && bytes + size <= cap;
    const bool same_kind = !buckets.empty() &&
                           params[buckets.back().front()].scalar_type() == p.scalar_type() &&
                           params[buckets.back().front()].device() == p.device();
    if (buckets.empty() || !fits || !same_kind) {
      buckets.emplace_back();
      bytes = 0;
    }
    buckets.back().push_back(k);
    bytes += size;
  }
  return buckets;
}

GradientBuckets::GradientBuckets(Collectives& group, std::vector<at::Tensor> params,
                                 BucketOptions options)
    : group_(group), options_(options) {
  for (auto& p : params) {
    if (p.requires_grad()) params_.push_back(p);
  }
  const auto assignment = assign_buckets(params_, options_);
  bucket_of_.resize(params_.size());
  offset_of_.resize(params_.size());
  copied_.assign(params_.size(), false);
  buckets_.resize(assignment.size());
  for (std::size_t b = 0; b < assignment.size(); ++b) {
    Bucket& bucket = buckets_[b];
    bucket.params = assignment[b];
    std::int64_t numel = 0;
    for (std::size_t k : bucket.params) {
      bucket_of_[k] = b;
      offset_of_[k] = numel;
      numel += params_[k].numel();
    }
    bucket.flat = torch::zeros({numel}, params_[bucket.params.front()].options());
    bucket.pending = bucket.params.size();
  }
  if (!options_.overlap) return;
  for (std::size_t k = 0; k < params_.size(); ++k) {
    // The variable holds its accumulator weakly: keep it, or the hook dies with it.
    auto accumulator = torch::autograd::impl::grad_accumulator(params_[k]);
    hook_keys_.push_back(accumulator->add_post_hook(std::make_unique<ReadyHook>(this, k)));
    accumulators_.push_back(std::move(accumulator));
  }
}

GradientBuckets::~GradientBuckets() {
  for (std::size_t k = 0; k < accumulators_.size(); ++k) {
    accumulators_[k]->del_post_hook(hook_keys_[k]);
  }
}

std::size_t GradientBuckets::bucket_count() const {
  return buckets_.size();
}

std::vector<std::size_t> GradientBuckets::bucket_bytes() const {
  std::vector<std::size_t> bytes;
  for (const Bucket& b : buckets_) {
    bytes.push_back(static_cast<std::size_t>(b.flat.numel()) * b.flat.element_size());
  }
  return bytes;
}

void GradientBuckets::arm(bool reduce) {
  reducing_ = reduce && options_.overlap;
}

void GradientBuckets::on_gradient(std::size_t param) {
  if (!reducing_ || copied_[param]) return;
  copy_in(param);
  start_ready_buckets();
}

void GradientBuckets::copy_in(std::size_t param) {
  const at::Tensor& p = params_[param];
  Bucket& bucket = buckets_[bucket_of_[param]];
  at::Tensor slot = bucket.flat.narrow(0, offset_of_[param], p.numel()).view(p.sizes());
  torch::NoGradGuard no_grad;
  if (p.grad().defined()) {
    slot.copy_(p.grad());
  } else {
    slot.zero_();  // not used by this forward: contributes nothing, as in DDP
  }
  copied_[param] = true;
  --bucket.pending;
}

void GradientBuckets::start_ready_buckets() {
  while (next_start_ < buckets_.size() && buckets_[next_start_].pending == 0) {
    start(next_start_++);
  }
}

void GradientBuckets::start(std::size_t b) {
  Bucket& bucket = buckets_[b];
  // Averaged as DDP does: divided before the sum, so the sum is the mean.
  bucket.flat.div_(group_.size());
  bucket.wait = group_.start_sum(bucket.flat);
}

void GradientBuckets::complete(bool write_back) {
  for (std::size_t k = 0; k < params_.size(); ++k) {
    if (!copied_[k]) copy_in(k);
  }
  start_ready_buckets();
  for (Bucket& bucket : buckets_) {
    bucket.wait();
    bucket.wait = nullptr;
  }
  if (write_back) {
    torch::NoGradGuard no_grad;
    for (std::size_t k = 0; k < params_.size(); ++k) {
      at::Tensor& p = params_[k];
      const at::Tensor slot =
          buckets_[bucket_of_[k]].flat.narrow(0, offset_of_[k], p.numel()).view(p.sizes());
      if (p.grad().defined()) {
        p.mutable_grad().copy_(slot);
      } else {
        p.mutable_grad() = slot.clone();
      }
    }
  }
  // Ready for the next step.
  copied_.assign(params_.size(), false);
  for (Bucket& bucket : buckets_) bucket.pending = bucket.params.size();
  next_start_ = 0;
  reducing_ = false;
}

void GradientBuckets::finish() {
  complete(/*write_back=*/true);
}

void GradientBuckets::abandon() {
  complete(/*write_back=*/false);
}

}  // namespace dl::train
