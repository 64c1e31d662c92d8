// The indexed Huffman decoder of jpeg_entropy.h. It replaces the decode_mcu method of libjpeg's
// entropy decoder (its second member in every libjpeg since 6) for one decompression, and decodes
// exactly what libjpeg-turbo's jdhuff.c decodes, corrupt data included: FF/00 is an FF byte and
// FF...FF/00 too, a marker (or the data's end) ends the real bits and zero bits follow, an MCU that
// needed bits beyond the real ones is kept and every MCU after it is left zero (grey), a code
// longer than 16 bits is symbol 0 after 17 bits, and AC positions past 63 land on 63. It warns of
// the last two as jdhuff.c does (JWRN_HIT_MARKER, JWRN_HUFF_BAD_CODE), for the caller to refuse
// the picture.
//
// The data are unstuffed once into a plain byte array (padded with zeros), so the bit reader
// refills eight bytes at a time without looking for FF bytes, and a position is one integer.
//
// Calls come in MCU order (jdcoefct.c's decompress_onepass, and jpeg_skip_scanlines with no
// buffer for the rows it skips). The decoder only decodes the MCUs whose coefficients are used,
// lazily: a call for a skipped row or a column outside the crop returns at once, and the first
// call that needs coefficients brings the reader there, from the nearest recorded point at or
// before that MCU, or else from where it stands.
#include "data/jpeg_entropy.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#if DL_HAVE_LIBJPEG
#include "data/jpeg_entropy_hook.h"
#include "data/libjpeg.h"
#include "data/libjpeg_private.h"

// The scaled DCT sizes as libjpeg-turbo itself reads them (its jpegint.h _DCT_scaled_size): one
// field in the jpeg62 ABI (Debian), the horizontal one of two from the jpeg7 ABI on (Ubuntu's
// libjpeg-turbo8, JPEG_LIB_VERSION 80), where the crop's columns and the AC test are horizontal.
namespace {
#if JPEG_LIB_VERSION >= 70
int dct_scaled_size(const jpeg_component_info& comp) {
  return comp.DCT_h_scaled_size;
}
int min_dct_scaled_size(const jpeg_decompress_struct& cinfo) {
  return cinfo.min_DCT_h_scaled_size;
}
#else
int dct_scaled_size(const jpeg_component_info& comp) {
  return comp.DCT_scaled_size;
}
int min_dct_scaled_size(const jpeg_decompress_struct& cinfo) {
  return cinfo.min_DCT_scaled_size;
}
#endif
}  // namespace
#endif

