// Reading a probe's output (launcher/batch_probe.h): the last JSON object line is the report,
// among whatever else the trainer printed; errors and a missing peak are named.
#include <gtest/gtest.h>

#include "launcher/batch_probe.h"

namespace dl::test {
namespace {

TEST(ParseProbeOutput, LastJsonObjectLineWins) {
  const ProbeResult r = parse_probe_output(
      "{\"batch\":8,\"peak_bytes\":1}\nnoise\n"
      "{\"batch\":8,\"fits\":true,\"out_of_memory\":false,\"peak_bytes\":18446744073709551615,"
      "\"step_seconds\":1e-3,\"error\":\"\"}\n\n",
      8);
  EXPECT_EQ(r.peak_bytes, 18446744073709551615ull) << "byte counts beyond 2^53 stay exact";
  EXPECT_DOUBLE_EQ(r.step_seconds, 0.001);
  EXPECT_EQ(r.error, "");
}

TEST(ParseProbeOutput, ErrorAndMissingPeak) {
  EXPECT_EQ(parse_probe_output("{\"error\":\"no kernel for Half\"}", 8).error,
            "no kernel for Half");
  EXPECT_EQ(parse_probe_output("{\"out_of_memory\":false}", 8).error,
            "the probe reported no peak memory");
  EXPECT_EQ(parse_probe_output("{broken", 8).error, "the probe printed no JSON report");
}

// A negative time would rank first: it may not win the search. (1e999, infinity, never reaches
// it: the JSON reader refuses numbers beyond double's range.)
TEST(ParseProbeOutput, AStepTimeThatIsNotATimeIsAnError) {
  EXPECT_EQ(parse_probe_output("{\"peak_bytes\":1,\"step_seconds\":1e999}", 8).error,
            "the probe printed no JSON report");
  for (const char* t : {"-0.5", "-1e300"}) {
    const ProbeResult r =
        parse_probe_output(std::string("{\"peak_bytes\":1,\"step_seconds\":") + t + "}", 8);
    EXPECT_EQ(r.error, "the probe reported a step time that is not a time") << t;
    EXPECT_EQ(r.step_seconds, 0) << t;
  }
  EXPECT_EQ(parse_probe_output("{\"peak_bytes\":1,\"step_seconds\":0}", 8).error, "");
}

}  // namespace
}  // namespace dl::test
