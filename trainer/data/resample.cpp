// Pillow's 8-bit resampling with the bilinear filter (see resample.h). The coefficients follow
// Pillow's precompute_coeffs and normalize_coeffs_8bpc (libImaging/Resample.c) step for step, so
// that the output bytes are Pillow's.
//
// On x86-64 with AVX2 the horizontal pass over RGB rows, the larger of the two (it runs over every
// source row of the crop), takes four taps per step with 16-bit multiply-adds; the 22-bit weights
// are split into two 11-bit halves, so the sums are Pillow's 32-bit sums exactly, not the 16-bit
// approximations Pillow-SIMD makes. The vertical pass has an AVX2 build too.
#include "data/resample.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define DL_RESAMPLE_X86 1
#endif

namespace dl::data {
namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;

// For each output coordinate: the first source pixel, how many follow, and their fixed-point
// weights (`ksize` slots each).
struct Coefficients {
  int in_size = 0;  // source pixels along the axis
  int ksize = 0;
  std::vector<int> first;
  std::vector<int> count;
  std::vector<std::int32_t> weights;
};

double triangle(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

// Pillow's precompute_coeffs for the box [in0, in1) of a source `in_size` pixels long (the whole
// of it unless a box is given): taps stay inside the source.
Coefficients coefficients(int in_size, int out_size, double in0, double in1) {
  const double scale = (in1 - in0) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = 1.0 * filterscale;  // the bilinear filter's support is 1
  Coefficients c;
  c.in_size = in_size;
  c.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  c.first.resize(static_cast<std::size_t>(out_size));
  c.count.resize(static_cast<std::size_t>(out_size));
  c.weights.assign(static_cast<std::size_t>(out_size) * static_cast<std::size_t>(c.ksize), 0);
  std::vector<double> k(static_cast<std::size_t>(c.ksize));
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = in0 + (xx + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    const int xmin = std::max(static_cast<int>(center - support + 0.5), 0);
    const int xmax = std::min(static_cast<int>(center + support + 0.5), in_size) - xmin;
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) {
      k[static_cast<std::size_t>(x)] = triangle((x + xmin - center + 0.5) * ss);
      ww += k[static_cast<std::size_t>(x)];
    }
    std::int32_t* w = &c.weights[static_cast<std::size_t>(xx) * static_cast<std::size_t>(c.ksize)];
    for (int x = 0; x < xmax; ++x) {
      const double v =
          ww != 0.0 ? k[static_cast<std::size_t>(x)] / ww : k[static_cast<std::size_t>(x)];
      w[x] = static_cast<std::int32_t>(v < 0 ? -0.5 + v * (1 << kPrecisionBits)
                                             : 0.5 + v * (1 << kPrecisionBits));
    }
    c.first[static_cast<std::size_t>(xx)] = xmin;
    c.count[static_cast<std::size_t>(xx)] = xmax;
  }
  return c;
}

Coefficients coefficients(int in_size, int out_size) {
  return coefficients(in_size, out_size, 0.0, in_size);
}

// Pillow's accumulators are 32-bit: 255 times weights summing to 2^22 stays below 2^31.
std::uint8_t clip8(std::int32_t v) {
  if (v >= (std::int32_t{1} << kPrecisionBits << 8)) return 255;
  if (v <= 0) return 0;
  return static_cast<std::uint8_t>(v >> kPrecisionBits);
}

constexpr std::int32_t kHalf = std::int32_t{1} << (kPrecisionBits - 1);

// One RGB output pixel of the horizontal pass as Pillow computes it: its `n` taps from `p`.
inline void rgb_pixel(const std::uint8_t* p, const std::int32_t* w, int n, std::uint8_t* o) {
  std::int32_t r = kHalf, g = kHalf, b = kHalf;
  for (int x = 0; x < n; ++x, p += 3) {
    r += p[0] * w[x];
    g += p[1] * w[x];
    b += p[2] * w[x];
  }
  o[0] = clip8(r);
  o[1] = clip8(g);
  o[2] = clip8(b);
}

std::atomic<bool> g_simd_allowed{true};

#if defined(DL_RESAMPLE_X86)

bool avx2_available() {
  static const bool has = __builtin_cpu_supports("avx2") != 0;
  return has;
}

// Four taps a step: two pixels (6 bytes) in each 128-bit lane as 16-bit [r0 r1 g0 g1 b0 b1 0 0],
// against the pair's weights [w0 w1 w0 w1 w0 w1 0 0], once for the weights' high 11 bits and once
// for their low 11 bits. `weights` holds, per output pixel and group of four taps, 16 high then
// 16 low halves (zero beyond the pixel's taps).
constexpr int kSplitBits = 11;

std::vector<std::int16_t> split_weights(const Coefficients& c, int groups, int out_width) {
  std::vector<std::int16_t> v(static_cast<std::size_t>(out_width) *
                              static_cast<std::size_t>(groups) * 32);
  for (int xx = 0; xx < out_width; ++xx) {
    const std::int32_t* w =
        &c.weights[static_cast<std::size_t>(xx) * static_cast<std::size_t>(c.ksize)];
    const int n = c.count[static_cast<std::size_t>(xx)];
    for (int g = 0; g < groups; ++g) {
      std::int16_t* hi =
          &v[(static_cast<std::size_t>(xx) * static_cast<std::size_t>(groups) + g) * 32];
      std::int16_t* lo = hi + 16;
      for (int lane = 0; lane < 2; ++lane) {
        for (int k = 0; k < 2; ++k) {
          const int tap = 4 * g + 2 * lane + k;
          const std::int32_t weight = tap < n ? w[tap] : 0;
          for (int channel = 0; channel < 3; ++channel) {
            hi[lane * 8 + channel * 2 + k] = static_cast<std::int16_t>(weight >> kSplitBits);
            lo[lane * 8 + channel * 2 + k] =
                static_cast<std::int16_t>(weight & ((1 << kSplitBits) - 1));
          }
        }
      }
    }
  }
  return v;
}

// Whether every weight is in [0, 2^22]: the halves then fit 16 bits and the products' sums 32.
// (The bilinear triangle has no negative lobe; anything else takes the scalar pass.)
bool splittable(const Coefficients& c) {
  return std::all_of(c.weights.begin(), c.weights.end(), [](std::int32_t w) {
    return w >= 0 && w <= (std::int32_t{1} << kPrecisionBits);
  });
}

// One output pixel's sums, Pillow's `ss` less its rounding half: four taps a group, `groups` of
// them (a template argument for the common counts, so that the loop unrolls). The two 128-bit
// lanes hold partial sums of the same three channels.
template <int kGroups>
__attribute__((target("avx2"))) inline __m256i pixel_sums(const std::uint8_t* p,
                                                          const std::int16_t* wv, int groups,
                                                          __m256i pairs) {
  const int n = kGroups > 0 ? kGroups : groups;
  __m256i acc_hi = _mm256_setzero_si256();
  __m256i acc_lo = _mm256_setzero_si256();
  for (int g = 0; g < n; ++g, p += 12, wv += 32) {
    const __m256i bytes =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    const __m256i pix = _mm256_shuffle_epi8(bytes, pairs);
    acc_hi = _mm256_add_epi32(
        acc_hi, _mm256_madd_epi16(pix, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wv))));
    acc_lo = _mm256_add_epi32(
        acc_lo,
        _mm256_madd_epi16(pix, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wv + 16))));
  }
  return _mm256_add_epi32(_mm256_slli_epi32(acc_hi, kSplitBits), acc_lo);
}

