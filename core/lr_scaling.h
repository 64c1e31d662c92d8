// --lr-scaling: the learning rate for the batch each optimizer step really averages over, when
// --lr was tuned for another (--reference-batch). A pure function shared by dl-launch's plan,
// dl-train and, in Python, dl_plan's Plan.scaled_lr (python/dl_plan/plan_env.py says the same).
#pragma once

#include <cstdint>
#include <string>

namespace dl {

struct LrScale {
  double factor = 1;             // --lr x factor is the rate to train at
  std::int64_t reference = 0;    // the batch --lr is taken to be tuned for
  bool reference_given = false;  // from --reference-batch, not the default below
};

// The factor for a step of `global` samples (a rank's batch x the ranks): linear is
// global/reference, sqrt its square root, none 1. Without a reference batch (0) --lr is the
// rate of one rank's batch, `rank_batch` (so the rules scale with the world size), or, under
// --global-batch (`global_kept`), of the kept global batch itself (the factor is 1).
LrScale lr_scale(const std::string& rule, std::int64_t global, std::int64_t rank_batch,
                 bool global_kept, std::int64_t reference_batch);

}  // namespace dl
