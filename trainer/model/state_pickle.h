// Reads the pickle (data.pkl) of a torch.save zip archive that holds a state dict, without
// LibTorch and without executing anything: a small interpreter for the opcodes torch.save and
// LibTorch's pickler emit for dicts of tensors, with a fixed list of globals it knows the meaning
// of (OrderedDict, torch._utils' tensor rebuilders, the typed storages, LibTorch's list builders
// and type tags). Any other opcode or global is refused with one line. Plain bytes in, the state
// dict's tensors as references into the archive's storages out: the tensors themselves are built
// elsewhere (weights_file.h), so this part can be fuzzed cheaply.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace dl::model {

// The element types of torch's typed storages (torch.FloatStorage, ...).
enum class StorageType {
  kFloat,
  kDouble,
  kHalf,
  kBFloat16,
  kLong,
  kInt,
  kShort,
  kChar,
  kByte,
  kBool
};

std::size_t element_size(StorageType type);

// One tensor of the state dict: a strided view of the storage in the archive's record
// "data/<storage_key>", which holds `storage_numel` elements of `type`. The view is checked to
// lie within those elements.
struct TensorRecord {
  std::string storage_key;
  StorageType type = StorageType::kFloat;
  std::uint64_t storage_numel = 0;
  std::uint64_t offset = 0;
  std::vector<std::int64_t> sizes;
  std::vector<std::int64_t> strides;
};

struct PickledStateDict {
  std::vector<std::pair<std::string, TensorRecord>> tensors;  // in the file's order
  // Where the state dict was: "" for a bare one, else the key of the dict that held it
  // ("model_state_dict", "state_dict" or "model").
  std::string found_under;
};

// The pickle was refused or holds no state dict; what() is one line without the file's name.
class StateDictError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Accepts a bare state dict (an OrderedDict or dict of name -> tensor; entries that are not
// tensors are left out) or a dict holding one under "model_state_dict", "state_dict" or "model".
// Throws StateDictError saying what the pickle holds instead.
PickledStateDict read_state_dict_pickle(const std::uint8_t* data, std::size_t size);

}  // namespace dl::model
