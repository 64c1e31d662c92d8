// Reading dl-train's data facts (launcher/data_facts.h): the last JSON object line, among a
// shard's warnings, with the training samples and the input's bytes; anything else is no answer.
#include "launcher/data_facts.h"

#include <gtest/gtest.h>

namespace dl::test {
namespace {

TEST(ParseDataFacts, TheJsonLineAmongWarnings) {
  const auto f = parse_data_facts(
      "[12:00:00] warning shard a.tar: 1 member refused\n"
      "{\"kind\":\"shards\",\"location\":\"s3://b/t-{0..9}.tar\",\"train_samples\":123456789012,"
      "\"val_samples\":7,\"classes\":1000,\"shards\":10,\"channels\":3,\"height\":224,"
      "\"width\":224,\"sample_bytes\":602112}\n\n");
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->train_samples, 123456789012) << "beyond 2^32 stays exact";
  EXPECT_EQ(f->val_samples, 7);
  EXPECT_EQ(f->classes, 1000);
  EXPECT_EQ(f->shards, 10);
  EXPECT_EQ(f->kind, "shards");
  EXPECT_EQ(f->location, "s3://b/t-{0..9}.tar");
  EXPECT_EQ(f->height, 224);
  EXPECT_EQ(f->sample_bytes, 602112u);
  EXPECT_FALSE(f->estimated);
  const auto remote = parse_data_facts(
      "{\"train_samples\":9000,\"classes\":null,\"shards\":10,\"estimated\":true,"
      "\"sample_bytes\":602112}");
  ASSERT_TRUE(remote.has_value());
  EXPECT_TRUE(remote->estimated);
  EXPECT_EQ(remote->classes, 0) << "null: not known";
}

TEST(ParseDataFacts, NoAnswerWithoutSamplesOrBytes) {
  EXPECT_FALSE(parse_data_facts("").has_value());
  EXPECT_FALSE(parse_data_facts("{broken").has_value());
  EXPECT_FALSE(parse_data_facts("{\"train_samples\":5}").has_value());
  EXPECT_FALSE(parse_data_facts("{\"sample_bytes\":5}").has_value());
  EXPECT_FALSE(parse_data_facts("{\"train_samples\":5,\"sample_bytes\":5}\n{\"train_samples\":5}")
                   .has_value())
      << "the last report is the answer, and it is incomplete";
  EXPECT_FALSE(parse_data_facts("{\"train_samples\":-1,\"sample_bytes\":5}").has_value());
  EXPECT_TRUE(parse_data_facts("{\"train_samples\":0,\"sample_bytes\":5}").has_value());
}

}  // namespace
}  // namespace dl::test
