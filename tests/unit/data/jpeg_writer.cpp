// libjpeg encoding for the tests (see jpeg_writer.h). libjpeg's fatal errors longjmp back to the
// one function that set the jump, which keeps only plain C state across it.
#include "unit/data/jpeg_writer.h"

#include <csetjmp>
#include <cstdio>  // jpeglib.h needs FILE
#include <cstdlib>
#include <stdexcept>

#include <jpeglib.h>

namespace dl::test {
namespace {

struct ErrorManager {
  jpeg_error_mgr base;
  std::jmp_buf jump;
};

[[noreturn]] void on_error(j_common_ptr cinfo) {
  std::longjmp(reinterpret_cast<ErrorManager*>(cinfo->err)->jump, 1);
}

void quiet(j_common_ptr) {}

// Fills cinfo from spec and compresses rows of `pixels` into a malloc'd buffer; false on error.
bool compress(const JpegSpec& spec, const std::vector<std::uint8_t>& pixels,
              const std::vector<jpeg_scan_info>& scans, unsigned char** out, unsigned long* size) {
  jpeg_compress_struct cinfo;
  ErrorManager errors;
  cinfo.err = jpeg_std_error(&errors.base);
  errors.base.error_exit = on_error;
  errors.base.output_message = quiet;
  if (setjmp(errors.jump)) {
    jpeg_destroy_compress(&cinfo);
    return false;
  }
  jpeg_create_compress(&cinfo);
  jpeg_mem_dest(&cinfo, out, size);
  cinfo.image_width = static_cast<JDIMENSION>(spec.width);
  cinfo.image_height = static_cast<JDIMENSION>(spec.height);
  cinfo.input_components = spec.components;
  cinfo.in_color_space = spec.components == 1   ? JCS_GRAYSCALE
                         : spec.components == 3 ? JCS_RGB
                                                : JCS_CMYK;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, spec.quality, TRUE);
  if (spec.components == 3) {
    cinfo.comp_info[0].h_samp_factor = spec.luma_h;
    cinfo.comp_info[0].v_samp_factor = spec.luma_v;
  }
  cinfo.restart_interval = static_cast<unsigned int>(spec.restart_interval);
  cinfo.optimize_coding = spec.optimize ? TRUE : FALSE;
  if (spec.progressive && scans.empty()) jpeg_simple_progression(&cinfo);
  if (!scans.empty()) {
    cinfo.scan_info = scans.data();
    cinfo.num_scans = static_cast<int>(scans.size());
  }
  jpeg_start_compress(&cinfo, TRUE);
  const std::size_t stride = static_cast<std::size_t>(spec.width) * spec.components;
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<JSAMPROW>(pixels.data() + cinfo.next_scanline * stride);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  return true;
}

}  // namespace

Bytes write_jpeg(const JpegSpec& spec, const JpegPixel& pixel) {
  std::vector<std::uint8_t> pixels;
  pixels.reserve(static_cast<std::size_t>(spec.width) * spec.height * spec.components);
  for (int y = 0; y < spec.height; ++y) {
    for (int x = 0; x < spec.width; ++x) {
      for (int c = 0; c < spec.components; ++c) pixels.push_back(pixel(x, y, c));
    }
  }
  std::vector<jpeg_scan_info> scans;
  for (const auto& s : spec.scans) {
    jpeg_scan_info info{};
    info.comps_in_scan = 1;
    info.component_index[0] = s[0];
    info.Ss = s[1];
    info.Se = s[2];
    info.Ah = s[3];
    info.Al = s[4];
    scans.push_back(info);
  }
  unsigned char* out = nullptr;
  unsigned long size = 0;
  const bool ok = compress(spec, pixels, scans, &out, &size);
  Bytes bytes;
  if (ok) bytes.assign(out, out + size);
  std::free(out);
  if (!ok) throw std::runtime_error("libjpeg could not encode the test image");
  return bytes;
}

}  // namespace dl::test
