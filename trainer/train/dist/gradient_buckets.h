// Data-parallel gradient averaging, DistributedDataParallel's algorithm on c10d collectives:
// the parameters in buckets of about 25 MB in reverse registration order (the order backward
// produces their gradients), the first bucket small (1 MB) so communication starts early; a post
// hook on each parameter's gradient accumulator copies its gradient into its bucket, and a bucket
// whose gradients are all in is summed over the ranks at once, while backward goes on with the
// earlier layers. Buckets start strictly in index order on every rank, because collectives are
// matched by order. finish() starts whatever no hook started (parameters unused by this forward
// count as zero), waits for every bucket and writes the averages back into .grad, before the
// scaler unscales, the norm is clipped and the optimizer steps.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "train/dist/collectives.h"

namespace torch::autograd {
struct Node;
}

namespace dl::train {

struct BucketOptions {
  std::size_t bucket_bytes = 25u << 20;       // DDP's bucket_cap_mb
  std::size_t first_bucket_bytes = 1u << 20;  // DDP's first bucket
  bool overlap = true;  // false: every bucket starts in finish(), after backward
};

// The bucket each parameter goes to: `params` (registration order) walked in reverse, a new
// bucket when the next gradient would pass the cap or changes dtype or device. Pure, for tests.
std::vector<std::vector<std::size_t>> assign_buckets(const std::vector<at::Tensor>& params,
                                                     const BucketOptions& options);

class GradientBuckets {
 public:
  GradientBuckets(Collectives& group, std::vector<at::Tensor> params, BucketOptions options);
  ~GradientBuckets();  // removes the hooks
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  // Before a backward: whether its gradients are the step's (reduced as they arrive) or an
  // earlier micro-batch's (accumulated locally only).
  void arm(bool reduce);

  // Starts the buckets not started yet, waits for all, and sets each .grad to the average over
  // the ranks. Every rank calls it once per step.
  void finish();

  // After a failed backward on this rank: starts the buckets not started yet so that the other
  // ranks' collectives complete, waits, and leaves .grad alone (the step is retried).
  void abandon();

  std::size_t bucket_count() const;
  std::vector<std::size_t> bucket_bytes() const;

 private:
  struct Bucket;
  class ReadyHook;

  void on_gradient(std::size_t param);
  void copy_in(std::size_t param);
  void start_ready_buckets();
  void start(std::size_t bucket);
  void complete(bool write_back);

  Collectives& group_;
  std::vector<at::Tensor> params_;
  BucketOptions options_;
  std::vector<Bucket> buckets_;
  std::vector<std::size_t> bucket_of_;   // per parameter
  std::vector<std::int64_t> offset_of_;  // per parameter: where its gradient sits in its bucket
  std::vector<bool> copied_;             // per parameter, this step
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators_;
  std::vector<std::uintptr_t> hook_keys_;
  std::size_t next_start_ = 0;
  bool reducing_ = false;
};

}  // namespace dl::train
