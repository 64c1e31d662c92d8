// The confusion module: counts, top-1 as trace over total, per-class accuracy (NaN for a class
// without samples), the two CSV texts with their quoting, and refused shapes.
#include "train/monitor/confusion.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

namespace dl::train {
namespace {

Confusion three_classes() {
  // rows true, columns predicted
  return Confusion(3, {5, 1, 0,  //
                       2, 6, 2,  //
                       0, 0, 0});
}

TEST(Confusion, CountsTop1AndPerClass) {
  const Confusion m = three_classes();
  EXPECT_EQ(m.total(), 16);
  EXPECT_EQ(m.correct(), 11);
  EXPECT_DOUBLE_EQ(m.top1(), 11.0 / 16.0);
  EXPECT_EQ(m.row_total(1), 10);
  const std::vector<double> a = m.per_class_accuracy();
  ASSERT_EQ(a.size(), 3u);
  EXPECT_DOUBLE_EQ(a[0], 5.0 / 6.0);
  EXPECT_DOUBLE_EQ(a[1], 0.6);
  EXPECT_TRUE(std::isnan(a[2]));
}

TEST(Confusion, AddCountsACellAndRefusesOutOfRange) {
  Confusion m(2);
  EXPECT_DOUBLE_EQ(m.top1(), 0.0);
  m.add(1, 0);
  m.add(1, 1, 3);
  EXPECT_EQ(m.at(1, 0), 1);
  EXPECT_EQ(m.at(1, 1), 3);
  EXPECT_DOUBLE_EQ(m.top1(), 0.75);
  EXPECT_THROW(m.add(2, 0), std::out_of_range);
  EXPECT_THROW(m.add(0, -1), std::out_of_range);
}

TEST(Confusion, RefusesCountsOfTheWrongShape) {
  EXPECT_THROW(Confusion(2, {1, 2, 3}), std::invalid_argument);
  EXPECT_THROW(Confusion(1, {-1}), std::invalid_argument);
}

TEST(Confusion, CsvHasTheHeaderNamesAndRows) {
  const std::string csv = confusion_csv(three_classes(), {"T-shirt/top", "a,b", "say \"hi\""});
  EXPECT_EQ(csv,
            "true\\predicted,T-shirt/top,\"a,b\",\"say \"\"hi\"\"\"\n"
            "T-shirt/top,5,1,0\n"
            "\"a,b\",2,6,2\n"
            "\"say \"\"hi\"\"\",0,0,0\n");
  EXPECT_THROW(confusion_csv(three_classes(), {"x"}), std::invalid_argument);
}

TEST(Confusion, PerClassCsvLeavesAnEmptyClassBlank) {
  EXPECT_EQ(per_class_csv(three_classes(), {"a", "b", "c"}),
            "class,name,samples,correct,accuracy\n"
            "0,a,6,5,0.833333\n"
            "1,b,10,6,0.600000\n"
            "2,c,0,0,\n");
}

}  // namespace
}  // namespace dl::train
