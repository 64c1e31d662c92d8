// dl-launch's plan.json read back for the run report: the machine's facts and the plan's choices,
// each with the reason the launcher gave.
#pragma once

#include <string>

#include "report/run_report.h"

namespace dl::report {

// Fills r.machine, r.plan, r.plan_warnings and r.has_plan from plan.json's text. Text that is
// not a dl-launch plan leaves has_plan false and says why in r.plan_note.
void read_plan_json(const std::string& text, RunReport& r);

}  // namespace dl::report
