// LEB128 varints and zigzag, the integer coding of every block column.
#ifndef DLPROF_LIB_FORMAT_VARINT_H_
#define DLPROF_LIB_FORMAT_VARINT_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace dlprof::format {

inline uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t UnZigZag(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}

// Appends `v` to `out`. At most 10 bytes.
inline void PutVarint(std::vector<uint8_t>& out, uint64_t v) {
  uint8_t tmp[10];
  size_t n = 0;
  while (v >= 0x80) {
    tmp[n++] = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  tmp[n++] = static_cast<uint8_t>(v);
  out.insert(out.end(), tmp, tmp + n);
}

// The 7-bit groups of up to eight varint bytes (top bits clear), packed:
// 8 x 7 -> 4 x 14 -> 2 x 28 -> 56 bits.
inline uint64_t PackGroups(uint64_t v) {
  v = (v & 0x007f007f007f007full) | ((v & 0x7f007f007f007f00ull) >> 1);
  v = (v & 0x00003fff00003fffull) | ((v & 0x3fff00003fff0000ull) >> 2);
  return (v & 0x000000000fffffffull) | ((v & 0x0fffffff00000000ull) >> 4);
}

// The same in one instruction, BMI2's PEXT, for a caller that has checked
// HasFastPext() (lib/format/cpu_features.h). Written in assembly so that the
// compiler is never asked for BMI2: the binary runs on any x86-64.
inline uint64_t PackGroupsPext(uint64_t bytes) {
#if defined(__x86_64__) && defined(__GNUC__)
  uint64_t v;
  asm("pextq %2, %1, %0" : "=r"(v) : "r"(bytes), "r"(0x7f7f7f7f7f7f7f7full));
  return v;
#else
  return PackGroups(bytes & 0x7f7f7f7f7f7f7f7full);
#endif
}

// The stop-mask and word-at-a-time readers below take bytes in a word's
// little-endian order.
constexpr bool kLittleEndian = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;

// The value of a varint from its bytes (at most 8) in a little-endian word,
// the bytes after it zero.
template <bool kPext>
inline uint64_t VarintFromWord(uint64_t bytes) {
  return kPext ? PackGroupsPext(bytes) : PackGroups(bytes & 0x7f7f7f7f7f7f7f7full);
}

// Bit i set: byte i of the 64 at `p` ends a varint (its top bit is clear).
inline uint64_t StopMask64Portable(const uint8_t* p) {
  uint64_t mask = 0;
  for (int k = 0; k < 8; ++k) {
    uint64_t w;
    __builtin_memcpy(&w, p + 8 * k, sizeof w);
    // One bit per byte at bits 0, 8, ..., 56 (of a little-endian word); the
    // multiply gathers them in the top byte (no two partial products meet
    // there).
    const uint64_t stops = (~w & 0x8080808080808080ull) >> 7;
    mask |= ((stops * 0x0102040810204080ull) >> 56) << (8 * k);
  }
  return mask;
}
inline uint64_t StopMask64(const uint8_t* p) {
#if defined(__SSE2__)
  // The top bits of 16 bytes in one instruction (SSE2: every x86-64).
  uint64_t mask = 0;
  for (int k = 0; k < 4; ++k) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    mask |= static_cast<uint64_t>(static_cast<uint16_t>(~_mm_movemask_epi8(v))) << (16 * k);
  }
  return mask;
#else
  return StopMask64Portable(p);
#endif
}

// A varint from `*p`, advancing it, for a caller that knows 10 bytes are
// there. Reads what ByteReader::Varint reads; where that one would fail (no
// end within 10 bytes) this sets `*bad`.
//
// One byte is the common case and costs a compare. Up to eight bytes are
// decoded from one little-endian word without a loop, so a column whose
// lengths vary (random offsets, start deltas) costs no mispredicted exits:
//
//   word   1vvvvvvv 1vvvvvvv 0vvvvvvv xxxxxxxx ...   (byte 0 first)
//   stops  the clear top bits; the lowest one ends the varint
//   keep   the bytes up to it, then their 7-bit groups packed
//          (VarintFromWord)
template <bool kPext = false>
inline uint64_t UncheckedVarint(const uint8_t** p, bool* bad) {
  const uint8_t* q = *p;
  if (*q < 0x80) {
    *p = q + 1;
    return *q;
  }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  uint64_t w;
  __builtin_memcpy(&w, q, sizeof w);
  const uint64_t stops = ~w & 0x8080808080808080ull;
  if (stops != 0) {
    const int stop_bit = __builtin_ctzll(stops);  // 7, 15, ..., 63
    const uint64_t keep = w & (stops ^ (stops - 1));
    *p = q + (stop_bit + 1) / 8;
    return VarintFromWord<kPext>(keep);
  }
#endif
  uint64_t v = *q++ & 0x7f;
  for (int shift = 7;; shift += 7) {
    const uint8_t b = *q++;
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (b < 0x80) break;
    if (shift == 63) {
      *bad = true;
      break;
    }
  }
  *p = q;
  return v;
}

// Bounds-checked reader over untrusted bytes. After any failure ok() is false
// and every further read returns 0, so a decoder can check once at the end.
class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}

  uint64_t Varint() {
    // Most column values are small deltas: one byte.
    if (p_ != end_ && *p_ < 0x80) return *p_++;
    return SlowVarint();
  }
  int64_t SignedVarint() { return UnZigZag(Varint()); }

  // Returns a pointer to the next `n` bytes and skips them, or nullptr.
  const uint8_t* Bytes(size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) {
      Fail();
      return nullptr;
    }
    const uint8_t* r = p_;
    p_ += n;
    return r;
  }

  bool ok() const { return ok_; }
  bool at_end() const { return p_ == end_; }
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }
  const uint8_t* position() const { return p_; }
  // Moves past `n` bytes the caller read through position(); n <= remaining().
  void Skip(size_t n) { p_ += n; }

 private:
  uint64_t SlowVarint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) return Fail();
      uint8_t b = *p_++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (b < 0x80) return v;
    }
    return Fail();
  }
  uint64_t Fail() {
    ok_ = false;
    p_ = end_;
    return 0;
  }
  const uint8_t* p_;
  const uint8_t* end_;
  bool ok_ = true;
};

}  // namespace dlprof::format

#endif  // DLPROF_LIB_FORMAT_VARINT_H_
