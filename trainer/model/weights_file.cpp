// Weights files (weights_file.h): the archive's records through LibTorch's zip reader once
// zip_scan.h has found no zip bomb, the pickle through state_pickle.h, each tensor copied out of
// its storage record after checking that the record holds the storage the pickle declares.
#include "model/weights_file.h"

#include "core/errors.h"
#include "core/files.h"
#include "core/text.h"
#include "model/bytes_adapter.h"
#include "model/state_pickle.h"
#include "model/zip_scan.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <caffe2/serialize/inline_container.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <memory>

namespace dl::model {
namespace {

constexpr const char* kExpected =
    "expected a torch.save file of a state dict (torch.save(model.state_dict(), f)) or a dl-train "
    "checkpoint";

[[noreturn]] void not_weights(const std::string& path, const std::string& what) {
  throw UserError(exit_code::kBadData, "--init-from " + path + ": " + what + "; " + kExpected);
}

bool starts_with(const std::vector<char>& bytes, const char* magic, std::size_t n) {
  return bytes.size() >= n && std::memcmp(bytes.data(), magic, n) == 0;
}

// What a file that is not a zip archive is, in a few words.
std::string what_it_is(const std::vector<char>& bytes) {
  if (bytes.empty()) return "the file is empty";
  // Legacy torch.save: a pickle (PROTO 2) of the magic number 0x1950a86a20f9469cfc6c.
  if (starts_with(bytes, "\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19", 14)) {
    return "a legacy (pre-1.6, non-zip) torch.save file; re-save it in torch.save's default zip "
           "format: torch.save(torch.load(f), f2)";
  }
  if (static_cast<unsigned char>(bytes[0]) == 0x80) return "a bare pickle, not a zip archive";
  if (starts_with(bytes, "\x1f\x8b", 2)) return "a gzip file, not a zip archive";
  if (starts_with(bytes, "\x89HDF", 4)) return "an HDF5 file (Keras?), not a zip archive";
  std::size_t printable = 0;
  const std::size_t n = std::min<std::size_t>(bytes.size(), 512);
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c == '\n' || c == '\r' || c == '\t' || (c >= 0x20 && c < 0x7f) || c >= 0x80) ++printable;
  }
  if (printable == n) return "a text file, not a zip archive";
  return "not a zip archive (neither a torch.save file nor a checkpoint)";
}

at::ScalarType scalar_type(StorageType type) {
  switch (type) {
    case StorageType::kFloat:
      return at::kFloat;
    case StorageType::kDouble:
      return at::kDouble;
    case StorageType::kHalf:
      return at::kHalf;
    case StorageType::kBFloat16:
      return at::kBFloat16;
    case StorageType::kLong:
      return at::kLong;
    case StorageType::kInt:
      return at::kInt;
    case StorageType::kShort:
      return at::kShort;
    case StorageType::kChar:
      return at::kChar;
    case StorageType::kByte:
      return at::kByte;
    case StorageType::kBool:
      return at::kBool;
  }
  return at::kFloat;
}

// The storages of one archive, each read once however many tensors view it.
class Storages {
 public:
  Storages(caffe2::serialize::PyTorchStreamReader& archive, std::string path)
      : archive_(archive), path_(std::move(path)) {}

  at::Tensor view(const std::string& name, const TensorRecord& t) {
    const at::Tensor& storage = get(name, t);
    if (storage.scalar_type() != scalar_type(t.type) ||
        static_cast<std::uint64_t>(storage.numel()) != t.storage_numel) {
      not_weights(path_, "tensor '" + name + "' views storage " + t.storage_key +
                             " with another type or size than an earlier tensor");
    }
    // check_view (state_pickle.cpp) has placed every element inside the storage.
    return storage.as_strided(t.sizes, t.strides, static_cast<std::int64_t>(t.offset)).clone();
  }

 private:
  const at::Tensor& get(const std::string& name, const TensorRecord& t) {
    if (const auto found = cache_.find(t.storage_key); found != cache_.end()) return found->second;
    const std::string record = "data/" + t.storage_key;
    if (!archive_.hasRecord(record)) {
      not_weights(path_, "tensor '" + name + "' needs the record " + record +
                             ", which the archive lacks (truncated?)");
    }
    const auto [data, size] = archive_.getRecord(record);
    const std::size_t element = element_size(t.type);
    if (t.storage_numel > size / element) {
      not_weights(path_, "record " + record + " holds " + std::to_string(size) +
                             " bytes, less than the " + std::to_string(t.storage_numel) +
                             " elements of " + std::to_string(element) +
                             " bytes its tensors need (truncated?)");
    }
    at::Tensor storage = at::empty({static_cast<std::int64_t>(t.storage_numel)},
                                   at::TensorOptions().dtype(scalar_type(t.type)));
    if (t.storage_numel > 0) std::memcpy(storage.data_ptr(), data.get(), t.storage_numel * element);
    return cache_.emplace(t.storage_key, std::move(storage)).first->second;
  }

  caffe2::serialize::PyTorchStreamReader& archive_;
  std::string path_;
  std::map<std::string, at::Tensor> cache_;
};

}  // namespace

WeightsFile read_weights_file(const std::string& path) {
  if (access(path.c_str(), F_OK) != 0) {
    throw UserError(exit_code::kMissing, "--init-from " + path + " does not exist (" +
                                             std::strerror(errno) + "); " + kExpected);
  }
  std::vector<char> bytes;
  try {
    bytes = read_whole_file(path);
  } catch (const std::runtime_error& e) {
    not_weights(path, std::string("cannot be read (") + e.what() + ")");
  }
  return parse_weights_file(bytes, path);
}

WeightsFile parse_weights_file(const std::vector<char>& bytes, const std::string& path) {
  if (!starts_with(bytes, "PK\x03\x04", 4)) not_weights(path, what_it_is(bytes));
  const ZipScan zip = scan_zip_records(bytes);
  if (zip.verdict == ZipScan::Verdict::kBomb) not_weights(path, zip.why);
  if (zip.verdict == ZipScan::Verdict::kCorrupt) {
    not_weights(path, "not a readable torch.save archive (truncated or corrupt: " + zip.why + ")");
  }
  WeightsFile out;
  try {
    caffe2::serialize::PyTorchStreamReader archive(std::make_shared<BytesAdapter>(bytes));
    if (!archive.hasRecord("data.pkl")) {
      not_weights(path, archive.hasRecord("constants.pkl")
                            ? "a TorchScript module (torch.jit.save), not a state dict; give it "
                              "as --model FILE instead"
                            : "a zip archive without data.pkl, not a torch.save file");
    }
    const auto [data, size] = archive.getRecord("data.pkl");
    PickledStateDict pickled =
        read_state_dict_pickle(static_cast<const std::uint8_t*>(data.get()), size);
    Storages storages(archive, path);
    for (const auto& [name, record] : pickled.tensors) {
      out.tensors.emplace_back(name, storages.view(name, record));
    }
    out.found_under = pickled.found_under;
  } catch (const UserError&) {
    throw;
  } catch (const StateDictError& e) {
    not_weights(path, e.what());
  } catch (const c10::Error& e) {
    not_weights(path, "not a readable torch.save archive (truncated or corrupt: " +
                          first_line(e.what_without_backtrace()) + ")");
  } catch (const std::exception& e) {
    not_weights(path, "not a readable torch.save archive (truncated or corrupt: " +
                          first_line(e.what()) + ")");
  }
  return out;
}

}  // namespace dl::model
