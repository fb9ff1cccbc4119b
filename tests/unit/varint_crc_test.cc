// The trace format's primitives: varints (LEB128, zigzag, the decoder's
// unchecked fast path and stop-byte masks) and CRC-32C, against their
// definitions. (The block codec built on them: block_codec_test.cc.)
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>

#include "lib/format/cpu_features.h"
#include "lib/format/crc32c.h"
#include "lib/format/varint.h"

namespace dlprof::format {
namespace {

constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();

std::vector<uint8_t> Varint(uint64_t v) {
  std::vector<uint8_t> out;
  PutVarint(out, v);
  return out;
}

TEST(Varint, ZigZagMapsSmallMagnitudesToSmallCodes) {
  EXPECT_EQ(ZigZag(0), 0u);
  EXPECT_EQ(ZigZag(-1), 1u);
  EXPECT_EQ(ZigZag(1), 2u);
  EXPECT_EQ(ZigZag(-2), 3u);
  EXPECT_EQ(ZigZag(kI64Max), kU64Max - 1);
  EXPECT_EQ(ZigZag(kI64Min), kU64Max);
  for (int64_t v : {int64_t{0}, int64_t{1}, int64_t{-1}, int64_t{63}, int64_t{-64}, kI64Max,
                    kI64Min, kI64Min + 1, int64_t{1} << 40}) {
    EXPECT_EQ(UnZigZag(ZigZag(v)), v) << v;
  }
}

TEST(Varint, EncodesLeb128) {
  EXPECT_EQ(Varint(0), (std::vector<uint8_t>{0x00}));
  EXPECT_EQ(Varint(127), (std::vector<uint8_t>{0x7f}));
  EXPECT_EQ(Varint(128), (std::vector<uint8_t>{0x80, 0x01}));
  EXPECT_EQ(Varint(300), (std::vector<uint8_t>{0xac, 0x02}));
  std::vector<uint8_t> max = Varint(kU64Max);
  ASSERT_EQ(max.size(), 10u);
  EXPECT_EQ(max.back(), 0x01);
}

TEST(Varint, RoundTripsAtEveryWidth) {
  for (int bits = 0; bits <= 64; ++bits) {
    for (uint64_t v : {bits == 64 ? kU64Max : (uint64_t{1} << bits) - 1,
                       bits == 64 ? 0 : uint64_t{1} << bits}) {
      std::vector<uint8_t> b = Varint(v);
      ByteReader r(b.data(), b.size());
      EXPECT_EQ(r.Varint(), v);
      EXPECT_TRUE(r.ok());
      EXPECT_TRUE(r.at_end());
    }
  }
}

TEST(Varint, ReaderFailsOnTruncationAndOverlongInput) {
  std::vector<uint8_t> cut = {0x80, 0x80};
  ByteReader r1(cut.data(), cut.size());
  EXPECT_EQ(r1.Varint(), 0u);
  EXPECT_FALSE(r1.ok());
  EXPECT_EQ(r1.Varint(), 0u);  // stays failed

  std::vector<uint8_t> eleven(10, 0x80);
  eleven.push_back(0x01);
  ByteReader r2(eleven.data(), eleven.size());
  r2.Varint();
  EXPECT_FALSE(r2.ok());

  std::vector<uint8_t> two = {1, 2};
  ByteReader r3(two.data(), two.size());
  EXPECT_NE(r3.Bytes(2), nullptr);
  EXPECT_EQ(r3.Bytes(1), nullptr);
  EXPECT_FALSE(r3.ok());
}

// The decoder's fast path must read exactly what the checked reader reads,
// and fail exactly where it fails, on valid varints of every width and on
// arbitrary bytes (including non-minimal and overlong encodings).
TEST(Varint, UncheckedMatchesCheckedReader) {
  auto check = [](const std::vector<uint8_t>& bytes) {
    std::vector<uint8_t> padded = bytes;
    padded.resize(bytes.size() + 10, 0xff);  // the caller guarantees 10 readable bytes
    ByteReader checked(bytes.data(), bytes.size());
    const uint64_t want = checked.Varint();
    // Both ways of packing the groups: PEXT where the processor has it fast.
    for (bool pext : {false, true}) {
      if (pext && !HasFastPext()) continue;
      const uint8_t* p = padded.data();
      bool bad = false;
      const uint64_t got = pext ? UncheckedVarint<true>(&p, &bad) : UncheckedVarint(&p, &bad);
      EXPECT_EQ(bad, !checked.ok()) << ::testing::PrintToString(bytes);
      if (checked.ok()) {
        EXPECT_EQ(got, want) << ::testing::PrintToString(bytes) << " pext " << pext;
        EXPECT_EQ(p - padded.data(), static_cast<ptrdiff_t>(bytes.size() - checked.remaining()));
      }
    }
  };
  for (int bits = 0; bits <= 64; ++bits) {
    for (uint64_t v : {bits == 64 ? kU64Max : (uint64_t{1} << bits) - 1,
                       bits == 64 ? 0 : uint64_t{1} << bits}) {
      check(Varint(v));
    }
  }
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200000; ++i) {
    std::vector<uint8_t> bytes(10);
    // Mostly continuation bytes, so every length up to 10 (and none) occurs.
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng() | (rng() % 5 != 0 ? 0x80 : 0));
    check(bytes);
  }
}

