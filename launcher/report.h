// How a launch is shown: the human table of --dry-run (every value with its reason) and the JSON
// of --json and plan.json.
#pragma once

#include <string>

#include "launcher/launch.h"

namespace dl {

std::string render_text(const Launch& launch, bool dry_run);
std::string render_json(const Launch& launch);

}  // namespace dl
