// The libjpeg side of jpeg_entropy.h, for jpeg_region.cpp: puts the indexed Huffman decoder in
// place of libjpeg's own for one decompression. Only for builds with libjpeg (DL_HAVE_LIBJPEG).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>  // jpeglib.h needs FILE

#include <jpeglib.h>

#include "data/jpeg_entropy.h"

namespace dl::data {

// Called after jpeg_start_decompress (and jpeg_crop_scanline, whose x_offset and x_width it is
// given: columns outside them are not decoded; x_width 0 where the whole width is read) and
// before the first row is read. For a file the
// decoder handles, takes over cinfo's Huffman decoding and returns true; otherwise changes nothing
// and returns false. `data`/`size` are the whole file (its fingerprint). The decoder's state is
// the calling thread's, and cinfo->client_data points at it until the decompression ends.
bool install_entropy_decoder(jpeg_decompress_struct* cinfo, const std::uint8_t* data,
                             std::size_t size, JDIMENSION x_offset, JDIMENSION x_width,
                             EntropyLease* lease);

}  // namespace dl::data