// Both ways of finding the stop bytes of 64 bytes agree with a byte-by-byte
// look, on random bytes with every share of stop bytes.
TEST(Varint, StopMaskMarksEveryByteUnder0x80) {
  std::mt19937_64 rng(5);
  uint8_t bytes[64];
  for (int round = 0; round < 20000; ++round) {
    const uint64_t stop_share = rng() % 9;  // in eighths
    uint64_t want = 0;
    for (int i = 0; i < 64; ++i) {
      bytes[i] = static_cast<uint8_t>((rng() & 0x7f) | (rng() % 8 < stop_share ? 0 : 0x80));
      if (bytes[i] < 0x80) want |= uint64_t{1} << i;
    }
    EXPECT_EQ(StopMask64(bytes), want);
    EXPECT_EQ(StopMask64Portable(bytes), want);
  }
}

// PEXT and the portable merge pack any bytes alike.
TEST(Varint, PextPacksAsTheMergeSteps) {
  if (!HasFastPext()) GTEST_SKIP() << "no fast PEXT on this processor";
  std::mt19937_64 rng(3);
  for (int i = 0; i < 100000; ++i) {
    const uint64_t w = rng();
    EXPECT_EQ(PackGroupsPext(w), PackGroups(w & 0x7f7f7f7f7f7f7f7full)) << w;
  }
}

uint32_t BitwiseCrc32c(const uint8_t* p, size_t n) {
  uint32_t c = ~0u;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82f63b78 : c >> 1;
  }
  return ~c;
}

TEST(Crc32c, KnownVectors) {
  EXPECT_EQ(Crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(Crc32c("", 0), 0u);
  std::vector<uint8_t> zeros(32, 0);
  EXPECT_EQ(Crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);  // RFC 3720 B.4
}

TEST(Crc32c, MatchesBitwiseDefinitionAtAnyLengthAndAlignment) {
  std::mt19937 rng(7);
  std::vector<uint8_t> buf(300);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  for (size_t start = 0; start < 9; ++start) {
    for (size_t len = 0; len + start <= buf.size(); len += 13) {
      const uint32_t want = BitwiseCrc32c(buf.data() + start, len);
      EXPECT_EQ(Crc32c(buf.data() + start, len), want);
      // Both ways Crc32c may take, whichever this machine uses.
      EXPECT_EQ(crc32c_internal::Table(buf.data() + start, len, 0), want);
      if (crc32c_internal::HardwareAvailable()) {
        EXPECT_EQ(crc32c_internal::Hardware(buf.data() + start, len, 0), want);
      }
    }
  }
  // Continuing a CRC equals one CRC over the concatenation, either way.
  uint32_t part = Crc32c(buf.data(), 100);
  EXPECT_EQ(Crc32c(buf.data() + 100, 200, part), Crc32c(buf.data(), 300));
  part = crc32c_internal::Table(buf.data(), 100, 0);
  EXPECT_EQ(crc32c_internal::Table(buf.data() + 100, 200, part), Crc32c(buf.data(), 300));
  if (crc32c_internal::HardwareAvailable()) {
    part = crc32c_internal::Hardware(buf.data(), 100, 0);
    EXPECT_EQ(crc32c_internal::Hardware(buf.data() + 100, 200, part), Crc32c(buf.data(), 300));
  }
}

}  // namespace
}  // namespace dlprof::format