namespace dl::data {

namespace {
// DL_JPEG_HUFFMAN=libjpeg leaves every JPEG to libjpeg's own decoder: the A side of the bench.
bool enabled_at_start() {
  const char* v = std::getenv("DL_JPEG_HUFFMAN");
  return v == nullptr || std::strcmp(v, "libjpeg") != 0;
}
std::atomic<bool> g_enabled{enabled_at_start()};
// Marks a slot whose index a decode has borrowed.
EntropyIndex* const kBorrowed = reinterpret_cast<EntropyIndex*>(std::uintptr_t{1});
}  // namespace

void set_jpeg_entropy_decoder(bool on) {
  g_enabled.store(on, std::memory_order_relaxed);
}
bool jpeg_entropy_decoder_enabled() {
  return g_enabled.load(std::memory_order_relaxed);
}

EntropyIndexStore::EntropyIndexStore(std::int64_t samples, std::size_t budget_bytes)
    : samples_(std::max<std::int64_t>(0, samples)),
      budget_(budget_bytes),
      slots_(new std::atomic<EntropyIndex*>[static_cast<std::size_t>(samples_)]()) {}

EntropyIndexStore::~EntropyIndexStore() {
  for (std::int64_t i = 0; i < samples_; ++i) {
    EntropyIndex* index = slots_[static_cast<std::size_t>(i)].load();
    if (index != kBorrowed) delete index;
  }
}

bool EntropyIndexStore::reserve(std::size_t bytes) {
  std::size_t used = used_.load(std::memory_order_relaxed);
  do {
    if (bytes > budget_ || used > budget_ - bytes) return false;
  } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
  return true;
}

void EntropyIndexStore::release(std::size_t bytes) {
  used_.fetch_sub(bytes, std::memory_order_relaxed);
}

EntropyLease::EntropyLease(EntropyIndexStore* store, std::int64_t index) {
  if (store == nullptr || index < 0 || index >= store->samples_ || store->budget_ == 0) return;
  std::atomic<EntropyIndex*>& slot = store->slots_[static_cast<std::size_t>(index)];
  EntropyIndex* held = slot.exchange(kBorrowed, std::memory_order_acquire);
  if (held == kBorrowed) return;  // another decode has it; it puts it back itself
  if (held == nullptr) {
    if (!store->reserve(sizeof(EntropyIndex))) {
      slot.store(nullptr, std::memory_order_release);
      return;
    }
    held = new EntropyIndex;
  }
  store_ = store;
  slot_ = index;
  index_ = held;
}

EntropyLease::~EntropyLease() {
  if (index_ == nullptr) return;
  store_->slots_[static_cast<std::size_t>(slot_)].store(index_, std::memory_order_release);
}

#if DL_HAVE_LIBJPEG
namespace {

constexpr int kFastBits = 10;
constexpr int kMaxBlocks = D_MAX_BLOCKS_IN_MCU;
// The most bits one MCU can take: per block a DC code and value (17 + 15 bits) and at most 63 AC
// codes and values; the zero padding after the real data covers one MCU's overrun.
constexpr std::size_t kMaxMcuBytes = kMaxBlocks * 64 * 32 / 8;
constexpr std::size_t kPadBytes = kMaxMcuBytes + 16;
constexpr std::size_t kKeptDataBytes = std::size_t{16} << 20;

// Zigzag to natural order, with 16 extra entries so that corrupt data's k > 63 lands on 63 (as
// libjpeg's jpeg_natural_order does).
constexpr int kNaturalOrder[64 + 16] = {
    0,  1,  8,  16, 9,  2,  3,  10, 17, 24, 32, 25, 18, 11, 4,  5,  12, 19, 26, 33,
    40, 48, 41, 34, 27, 20, 13, 6,  7,  14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36,
    29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54,
    47, 55, 62, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63, 63};

// A Huffman table for decoding. fast[] is indexed by the next kFastBits bits:
//   bit 6 set: a whole AC coefficient (code and value bits, `len` = bits 0-5 in all), run in
//              bits 8-11, value in bits 16-31;
//   else len > 0: a code of len bits, its symbol in bits 8-15;
//   0: a longer code (or none), found through maxcode/valoffset as jdhuff.c does.
//
// skip[] (AC tables) is indexed by the next kSkipBits bits, for blocks whose AC values are not
// kept: as many whole AC symbols (codes and value bits) as fit, in bits 0-4 (0: not even one),
// the positions they move k by in bits 5-11 (a symbol's run and one, 16 for ZRL, 1 for the end
// of block), and bit 12 where the last of them ends the block.
//
// A table is built from libjpeg's JHUFF_TBL, whose bytes it keeps: the next file with the same
// tables (an encoder's standard ones, usually) reuses it as it is.
constexpr int kSkipBits = 12;
struct Table {
  std::int32_t fast[1 << kFastBits];
  std::uint16_t skip[1 << kSkipBits];
  std::int32_t maxcode[18];
  std::int32_t valoffset[18];
  std::uint8_t huffval[256];
  std::uint8_t source_bits[17];
  std::uint8_t source_huffval[256];
  bool built;
  bool ac;
};
constexpr std::int32_t kWhole = 1 << 6;
constexpr int kSkipEnds = 1 << 12;

inline int extend(int v, int s) {
  return v < (1 << (s - 1)) ? v - (1 << s) + 1 : v;
}

// Builds `t` from a table libjpeg has already checked (jpeg_make_d_derived_tbl refuses
// over-subscribed codes, and DC symbols above 15, before the first MCU). `ac` adds the whole-
// coefficient entries.
// The symbols at the start of the kSkipBits-bit pattern `v` (skip[]'s entry for it).
std::uint16_t skip_entry(const Table& t, unsigned v) {
  int used = 0;
  int moved = 0;
  for (;;) {
    // The canonical code at bit `used`, as slow_symbol finds it, within the pattern.
    int l = 1;
    if (used + l > kSkipBits) break;
    std::int32_t code = static_cast<std::int32_t>((v >> (kSkipBits - used - 1)) & 1u);
    while (code > t.maxcode[l] && used + l < kSkipBits && l < 16) {
      ++l;
      code = static_cast<std::int32_t>((v >> (kSkipBits - used - l)) & ((1u << l) - 1));
    }
    if (code > t.maxcode[l]) break;  // longer than what is left, or no code
    const int symbol = t.huffval[(code + t.valoffset[l]) & 0xFF];
    const int run = symbol >> 4;
    const int s = symbol & 15;
    if (s != 0) {
      if (used + l + s > kSkipBits) break;
      used += l + s;
      moved += run + 1;
    } else if (run == 15) {
      used += l;
      moved += 16;
    } else {
      used += l;
      moved += 1;
      return static_cast<std::uint16_t>(used | (moved << 5) | kSkipEnds);
    }
    if (moved >= 64) break;
  }
  return static_cast<std::uint16_t>(used == 0 ? 0 : used | (moved << 5));
}

// Builds the decoding tables of `h`; false for a table libjpeg refuses (jdhuff.c's
// jpeg_make_d_derived_tbl: more than 256 codes, codes that overflow their length, a DC symbol
// above 15), which is then left to libjpeg's own decoder to refuse. Checked here too because
// this decoder replaces libjpeg's before libjpeg has built (and checked) the table.
bool build_table(const JHUFF_TBL& h, bool ac, Table* t) {
  if (t->built && t->ac == ac && std::memcmp(t->source_bits, h.bits, sizeof(t->source_bits)) == 0 &&
      std::memcmp(t->source_huffval, h.huffval, sizeof(t->source_huffval)) == 0) {
    return true;
  }
  t->built = false;
  int huffsize[257];
  unsigned huffcode[257];
  int p = 0;
  for (int l = 1; l <= 16; ++l) {
    if (p + h.bits[l] > 256) return false;
    for (int i = 0; i < h.bits[l]; ++i) huffsize[p++] = l;
  }
  huffsize[p] = 0;
  const int count = p;
  unsigned code = 0;
  int si = huffsize[0];
  p = 0;
  while (huffsize[p]) {
    while (huffsize[p] == si) huffcode[p++] = code++;
    if (code >= (1u << si)) return false;  // no code of all ones (libjpeg's rule)
    code <<= 1;
    ++si;
  }
  if (!ac) {
    for (int i = 0; i < count; ++i) {
      if (h.huffval[i] > 15) return false;
    }
  }
  p = 0;
  for (int l = 1; l <= 16; ++l) {
    if (h.bits[l]) {
      t->valoffset[l] = p - static_cast<int>(huffcode[p]);
      p += h.bits[l];
      t->maxcode[l] = static_cast<std::int32_t>(huffcode[p - 1]);
    } else {
      t->maxcode[l] = -1;
    }
  }
  t->valoffset[17] = 0;
  t->maxcode[17] = 0xFFFFF;  // ends the search at 17 bits
  std::memcpy(t->huffval, h.huffval, sizeof(t->huffval));
  std::fill(std::begin(t->fast), std::end(t->fast), 0);
  for (int i = 0; i < count; ++i) {
    const int len = huffsize[i];
    if (len > kFastBits) continue;
    const int symbol = h.huffval[i];
    const int spare = kFastBits - len;
    const unsigned first = huffcode[i] << spare;
    for (unsigned j = 0; j < (1u << spare); ++j) {
      std::int32_t entry = len | (symbol << 8);
      const int s = symbol & 15;
      if (ac && s != 0 && len + s <= kFastBits) {
        // The value bits follow the code within the kFastBits looked at.
        const int bits = static_cast<int>(j >> (spare - s)) & ((1 << s) - 1);
        entry = (len + s) | kWhole | ((symbol >> 4) << 8) |
                static_cast<std::int32_t>(static_cast<std::uint32_t>(extend(bits, s)) << 16);
      }
      t->fast[first | j] = entry;
    }
  }
  if (ac) {
    for (unsigned v = 0; v < (1u << kSkipBits); ++v) t->skip[v] = skip_entry(*t, v);
  }
  std::memcpy(t->source_bits, h.bits, sizeof(t->source_bits));
  std::memcpy(t->source_huffval, h.huffval, sizeof(t->source_huffval));
  t->ac = ac;
  t->built = true;
  return true;
}

inline std::uint64_t load_be64(const std::uint8_t* p) {
  std::uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return __builtin_bswap64(v);
}

// The bit reader over the unstuffed data: `buf` holds `bits` valid bits, most significant first;
// `p` is the next byte to load.
struct Reader {
  const std::uint8_t* base;
  const std::uint8_t* p;
  std::uint64_t buf;
  int bits;

