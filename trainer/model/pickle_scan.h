// A walk over a pickle program's opcodes that checks every length-prefixed argument fits in the
// program, before LibTorch's unpickler sees it. LibTorch 1.13 sizes a string by its prefix and
// zero-fills it before reading (Unpickler::readBytes), so a damaged 4-byte length in a 3 KB
// checkpoint costs gigabytes of memory and seconds before the read fails: found by
// tests/fuzz/checkpoint_fuzz. No LibTorch here: plain bytes in, a reason out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace dl::model {

// "" when every argument fits (or the walk reaches an opcode it does not know, which the
// unpickler then refuses itself); otherwise one line saying which argument at which offset runs
// past the end of the `size`-byte program.
std::string pickle_overrun(const std::uint8_t* data, std::size_t size);

}  // namespace dl::model
