// The pickle walk (see pickle_scan.h). Opcodes, their arguments and their stack effects as
// Python's pickletools lists them for protocols 0 to 5.
#include "model/pickle_scan.h"

#include <string_view>
#include <vector>

namespace dl::model {
namespace {

// What the stack holds around MARKs: an opcode sees only the values of the current frame.
enum class Marks : std::uint8_t {
  kNone,   // leaves the marks alone
  kPush,   // MARK: a new, empty frame
  kSlice,  // takes the whole current frame and its MARK (TUPLE, LIST, DICT, APPENDS, ...)
};

// An opcode's argument and stack effect.
struct Opcode {
  bool known = true;       // false: not a pickle opcode
  std::size_t fixed = 0;   // bytes of a fixed-size argument
  std::size_t prefix = 0;  // bytes of a little-endian length prefix; the data follows
  int lines = 0;           // newline-terminated text arguments
  const char* what = "";
  int pops = 0;    // values taken from the current frame
  int pushes = 0;  // values left on it afterwards
  Marks marks = Marks::kNone;
  int below = 0;   // kSlice: values that must be under the MARK (the list APPENDS extends)
  int within = 0;  // kSlice: values that must be in the slice (OBJ's class)
};

bool in(std::string_view opcodes, std::uint8_t op) {
  return opcodes.find(static_cast<char>(op)) != std::string_view::npos;
}

// The stack effect of an opcode without an argument.
Opcode plain(std::uint8_t op) {
  Opcode o;
  if (op == '(') {
    o.marks = Marks::kPush;
  } else if (in("1", op)) {  // POP_MARK
    o.marks = Marks::kSlice;
  } else if (in("dlt\x91", op)) {  // DICT, LIST, TUPLE, FROZENSET: the slice becomes one value
    o.marks = Marks::kSlice;
    o.pushes = 1;
  } else if (in("eu\x90", op)) {  // APPENDS, SETITEMS, ADDITEMS: into the value under the MARK
    o.marks = Marks::kSlice;
    o.below = 1;
  } else if (op == 'o') {  // OBJ: the slice's first value is the class
    o.marks = Marks::kSlice;
    o.within = 1;
    o.pushes = 1;
  } else if (in(")N]}\x88\x89\x8f\x97", op)) {  // constants and empty containers
    o.pushes = 1;
  } else if (in("0", op)) {  // POP (of a value; an empty frame's POP takes its MARK, see below)
    o.pops = 1;
  } else if (in("2", op)) {  // DUP
    o.pops = 1;
    o.pushes = 2;
  } else if (in("Q\x85\x94\x98.", op)) {  // BINPERSID, TUPLE1, MEMOIZE, READONLY_BUFFER, STOP
    o.pops = 1;
    o.pushes = 1;
  } else if (in("Rab\x81\x86\x93", op)) {  // REDUCE, APPEND, BUILD, NEWOBJ, TUPLE2, STACK_GLOBAL
    o.pops = 2;
    o.pushes = 1;
  } else if (in("s\x87\x92", op)) {  // SETITEM, TUPLE3, NEWOBJ_EX
    o.pops = 3;
    o.pushes = 1;
  } else {
    o.known = false;
  }
  return o;
}

Opcode opcode(std::uint8_t op) {
  if (in("()012NQRabdelostu]}.\x81\x85\x86\x87\x88\x89\x8f\x90\x91\x92\x93\x94\x97\x98", op)) {
    return plain(op);
  }
  Opcode o;
  // Everything with an argument pushes one value, but PROTO and FRAME (nothing) and the memo
  // stores (BINPUT, LONG_BINPUT, PUT: they read the top value).
  o.pushes = in("\x80\x95", op) ? 0 : 1;
  if (in("qrp", op)) o.pops = 1;
  // PROTO, BININT1, BINPUT, BINGET, EXT1 | BININT2, EXT2 | BININT, LONG_BINPUT, LONG_BINGET, EXT4 |
  // BINFLOAT, FRAME.
  if (in("\x80Kqh\x82", op)) {
    o.fixed = 1;
    o.what = "a 1-byte argument";
  } else if (in("M\x83", op)) {
    o.fixed = 2;
    o.what = "a 2-byte argument";
  } else if (in("Jrj\x84", op)) {
    o.fixed = 4;
    o.what = "a 4-byte argument";
  } else if (in("G\x95", op)) {
    o.fixed = 8;
    o.what = "an 8-byte argument";
  } else if (in("\x8a"
                "C\x8cU",
                op)) {
    // Length-prefixed: LONG1, SHORT_BINBYTES, SHORT_BINUNICODE, SHORT_BINSTRING | LONG4,
    // BINUNICODE, BINBYTES, BINSTRING | BINUNICODE8, BINBYTES8, BYTEARRAY8.
    o.prefix = 1;
  } else if (in("\x8bXBT", op)) {
    o.prefix = 4;
  } else if (in("\x8d\x8e\x96", op)) {
    o.prefix = 8;
  } else if (in("ci", op)) {
    // Text lines: GLOBAL and INST (module and name; INST also takes a MARK slice) | INT, LONG,
    // FLOAT, STRING, UNICODE, PERSID, PUT, GET.
    o.lines = 2;
    if (op == 'i') o.marks = Marks::kSlice;
  } else if (in("ILFSVPpg", op)) {
    o.lines = 1;
  } else {
    o.known = false;
  }
  return o;
}

std::uint64_t little_endian(const std::uint8_t* data, std::size_t bytes) {
  std::uint64_t value = 0;
  for (std::size_t k = bytes; k-- > 0;) value = (value << 8) | data[k];
  return value;
}

std::string at_byte(const std::string& what, std::size_t opcode_at, std::size_t size) {
  return what + " at byte " + std::to_string(opcode_at) + " of the " + std::to_string(size) +
         "-byte pickle";
}

std::string overrun(const std::string& what, std::size_t opcode_at, std::size_t size) {
  return what + " at byte " + std::to_string(opcode_at) + " runs past the end of the " +
         std::to_string(size) + "-byte pickle";
}

// The values of each frame, the outermost first: frames.back() is what the next opcode sees.
// "" when `o` can run on them (and then they are as after it), else why not.
std::string apply(const Opcode& o, std::uint8_t op, std::vector<std::size_t>& frames) {
  if (o.marks == Marks::kPush) {
    frames.push_back(0);
    return {};
  }
  if (o.marks == Marks::kSlice) {
    if (frames.size() < 2) return "an opcode that needs a MARK, with none";
    if (frames.back() < static_cast<std::size_t>(o.within)) return "OBJ without its class";
    frames.pop_back();
    if (frames.back() < static_cast<std::size_t>(o.below)) {
      return "an opcode that adds to a container, with none under its MARK";
    }
    frames.back() += static_cast<std::size_t>(o.pushes);
    return {};
  }
  if (frames.back() < static_cast<std::size_t>(o.pops)) {
    // Python's POP takes the MARK itself where the frame is empty.
    if (op == '0' && frames.size() > 1) {
      frames.pop_back();
      return {};
    }
    return "an opcode that takes " + std::to_string(o.pops) + " value(s) from a stack holding " +
           std::to_string(frames.back()) + " (since the last MARK)";
  }
  frames.back() += static_cast<std::size_t>(o.pushes);
  frames.back() -= static_cast<std::size_t>(o.pops);
  return {};
}

}  // namespace

std::string pickle_flaw(const std::uint8_t* data, std::size_t size) {
  std::vector<std::size_t> frames{0};
  std::uint64_t stores = 0;  // memo entries so far
  std::size_t i = 0;
  while (i < size) {
    const std::size_t at = i;
    const std::uint8_t op = data[i++];
    const Opcode o = opcode(op);
    if (!o.known) return {};  // the unpickler's to refuse
    if (std::string why = apply(o, op, frames); !why.empty()) return at_byte(why, at, size);
    if (op == '.') return {};  // STOP
    const std::size_t left = size - i;
    if (o.fixed > left || o.prefix > left) {
      return overrun(o.prefix > 0 ? "a string's length" : o.what, at, size);
    }
    if (op == 'q' || op == 'r') {  // BINPUT, LONG_BINPUT
      const std::uint64_t id = little_endian(data + i, o.fixed);
      if (id > stores) {
        return at_byte("a memo store numbered " + std::to_string(id) + " after " +
                           std::to_string(stores) + " store(s) (picklers number them in order)",
                       at, size);
      }
      ++stores;
    }
    if (op == 0x94) ++stores;  // MEMOIZE: the next number, implied
    i += o.fixed;
    if (o.prefix > 0) {
      const std::uint64_t length = little_endian(data + i, o.prefix);
      i += o.prefix;
      if (length > size - i) {
        return overrun("a string of " + std::to_string(length) + " bytes", at, size);
      }
      i += static_cast<std::size_t>(length);
    }
    for (int line = 0; line < o.lines; ++line) {
      while (i < size && data[i] != '\n') ++i;
      if (i == size) return overrun("a line without its newline", at, size);
      ++i;
    }
  }
  return {};  // no STOP: the unpickler reports the missing end itself
}

}  // namespace dl::model
