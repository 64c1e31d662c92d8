// Partial JPEG decoding with libjpeg-turbo (see jpeg_region.h). libjpeg reports fatal errors by
// calling error_exit, which must not return: it longjmps back here. So the functions holding the
// setjmp keep only plain C state between setjmp and the last libjpeg call (no objects with
// destructors that a longjmp would skip; the caller's vector lives outside).
#include "data/jpeg_region.h"

#include <algorithm>
#include <cmath>

#if DL_HAVE_LIBJPEG
#include <csetjmp>

#include "data/jpeg_entropy_hook.h"
#include "data/libjpeg.h"
#endif

namespace dl::data {

bool looks_like_jpeg(const std::uint8_t* data, std::size_t size) {
  return size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF;
}

int jpeg_scale_for(int height, int width, int min_height, int min_width) {
  if (min_height <= 0 || min_width <= 0) return 8;
  // Only the scales whose reduced IDCT libjpeg-turbo has SIMD code for: decoding at 5/8, 6/8 or
  // 7/8 (plain C) is slower than at full size, and 3/8 no faster than 4/8 (bench/NOTES.md,
  // decode_scale_bench).
  for (const int m : {1, 2, 4}) {
    // height * m / 8 >= min_height, in integers
    if (static_cast<std::int64_t>(height) * m >= std::int64_t{8} * min_height &&
        static_cast<std::int64_t>(width) * m >= std::int64_t{8} * min_width) {
      return m;
    }
  }
  return 8;
}

#if DL_HAVE_LIBJPEG
namespace {

// The error manager is what libjpeg hands back to every callback, so the jump target and the scan
// limit's verdict live with it.
struct ErrorManager {
  jpeg_error_mgr base;
  jpeg_progress_mgr progress;
  bool too_many_scans;
  JpegDamage damage;
  char damage_text[JMSG_LENGTH_MAX];
  std::jmp_buf jump;
};

[[noreturn]] void on_error(j_common_ptr cinfo) {
  std::longjmp(reinterpret_cast<ErrorManager*>(cinfo->err)->jump, 1);
}

// Called while libjpeg reads the input: a progressive file's scans are counted as they arrive
// (what djpeg's -maxscans does), before their cost adds up.
void on_progress(j_common_ptr cinfo) {
  auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (d->input_scan_number > kMaxProgressiveScans) {
    auto* errors = reinterpret_cast<ErrorManager*>(cinfo->err);
    errors->too_many_scans = true;
    std::longjmp(errors->jump, 1);
  }
}

// Warnings (corrupt data libjpeg can decode around) and traces are not printed: a loader worker
// has no use for them, and the caller decides what an unreadable file means.
void quiet(j_common_ptr) {}

// What a warning says of the pixels. The data ended (libjpeg then fills the rest grey), or the
// entropy-coded data are corrupt (libjpeg's "Corrupt JPEG data: ..." warnings, which djpeg counts
// and PIL's truncation check and tjDecompress's TJFLAG_STOPONWARNING refuse). Extraneous bytes
// before EOI are not: every pixel was decoded before them (ImageNet has such files, and PIL and
// OpenCV load them). The rest (an unknown JFIF version, a bogus ICC profile, an odd progression
// script) are about metadata or the encoder's choices, not missing pixels. (Arithmetic coding's
// bad-code warning is not in every jerror.h: its files are rare, and refused when cut short.)
JpegDamage damage_of(const jpeg_error_mgr& err) {
  switch (err.msg_code) {
    case JWRN_JPEG_EOF:
      return JpegDamage::kCutShort;
    case JWRN_EXTRANEOUS_DATA:
      return err.msg_parm.i[1] == 0xD9 ? JpegDamage::kNone : JpegDamage::kCorrupt;
    case JWRN_HIT_MARKER:
    case JWRN_HUFF_BAD_CODE:
    case JWRN_MUST_RESYNC:
      return JpegDamage::kCorrupt;
    default:
      return JpegDamage::kNone;
  }
}

// libjpeg's emit_message: level -1 is a warning, the rest traces. The first damage is kept (a cut
// file warns of its end, then of the marker it hit); decoding goes on, as it would have.
void on_message(j_common_ptr cinfo, int level) {
  if (level != -1) return;
  auto* errors = reinterpret_cast<ErrorManager*>(cinfo->err);
  ++errors->base.num_warnings;
  const JpegDamage damage = damage_of(errors->base);
  if (damage == JpegDamage::kNone || errors->damage != JpegDamage::kNone) return;
  errors->damage = damage;
  errors->base.format_message(cinfo, errors->damage_text);
}

void init(jpeg_decompress_struct* cinfo, ErrorManager* errors) {
  cinfo->err = jpeg_std_error(&errors->base);
  errors->base.error_exit = on_error;
  errors->base.output_message = quiet;
  errors->base.emit_message = on_message;
  errors->progress = jpeg_progress_mgr{};
  errors->progress.progress_monitor = on_progress;
  errors->too_many_scans = false;
  errors->damage = JpegDamage::kNone;
  errors->damage_text[0] = '\0';
}

// OpenCV's imdecode refuses images above 2^30 pixels (CV_IO_MAX_IMAGE_PIXELS), and so does this:
// a 300-byte file can claim 50000 x 33000 pixels, and decoding a crop of it would cost a worker
// gigabytes and seconds of grey rows (found by tests/fuzz/jpeg_region_fuzz).
constexpr unsigned long long kMaxPixels = 1ull << 30;

bool supported(const jpeg_decompress_struct& cinfo) {
  const unsigned long long pixels =
      static_cast<unsigned long long>(cinfo.image_width) * cinfo.image_height;
  return (cinfo.jpeg_color_space == JCS_GRAYSCALE || cinfo.jpeg_color_space == JCS_YCbCr ||
          cinfo.jpeg_color_space == JCS_RGB) &&
         pixels <= kMaxPixels;
}

// What libjpeg keeps for the whole image before it decodes a row: a file of several scans
// (progressive, or components in separate scans) holds every block's coefficients (64 of 2 bytes),
// each component's blocks rounded up to its sampling factors (jdcoefct.c's full buffer). A single
// scan keeps one iMCU row: nothing that grows with the image.
std::uint64_t coefficient_bytes(jpeg_decompress_struct& cinfo) {
  if (!jpeg_has_multiple_scans(&cinfo)) return 0;
  std::uint64_t blocks = 0;
  for (int c = 0; c < cinfo.num_components; ++c) {
    const jpeg_component_info& comp = cinfo.comp_info[c];
    const auto round_up = [](std::uint64_t n, std::uint64_t m) { return (n + m - 1) / m * m; };
    blocks += round_up(comp.width_in_blocks, static_cast<std::uint64_t>(comp.h_samp_factor)) *
              round_up(comp.height_in_blocks, static_cast<std::uint64_t>(comp.v_samp_factor));
  }
  return blocks * DCTSIZE2 * sizeof(JCOEF);
}

// The whole scaled pixels that cover a window (output pixel i covers full-size pixels
// [8i/M, 8(i+1)/M)), within the out_h x out_w scaled image.
struct Block {
  int top = 0;
  int left = 0;
  int bottom = 0;
  int right = 0;
};

Block scaled_block(int top, int left, int height, int width, int scale, int out_h, int out_w) {
  const double k = scale / 8.0;
  Block b;
  b.top = std::min(out_h - 1, static_cast<int>(std::floor(top * k)));
  b.left = std::min(out_w - 1, static_cast<int>(std::floor(left * k)));
  b.bottom = std::clamp(static_cast<int>(std::ceil((top + height) * k)), b.top + 1, out_h);
  b.right = std::clamp(static_cast<int>(std::ceil((left + width) * k)), b.left + 1, out_w);
  return b;
}

// Decodes `rows` rows from `first_row` on into `out`, `stride` bytes apart; the rows above are
// skipped (entropy-decoded only). A truncated file's missing rows come out grey (and damaged).
void read_rows(jpeg_decompress_struct* cinfo, int first_row, int rows, std::size_t stride,
               std::uint8_t* out) {
  if (first_row > 0) jpeg_skip_scanlines(cinfo, static_cast<JDIMENSION>(first_row));
  for (int y = 0; y < rows;) {
    JSAMPROW row = out + static_cast<std::size_t>(y) * stride;
    const JDIMENSION got = jpeg_read_scanlines(cinfo, &row, 1);
    if (got == 0) break;  // never loops (libjpeg pads missing data with grey and warns)
    y += static_cast<int>(got);
  }
}

// The block's size, and where the region's (clamped) window lies in it, fractional.
void set_box(JpegRegion* region, const Block& block, int scale) {
  const double k = scale / 8.0;
  const Window& w = region->window;
  region->rows = block.bottom - block.top;
  region->cols = block.right - block.left;
  region->box_top = w.top * k - block.top;
  region->box_left = w.left * k - block.left;
  region->box_bottom = std::min<double>(region->rows, (w.top + w.height) * k - block.top);
  region->box_right = std::min<double>(region->cols, (w.left + w.width) * k - block.left);
}

// What the header allows, before jpeg_start_decompress allocates for it (a progressive file's
// coefficients for the whole image) and before the window buffer: kDecoded to go on, with the
// coefficients' bytes, else the outcome to return.
JpegOutcome header_allows(jpeg_decompress_struct& cinfo, std::int64_t max_pixels,
                          JpegRegion* region, std::uint64_t* coefficients) {
  if (static_cast<std::int64_t>(cinfo.image_width) * static_cast<std::int64_t>(cinfo.image_height) >
      max_pixels) {
    return JpegOutcome::kTooLarge;
  }
  if (!supported(cinfo)) return JpegOutcome::kNotHandled;
  *coefficients = coefficient_bytes(cinfo);
  if (*coefficients > kMaxDecodeBytes) {
    region->memory_needed = *coefficients;
    return JpegOutcome::kTooMuchMemory;
  }
  return JpegOutcome::kDecoded;
}

}  // namespace

bool jpeg_region_available() {
  return true;
}

JpegOutcome decode_jpeg_window(const std::uint8_t* data, std::size_t size, int channels,
                               std::int64_t max_pixels, const ChooseWindow& choose,
                               std::vector<std::uint8_t>& buffer, JpegRegion* region,
                               EntropyLease* lease) {
  if (!looks_like_jpeg(data, size) || (channels != 1 && channels != 3)) {
    return JpegOutcome::kNotHandled;
  }
  jpeg_decompress_struct cinfo;
  ErrorManager errors;
  init(&cinfo, &errors);
  if (setjmp(errors.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return errors.too_many_scans ? JpegOutcome::kTooManyScans : JpegOutcome::kNotHandled;
  }
  jpeg_create_decompress(&cinfo);
  cinfo.progress = &errors.progress;
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  std::uint64_t coefficients = 0;
  const JpegOutcome allowed = header_allows(cinfo, max_pixels, region, &coefficients);
  if (allowed != JpegOutcome::kDecoded) {
    jpeg_destroy_decompress(&cinfo);
    return allowed;
  }
  // Grey JPEGs stay one channel (the transform replicates it); colour ones become RGB or luma.
  const bool grey = channels == 1 || cinfo.jpeg_color_space == JCS_GRAYSCALE;
  cinfo.out_color_space = grey ? JCS_GRAYSCALE : JCS_RGB;
  // The slow, exact integer IDCT: the one PIL and OpenCV use, so pixels match theirs.
  cinfo.dct_method = JDCT_ISLOW;

  // The window, in full-size pixels, from the header's size; then the scale it allows.
  const int image_h = static_cast<int>(cinfo.image_height);
  const int image_w = static_cast<int>(cinfo.image_width);
  const Window wanted = choose(image_h, image_w);
  const int top = std::clamp(wanted.top, 0, image_h - 1);
  const int left = std::clamp(wanted.left, 0, image_w - 1);
  const int height = std::clamp(wanted.height, 1, image_h - top);
  const int width = std::clamp(wanted.width, 1, image_w - left);
  const int scale = wanted.force_scale >= 1 && wanted.force_scale <= 8
                        ? wanted.force_scale
                        : jpeg_scale_for(height, width, wanted.min_height, wanted.min_width);
  cinfo.scale_num = static_cast<unsigned int>(scale);
  cinfo.scale_denom = 8;
  jpeg_start_decompress(&cinfo);

  const int out_h = static_cast<int>(cinfo.output_height);
  const int out_w = static_cast<int>(cinfo.output_width);
  const Block block = scaled_block(top, left, height, width, scale, out_h, out_w);
  // libjpeg upsamples chroma at a partial decode's edges as at the image's edges, so the outer
  // pixel or two of a window differ from a full decode. A margin of one iMCU (16 full-size pixels,
  // the largest with 2x2 subsampling, so 2M scaled ones) keeps those edges away from the pixels
  // handed out.
  const int margin = 2 * scale;
  const int first_row = std::max(0, block.top - margin);
  const int last_row = std::min(out_h, block.bottom + margin);
  const int first_col = std::max(0, block.left - margin);
  const int last_col = std::min(out_w, block.right + margin);
  const int rows = last_row - first_row;
  // Widened to whole iMCU columns by libjpeg: decoding starts at x_offset <= first_col.
  JDIMENSION x_offset = static_cast<JDIMENSION>(first_col);
  JDIMENSION x_width = static_cast<JDIMENSION>(last_col - first_col);
  const bool cropped = last_col - first_col < out_w;
  if (cropped) jpeg_crop_scanline(&cinfo, &x_offset, &x_width);
  install_entropy_decoder(&cinfo, data, size, cropped ? x_offset : 0, cropped ? x_width : 0, lease);
  const int components = cinfo.output_components;
  const std::size_t stride =
      static_cast<std::size_t>(cinfo.output_width) * static_cast<std::size_t>(components);
  // The window's pixels on top of the coefficients (a full-size decode of a whole image's rows).
  const std::uint64_t pixel_bytes = std::uint64_t{stride} * static_cast<std::uint64_t>(rows);
  if (coefficients + pixel_bytes > kMaxDecodeBytes) {
    jpeg_destroy_decompress(&cinfo);
    region->memory_needed = coefficients + pixel_bytes;
    return JpegOutcome::kTooMuchMemory;
  }
  if (buffer.size() < stride * static_cast<std::size_t>(rows)) {
    buffer.resize(stride * static_cast<std::size_t>(rows));
  }
  read_rows(&cinfo, first_row, rows, stride, buffer.data());
  // The rows below the window (and its margin) are never decoded.
  jpeg_abort_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);

  region->pixels = buffer.data() + static_cast<std::size_t>(block.top - first_row) * stride +
                   static_cast<std::size_t>(static_cast<JDIMENSION>(block.left) - x_offset) *
                       static_cast<std::size_t>(components);
  region->row_stride = stride;
  region->channels = components;
  region->window = wanted;
  region->window.top = top;
  region->window.left = left;
  region->window.height = height;
  region->window.width = width;
  region->image_height = image_h;
  region->image_width = image_w;
  region->scale = scale;
  set_box(region, block, scale);
  region->damage = errors.damage;
  region->damage_text = errors.damage_text;
  return JpegOutcome::kDecoded;
}

#else

bool jpeg_region_available() {
  return false;
}
JpegOutcome decode_jpeg_window(const std::uint8_t*, std::size_t, int, std::int64_t,
                               const ChooseWindow&, std::vector<std::uint8_t>&, JpegRegion*,
                               EntropyLease*) {
  return JpegOutcome::kNotHandled;
}

#endif

}  // namespace dl::data
