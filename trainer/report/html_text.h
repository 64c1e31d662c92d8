// Text that goes into the run report's HTML: every string from outside the program (a run name,
// class names, paths, the plan's reasons) is escaped, and numbers are formatted one way.
#pragma once

#include <string>
#include <string_view>

namespace dl::report {

// `s` with & < > " ' replaced by character references: safe in element text and in quoted
// attribute values.
std::string html_escape(std::string_view s);

// printf-style formatting of one number ("%.3g", "%.1f"); "-" for NaN or infinity.
std::string format_value(const char* format, double v);

}  // namespace dl::report
