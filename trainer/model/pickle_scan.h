// A walk over a pickle program's opcodes that finds what would make LibTorch's unpickler misbehave,
// before it sees the program. Three kinds, all found by tests/fuzz/checkpoint_fuzz:
//   * a length-prefixed argument longer than the program: LibTorch 1.13 sizes a string by its
//     prefix and zero-fills it before reading (Unpickler::readBytes), so a damaged 4-byte length
//     in a 3 KB checkpoint costs gigabytes of memory and seconds before the read fails;
//   * an opcode that takes more from the stack than is there (NEWOBJ on an empty stack, TUPLE
//     without a MARK): LibTorch 1.13 does not check, and reads below the stack's start (a
//     SEGV). The walk keeps Python's own rule: an opcode takes only values pushed since the last
//     MARK, and MARK-slice opcodes need a MARK;
//   * a memo store (BINPUT, LONG_BINPUT) numbered past the stores before it: LibTorch 1.13
//     reserves room for twice the number in its memo table first, so a damaged 4-byte number
//     asks for up to 128 GiB. Picklers number their stores 0, 1, 2, ... in order.
// No LibTorch here: plain bytes in, a reason out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace dl::model {

// "" when the program is safe to hand to the unpickler (or the walk reaches an opcode it does not
// know, which the unpickler then refuses itself); otherwise one line saying what at which offset
// of the `size`-byte program is wrong.
std::string pickle_flaw(const std::uint8_t* data, std::size_t size);

}  // namespace dl::model
