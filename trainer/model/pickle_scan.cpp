// The pickle walk (see pickle_scan.h). Opcodes and their arguments as Python's pickletools lists
// them for protocols 0 to 5.
#include "model/pickle_scan.h"

#include <string_view>

namespace dl::model {
namespace {

// The argument an opcode carries.
struct Argument {
  bool known = true;       // false: not a pickle opcode
  std::size_t fixed = 0;   // bytes of a fixed-size argument
  std::size_t prefix = 0;  // bytes of a little-endian length prefix; the data follows
  int lines = 0;           // newline-terminated text arguments
  const char* what = "";
};

bool in(std::string_view opcodes, std::uint8_t op) {
  return opcodes.find(static_cast<char>(op)) != std::string_view::npos;
}

Argument argument_of(std::uint8_t op) {
  // No argument: stack and memo operations, containers, constants, STOP.
  if (in("()012NQRabdelostu]}.\x81\x85\x86\x87\x88\x89\x8f\x90\x91\x92\x93\x94\x97\x98", op)) {
    return {};
  }
  // PROTO, BININT1, BINPUT, BINGET, EXT1 | BININT2, EXT2 | BININT, LONG_BINPUT, LONG_BINGET, EXT4 |
  // BINFLOAT, FRAME.
  if (in("\x80Kqh\x82", op)) return {true, 1, 0, 0, "a 1-byte argument"};
  if (in("M\x83", op)) return {true, 2, 0, 0, "a 2-byte argument"};
  if (in("Jrj\x84", op)) return {true, 4, 0, 0, "a 4-byte argument"};
  if (in("G\x95", op)) return {true, 8, 0, 0, "an 8-byte argument"};
  // Length-prefixed: LONG1, SHORT_BINBYTES, SHORT_BINUNICODE, SHORT_BINSTRING | LONG4, BINUNICODE,
  // BINBYTES, BINSTRING | BINUNICODE8, BINBYTES8, BYTEARRAY8.
  if (in("\x8a"
         "C\x8cU",
         op))
    return {true, 0, 1, 0, ""};
  if (in("\x8bXBT", op)) return {true, 0, 4, 0, ""};
  if (in("\x8d\x8e\x96", op)) return {true, 0, 8, 0, ""};
  // Text lines: GLOBAL and INST (module and name) | INT, LONG, FLOAT, STRING, UNICODE, PERSID,
  // PUT, GET.
  if (in("ci", op)) return {true, 0, 0, 2, ""};
  if (in("ILFSVPpg", op)) return {true, 0, 0, 1, ""};
  return {false, 0, 0, 0, ""};
}

std::string overrun(const std::string& what, std::size_t opcode_at, std::size_t size) {
  return what + " at byte " + std::to_string(opcode_at) + " runs past the end of the " +
         std::to_string(size) + "-byte pickle";
}

}  // namespace

std::string pickle_overrun(const std::uint8_t* data, std::size_t size) {
  std::size_t i = 0;
  while (i < size) {
    const std::size_t at = i;
    const std::uint8_t op = data[i++];
    const Argument arg = argument_of(op);
    if (!arg.known || op == '.') return {};  // the unpickler's to refuse, or STOP
    const std::size_t left = size - i;
    if (arg.fixed > left || arg.prefix > left) {
      return overrun(arg.prefix > 0 ? "a string's length" : arg.what, at, size);
    }
    i += arg.fixed;
    if (arg.prefix > 0) {
      std::uint64_t length = 0;
      for (std::size_t k = arg.prefix; k-- > 0;) length = (length << 8) | data[i + k];
      i += arg.prefix;
      if (length > size - i) {
        return overrun("a string of " + std::to_string(length) + " bytes", at, size);
      }
      i += static_cast<std::size_t>(length);
    }
    for (int line = 0; line < arg.lines; ++line) {
      while (i < size && data[i] != '\n') ++i;
      if (i == size) return overrun("a line without its newline", at, size);
      ++i;
    }
  }
  return {};  // no STOP: the unpickler reports the missing end itself
}

}  // namespace dl::model