  void refill() {
    buf |= load_be64(p) >> bits;
    p += (63 - bits) >> 3;
    bits |= 56;
  }
  std::uint64_t position() const {
    return static_cast<std::uint64_t>(p - base) * 8 - static_cast<std::uint64_t>(bits);
  }
  void seek(std::uint64_t bit) {
    p = base + (bit >> 3);
    buf = 0;
    bits = 0;
    refill();
    drop(static_cast<int>(bit & 7));
  }
  void drop(int n) {
    buf <<= n;
    bits -= n;
  }
  int take(int n) {  // n in 1..16
    const int v = static_cast<int>(buf >> (64 - n));
    drop(n);
    return v;
  }
};

// Set where a code longer than 16 bits was read, for decode_mcu to warn as jdhuff.c does (here,
// where no decoder is at hand, a flag costs nothing on the path valid data take).
thread_local bool bad_code = false;

// A code longer than kFastBits (or no code): jdhuff.c's search from the next length up.
inline int slow_symbol(Reader& r, const Table& t) {
  int l = kFastBits + 1;
  std::int32_t code = static_cast<std::int32_t>(r.buf >> (64 - l));
  while (code > t.maxcode[l]) {
    ++l;
    code = static_cast<std::int32_t>(r.buf >> (64 - l));
  }
  r.drop(l);
  if (l > 16) {  // corrupt data: libjpeg warns and takes symbol 0
    bad_code = true;
    return 0;
  }
  return t.huffval[(code + t.valoffset[l]) & 0xFF];
}

// The symbol a fast[] entry `e` (not a whole coefficient) stands for, its code dropped.
inline int entry_symbol(Reader& r, const Table& t, std::int32_t e) {
  if (e != 0) {
    r.drop(e & 63);
    return (e >> 8) & 0xFF;
  }
  return slow_symbol(r, t);
}

inline int symbol(Reader& r, const Table& t) {
  return entry_symbol(r, t, t.fast[r.buf >> (64 - kFastBits)]);
}

struct Block {
  const Table* dc;
  const Table* ac;
  int component;  // index into the scan's components (the DC predictor)
  bool store_dc;  // libjpeg's dc_needed
  bool store_ac;  // libjpeg's ac_needed: the component is used and not decoded at 1/8
};

// The decoder's state for one decompression (one per thread, reused).
struct Decoder {
  Table tables[8];  // DC 0-3, AC 4-7
  Block blocks[kMaxBlocks];
  int blocks_in_mcu;
  int components;
  std::vector<std::uint8_t> data;  // unstuffed, then kPadBytes zeros
  std::uint64_t real_bits;
  Reader reader;
  std::int32_t dc[4];
  std::uint32_t reader_mcu;  // the MCU the reader stands at
  std::uint32_t calls;       // decode_mcu calls so far: the MCU asked for
  std::uint32_t call_col;    // calls % mcus_per_row
  std::uint32_t mcus_per_row;
  std::uint32_t total_mcus;
  std::uint32_t first_col;  // the MCU columns whose coefficients are used
  std::uint32_t last_col;
  bool insufficient;
  EntropyIndex* index;         // null: nothing recorded or used
  std::uint64_t decoded_mcus;  // over every decompression: jpeg_entropy_decoded_mcus()
};

Decoder& thread_decoder() {
  thread_local Decoder decoder;
  return decoder;
}

// Decodes one MCU at the reader into `mcu` (null: the values are dropped). Returns false where it
// took bits beyond the real data.
bool decode_one(Decoder& d, JBLOCKROW* mcu) {
  Reader r = d.reader;
  for (int b = 0; b < d.blocks_in_mcu; ++b) {
    const Block& blk = d.blocks[b];
    JCOEF* out = mcu != nullptr ? mcu[b][0] : nullptr;
    if (r.bits < 32) r.refill();
    int s = symbol(r, *blk.dc);
    int diff = 0;
    if (s) diff = extend(r.take(s), s);
    // libjpeg adds in int and lets corrupt data wrap; so does this, without undefined behaviour.
    const std::int32_t value = static_cast<std::int32_t>(
        static_cast<std::uint32_t>(d.dc[blk.component]) + static_cast<std::uint32_t>(diff));
    d.dc[blk.component] = value;
    if (out != nullptr && blk.store_dc) out[0] = static_cast<JCOEF>(value);
    const Table& ac = *blk.ac;
    if (out != nullptr && blk.store_ac) {
      for (int k = 1; k < 64; ++k) {
        if (r.bits < 32) r.refill();
        const std::int32_t e = ac.fast[r.buf >> (64 - kFastBits)];
        if (e & kWhole) {
          r.drop(e & 63);
          k += (e >> 8) & 15;
          out[kNaturalOrder[k]] = static_cast<JCOEF>(e >> 16);
          continue;
        }
        const int sym = entry_symbol(r, ac, e);
        const int run = sym >> 4;
        s = sym & 15;
        if (s) {
          k += run;
          out[kNaturalOrder[k]] = static_cast<JCOEF>(extend(r.take(s), s));
        } else {
          if (run != 15) break;
          k += 15;
        }
      }
    } else {
      for (int k = 1; k < 64; ++k) {
        if (r.bits < 32) r.refill();
        // Several symbols at once where they fit and cannot carry k past the block's end (each
        // one's loop test would have passed: k stays below 64 before the last).
        const int g = ac.skip[r.buf >> (64 - kSkipBits)];
        const int moved = (g >> 5) & 127;
        if ((g & 31) != 0 && k + moved <= 64) {
          r.drop(g & 31);
          if (g & kSkipEnds) break;
          k += moved - 1;  // the loop adds the last one
          continue;
        }
        const std::int32_t e = ac.fast[r.buf >> (64 - kFastBits)];
        if (e & kWhole) {
          r.drop(e & 63);
          k += (e >> 8) & 15;
          continue;
        }
        const int sym = entry_symbol(r, ac, e);
        const int run = sym >> 4;
        s = sym & 15;
        if (s) {
          k += run;
          r.drop(s);
        } else {
          if (run != 15) break;
          k += 15;
        }
      }
    }
  }
  d.reader = r;
  ++d.reader_mcu;
  ++d.decoded_mcus;
  return d.reader.position() <= d.real_bits;
}

// Records the reader's state where it stands on a point not yet known.
inline void record(Decoder& d, std::uint32_t col) {
  EntropyIndex& index = *d.index;
  if (col % index.step != 0) return;
  const std::uint32_t row = d.reader_mcu / d.mcus_per_row;
  EntropyPoint& point = index.points[row * index.points_per_row + col / index.step];
  if (point.bit != EntropyPoint::kUnknown) return;
  const std::uint64_t bit = d.reader.position();
  if (bit >= EntropyPoint::kUnknown) return;
  EntropyPoint fresh;
  for (int c = 0; c < d.components; ++c) {
    if (d.dc[c] < INT16_MIN || d.dc[c] > INT16_MAX) return;  // corrupt data: not worth a point
    fresh.dc[c] = static_cast<std::int16_t>(d.dc[c]);
  }
  fresh.bit = static_cast<std::uint32_t>(bit);
  point = fresh;
}

// Brings the reader to MCU `target` (> its position), jumping to the latest recorded point on
// the way and decoding the rest with the values dropped. False where the data ran out first.
bool advance(Decoder& d, std::uint32_t target) {
  if (d.index != nullptr) {
    const EntropyIndex& index = *d.index;
    std::uint32_t row = target / d.mcus_per_row;
    std::uint32_t col = (target % d.mcus_per_row) / index.step * index.step;
    // The latest known point after the reader and at or before the target.
    for (;;) {
      const std::uint32_t mcu = row * d.mcus_per_row + col;
      if (mcu <= d.reader_mcu) break;
      const EntropyPoint& point = index.points[row * index.points_per_row + col / index.step];
      // A point beyond this file's data was recorded from other bytes (a file replaced by one of
      // the same size, layout and fingerprint): seeking there would read past the buffer.
      if (point.bit != EntropyPoint::kUnknown && point.bit <= d.real_bits) {
        d.reader.seek(point.bit);
        for (int c = 0; c < d.components; ++c) d.dc[c] = point.dc[c];
        d.reader_mcu = mcu;
        break;
      }
      if (col == 0) {
        if (row == 0) break;
        --row;
        col = (d.mcus_per_row - 1) / index.step * index.step;
      } else {
        col -= index.step;
      }
    }
  }
  std::uint32_t col = d.reader_mcu % d.mcus_per_row;
  while (d.reader_mcu < target) {
    if (d.index != nullptr) record(d, col);
    if (!decode_one(d, nullptr)) return false;
    if (++col == d.mcus_per_row) col = 0;
  }
  return true;
}

// Corrupt data, warned of as jdhuff.c warns (the caller refuses the picture: jpeg_region.h). The
// points recorded from this decode are dropped: a later decode starting from one past the damage
// would not see it.
void warn(j_decompress_ptr cinfo, Decoder& d, int code) {
  if (d.index != nullptr) d.index->fingerprint = 0;
  WARNMS(cinfo, code);
}

void run_out(j_decompress_ptr cinfo, Decoder& d) {
  d.insufficient = true;
  warn(cinfo, d, JWRN_HIT_MARKER);
}

void warn_bad_code(j_decompress_ptr cinfo, Decoder& d) {
  if (!bad_code) return;
  bad_code = false;
  warn(cinfo, d, JWRN_HUFF_BAD_CODE);
}

boolean decode_mcu(j_decompress_ptr cinfo, JBLOCKROW* mcu) {
  Decoder& d = *static_cast<Decoder*>(cinfo->client_data);
  const std::uint32_t call = d.calls++;
  const std::uint32_t col = d.call_col;
  if (++d.call_col == d.mcus_per_row) d.call_col = 0;
  // After the data ran out every MCU stays zero, as in jdhuff.c; the coefficient controller has
  // zeroed the buffer. Skipped rows and columns outside the crop are not needed at all.
  if (d.insufficient || mcu == nullptr || col < d.first_col || col > d.last_col ||
      call >= d.total_mcus) {
    return TRUE;
  }
  if (d.reader_mcu < call && !advance(d, call)) {
    warn_bad_code(cinfo, d);
    run_out(cinfo, d);
    return TRUE;
  }
  if (d.index != nullptr) record(d, col);
  const bool whole = decode_one(d, mcu);
  warn_bad_code(cinfo, d);
  if (!whole) run_out(cinfo, d);
  return TRUE;
}

// What ties recorded points to one file's bytes: a hash of all of them, four independent lanes
// of multiply-xor, so that it costs a few microseconds on a photo (its decode costs a millisecond).
std::uint64_t fingerprint(const std::uint8_t* data, std::size_t size) {
  constexpr std::uint64_t kMul = 0x9E3779B97F4A7C15ull;
  std::uint64_t lane[4] = {size, size ^ 0x5851F42D4C957F2Dull, ~size, size * kMul};
  std::size_t i = 0;
  for (; i + 32 <= size; i += 32) {
    for (int l = 0; l < 4; ++l) {
      std::uint64_t w;
      std::memcpy(&w, data + i + 8 * l, 8);
      lane[l] = (lane[l] ^ w) * kMul;
      lane[l] ^= lane[l] >> 29;
    }
  }
  std::uint64_t h = lane[0] ^ (lane[1] * 3) ^ (lane[2] * 5) ^ (lane[3] * 7);
  for (; i < size; ++i) h = (h ^ data[i]) * kMul;
  return h ^ (h >> 31);
}

// The entropy-coded data without byte stuffing, up to the first marker (or the end, where
// libjpeg's memory source inserts an EOI), then zeros. False for data with FF FF... 00 in it, which
// no encoder writes: jdhuff.c's slow path reads it as one FF byte, its fast path as a marker, and
// which of the two meets it (and what the fast path's aborted MCU leaves in the block) depends on
// its read-ahead; libjpeg alone decodes such a file.
bool unstuff(const std::uint8_t* p, std::size_t n, std::vector<std::uint8_t>& out) {
  out.resize(n + kPadBytes);
  std::uint8_t* o = out.data();
  std::size_t i = 0;
  while (i < n) {
    const void* ff = std::memchr(p + i, 0xFF, n - i);
    const std::size_t run =
        ff == nullptr ? n - i
                      : static_cast<std::size_t>(static_cast<const std::uint8_t*>(ff) - p) - i;
    std::memcpy(o, p + i, run);
    o += run;
    i += run;
    if (i >= n) break;
    std::size_t j = i + 1;
    while (j < n && p[j] == 0xFF) ++j;
    if (j >= n || p[j] != 0) break;  // a marker, or the end: the real data end here
    if (j > i + 1) return false;
    *o++ = 0xFF;
    i = j + 1;
  }
  const std::size_t real = static_cast<std::size_t>(o - out.data());
  std::memset(o, 0, kPadBytes);
  out.resize(real + kPadBytes);
  return true;
}

// Whether the file is one this decoder reads exactly as libjpeg does.
bool handled(const jpeg_decompress_struct& c) {
  return !c.progressive_mode && !c.arith_code && c.restart_interval == 0 && c.data_precision == 8 &&
         c.comps_in_scan == c.num_components && c.comps_in_scan >= 1 && c.comps_in_scan <= 3 &&
         c.blocks_in_MCU >= 1 && c.blocks_in_MCU <= kMaxBlocks && c.MCUs_per_row > 0 &&
         c.MCU_rows_in_scan > 0 && c.src != nullptr && c.entropy != nullptr;
}

// Whether libjpeg's entropy decoder is laid out as libjpeg_private.h says: a version it was checked
// against, and (probed once, on the first file) both head members pointing into libjpeg's code.
// Elsewhere libjpeg decodes every file itself.
bool layout_known(j_decompress_ptr cinfo) {
  if (!libjpeg_private::kChecked) return false;
  static const bool probed = libjpeg_private::head_points_into_libjpeg(cinfo);
  return probed;
}

// Sizes the file's index for this layout (clearing points recorded from other bytes), within the
// store's budget; false where there is no room.
bool prepare_index(EntropyIndex& index, EntropyIndexStore& store, std::uint64_t print,
                   std::uint32_t mcus_per_row, std::uint32_t mcu_rows) {
  if (index.fingerprint == print && index.mcus_per_row == mcus_per_row &&
      index.mcu_rows == mcu_rows && !index.points.empty()) {
    return true;
  }
  // About eight points a row: the left edge of a crop starts at most a step's width early.
  const std::uint32_t step = std::max<std::uint32_t>(1, (mcus_per_row + 7) / 8);
  const std::uint32_t per_row = (mcus_per_row + step - 1) / step;
  const std::size_t count = static_cast<std::size_t>(per_row) * mcu_rows;
  const std::size_t old_bytes = index.points.capacity() * sizeof(EntropyPoint);
  const std::size_t new_bytes = count * sizeof(EntropyPoint);
  if (new_bytes > old_bytes && !store.reserve(new_bytes - old_bytes)) return false;
  std::vector<EntropyPoint>(count).swap(index.points);
  if (old_bytes > new_bytes) store.release(old_bytes - new_bytes);
  index.fingerprint = print;
  index.mcus_per_row = mcus_per_row;
  index.mcu_rows = mcu_rows;
  index.step = step;
  index.points_per_row = per_row;
  return true;
}

}  // namespace

std::uint64_t jpeg_entropy_decoded_mcus() {
  return thread_decoder().decoded_mcus;
}

bool install_entropy_decoder(jpeg_decompress_struct* cinfo, const std::uint8_t* data,
                             std::size_t size, JDIMENSION x_offset, JDIMENSION x_width,
                             EntropyLease* lease) {
  if (!jpeg_entropy_decoder_enabled() || !handled(*cinfo) || !layout_known(cinfo)) return false;
  const std::uint8_t* start = cinfo->src->next_input_byte;
  const std::size_t left = cinfo->src->bytes_in_buffer;
  if (start < data || start + left > data + size) return false;  // not our memory source
  const std::uint64_t total_mcus =
      static_cast<std::uint64_t>(cinfo->MCUs_per_row) * cinfo->MCU_rows_in_scan;
  if (total_mcus >= 0xFFFFFFFFull || left >= (std::size_t{1} << 28)) return false;

  Decoder& d = thread_decoder();
  for (int b = 0; b < cinfo->blocks_in_MCU; ++b) {
    const jpeg_component_info* comp = cinfo->cur_comp_info[cinfo->MCU_membership[b]];
    const JHUFF_TBL* dc = cinfo->dc_huff_tbl_ptrs[comp->dc_tbl_no];
    const JHUFF_TBL* ac = cinfo->ac_huff_tbl_ptrs[comp->ac_tbl_no];
    if (dc == nullptr || ac == nullptr) return false;
  }
  bool built[8] = {};
  for (int b = 0; b < cinfo->blocks_in_MCU; ++b) {
    const int ci = cinfo->MCU_membership[b];
    const jpeg_component_info* comp = cinfo->cur_comp_info[ci];
    Block& blk = d.blocks[b];
    const int dc_no = comp->dc_tbl_no & 3;
    const int ac_no = comp->ac_tbl_no & 3;
    if (!built[dc_no] && !build_table(*cinfo->dc_huff_tbl_ptrs[dc_no], false, &d.tables[dc_no])) {
      return false;
    }
    if (!built[4 + ac_no] &&
        !build_table(*cinfo->ac_huff_tbl_ptrs[ac_no], true, &d.tables[4 + ac_no])) {
      return false;
    }
    built[dc_no] = built[4 + ac_no] = true;
    blk.dc = &d.tables[dc_no];
    blk.ac = &d.tables[4 + ac_no];
    blk.component = ci;
    blk.store_dc = comp->component_needed != 0;
    blk.store_ac = comp->component_needed != 0 && dct_scaled_size(*comp) > 1;
  }
  d.blocks_in_mcu = cinfo->blocks_in_MCU;
  d.components = cinfo->comps_in_scan;
  // The unstuffed copy keeps its capacity from file to file, up to what the pixel buffers keep: an
  // unusually large file's is given back rather than held by the thread for good.
  if (d.data.capacity() > kKeptDataBytes && left + kPadBytes <= kKeptDataBytes) {
    std::vector<std::uint8_t>().swap(d.data);
  }
  if (!unstuff(start, left, d.data)) return false;
  d.real_bits = static_cast<std::uint64_t>(d.data.size() - kPadBytes) * 8;
  d.reader = Reader{d.data.data(), d.data.data(), 0, 0};
  d.reader.refill();
  std::fill(std::begin(d.dc), std::end(d.dc), 0);
  d.reader_mcu = 0;
  d.calls = 0;
  d.call_col = 0;
  d.mcus_per_row = cinfo->MCUs_per_row;
  d.total_mcus = static_cast<std::uint32_t>(total_mcus);
  d.first_col = 0;
  d.last_col = d.mcus_per_row - 1;
  if (x_width > 0) {
    // jpeg_crop_scanline's iMCU columns: the only ones it inverse-transforms.
    const JDIMENSION align =
        cinfo->comps_in_scan == 1 && cinfo->num_components == 1
            ? static_cast<JDIMENSION>(min_dct_scaled_size(*cinfo))
            : static_cast<JDIMENSION>(min_dct_scaled_size(*cinfo) * cinfo->max_h_samp_factor);
    if (align > 0) {
      d.first_col = std::min<std::uint32_t>(x_offset / align, d.mcus_per_row - 1);
      d.last_col =
          std::min<std::uint32_t>((x_offset + x_width + align - 1) / align - 1, d.mcus_per_row - 1);
    }
  }
  d.insufficient = false;
  bad_code = false;
  d.index = nullptr;
  if (lease != nullptr && lease->index() != nullptr &&
      prepare_index(*lease->index(), *lease->store(), fingerprint(data, size), cinfo->MCUs_per_row,
                    cinfo->MCU_rows_in_scan)) {
    d.index = lease->index();
  }
  cinfo->client_data = &d;
  libjpeg_private::entropy_head(cinfo)->decode_mcu = decode_mcu;
  return true;
}
#else
std::uint64_t jpeg_entropy_decoded_mcus() {
  return 0;
}
#endif

}  // namespace dl::data
