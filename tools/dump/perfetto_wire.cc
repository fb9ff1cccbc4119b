// The protobuf wire-format writer of perfetto_wire.h.
#include "tools/dump/perfetto_wire.h"

namespace dlprof::dump {

size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// A body of 128 bytes or more needs more than the one byte reserved for its
// length.
void ProtoWriter::EndLongNested(size_t begun) {
  const size_t length = len_ - begun;
  const size_t width = VarintSize(length);
  if (width > 1) {
    // One byte was reserved: move the body up to make room for the rest.
    Room(width - 1);
    std::memmove(&buf_[begun + width - 1], &buf_[begun], length);
    len_ += width - 1;
  }
  size_t at = begun - 1;
  uint64_t v = length;
  while (v >= 0x80) {
    buf_[at++] = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  buf_[at] = static_cast<char>(v);
}

}  // namespace dlprof::dump
