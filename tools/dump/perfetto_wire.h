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

  void Varint(uint32_t field, uint64_t v) {
    Reserve(20);
    PutVarint((uint64_t{field} << 3) | kVarint);
    PutVarint(v);
  }
  // int32/int64 fields: negative values take ten bytes, as protobuf says.
  void Int(uint32_t field, int64_t v) { Varint(field, static_cast<uint64_t>(v)); }
  void Fixed64(uint32_t field, uint64_t v);
  void Bytes(uint32_t field, std::string_view s) {
    Reserve(20 + s.size());
    PutVarint((uint64_t{field} << 3) | kLengthDelimited);
    PutVarint(s.size());
    std::memcpy(&buf_[len_], s.data(), s.size());
    len_ += s.size();
  }
  // Already-encoded message bytes as a nested field.
  void Message(uint32_t field, std::string_view encoded) { Bytes(field, encoded); }

  // Starts a nested message; returns what EndNested needs.
  size_t BeginNested(uint32_t field) {
    Reserve(11);
    PutVarint((uint64_t{field} << 3) | kLengthDelimited);
    buf_[len_++] = '\0';
    return len_;
  }
  void EndNested(size_t begun);

  void Tag(uint32_t field, uint32_t wire_type) {
    Reserve(10);
    PutVarint((uint64_t{field} << 3) | wire_type);
  }
  void RawVarint(uint64_t v) {
    Reserve(10);
    PutVarint(v);
  }

  std::string_view data() const { return std::string_view(buf_.data(), len_); }
  size_t size() const { return len_; }
  void Clear() { len_ = 0; }

 private:
  void Reserve(size_t n) {
    if (buf_.size() - len_ < n) buf_.resize(std::max(buf_.size() * 2, len_ + n + 256));
  }
  void PutVarint(uint64_t v) {  // room reserved
    while (v >= 0x80) {
      buf_[len_++] = static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    buf_[len_++] = static_cast<char>(v);
  }

  std::string buf_;  // buf_[0, len_) is written
  size_t len_ = 0;
};

}  // namespace dlprof::dump

#endif  // DLPROF_TOOLS_DUMP_PERFETTO_WIRE_H_
