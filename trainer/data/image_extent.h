// Whether an image file's bytes reach the end its own structure declares: a file cut short (an
// interrupted download or copy) is refused before any decoder sees it. Decoders are lenient about
// a missing tail: libjpeg warns and fills the rest grey, and a partial JPEG decode stops at its
// crop's last row, so it would never see a missing tail at all. This walk decides the same for
// every crop, every format and every decoder.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "data/image_header.h"

namespace dl::data {

// Empty when the bytes run to the format's end (JPEG: the end-of-image marker after the last scan;
// PNG: the IEND chunk; BMP: the pixel array the header describes; WebP: the RIFF size; TIFF: the
// first page's strips or tiles; PNM: every sample), whatever follows it. Otherwise one phrase for
// the skip report, without commas (predict's CSV cell): "JPEG data end at byte 5000 (inside a
// scan)".
// `header` is read_image_header's; one without a size is cut short only where a TIFF's page
// lies past the end. Never reads past data + size, and reads the file once at most (a
// memchr-speed pass over a JPEG's scans).
std::string cut_short(const ImageHeader& header, const std::uint8_t* data, std::size_t size);

}  // namespace dl::data