// clip8 of (sums + half) in each 32-bit lane: >> 22, then saturation to 0..255 (a sum at or
// past 2^30 gives 255, one at or below 0 gives 0); the bytes of a lane's first three land in its
// first four bytes.
__attribute__((target("avx2"))) inline __m256i clip8x(__m256i sums) {
  const __m256i s =
      _mm256_srai_epi32(_mm256_add_epi32(sums, _mm256_set1_epi32(kHalf)), kPrecisionBits);
  return _mm256_packus_epi16(_mm256_packs_epi32(s, s), s);
}

template <int kGroups>
__attribute__((target("avx2"))) void horizontal_rgb_avx2_g(
    const std::uint8_t* src, std::size_t src_stride, int row0, int rows, const Coefficients& c,
    int groups, int out_width, std::uint8_t* dst, std::size_t dst_stride) {
  thread_local std::vector<std::int16_t> weights;
  weights = split_weights(c, groups, out_width);
  const __m256i pairs =
      _mm256_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1, 6, -1, 9, -1, 7,
                       -1, 10, -1, 8, -1, 11, -1, -1, -1, -1, -1);
  // Everything the loop reads is in locals: the byte stores may alias any memory, and would make
  // the compiler reload the vectors' pointers at every pixel.
  const int* firsts = c.first.data();
  const int* counts = c.count.data();
  const std::int32_t* all_weights = c.weights.data();
  const std::int16_t* halves = weights.data();
  const std::size_t ksize = static_cast<std::size_t>(c.ksize);
  const std::size_t per_pixel = static_cast<std::size_t>(groups) * 32;
  // The pixels from `vector_end` on would load past their row's end (the last few; `first` only
  // grows along the row): they are done as Pillow does.
  const std::size_t row_bytes = static_cast<std::size_t>(c.in_size) * 3;
  const std::size_t load_bytes = 12 * static_cast<std::size_t>(groups) + 4;
  int vector_end = out_width;
  while (vector_end > 0 &&
         static_cast<std::size_t>(firsts[vector_end - 1]) * 3 + load_bytes > row_bytes) {
    --vector_end;
  }
  for (int y = 0; y < rows; ++y) {
    const std::uint8_t* in = src + static_cast<std::size_t>(row0 + y) * src_stride;
    std::uint8_t* out = dst + static_cast<std::size_t>(y) * dst_stride;
    int xx = 0;
    // Two output pixels a step: their lanes folded together, one rounding and packing for both.
    for (; xx + 1 < vector_end; xx += 2) {
      const __m256i a =
          pixel_sums<kGroups>(in + static_cast<std::size_t>(firsts[xx]) * 3,
                              halves + static_cast<std::size_t>(xx) * per_pixel, groups, pairs);
      const __m256i b =
          pixel_sums<kGroups>(in + static_cast<std::size_t>(firsts[xx + 1]) * 3,
                              halves + static_cast<std::size_t>(xx + 1) * per_pixel, groups, pairs);
      const __m256i both = clip8x(_mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20),
                                                   _mm256_permute2x128_si256(a, b, 0x31)));
      const auto first =
          static_cast<std::uint32_t>(_mm_cvtsi128_si32(_mm256_castsi256_si128(both)));
      const auto second =
          static_cast<std::uint32_t>(_mm_cvtsi128_si32(_mm256_extracti128_si256(both, 1)));
      std::uint8_t* o = out + static_cast<std::size_t>(xx) * 3;
      // Four bytes where another pixel follows: the fourth is its first, which it then writes.
      std::memcpy(o, &first, 4);
      if (xx + 2 < out_width) {
        std::memcpy(o + 3, &second, 4);
      } else {
        std::memcpy(o + 3, &second, 3);
      }
    }
    for (; xx < out_width; ++xx) {
      const std::uint8_t* p = in + static_cast<std::size_t>(firsts[xx]) * 3;
      std::uint8_t* o = out + static_cast<std::size_t>(xx) * 3;
      if (xx < vector_end) {
        const __m256i a = pixel_sums<kGroups>(p, halves + static_cast<std::size_t>(xx) * per_pixel,
                                              groups, pairs);
        const __m256i sums = _mm256_add_epi32(a, _mm256_permute2x128_si256(a, a, 0x01));
        const auto rgb =
            static_cast<std::uint32_t>(_mm_cvtsi128_si32(_mm256_castsi256_si128(clip8x(sums))));
        std::memcpy(o, &rgb, 3);
        continue;
      }
      rgb_pixel(p, all_weights + static_cast<std::size_t>(xx) * ksize, counts[xx], o);
    }
  }
}

