// The fence around what the trainer relies on in LibTorch beyond its documentation
// (model/libtorch_private.h): fails, naming that file, on a LibTorch outside the checked range,
// where the optimizer's state is keyed otherwise than adamw_state.cpp rebuilds it, or where the
// unpickler's refusal of a pickle only Python writes is worded otherwise than checkpoint.cpp reads.
#include "model/libtorch_private.h"
#include "model/adamw_state.h"
#include "model/checkpoint.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <caffe2/serialize/inline_container.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/serialization/pickle.h>
#include <torch/version.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace dl::test {
namespace {

using namespace dl::model;
namespace priv = dl::model::libtorch_private;

std::string this_libtorch() {
  return "LibTorch " + std::to_string(TORCH_VERSION_MAJOR) + "." +
         std::to_string(TORCH_VERSION_MINOR);
}

std::string fence_note() {
  return "; trainer/model/libtorch_private.h was checked against " +
         std::string(priv::kCheckedVersions) + ": check its three points on " + this_libtorch() +
         ", then widen its range";
}

TEST(LibtorchPrivate, ThisLibtorchIsAVersionTheReachesWereCheckedAgainst) {
  EXPECT_TRUE(priv::checked(TORCH_VERSION_MAJOR, TORCH_VERSION_MINOR))
      << this_libtorch() << " is not one the reaches were checked against" << fence_note();
}

// Point 1: after a step every parameter has state under the key adamw_state.cpp builds, and it
// comes back in another optimizer under the same key.
TEST(LibtorchPrivate, OptimizerStateIsKeyedAsAdamwStateBuildsTheKey) {
  std::vector<at::Tensor> params = {at::ones({3, 2}).requires_grad_(),
                                    at::zeros({4}).requires_grad_()};
  torch::optim::AdamW optimizer(params, torch::optim::AdamWOptions(0.1));
  for (auto& p : params) p.mutable_grad() = at::full_like(p, 0.5);
  optimizer.step();
  ASSERT_EQ(optimizer.state().size(), params.size());

  OptimizerState exported;
  try {
    exported = export_adamw(optimizer, params);
  } catch (const std::logic_error& error) {
    FAIL() << error.what() << fence_note();
  }
  ASSERT_EQ(exported.state.size(), params.size())
      << "the state " << this_libtorch() << " keeps is not found under adamw_state.cpp's keys"
      << fence_note();
  EXPECT_EQ(exported.state.at(0).step, 1);

  std::vector<at::Tensor> fresh;
  for (const auto& p : params) fresh.push_back(p.detach().clone().requires_grad_());
  torch::optim::AdamW other(fresh, torch::optim::AdamWOptions(0.1));
  import_adamw(other, fresh, exported);
  // The next step of each starts from the imported moments only if LibTorch finds them by key;
  // otherwise it makes fresh ones and the two optimizers part.
  for (auto& p : fresh) p.mutable_grad() = at::full_like(p, 0.5);
  optimizer.step();
  other.step();
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_TRUE(at::equal(params[i], fresh[i]))
        << "parameter " << i << " parted after import: " << this_libtorch()
        << " did not find the imported state under its key" << fence_note();
  }
}

// A checkpoint archive holding `pickle` as its data.pkl, written by LibTorch's own zip writer.
std::vector<char> archive_of(const std::string& pickle) {
  std::vector<char> bytes;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, size_t size) {
    const char* at = static_cast<const char*>(data);
    bytes.insert(bytes.end(), at, at + size);
    return size;
  });
  writer.writeRecord("data.pkl", pickle.data(), pickle.size());
  writer.writeEndOfFile();
  return bytes;
}

std::string unpickler_error(const std::string& pickle) {
  try {
    torch::jit::unpickle(pickle.data(), pickle.size());
  } catch (const c10::Error& error) {
    return error.what_without_backtrace();
  }
  return "";
}

// Point 2, for each form as Python's pickle (protocol 2) writes it: where this LibTorch's unpickler
// refuses it, its words are the ones checkpoint.cpp reads, and the checkpoint is refused as
// Python's. (LibTorch 2.6 reads APPEND and SETITEM; 1.13 does not.)
struct PythonOnly {
  const char* form;
  std::string pickle;
  const char* words;
  bool refused_everywhere;  // by every LibTorch checked
};

TEST(LibtorchPrivate, TheUnpicklerRefusesPythonOnlyPicklesInTheWordsCheckpointReads) {
  using namespace std::string_literals;
  const PythonOnly cases[] = {
      // [1]: EMPTY_LIST, BININT1 1, APPEND.
      {"a one-element list (APPEND)",
       "\x80\x02]K\x01"
       "a."s,
       priv::kUnknownOpcode, false},
      // {"a": 1}: EMPTY_DICT, SHORT_BINUNICODE "a", BININT1 1, SETITEM.
      {"a one-element dict (SETITEM)",
       "\x80\x02}X\x01\x00\x00\x00"
       "aK\x01s."s,
       priv::kUnknownOpcode, false},
      // OrderedDict([("a", 1), ("b", 2)]): GLOBAL, EMPTY_TUPLE, REDUCE, MARK, items, SETITEMS.
      {"an OrderedDict with items",
       "\x80\x02"
       "ccollections\nOrderedDict\n)R(X\x01\x00\x00\x00"
       "aK\x01X\x01\x00\x00\x00"
       "bK\x02u."s,
       priv::kOrderedDictAsNone, true},
  };
  for (const PythonOnly& c : cases) {
    const std::string words = unpickler_error(c.pickle);
    if (words.empty()) {
      EXPECT_FALSE(c.refused_everywhere)
          << c.form << ": " << this_libtorch() << " reads it now" << fence_note();
      continue;
    }
    EXPECT_NE(words.find(c.words), std::string::npos)
        << c.form << ": " << this_libtorch() << "'s unpickler now says \"" << words
        << "\" where checkpoint.cpp looks for \"" << c.words << "\"" << fence_note();
    try {
      parse_checkpoint(archive_of(c.pickle), "python.pt");
      ADD_FAILURE() << c.form << ": loaded";
    } catch (const std::runtime_error& error) {
      EXPECT_EQ(
          std::string(error.what())
              .rfind("checkpoint python.pt: written by Python in a form LibTorch cannot read (", 0),
          0u)
          << c.form << ": " << error.what() << fence_note();
    }
  }
}

}  // namespace
}  // namespace dl::test
