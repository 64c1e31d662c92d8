// A file's bytes, already in memory, as LibTorch's zip reader (PyTorchStreamReader) reads them.
// For the .cpp files that read archives; it includes LibTorch's serialisation headers.
#pragma once

#include <caffe2/serialize/read_adapter_interface.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

namespace dl::model {

class BytesAdapter : public caffe2::serialize::ReadAdapterInterface {
 public:
  // `bytes` must outlive the adapter.
  explicit BytesAdapter(const std::vector<char>& bytes) : bytes_(bytes) {}
  size_t size() const override { return bytes_.size(); }
  size_t read(uint64_t pos, void* buf, size_t n, const char* /*what*/) const override {
    // LibTorch reads an empty record with n 0 into a null buffer: memcpy may not be given one.
    if (pos >= bytes_.size() || n == 0) return 0;
    n = std::min<size_t>(n, bytes_.size() - static_cast<size_t>(pos));
    std::memcpy(buf, bytes_.data() + pos, n);
    return n;
  }

 private:
  const std::vector<char>& bytes_;
};

// The same over bytes it owns: for a reader that may outlive its caller's copy (torch::jit::load
// keeps the adapter it is given as long as it likes).
class OwnedBytesAdapter : public caffe2::serialize::ReadAdapterInterface {
 public:
  explicit OwnedBytesAdapter(std::vector<char> bytes) : bytes_(std::move(bytes)), view_(bytes_) {}
  OwnedBytesAdapter(const OwnedBytesAdapter&) = delete;  // view_ refers to this object's bytes_
  OwnedBytesAdapter& operator=(const OwnedBytesAdapter&) = delete;
  size_t size() const override { return view_.size(); }
  size_t read(uint64_t pos, void* buf, size_t n, const char* what) const override {
    return view_.read(pos, buf, n, what);
  }

 private:
  std::vector<char> bytes_;
  BytesAdapter view_;
};

}  // namespace dl::model
