// The state-dict pickle reader on pickles written here byte by byte: what torch.save emits is
// read, a global it has no use for is refused without running it (os.system would leave a file
// behind), views outside their storage and malformed programs are refused with one line, and a
// pickle that makes a list hold itself is read without a leak. Also the inputs the fuzzer found
// (tests/fuzz/corpus/state_pickle/crash-*), each read back without a crash.
#include "model/state_pickle.h"
#include "support/build_paths.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace dl::test {
namespace {

using namespace std::string_literals;
using dl::model::PickledStateDict;
using dl::model::read_state_dict_pickle;
using dl::model::StateDictError;

// A pickle program as text; "\x80\x02" and friends spelled as escapes.
PickledStateDict read(const std::string& program) {
  return read_state_dict_pickle(reinterpret_cast<const std::uint8_t*>(program.data()),
                                program.size());
}

std::string pickle_refusal(const std::string& program) {
  try {
    read(program);
  } catch (const StateDictError& e) {
    return e.what();
  }
  return "(read)";
}

std::string u(const std::string& text) {  // SHORT_BINUNICODE
  return "\x8c" + std::string(1, static_cast<char>(text.size())) + text;
}

// torch.save's tensor: _rebuild_tensor_v2(('storage', FloatStorage, key, 'cpu', numel), offset,
// size, stride, False, OrderedDict()).
std::string tensor(const std::string& key, int numel, int offset, const std::string& size,
                   const std::string& stride) {
  return "ctorch._utils\n_rebuild_tensor_v2\n((" + u("storage") + "ctorch\nFloatStorage\n" +
         u(key) + u("cpu") + "K" + std::string(1, static_cast<char>(numel)) + "tQK" +
         std::string(1, static_cast<char>(offset)) + size + stride +
         "\x89"
         "ccollections\nOrderedDict\n)Rt"
         "R";
}

const std::string kHead = "\x80\x02";

// An OrderedDict {"w": 2x3 tensor, "b": 3-element tensor sharing storage "0" at offset 6},
// with BUILD's _metadata attribute as state_dict() sets it.
const std::string kStateDict = kHead + "ccollections\nOrderedDict\n)R" + "(" + u("w") +
                               tensor("0", 9, 0, "K\x02K\x03\x86", "K\x03K\x01\x86") + u("b") +
                               tensor("0", 9, 6, "K\x03\x85", "K\x01\x85") + "u" + "}" +
                               u("_metadata") + "}s" + "b.";

TEST(StatePickle, ReadsAnOrderedDictOfTensors) {
  const PickledStateDict d = read(kStateDict);
  ASSERT_EQ(d.tensors.size(), 2u);
  EXPECT_EQ(d.found_under, "");
  EXPECT_EQ(d.tensors[0].first, "w");
  EXPECT_EQ(d.tensors[0].second.sizes, (std::vector<std::int64_t>{2, 3}));
  EXPECT_EQ(d.tensors[0].second.strides, (std::vector<std::int64_t>{3, 1}));
  EXPECT_EQ(d.tensors[1].first, "b");
  EXPECT_EQ(d.tensors[1].second.offset, 6u);
  EXPECT_EQ(d.tensors[1].second.storage_key, "0");
  EXPECT_EQ(d.tensors[1].second.storage_numel, 9u);
}

TEST(StatePickle, FindsTheStateDictOfACheckpoint) {
  // {"epoch": 3, "state_dict": {"w": tensor}} with the memo ops torch.save uses.
  const std::string program = kHead + "}q\x00("s + u("epoch") + "K\x03" + u("state_dict") +
                              "}q\x01" + u("w") + "\x94" +
                              tensor("7", 4, 0, "K\x04\x85", "K\x01\x85") + "su.";
  const PickledStateDict d = read(program);
  EXPECT_EQ(d.found_under, "state_dict");
  ASSERT_EQ(d.tensors.size(), 1u);
  EXPECT_EQ(d.tensors[0].second.storage_key, "7");
}

TEST(StatePickle, RefusesADisallowedGlobalWithoutRunningIt) {
  const std::filesystem::path marker =
      std::filesystem::temp_directory_path() / "dl-state-pickle-ran";
  std::filesystem::remove(marker);
  // os.system("touch <marker>"): Python's pickle would run it.
  const std::string command = "touch " + marker.string();
  const std::string program = kHead + "cos\nsystem\n" + u(command) + "\x85R.";
  EXPECT_EQ(pickle_refusal(program),
            "the pickle names the global os.system, which a weights file has no use for "
            "(refused, not run)");
  EXPECT_FALSE(std::filesystem::exists(marker));
  // The same through STACK_GLOBAL, as protocol 4 writes it.
  EXPECT_NE(pickle_refusal(kHead + u("builtins") + u("eval") + "\x93" + u("1") + "\x85R.")
                .find("global builtins.eval"),
            std::string::npos);
}

TEST(StatePickle, RefusesViewsOutsideTheirStorage) {
  // 2x3 with strides 3,1 at offset 4 reaches element 4 + 3 + 2 = 9 of 9.
  const std::string program =
      kHead + "}(" + u("w") + tensor("0", 9, 4, "K\x02K\x03\x86", "K\x03K\x01\x86") + "u.";
  EXPECT_NE(
      pickle_refusal(program).find("REDUCE: a tensor's view reaches element 9 of a storage of 9"),
      std::string::npos)
      << pickle_refusal(program);
}

TEST(StatePickle, SaysWhatItHoldsInstead) {
  EXPECT_EQ(pickle_refusal(kHead + "]."), "the file holds a list, not a dict of tensors");
  EXPECT_EQ(pickle_refusal(kHead + "}."), "the file holds an empty dict");
  EXPECT_EQ(pickle_refusal(kHead + "}(" + u("epoch") + "K\x01" + u("lr") + "G" +
                           std::string(8, '\0') + "u."),
            "the file holds a dict without tensors (keys 'epoch', 'lr') and no "
            "'model_state_dict', 'state_dict' or 'model'");
  EXPECT_EQ(pickle_refusal(kHead + "}" + u("model") + "}s."), "its 'model' entry holds no tensors");
}

TEST(StatePickle, RefusesMalformedPrograms) {
  EXPECT_EQ(pickle_refusal(""), "the pickle ends without its STOP opcode");
  EXPECT_EQ(pickle_refusal(kHead + "X\xff\xff\xff\x7f."),
            "the pickle is truncated or corrupt: a string of 2147483647 bytes at byte 2 runs "
            "past the end of the 8-byte pickle");
  EXPECT_EQ(pickle_refusal(kHead + "h\x05."),
            "the pickle's opcode at byte 2 reads memo entry 5, which was never stored");
  // Stack underflows are found by the walk before the interpreter runs (model/pickle_scan.h).
  EXPECT_EQ(pickle_refusal(kHead + "t."),
            "the pickle is truncated or corrupt: an opcode that needs a MARK, with none at byte 2 "
            "of the 4-byte pickle");
  EXPECT_EQ(pickle_refusal(kHead + "(R."),
            "the pickle is truncated or corrupt: an opcode that takes 2 value(s) from a stack "
            "holding 0 (since the last MARK) at byte 3 of the 5-byte pickle");
  EXPECT_EQ(pickle_refusal(kHead + "I1\n."),
            "the pickle's opcode 0x49 at byte 2 is not one a weights file uses (refused)");
  EXPECT_EQ(pickle_refusal(kHead + "}}."), "the pickle leaves 2 values on its stack, not 1");
}

TEST(StatePickle, AListHoldingItselfIsReadWithoutALeak) {
  // l = []; l.append(l); {"l": l}: reference counting would leak the cycle (LeakSanitizer).
  EXPECT_EQ(pickle_refusal(kHead +
                           "]q\x00h\x00"
                           "a}"s +
                           u("l") +
                           "h\x00s"
                           "\x85."s),
            "the pickle leaves 2 values on its stack, not 1");
  EXPECT_EQ(pickle_refusal(kHead +
                           "]q\x00h\x00"
                           "a0}"s +
                           u("l") + "h\x00s."s),
            "the pickle's opcode 0x30 at byte 8 is not one a weights file uses (refused)");
}

// Every input the fuzzer saved as a finding reads back as a state dict or a refusal.
TEST(StatePickle, FuzzFindingsAreRefusedCleanly) {
  const std::filesystem::path dir =
      std::filesystem::path(dl::test::kSourceDir) / "tests/fuzz/corpus/state_pickle";
  int findings = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind("crash-", 0) != 0) continue;
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    try {
      read(bytes);
    } catch (const StateDictError&) {
    }
    ++findings;
  }
  RecordProperty("findings", findings);
}

}  // namespace
}  // namespace dl::test
