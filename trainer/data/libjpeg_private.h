// The one place where the trainer reaches into libjpeg's private parts: the head of its entropy
// decoder object, whose decode_mcu jpeg_entropy.cpp replaces for one decompression. jpeglib.h
// gives `cinfo->entropy` as an opaque pointer; the struct lives in jpegint.h, which not every
// distribution installs (Debian does, Ubuntu's libjpeg-turbo8-dev does not).
//
// Checked against (tests/unit/data/libjpeg_private_test.cpp fails, naming this file, on any
// other version, where the head's members do not point into libjpeg's code, and where jpegint.h is
// installed, where its struct differs):
//   * libjpeg-turbo 2.1.5, jpeg62 ABI (JPEG_LIB_VERSION 62): Debian 12 (the native build: the test
//     run) and Debian trixie (tests/cuda_build's chroot: the decoder and the test compiled);
//   * libjpeg-turbo 2.0.6, jpeg8 ABI (JPEG_LIB_VERSION 80): built from bullseye's source for
//     tests/oldest_build (compiled with its g++-9), as Ubuntu's libjpeg-turbo8 (20.04's 2.0.3,
//     22.04's 2.1.2, 24.04's 2.1.5).
// libjpeg-turbo 3 (lossless decoding, a changed struct) was not checked: there the indexed
// decoder stays off and libjpeg decodes every file itself.
#pragma once

#include <dlfcn.h>

#include <cstdio>  // jpeglib.h needs FILE
#include <cstring>

#include <jpeglib.h>

namespace dl::data::libjpeg_private {

// The first two members of jpegint.h's struct jpeg_entropy_decoder (the same in every libjpeg
// since 6). Only decode_mcu is written. What follows differs (libjpeg-turbo 3 puts a lossless
// method before insufficient_data) and is never touched: libjpeg reads insufficient_data only for
// progressive files' block smoothing, which the indexed decoder never serves.
struct EntropyDecoderHead {
  void (*start_pass)(j_decompress_ptr cinfo);
  boolean (*decode_mcu)(j_decompress_ptr cinfo, JBLOCKROW* MCU_data);
};

// The libjpeg-turbo releases whose entropy decoder head was checked: 2.0.0 up to 2.1.x (jdhuff.c
// and jdphuff.c fill both members the same way throughout), either ABI.
constexpr long kFirstChecked = 2000000;  // LIBJPEG_TURBO_VERSION_NUMBER of 2.0.0
constexpr long kPastChecked = 2002000;   // 2.2.0: the first release not checked
constexpr const char* kCheckedVersions =
    "libjpeg-turbo 2.0.x-2.1.x (checked: 2.1.5 jpeg62, 2.0.6 jpeg8)";

#if defined(LIBJPEG_TURBO_VERSION_NUMBER)
constexpr long kVersion = LIBJPEG_TURBO_VERSION_NUMBER;
#else
constexpr long kVersion = 0;  // IJG's libjpeg or another implementation: never checked
#endif
constexpr int kAbi = JPEG_LIB_VERSION;

// Whether this build's libjpeg is one the head above was checked against; where not, the indexed
// decoder is never installed (install_entropy_decoder returns false).
constexpr bool kChecked =
    kVersion >= kFirstChecked && kVersion < kPastChecked && (kAbi == 62 || kAbi == 80);

// The entropy decoder's head of a decompression past jpeg_start_decompress.
inline EntropyDecoderHead* entropy_head(j_decompress_ptr cinfo) {
  return reinterpret_cast<EntropyDecoderHead*>(cinfo->entropy);
}

// The shared object (or program) that holds the code at `function`; nullptr where none does.
template <typename Function>
const void* code_object(Function function) {
  void* address = nullptr;  // a function's address as data: memcpy, as ISO C++ has no cast
  static_assert(sizeof(function) == sizeof(address), "function pointers are not data pointers");
  std::memcpy(&address, &function, sizeof(address));
  Dl_info info{};
  return address != nullptr && dladdr(address, &info) != 0 ? info.dli_fbase : nullptr;
}

// The layout probe: with the head above right, both members point into libjpeg's own code (its
// Huffman decoder's methods); with another layout they are data or null. Read before decode_mcu
// is replaced.
inline bool head_points_into_libjpeg(j_decompress_ptr cinfo) {
  const EntropyDecoderHead* head = entropy_head(cinfo);
  const void* libjpeg = code_object(&jpeg_read_scanlines);
  return libjpeg != nullptr && code_object(head->start_pass) == libjpeg &&
         code_object(head->decode_mcu) == libjpeg;
}

}  // namespace dl::data::libjpeg_private
