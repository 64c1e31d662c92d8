// A file's bytes, already in memory, as LibTorch's zip reader (PyTorchStreamReader) reads them.
// For the .cpp files that read archives; it includes LibTorch's serialisation headers.
#pragma once

#include <caffe2/serialize/read_adapter_interface.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace dl::model {

class BytesAdapter : public caffe2::serialize::ReadAdapterInterface {
 public:
  // `bytes` must outlive the adapter.
  explicit BytesAdapter(const std::vector<char>& bytes) : bytes_(bytes) {}
  size_t size() const override { return bytes_.size(); }
  size_t read(uint64_t pos, void* buf, size_t n, const char* /*what*/) const override {
    if (pos >= bytes_.size()) return 0;
    n = std::min<size_t>(n, bytes_.size() - static_cast<size_t>(pos));
    std::memcpy(buf, bytes_.data() + pos, n);
    return n;
  }

 private:
  const std::vector<char>& bytes_;
};

}  // namespace dl::model
