// The learning rate's factor for the batch a step averages over (lr_scaling.h).
#include "core/lr_scaling.h"

#include <cmath>

namespace dl {

LrScale lr_scale(const std::string& rule, std::int64_t global, std::int64_t rank_batch,
                 bool global_kept, std::int64_t reference_batch) {
  LrScale s;
  s.reference_given = reference_batch > 0;
  s.reference = s.reference_given ? reference_batch : global_kept ? global : rank_batch;
  if (rule == "none" || s.reference <= 0 || global <= 0) return s;
  const double ratio = static_cast<double>(global) / static_cast<double>(s.reference);
  s.factor = rule == "linear" ? ratio : rule == "sqrt" ? std::sqrt(ratio) : 1.0;
  return s;
}

}  // namespace dl
