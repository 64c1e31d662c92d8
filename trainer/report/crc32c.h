// CRC-32C (Castagnoli), the checksum of TensorBoard's record framing, and the mask TensorBoard
// applies to it (a CRC stored next to data that itself holds CRCs would otherwise be weak).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace dl::report {

// CRC-32C of `data` (reflected polynomial 0x82F63B78, initial value and final xor 0xFFFFFFFF):
// crc32c("123456789") == 0xE3069283.
std::uint32_t crc32c(std::string_view data);

// TensorBoard's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8, modulo 2^32.
std::uint32_t mask_crc(std::uint32_t crc);

// mask_crc(crc32c(data)): what a record stores.
inline std::uint32_t masked_crc32c(std::string_view data) {
  return mask_crc(crc32c(data));
}

}  // namespace dl::report
