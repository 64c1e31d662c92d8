// CRC-32C against published check values: the CRC catalogue's check ("123456789") and the iSCSI
// test vectors of RFC 3720, appendix B.4; and TensorBoard's mask.
#include "report/crc32c.h"

#include <gtest/gtest.h>

#include <string>

namespace dl::report {
namespace {

TEST(Crc32c, CatalogueCheckValue) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
}

TEST(Crc32c, EmptyInputIsZero) {
  EXPECT_EQ(crc32c(""), 0u);
}

TEST(Crc32c, Rfc3720Vectors) {
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(crc32c(std::string(32, '\xFF')), 0x62A8AB43u);
  std::string ascending, descending;
  for (int i = 0; i < 32; ++i) {
    ascending.push_back(static_cast<char>(i));
    descending.push_back(static_cast<char>(31 - i));
  }
  EXPECT_EQ(crc32c(ascending), 0x46DD794Eu);
  EXPECT_EQ(crc32c(descending), 0x113FDB5Cu);
}

TEST(Crc32c, MaskRotatesAndAddsTheConstant) {
  EXPECT_EQ(mask_crc(0), 0xA282EAD8u);
  // ((0xE3069283 >> 15) | (0xE3069283 << 17)) + 0xA282EAD8 mod 2^32, worked out by hand.
  EXPECT_EQ(mask_crc(0xE3069283u), 0xC78AB0E5u);
  EXPECT_EQ(masked_crc32c("123456789"), 0xC78AB0E5u);
}

}  // namespace
}  // namespace dl::report