// The pass for the usual tap counts unrolled: a shrink by up to 3 has at most 8 taps (2 groups),
// a growth 3 (1 group).
void horizontal_rgb_avx2(const std::uint8_t* src, std::size_t src_stride, int row0, int rows,
                         const Coefficients& c, int out_width, std::uint8_t* dst,
                         std::size_t dst_stride) {
  const int groups = (c.ksize + 3) / 4;
  switch (groups) {
    case 1:
      horizontal_rgb_avx2_g<1>(src, src_stride, row0, rows, c, groups, out_width, dst, dst_stride);
      break;
    case 2:
      horizontal_rgb_avx2_g<2>(src, src_stride, row0, rows, c, groups, out_width, dst, dst_stride);
      break;
    case 3:
      horizontal_rgb_avx2_g<3>(src, src_stride, row0, rows, c, groups, out_width, dst, dst_stride);
      break;
    default:
      horizontal_rgb_avx2_g<0>(src, src_stride, row0, rows, c, groups, out_width, dst, dst_stride);
  }
}

#endif  // DL_RESAMPLE_X86

// Rows [row0, row0 + rows) of src, filtered along x into `rows` rows of dst.
void horizontal(const std::uint8_t* src, std::size_t src_stride, int row0, int rows, int channels,
                const Coefficients& c, int out_width, std::uint8_t* dst, std::size_t dst_stride) {
  const std::size_t ch = static_cast<std::size_t>(channels);
#if defined(DL_RESAMPLE_X86)
  if (channels == 3 && g_simd_allowed.load(std::memory_order_relaxed) && avx2_available() &&
      splittable(c)) {
    horizontal_rgb_avx2(src, src_stride, row0, rows, c, out_width, dst, dst_stride);
    return;
  }
#endif
  for (int y = 0; y < rows; ++y) {
    const std::uint8_t* in = src + static_cast<std::size_t>(row0 + y) * src_stride;
    std::uint8_t* out = dst + static_cast<std::size_t>(y) * dst_stride;
    for (int xx = 0; xx < out_width; ++xx) {
      const std::int32_t* w =
          &c.weights[static_cast<std::size_t>(xx) * static_cast<std::size_t>(c.ksize)];
      const std::uint8_t* p =
          in + static_cast<std::size_t>(c.first[static_cast<std::size_t>(xx)]) * ch;
      const int n = c.count[static_cast<std::size_t>(xx)];
      std::uint8_t* o = out + static_cast<std::size_t>(xx) * ch;
      if (ch == 3) {  // RGB, the common case: the three sums in one pass over the taps
        rgb_pixel(p, w, n, o);
        continue;
      }
      for (std::size_t k = 0; k < ch; ++k) {
        std::int32_t ss = kHalf;
        for (int x = 0; x < n; ++x) ss += p[static_cast<std::size_t>(x) * ch + k] * w[x];
        o[k] = clip8(ss);
      }
    }
  }
}

