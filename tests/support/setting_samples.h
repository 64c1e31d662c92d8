// A value each registered setting's rule accepts (core/setting_rules.h), for tests that go over
// the whole registry: a new setting gets one without a new test.
#pragma once

#include <string>

#include "core/setting_rules.h"

namespace dl::test {

// An integer just above the minimum, 1 (or the minimum) for a real, "false" for a flag (its bare
// form gives "true"), the last choice, an absolute path for a path setting, else some text.
inline std::string rule_sample(const std::string& key) {
  const settings::Rule& r = settings::rule(key);
  switch (r.kind) {
    case settings::Rule::Kind::kInteger:
      return std::to_string(static_cast<long long>(r.min) + 1);
    case settings::Rule::Kind::kReal:
      return r.min <= 1 && r.max >= 1 ? "1" : std::to_string(r.min);
    case settings::Rule::Kind::kFlag:
      return "false";
    case settings::Rule::Kind::kChoice:
      return r.choices.back();
    case settings::Rule::Kind::kText:
      break;
  }
  return r.names_path != nullptr ? "/abs/" + key : "text-" + key;
}

}  // namespace dl::test
