// The fence around libjpeg's private entropy decoder head (data/libjpeg_private.h): fails, naming
// that file, when this build's libjpeg is not a version the head was checked against, when the
// head's members do not point into libjpeg's code, or where Debian's jpegint.h is installed, when
// its struct differs from the head. Then the indexed Huffman decoder must be the one libjpeg calls
// (MCUs counted) and decode what libjpeg decodes.
#include <gtest/gtest.h>

#if DL_HAVE_LIBJPEG
#include "data/jpeg_entropy.h"
#include "data/jpeg_region.h"
#include "data/libjpeg.h"
#include "data/libjpeg_private.h"
#include "unit/data/jpeg_writer.h"

#include <csetjmp>
#include <cstddef>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

// Debian's libjpeg62-turbo-dev installs the private header (JPEG_LIB_VERSION 62 there); elsewhere
// a jpegint.h on the path may belong to another libjpeg than the jpeglib.h in use.
#if JPEG_LIB_VERSION == 62 && __has_include(<jpegint.h>)
#include <jpegint.h>
#define DL_TEST_HAS_JPEGINT 1
#endif
#endif

namespace dl::test {
namespace {

#if DL_HAVE_LIBJPEG

using namespace dl::data;
namespace priv = dl::data::libjpeg_private;

#define DL_TEST_TEXT(x) #x
#define DL_TEST_STRING(x) DL_TEST_TEXT(x)

std::string this_libjpeg() {
#ifdef LIBJPEG_TURBO_VERSION
  const std::string name = "libjpeg-turbo " DL_TEST_STRING(LIBJPEG_TURBO_VERSION);
#else
  const std::string name = "a libjpeg that is not libjpeg-turbo";
#endif
  return name + " (JPEG_LIB_VERSION " + std::to_string(JPEG_LIB_VERSION) + ")";
}

std::string fence_note() {
  return "; trainer/data/libjpeg_private.h was checked against " +
         std::string(priv::kCheckedVersions) +
         ": compare this libjpeg's jpegint.h (struct jpeg_entropy_decoder) and jdhuff.c with the "
         "head there, then widen its range (until then libjpeg decodes every JPEG itself)";
}

// The message codes this build compiled (data/libjpeg.h) are the library's: each names the text
// libjpeg's own table holds under it. Off by two where jerror.h came before jpeglib.h and the
// library is a jpeg8 one.
TEST(LibjpegMessages, TheCodesThisBuildReadsAreTheLibrarys) {
  jpeg_error_mgr err{};
  jpeg_std_error(&err);
  const std::pair<int, std::string> codes[] = {
      {JWRN_JPEG_EOF, "Premature end of JPEG file"},
      {JWRN_HIT_MARKER, "Corrupt JPEG data: premature end of data segment"},
      {JWRN_HUFF_BAD_CODE, "Corrupt JPEG data: bad Huffman code"},
      {JWRN_MUST_RESYNC, "Corrupt JPEG data: found marker 0x%02x instead of RST%d"},
      {JWRN_EXTRANEOUS_DATA, "Corrupt JPEG data: %u extraneous bytes before marker 0x%02x"},
  };
  for (const auto& [code, text] : codes) {
    ASSERT_LE(code, err.last_jpeg_message) << text;
    EXPECT_EQ(std::string(err.jpeg_message_table[code]), text)
        << "message code " << code << " of " << this_libjpeg()
        << ": jerror.h was read before jpeglib.h (include data/libjpeg.h)";
  }
}

TEST(LibjpegPrivate, ThisLibjpegIsAVersionTheHeadWasCheckedAgainst) {
  EXPECT_TRUE(priv::kChecked) << this_libjpeg() << " is not one the entropy decoder head was "
                              << "checked against" << fence_note();
}

#ifdef DL_TEST_HAS_JPEGINT
TEST(LibjpegPrivate, TheHeadIsJpegintsStructWhereItIsInstalled) {
  using Private = jpeg_entropy_decoder;
  using Head = priv::EntropyDecoderHead;
  const std::string differs = "the head differs from jpegint.h's struct jpeg_entropy_decoder in ";
  EXPECT_EQ(offsetof(Private, start_pass), offsetof(Head, start_pass))
      << differs << "start_pass's place" << fence_note();
  EXPECT_EQ(offsetof(Private, decode_mcu), offsetof(Head, decode_mcu))
      << differs << "decode_mcu's place" << fence_note();
  EXPECT_TRUE((std::is_same_v<decltype(Private::start_pass), decltype(Head::start_pass)>))
      << differs << "start_pass's type" << fence_note();
  EXPECT_TRUE((std::is_same_v<decltype(Private::decode_mcu), decltype(Head::decode_mcu)>))
      << differs << "decode_mcu's type" << fence_note();
}
#endif

struct ErrorExit {
  jpeg_error_mgr manager;
  std::jmp_buf jump;
};

[[noreturn]] void jump_out(j_common_ptr cinfo) {
  std::longjmp(reinterpret_cast<ErrorExit*>(cinfo->err)->jump, 1);
}

// The probe on a real decompression of a file this test writes: libjpeg's own Huffman decoder is
// in place between jpeg_start_decompress and the first row.
TEST(LibjpegPrivate, TheHeadsMembersPointIntoLibjpegsCode) {
  JpegSpec spec;
  spec.width = 40;
  spec.height = 24;
  const Bytes bytes = write_jpeg(
      spec, [](int x, int y, int c) { return static_cast<std::uint8_t>(x * 5 + y * 3 + c * 40); });
  jpeg_decompress_struct cinfo{};
  ErrorExit error{};
  cinfo.err = jpeg_std_error(&error.manager);
  error.manager.error_exit = jump_out;
  if (setjmp(error.jump) != 0) {
    jpeg_destroy_decompress(&cinfo);
    FAIL() << "libjpeg refused the file this test wrote";
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  ASSERT_EQ(jpeg_read_header(&cinfo, TRUE), JPEG_HEADER_OK);
  jpeg_start_decompress(&cinfo);
  const bool inside = priv::head_points_into_libjpeg(&cinfo);
  jpeg_abort_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  EXPECT_TRUE(inside) << "the entropy decoder of " << this_libjpeg()
                      << " does not begin with two methods in libjpeg's code" << fence_note();
}

// With the head right, the replaced decode_mcu is what libjpeg calls: MCUs are counted, and the
// pixels are libjpeg's own.
TEST(LibjpegPrivate, LibjpegCallsTheReplacedDecoderAndGetsItsOwnPixels) {
  JpegSpec spec;
  spec.width = 64;
  spec.height = 48;
  const Bytes bytes = write_jpeg(spec, [](int x, int y, int c) {
    return static_cast<std::uint8_t>((x * 7 + y * 11) % 200 + c * 20);
  });
  const auto decode = [&](bool ours) {
    set_jpeg_entropy_decoder(ours);
    std::vector<std::uint8_t> buffer;
    JpegRegion region;
    Window whole;
    whole.height = spec.height;
    whole.width = spec.width;
    const JpegOutcome outcome = decode_jpeg_window(
        bytes.data(), bytes.size(), 3, std::int64_t{1} << 30, [&](int, int) { return whole; },
        buffer, &region);
    set_jpeg_entropy_decoder(true);
    std::vector<std::uint8_t> pixels;
    if (outcome != JpegOutcome::kDecoded) return pixels;
    for (int y = 0; y < region.rows; ++y) {
      const std::uint8_t* row = region.pixels + static_cast<std::size_t>(y) * region.row_stride;
      pixels.insert(pixels.end(), row, row + static_cast<std::size_t>(region.cols) * 3);
    }
    return pixels;
  };
  const std::vector<std::uint8_t> libjpegs = decode(false);
  ASSERT_EQ(libjpegs.size(), std::size_t{64} * 48 * 3);
  const std::uint64_t before = jpeg_entropy_decoded_mcus();
  EXPECT_EQ(decode(true), libjpegs);
  // 4:2:0 at 64x48: 4 x 3 MCUs of 16x16.
  EXPECT_EQ(jpeg_entropy_decoded_mcus() - before, 12u)
      << "libjpeg did not call the indexed decoder for " << this_libjpeg() << fence_note();
}

#else
TEST(LibjpegPrivate, NotBuiltWithoutLibjpeg) {
  GTEST_SKIP() << "this build decodes JPEGs through OpenCV: no libjpeg private parts are used";
}
#endif

}  // namespace
}  // namespace dl::test