// src's rows filtered along y; `row0` is the source row that coefficient row 0 counts from. Taps
// outside, bytes inside: each tap adds one source row to a row of sums (vectorised). Inlined
// into a build for any x86-64 and one for AVX2 (8-lane 32-bit multiplies), chosen at run time;
// not by target_clones, whose resolver runs before ThreadSanitizer's runtime is up and crashes an
// instrumented program at its start.
__attribute__((always_inline)) inline void vertical_rows(
    const std::uint8_t* src, std::size_t src_stride, int row0, int width, int channels,
    const Coefficients& c, int out_height, std::uint8_t* dst, std::size_t dst_stride) {
  const std::size_t row_bytes =
      static_cast<std::size_t>(width) * static_cast<std::size_t>(channels);
  std::vector<std::int32_t> sums(row_bytes);
  for (int yy = 0; yy < out_height; ++yy) {
    const std::int32_t* w =
        &c.weights[static_cast<std::size_t>(yy) * static_cast<std::size_t>(c.ksize)];
    const int first = c.first[static_cast<std::size_t>(yy)] - row0;
    const int n = c.count[static_cast<std::size_t>(yy)];
    std::fill(sums.begin(), sums.end(), kHalf);
    for (int y = 0; y < n; ++y) {
      const std::uint8_t* row = src + static_cast<std::size_t>(first + y) * src_stride;
      const std::int32_t wy = w[y];
      for (std::size_t i = 0; i < row_bytes; ++i) sums[i] += row[i] * wy;
    }
    std::uint8_t* out = dst + static_cast<std::size_t>(yy) * dst_stride;
    for (std::size_t i = 0; i < row_bytes; ++i) out[i] = clip8(sums[i]);
  }
}

