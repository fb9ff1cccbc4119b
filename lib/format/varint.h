// LEB128 varints and zigzag, the integer coding of every block column.
#ifndef DLPROF_LIB_FORMAT_VARINT_H_
#define DLPROF_LIB_FORMAT_VARINT_H_

#include <cstddef>
#include <cstdint>
#include <vector>

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

// A varint from `*p`, advancing it, for a caller that knows 10 bytes are
// there. Reads what ByteReader::Varint reads; where that one would fail (no
// end within 10 bytes) this sets `*bad`.
inline uint64_t UncheckedVarint(const uint8_t** p, bool* bad) {
  const uint8_t* q = *p;
  uint64_t v = *q++;
  if (v >= 0x80) {
    v &= 0x7f;
    for (int shift = 7;; shift += 7) {
      const uint8_t b = *q++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (b < 0x80) break;
      if (shift == 63) {
        *bad = true;
        break;
      }
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
