// A small protobuf wire-format writer for the Perfetto trace exporter
// (perfetto_output.cc): varints, fixed64, length-delimited fields, and nested
// messages whose length is back-patched when they end. dlprof writes a few
// Perfetto messages only, so it needs no protobuf library.
//
//   ProtoWriter w;
//   size_t packet = w.BeginNested(1);   // Trace.packet
//   w.Varint(8, timestamp);             // TracePacket.timestamp
//   w.EndNested(packet);
//
// A nested message reserves one byte for its length; a message of 128 bytes
// or more moves its body up when it ends (rare: most packets are short).
// Nested messages end in the reverse order they began.
//
// The exporter writes its most frequent packets (a slice's BEGIN and END)
// through a pointer instead, with one check for room per packet:
//
//   char* packet = ProtoWriter::PutBegin(w.Room(64), 1);
//   char* p = ProtoWriter::PutField(packet, 8, timestamp);
//   ProtoWriter::EndShort(packet, p);  // a body known to be under 128 bytes
//   w.Commit(p);
#ifndef DLPROF_TOOLS_DUMP_PERFETTO_WIRE_H_
#define DLPROF_TOOLS_DUMP_PERFETTO_WIRE_H_

#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace dlprof::dump {

// Bytes the varint encoding of `v` takes (1 to 10).
size_t VarintSize(uint64_t v);

class ProtoWriter {
 public:
  // Wire types (protobuf encoding).
  static constexpr uint32_t kVarint = 0, kFixed64 = 1, kLengthDelimited = 2;

  // (Each writer below takes a pointer to the end once and stores the new
  // end once: written through a char*, `len_` would otherwise be reloaded
  // and stored after every byte, as a char may alias anything.)
  void Varint(uint32_t field, uint64_t v) {
    char* p = Room(20);
    p = PutVarint(p, (uint64_t{field} << 3) | kVarint);
    Commit(PutVarint(p, v));
  }
  // int32/int64 fields: negative values take ten bytes, as protobuf says.
  void Int(uint32_t field, int64_t v) { Varint(field, static_cast<uint64_t>(v)); }
  void Fixed64(uint32_t field, uint64_t v) { Commit(PutFixed64(Room(18), field, v)); }
  void Bytes(uint32_t field, std::string_view s) {
    char* p = Room(20 + s.size());
    p = PutVarint(p, (uint64_t{field} << 3) | kLengthDelimited);
    p = PutVarint(p, s.size());
    std::memcpy(p, s.data(), s.size());
    Commit(p + s.size());
  }
  // Already-encoded message bytes as a nested field.
  void Message(uint32_t field, std::string_view encoded) { Bytes(field, encoded); }

  // Starts a nested message; returns what EndNested needs.
  size_t BeginNested(uint32_t field) {
    char* p = Room(11);
    p = PutVarint(p, (uint64_t{field} << 3) | kLengthDelimited);
    *p++ = '\0';
    Commit(p);
    return len_;
  }
  void EndNested(size_t begun) {
    const size_t length = len_ - begun;
    if (length < 0x80) {
      buf_[begun - 1] = static_cast<char>(length);  // the byte reserved for it
    } else {
      EndLongNested(begun);
    }
  }

  void Tag(uint32_t field, uint32_t wire_type) {
    Commit(PutVarint(Room(10), (uint64_t{field} << 3) | wire_type));
  }
  void RawVarint(uint64_t v) { Commit(PutVarint(Room(10), v)); }

  std::string_view data() const { return std::string_view(buf_.data(), len_); }
  size_t size() const { return len_; }
  void Clear() { len_ = 0; }

  // Writing through a pointer, for a message written in one go: Room(n)
  // is the end of what is written, with room for `n` more bytes; the Put*
  // functions write there and return the new end; Commit(end) keeps them.
  char* Room(size_t n) {
    if (buf_.size() - len_ < n) buf_.resize(std::max(buf_.size() * 2, len_ + n + 256));
    return buf_.data() + len_;
  }
  void Commit(char* end) { len_ = static_cast<size_t>(end - buf_.data()); }
  static char* PutVarint(char* p, uint64_t v) {
    if (v < 0x80) {  // tags, iids, most deltas
      *p = static_cast<char>(v);
      return p + 1;
    }
    do {
      *p++ = static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    } while (v >= 0x80);
    *p = static_cast<char>(v);
    return p + 1;
  }
  static char* PutField(char* p, uint32_t field, uint64_t v) {
    return PutVarint(PutVarint(p, (uint64_t{field} << 3) | kVarint), v);
  }
  static char* PutFixed64(char* p, uint32_t field, uint64_t v) {
    p = PutVarint(p, (uint64_t{field} << 3) | kFixed64);
    for (int i = 0; i < 8; ++i) *p++ = static_cast<char>(v >> (8 * i));  // little-endian
    return p;
  }
  // A nested message begun at `p`: returns where its body starts (its
  // length byte is just before). EndShort writes the length of a body
  // known to be under 128 bytes.
  static char* PutBegin(char* p, uint32_t field) {
    p = PutVarint(p, (uint64_t{field} << 3) | kLengthDelimited);
    *p = '\0';
    return p + 1;
  }
  static void EndShort(char* body, char* end) { body[-1] = static_cast<char>(end - body); }
  // Where PutBegin's body starts, as BeginNested returns it (for EndNested).
  size_t Offset(const char* p) const { return static_cast<size_t>(p - buf_.data()); }

 private:
  void EndLongNested(size_t begun);

  std::string buf_;  // buf_[0, len_) is written
  size_t len_ = 0;
};

}  // namespace dlprof::dump

#endif  // DLPROF_TOOLS_DUMP_PERFETTO_WIRE_H_