#if defined(DL_RESAMPLE_X86)
__attribute__((target("avx2"))) void vertical_avx2(const std::uint8_t* src, std::size_t src_stride,
                                                   int row0, int width, int channels,
                                                   const Coefficients& c, int out_height,
                                                   std::uint8_t* dst, std::size_t dst_stride) {
  vertical_rows(src, src_stride, row0, width, channels, c, out_height, dst, dst_stride);
}
#endif

void vertical(const std::uint8_t* src, std::size_t src_stride, int row0, int width, int channels,
              const Coefficients& c, int out_height, std::uint8_t* dst, std::size_t dst_stride) {
#if defined(DL_RESAMPLE_X86)
  if (g_simd_allowed.load(std::memory_order_relaxed) && avx2_available()) {
    vertical_avx2(src, src_stride, row0, width, channels, c, out_height, dst, dst_stride);
    return;
  }
#endif
  vertical_rows(src, src_stride, row0, width, channels, c, out_height, dst, dst_stride);
}

// As Pillow: the horizontal pass over the source rows the vertical pass reads, into a temporary
// image, then the vertical pass.
void two_passes(const std::uint8_t* src, std::size_t src_stride, int channels,
                const Coefficients& cx, const Coefficients& cy, std::uint8_t* dst, int dst_height,
                int dst_width, std::size_t dst_stride) {
  const int first = cy.first.front();
  const int last = cy.first.back() + cy.count.back();
  const std::size_t temp_stride =
      static_cast<std::size_t>(dst_width) * static_cast<std::size_t>(channels);
  thread_local std::vector<std::uint8_t> temp;
  const std::size_t bytes = static_cast<std::size_t>(last - first) * temp_stride;
  if (temp.size() < bytes) temp.resize(bytes);
  horizontal(src, src_stride, first, last - first, channels, cx, dst_width, temp.data(),
             temp_stride);
  vertical(temp.data(), temp_stride, first, dst_width, channels, cy, dst_height, dst, dst_stride);
}

}  // namespace

void resample_antialias_u8(const std::uint8_t* src, int src_height, int src_width,
                           std::size_t src_stride, int channels, std::uint8_t* dst, int dst_height,
                           int dst_width, std::size_t dst_stride) {
  const bool along_x = dst_width != src_width;
  const bool along_y = dst_height != src_height;
  const std::size_t ch = static_cast<std::size_t>(channels);
  if (!along_x && !along_y) {
    for (int y = 0; y < src_height; ++y) {
      std::memcpy(dst + static_cast<std::size_t>(y) * dst_stride,
                  src + static_cast<std::size_t>(y) * src_stride,
                  static_cast<std::size_t>(src_width) * ch);
    }
    return;
  }
  const Coefficients cy = coefficients(src_height, dst_height);
  if (!along_x) {
    vertical(src, src_stride, 0, src_width, channels, cy, dst_height, dst, dst_stride);
    return;
  }
  const Coefficients cx = coefficients(src_width, dst_width);
  if (!along_y) {
    horizontal(src, src_stride, 0, src_height, channels, cx, dst_width, dst, dst_stride);
    return;
  }
  two_passes(src, src_stride, channels, cx, cy, dst, dst_height, dst_width, dst_stride);
}

void set_resample_simd(bool allowed) {
  g_simd_allowed.store(allowed);
}

bool resample_simd_active() {
#if defined(DL_RESAMPLE_X86)
  return g_simd_allowed.load() && avx2_available();
#else
  return false;
#endif
}

void resample_box_u8(const std::uint8_t* src, int src_height, int src_width, std::size_t src_stride,
                     int channels, const Box& box, std::uint8_t* dst, int dst_height, int dst_width,
                     std::size_t dst_stride) {
  const Coefficients cx = coefficients(src_width, dst_width, box.left, box.right);
  const Coefficients cy = coefficients(src_height, dst_height, box.top, box.bottom);
  two_passes(src, src_stride, channels, cx, cy, dst, dst_height, dst_width, dst_stride);
}

}  // namespace dl::data
