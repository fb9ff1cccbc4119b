// The protobuf wire writer of the Perfetto exporter (tools/dump/perfetto_wire.h)
// against byte strings worked out by hand from the protobuf encoding rules.
#include "tools/dump/perfetto_wire.h"

#include <gtest/gtest.h>

#include <string>

namespace dlprof::dump {
namespace {

std::string Bytes(std::initializer_list<int> bytes) {
  std::string s;
  for (int b : bytes) s.push_back(static_cast<char>(b));
  return s;
}

TEST(PerfettoWire, VarintSizes) {
  EXPECT_EQ(VarintSize(0), 1u);
  EXPECT_EQ(VarintSize(127), 1u);
  EXPECT_EQ(VarintSize(128), 2u);
  EXPECT_EQ(VarintSize(16383), 2u);
  EXPECT_EQ(VarintSize(16384), 3u);
  EXPECT_EQ(VarintSize(UINT64_MAX), 10u);
}

TEST(PerfettoWire, Varints) {
  ProtoWriter w;
  w.Varint(1, 150);  // the protobuf documentation's example: 08 96 01
  EXPECT_EQ(w.data(), Bytes({0x08, 0x96, 0x01}));
  w.Clear();
  w.Varint(8, 0);  // TracePacket.timestamp = 0
  w.Varint(10, 1);
  EXPECT_EQ(w.data(), Bytes({0x40, 0x00, 0x50, 0x01}));
  w.Clear();
  w.Int(4, -1);  // int64: ten bytes
  EXPECT_EQ(w.data(), Bytes({0x20, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}));
  w.Clear();
  w.Varint(60, 1);  // a two-byte tag: (60 << 3) = 480
  EXPECT_EQ(w.data(), Bytes({0xe0, 0x03, 0x01}));
}

TEST(PerfettoWire, Fixed64IsLittleEndian) {
  ProtoWriter w;
  w.Fixed64(47, 0x0102030405060708ull);  // TrackEvent.flow_ids: tag (47 << 3) | 1 = 377
  EXPECT_EQ(w.data(), Bytes({0xf9, 0x02, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01}));
}

TEST(PerfettoWire, WritingThroughAPointerWritesTheSameBytes) {
  ProtoWriter by_call, by_pointer;
  const size_t packet = by_call.BeginNested(1);
  by_call.Varint(8, 300);
  by_call.Fixed64(47, 0x0102030405060708ull);
  const size_t event = by_call.BeginNested(11);
  by_call.Varint(9, 1);
  by_call.EndNested(event);
  by_call.EndNested(packet);

  char* body = ProtoWriter::PutBegin(by_pointer.Room(64), 1);
  char* p = ProtoWriter::PutField(body, 8, 300);
  p = ProtoWriter::PutFixed64(p, 47, 0x0102030405060708ull);
  char* inner = ProtoWriter::PutBegin(p, 11);
  p = ProtoWriter::PutField(inner, 9, 1);
  ProtoWriter::EndShort(inner, p);
  ProtoWriter::EndShort(body, p);
  by_pointer.Commit(p);
  EXPECT_EQ(by_pointer.data(), by_call.data());
  // 3 (timestamp) + 10 (flow id) + 4 (track event) bytes of body.
  EXPECT_EQ(by_pointer.data().substr(0, 5), Bytes({0x0a, 17, 0x40, 0xac, 0x02}));

  // A body of 128 bytes or more begun through the pointer is ended by
  // EndNested at its offset, which makes room for the longer length.
  ProtoWriter w;
  char* big = ProtoWriter::PutBegin(w.Room(300), 2);
  const size_t big_at = w.Offset(big);
  p = big;
  for (int i = 0; i < 100; ++i) p = ProtoWriter::PutField(p, 1, 1);
  w.Commit(p);
  w.EndNested(big_at);
  ASSERT_EQ(w.size(), 203u);
  EXPECT_EQ(w.data().substr(0, 5), Bytes({0x12, 0xc8, 0x01, 0x08, 0x01}));
}

TEST(PerfettoWire, StringsAndNestedMessages) {
  ProtoWriter w;
  size_t packet = w.BeginNested(1);
  size_t names = w.BeginNested(2);
  w.Varint(1, 3);
  w.Bytes(2, "read");
  w.EndNested(names);
  w.EndNested(packet);
  EXPECT_EQ(w.data(), Bytes({0x0a, 0x0a, 0x12, 0x08, 0x08, 0x03, 0x12, 0x04, 'r', 'e', 'a', 'd'}));
}

TEST(PerfettoWire, LongNestedMessagesMoveTheirBody) {
  // 300 bytes of payload: the nested length takes two bytes (0xac 0x02),
  // and the outer message's length counts the extra byte.
  ProtoWriter w;
  size_t outer = w.BeginNested(1);
  size_t inner = w.BeginNested(2);
  const std::string payload(297, 'x');
  w.Bytes(3, payload);  // 1 tag + 2 length + 297 = 300 bytes
  w.EndNested(inner);
  w.EndNested(outer);
  const std::string d(w.data());
  ASSERT_EQ(d.size(), 1u + 2 + 1 + 2 + 300);
  EXPECT_EQ(d.substr(0, 6), Bytes({0x0a, 0xaf, 0x02, 0x12, 0xac, 0x02}));  // 303, 300
  EXPECT_EQ(d.substr(6, 3), Bytes({0x1a, 0xa9, 0x02}));                    // 297
  EXPECT_EQ(d.substr(9), payload);
}

TEST(PerfettoWire, EmptyNestedMessage) {
  ProtoWriter w;
  w.EndNested(w.BeginNested(11));
  EXPECT_EQ(w.data(), Bytes({0x5a, 0x00}));
}

}  // namespace
}  // namespace dlprof::dump
