// The block payload codec: the column encoder and decoder, including the
// decoder's behaviour on malformed payloads. (Its varints and CRC-32C:
// varint_crc_test.cc.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <random>

#include "lib/format/block_codec.h"
#include "lib/format/varint.h"
#include "tests/helpers/trace_builder.h"

namespace dlprof::format {
namespace {

using testing::BlockSpec;
using testing::EncodePayload;
using testing::MakeEvent;

constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();

// Values that stress the predictor: extremes mixed with realistic ones.
class EventGenerator {
 public:
  explicit EventGenerator(uint64_t seed) : rng_(seed) {}

  Event Next() {
    Event e{};
    e.kind = static_cast<uint16_t>(Pick(4) == 0 ? rng_() : 1 + rng_() % 88);
    // (Bit 15 is never in a trace: it marks an event in TSC ticks.)
    e.flags = static_cast<uint16_t>(Pick(8) == 0 ? rng_() & ~uint64_t{kEventFlagTicks} : 0);
    now_ += Pick(10) == 0 ? rng_() : rng_() % 5000;  // wraps sometimes
    e.start_ns = Pick(20) == 0 ? rng_() : now_;
    e.dur_ns = Extreme(rng_() % 100000);
    e.file = static_cast<uint32_t>(Pick(6) == 0 ? rng_() : rng_() % 80);
    e.fd = Pick(3) == 0 ? -1 : static_cast<int32_t>(Pick(10) == 0 ? rng_() : rng_() % 100);
    e.size = Extreme(Pick(2) ? 4096 : rng_() % (1 << 20));
    switch (Pick(4)) {
      case 0: e.offset = -1; break;
      case 1: e.offset = static_cast<int64_t>(rng_()); break;  // negative half the time
      default: e.offset = static_cast<int64_t>(rng_() % (1ull << 40)); break;
    }
    e.ret = Pick(5) == 0 ? -1 : static_cast<int64_t>(Pick(2) ? e.size : Extreme(rng_() % 100));
    e.err = e.ret < 0 ? static_cast<int32_t>(Pick(3) == 0 ? rng_() : rng_() % 134) : 0;
    e.aux = Pick(3) == 0 ? rng_() : rng_() % 16;
    return e;
  }
  uint64_t Pick(uint64_t n) { return rng_() % n; }

 private:
  uint64_t Extreme(uint64_t usual) {
    switch (Pick(16)) {
      case 0: return kU64Max;
      case 1: return static_cast<uint64_t>(kI64Min);
      case 2: return rng_();
      default: return usual;
    }
  }
  std::mt19937_64 rng_;
  uint64_t now_ = 1;
};

void ExpectSameEvent(const Event& a, const Event& b, size_t i) {
  EXPECT_EQ(a.kind, b.kind) << i;
  EXPECT_EQ(a.flags, b.flags) << i;
  EXPECT_EQ(a.err, b.err) << i;
  EXPECT_EQ(a.start_ns, b.start_ns) << i;
  EXPECT_EQ(a.dur_ns, b.dur_ns) << i;
  EXPECT_EQ(a.ret, b.ret) << i;
  EXPECT_EQ(a.offset, b.offset) << i;
  EXPECT_EQ(a.size, b.size) << i;
  EXPECT_EQ(a.file, b.file) << i;
  EXPECT_EQ(a.fd, b.fd) << i;
  EXPECT_EQ(a.aux, b.aux) << i;
}

// Encodes `spec`, decodes it, and checks the events and tids against the
// spec and what the decoder notes against a second pass over the events.
// Returns the decoded block.
DecodedBlock ExpectRoundTrip(const BlockSpec& spec, const std::string& what) {
  std::vector<uint8_t> raw = EncodePayload(spec);
  DecodedBlock out;
  std::string error;
  EXPECT_TRUE(DecodeBlockPayload(raw.data(), raw.size(), static_cast<uint32_t>(spec.events()),
                                 kFormatVersion, &out, &error))
      << what << ": " << error;
  std::vector<int32_t> expect_tids;
  size_t i = 0;
  for (const auto& run : spec.runs) {
    expect_tids.insert(expect_tids.end(), run.events.size(), run.tid);
    for (const Event& e : run.events) {
      if (i >= out.events.size()) break;
      ExpectSameEvent(out.events[i], e, i);
      ++i;
    }
  }
  EXPECT_EQ(out.events.size(), spec.events()) << what;
  EXPECT_EQ(out.tids, expect_tids) << what;

  bool in_order = true;
  uint64_t min_start = 0, max_end = 0;
  bool wraps = false;
  std::vector<DecodedBlock::FileRun> runs_ref;
  for (size_t k = 0; k < out.events.size(); ++k) {
    const Event& e = out.events[k];
    if (k > 0) {
      const uint64_t a = out.events[k - 1].start_ns;
      in_order = in_order && (a < e.start_ns || (a == e.start_ns && out.tids[k - 1] <= out.tids[k]));
    }
    const uint64_t end = e.start_ns + e.dur_ns;
    min_start = k == 0 ? e.start_ns : std::min(min_start, e.start_ns);
    max_end = std::max(max_end, end);
    wraps = wraps || end < e.start_ns;
    if (k == 0 || e.file != out.events[k - 1].file) {
      runs_ref.push_back({e.file, static_cast<uint32_t>(k)});
    }
  }
  EXPECT_EQ(out.in_start_order, in_order) << what;
  EXPECT_EQ(out.min_start_ns, min_start) << what;
  EXPECT_EQ(out.max_end_ns, max_end) << what;
  EXPECT_EQ(out.end_wraps, wraps) << what;
  EXPECT_EQ(out.file_runs.size(), runs_ref.size()) << what;
  for (size_t r = 0; r < std::min(runs_ref.size(), out.file_runs.size()); ++r) {
    EXPECT_EQ(out.file_runs[r].file, runs_ref[r].file) << what << " run " << r;
    EXPECT_EQ(out.file_runs[r].first, runs_ref[r].first) << what << " run " << r;
  }
  return out;
}

TEST(BlockCodec, RoundTripsRandomEvents) {
  bool seen_wrap = false;
  size_t seen_runs = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    EventGenerator gen(seed);
    BlockSpec spec;
    spec.info = {gen.Pick(2) ? kU64Max : 123456789, 1700000000123456789ull,
                 gen.Pick(2) ? -1 : std::numeric_limits<int32_t>::min(), seed * 1000};
    spec.strings.push_back({0, ""});
    spec.strings.push_back({7, std::string("/data/\0bin\xff\"", 12)});
    spec.strings.push_back({std::numeric_limits<uint32_t>::max(), "last id"});
    const int runs = 1 + static_cast<int>(gen.Pick(12));
    for (int r = 0; r < runs; ++r) {
      // Repeated tids are runs of their own in the spec; the encoder merges
      // consecutive ones, which must not change what decodes.
      int32_t tid = gen.Pick(4) == 0 ? -5 : static_cast<int32_t>(100 + gen.Pick(3));
      testing::ThreadRun run{tid, {}};
      const size_t n = gen.Pick(6) == 0 ? 0 : gen.Pick(400);
      for (size_t i = 0; i < n; ++i) run.events.push_back(gen.Next());
      spec.runs.push_back(std::move(run));
    }
    const DecodedBlock out = ExpectRoundTrip(spec, "seed " + std::to_string(seed));
    EXPECT_EQ(out.info.clock_mono_ns, spec.info.clock_mono_ns);
    EXPECT_EQ(out.info.clock_real_ns, spec.info.clock_real_ns);
    EXPECT_EQ(out.info.rank, spec.info.rank);
    EXPECT_EQ(out.info.dropped_events, spec.info.dropped_events);
    ASSERT_EQ(out.strings.size(), spec.strings.size());
    for (size_t i = 0; i < out.strings.size(); ++i) {
      EXPECT_EQ(out.strings[i].id, spec.strings[i].id);
      EXPECT_EQ(out.strings[i].text, spec.strings[i].text);
    }
    seen_wrap = seen_wrap || out.end_wraps;
    seen_runs = std::max(seen_runs, out.file_runs.size());
  }
  // The random events exercise both: an end past 2^64, many file runs.
  EXPECT_TRUE(seen_wrap);
  EXPECT_GT(seen_runs, 10u);
}

// The decoder takes a column that repeats one one-byte value after the first
// event as a template, not event by event. Each field here is, at random,
// constant (its delta column all zero after the first event, whose value may
// take several bytes), stepping by one (a delta column repeating a non-zero
// byte: not a constant), of one or two values, or random; blocks cross the
// decoder's chunks of 256 events.
TEST(BlockCodec, RoundTripsColumnsThatRepeatOneValue) {
  std::mt19937_64 rng(7);
  auto pick = [&rng](uint64_t n) { return rng() % n; };
  for (int seed = 0; seed < 200; ++seed) {
    int mode[kColumnCount];
    for (int& m : mode) m = static_cast<int>(pick(4));
    // 0: constant, 1: steps by one, 2: one of two values, 3: random
    auto value = [&](int column, uint64_t i, uint64_t first) -> uint64_t {
      switch (mode[column]) {
        case 0: return first;
        case 1: return first + i;
        case 2: return first + (rng() & 1) * 3;
        default: return rng() >> pick(64);
      }
    };
    const uint64_t first = pick(2) ? 4096 : pick(100);  // one varint byte or two
    const size_t n = 1 + pick(3) + pick(2) * 257 + pick(2) * pick(2000);
    BlockSpec spec;
    uint64_t end = 0;
    std::vector<Event> events;
    for (uint64_t i = 0; i < n; ++i) {
      Event e{};
      e.kind = static_cast<uint16_t>(value(0, i, 17));
      e.flags = static_cast<uint16_t>(value(1, i, 0) & ~uint64_t{kEventFlagTicks});
      e.start_ns = end + value(2, i, 0);  // the predictor expects the last end
      e.dur_ns = value(3, i, first);
      e.file = static_cast<uint32_t>(value(4, i, 3));
      e.fd = static_cast<int32_t>(value(5, i, 5));
      e.size = value(7, i, first);
      // The predictor expects the end of the last access to the file.
      e.offset = static_cast<int64_t>(value(6, i, 0) + i * e.size);
      e.ret = static_cast<int64_t>(e.size + value(8, i, 0));
      e.err = static_cast<int32_t>(value(9, i, 0));
      e.aux = value(10, i, first);
      end = e.start_ns + e.dur_ns;
      events.push_back(e);
    }
    const size_t split = pick(n + 1);
    spec.runs.push_back({11, std::vector<Event>(events.begin(), events.begin() + split)});
    spec.runs.push_back({12, std::vector<Event>(events.begin() + split, events.end())});
    std::string what = "seed " + std::to_string(seed) + " modes";
    for (int m : mode) what += " " + std::to_string(m);
    ExpectRoundTrip(spec, what);
  }
}

// A loop of reads, the encoder's usual event, broken at random: each break
// changes one of the columns the usual event leaves at 0. The runs of usual
// events between breaks (1 to 40 long, written at once by the encoder) and
// the calls' boundaries fall everywhere.
TEST(BlockCodec, RoundTripsLoopsOfReadsBrokenAnywhere) {
  std::mt19937_64 rng(34);
  auto pick = [&rng](uint64_t n) { return rng() % n; };
  for (int seed = 0; seed < 300; ++seed) {
    const size_t n = 1 + pick(600);
    std::vector<Event> events;
    uint64_t end = 1000;
    int64_t offset = 0;
    uint64_t next_break = pick(41);
    for (uint64_t i = 0; i < n; ++i) {
      Event e{};
      e.kind = 14;
      e.start_ns = end + 500 + pick(3000);
      e.dur_ns = 800 + pick(40000);
      e.file = 3;
      e.fd = 5;
      e.size = 4096;
      e.offset = offset;
      e.ret = 4096;
      if (i == next_break) {
        switch (pick(7)) {
          case 0: e.file = 4; break;
          case 1: e.fd = 6; break;
          case 2: e.offset = static_cast<int64_t>(pick(1u << 30)); break;
          case 3: e.size = 1 + pick(1u << 20); break;
          case 4: e.ret = static_cast<int64_t>(pick(4096)); break;
          case 5: e.ret = -1; e.err = 5; break;
          default: e.aux = 1 + pick(9); break;
        }
        next_break = i + 1 + pick(41);
      }
      offset = e.offset + static_cast<int64_t>(e.size);
      end = e.start_ns + e.dur_ns;
      events.push_back(e);
    }
    BlockSpec spec;
    size_t at = 0;
    while (at < n) {  // calls of 1 to 100 events, one thread
      const size_t len = std::min(n - at, static_cast<size_t>(1 + pick(100)));
      spec.runs.push_back({7, std::vector<Event>(events.begin() + at, events.begin() + at + len)});
      at += len;
    }
    ExpectRoundTrip(spec, "seed " + std::to_string(seed));
  }
}

TEST(BlockCodec, DecoderSaysWhetherEventsAreInStartOrder) {
  auto decode = [](const std::vector<testing::ThreadRun>& runs) {
    BlockSpec spec;
    spec.runs = runs;
    std::vector<uint8_t> raw = EncodePayload(spec);
    DecodedBlock out;
    std::string error;
    EXPECT_TRUE(DecodeBlockPayload(raw.data(), raw.size(), static_cast<uint32_t>(spec.events()),
                                   kFormatVersion, &out, &error))
        << error;
    return out.in_start_order;
  };
  const Event a = MakeEvent(EventKind::Read, 100, 5), b = MakeEvent(EventKind::Read, 200, 5);
  EXPECT_TRUE(decode({{7, {a, b}}}));
  EXPECT_FALSE(decode({{7, {b, a}}}));
  EXPECT_TRUE(decode({{7, {a}}, {8, {b}}}));
  EXPECT_FALSE(decode({{7, {b}}, {8, {a}}}));  // a later thread's event starts earlier
  EXPECT_TRUE(decode({{7, {a}}, {8, {a}}}));   // a tie is ordered by tid
  EXPECT_FALSE(decode({{8, {a}}, {7, {a}}}));
}

TEST(BlockCodec, EmptyBlockRoundTrips) {
  BlockSpec spec;
  std::vector<uint8_t> raw = EncodePayload(spec);
  DecodedBlock out;
  std::string error;
  ASSERT_TRUE(DecodeBlockPayload(raw.data(), raw.size(), 0, kFormatVersion, &out, &error)) << error;
  EXPECT_TRUE(out.events.empty());
  EXPECT_EQ(out.info.rank, -1);
}

// Events a traced call recorded in TSC ticks go in as ns through the scale
// (lib/format/tick_scale.h), mixed with events in ns, and the flag stays out.
TEST(BlockCodec, TicksAreEncodedAsNanoseconds) {
  BlockEncoder enc;
  enc.Begin(BlockInfo{});
  // 2 GHz: 0.5 ns a tick; tick 1000 was ns 10 000.
  enc.SetTickScale(format::TickScale{1000, 10000, uint64_t{1} << 31});
  Event in[3] = {MakeEvent(EventKind::Read, 3000, 400), MakeEvent(EventKind::AppMark, 12000, 0),
                 MakeEvent(EventKind::Read, 600, 20)};
  in[0].flags = kEventFlagTicks | kEventFlagNested;
  in[2].flags = kEventFlagTicks;
  enc.AddEvents(7, in, 3);
  std::vector<uint8_t> raw;
  enc.Finish(&raw);
  DecodedBlock out;
  std::string error;
  ASSERT_TRUE(DecodeBlockPayload(raw.data(), raw.size(), 3, kFormatVersion, &out, &error)) << error;
  ASSERT_EQ(out.events.size(), 3u);
  EXPECT_EQ(out.events[0].start_ns, 11000u);
  EXPECT_EQ(out.events[0].dur_ns, 200u);
  EXPECT_EQ(out.events[0].flags, kEventFlagNested);
  EXPECT_EQ(out.events[1].start_ns, 12000u);
  EXPECT_EQ(out.events[2].start_ns, 9800u);  // before the pair
  EXPECT_EQ(out.events[2].dur_ns, 10u);
  EXPECT_EQ(out.events[2].flags, 0u);
  EXPECT_EQ(enc.span().first_start_ns, 9800u);
  EXPECT_EQ(enc.span().last_end_ns, 12000u);
}

TEST(BlockCodec, BeginResetsTheEncoder) {
  BlockEncoder enc;
  Event e = MakeEvent(EventKind::Read, 10, 1);
  enc.AddString(1, "x", 1);
  enc.AddEvents(1, &e, 1);
  enc.Begin(BlockInfo{});
  EXPECT_EQ(enc.event_count(), 0u);
  std::vector<uint8_t> reused, fresh;
  enc.Finish(&reused);
  BlockEncoder().Finish(&fresh);
  EXPECT_EQ(reused, fresh);
}

// The point of the predictor: a sequential read loop costs about one byte
// per column per event before zstd.
TEST(BlockCodec, SequentialReadsEncodeToAboutOneBytePerColumn) {
  BlockSpec spec;
  testing::ThreadRun run{42, {}};
  for (int i = 0; i < 1000; ++i) {
    Event e = MakeEvent(EventKind::Pread64, 1000000 + i * 100, 50);
    e.file = 3;
    e.fd = 5;
    e.offset = i * 4096;
    e.size = 4096;
    e.ret = 4096;
    run.events.push_back(e);
  }
  spec.runs.push_back(run);
  std::vector<uint8_t> raw = EncodePayload(spec);
  EXPECT_LT(raw.size(), 1000u * kColumnCount + 64);
}

BlockSpec SmallBlock() {
  BlockSpec spec;
  spec.strings.push_back({1, "/data/train-00001.tfrecord"});
  Event e = MakeEvent(EventKind::Pread64, 5000, 20);
  e.file = 1;
  e.fd = 3;
  e.offset = 0;
  e.size = 4096;
  e.ret = 4096;
  testing::ThreadRun run{7, {}};
  for (int i = 0; i < 5; ++i, e.offset += 4096, e.start_ns += 100) run.events.push_back(e);
  spec.runs.push_back(run);
  spec.runs.push_back({8, {MakeEvent(EventKind::Close, 9000, 3)}});
  return spec;
}

TEST(BlockCodec, RejectsEveryTruncation) {
  std::vector<uint8_t> raw = EncodePayload(SmallBlock());
  DecodedBlock out;
  for (size_t n = 0; n < raw.size(); ++n) {
    std::string error;
    std::vector<uint8_t> cut(raw.begin(), raw.begin() + static_cast<ptrdiff_t>(n));
    EXPECT_FALSE(DecodeBlockPayload(cut.data(), cut.size(), 6, kFormatVersion, &out, &error)) << n;
    EXPECT_FALSE(error.empty());
  }
}

TEST(BlockCodec, RejectsTrailingBytesAndWrongEventCounts) {
  std::vector<uint8_t> raw = EncodePayload(SmallBlock());
  DecodedBlock out;
  std::string error;
  ASSERT_TRUE(DecodeBlockPayload(raw.data(), raw.size(), 6, kFormatVersion, &out, &error)) << error;
  EXPECT_FALSE(DecodeBlockPayload(raw.data(), raw.size(), 5, kFormatVersion, &out, &error));
  EXPECT_FALSE(DecodeBlockPayload(raw.data(), raw.size(), 7, kFormatVersion, &out, &error));
  EXPECT_FALSE(DecodeBlockPayload(raw.data(), raw.size(), 0xffffffffu, kFormatVersion, &out, &error));
  raw.push_back(0);
  EXPECT_FALSE(DecodeBlockPayload(raw.data(), raw.size(), 6, kFormatVersion, &out, &error));
  EXPECT_EQ(error, "payload has trailing bytes");
}

TEST(BlockCodec, RejectsStringsOverTheLimit) {
  BlockSpec spec;
  spec.strings.push_back({1, std::string(kMaxStringBytes, 'a')});
  std::vector<uint8_t> raw = EncodePayload(spec);
  DecodedBlock out;
  std::string error;
  ASSERT_TRUE(DecodeBlockPayload(raw.data(), raw.size(), 0, kFormatVersion, &out, &error)) << error;
  EXPECT_EQ(out.strings.at(0).text.size(), kMaxStringBytes);

  spec.strings[0].text += 'a';
  raw = EncodePayload(spec);
  EXPECT_FALSE(DecodeBlockPayload(raw.data(), raw.size(), 0, kFormatVersion, &out, &error));
  EXPECT_EQ(error, "string longer than the format allows");
}

// Hand-written payload prefix: block info, no strings, then the given runs.
std::vector<uint8_t> PayloadWithRuns(const std::vector<std::pair<int32_t, uint64_t>>& runs) {
  std::vector<uint8_t> raw;
  for (uint64_t v : {0, 0, 1, 0, 0}) PutVarint(raw, v);  // mono, real, rank -1, dropped, strings
  PutVarint(raw, runs.size());
  for (auto [tid, n] : runs) {
    PutVarint(raw, ZigZag(tid));
    PutVarint(raw, n);
  }
  for (int c = 0; c < kColumnCount; ++c) PutVarint(raw, 0);
  return raw;
}

TEST(BlockCodec, RejectsThreadRunsThatDisagreeWithTheEventCount) {
  DecodedBlock out;
  std::string error;
  auto raw = PayloadWithRuns({{1, 2}, {2, 2}});
  EXPECT_FALSE(DecodeBlockPayload(raw.data(), raw.size(), 3, kFormatVersion, &out, &error));
  EXPECT_EQ(error, "thread runs hold more events than the block");
  EXPECT_FALSE(DecodeBlockPayload(raw.data(), raw.size(), 5, kFormatVersion, &out, &error));
  EXPECT_EQ(error, "thread runs do not add up to the event count");
  raw = PayloadWithRuns({{1, 0}, {2, 0}, {3, 0}});
  EXPECT_FALSE(DecodeBlockPayload(raw.data(), raw.size(), 2, kFormatVersion, &out, &error));
  EXPECT_EQ(error, "more thread runs than events");
  // Runs that add up but columns that are empty.
  raw = PayloadWithRuns({{1, 2}});
  EXPECT_FALSE(DecodeBlockPayload(raw.data(), raw.size(), 2, kFormatVersion, &out, &error));
}

// Random damage must give an answer, never a crash or a read out of bounds
// (run under ASan to make the latter visible).
TEST(BlockCodec, SurvivesRandomCorruption) {
  std::vector<uint8_t> good = EncodePayload(SmallBlock());
  std::mt19937 rng(99);
  DecodedBlock out;
  for (int round = 0; round < 5000; ++round) {
    std::vector<uint8_t> bad = good;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) bad[rng() % bad.size()] ^= static_cast<uint8_t>(1u << (rng() % 8));
    std::string error;
    if (!DecodeBlockPayload(bad.data(), bad.size(), 6, kFormatVersion, &out, &error)) {
      EXPECT_FALSE(error.empty());
    } else {
      EXPECT_EQ(out.events.size(), 6u);
    }
  }
}

// A payload of `n` events of tid 1 whose columns are all zero bytes but
// `column`, which holds `bytes`.
std::vector<uint8_t> PayloadWithColumn(size_t n, int column, const std::vector<uint8_t>& bytes) {
  std::vector<uint8_t> raw;
  for (uint64_t v : {0, 0, 1 /* rank -1 */, 0, 0 /* strings */, 1 /* runs */, 2 /* tid 1 */}) {
    PutVarint(raw, v);
  }
  PutVarint(raw, n);
  for (int c = 0; c < kColumnCount; ++c) {
    const std::vector<uint8_t> col = c == column ? bytes : std::vector<uint8_t>(n, 0);
    PutVarint(raw, col.size());
    raw.insert(raw.end(), col.begin(), col.end());
  }
  return raw;
}

// A varint of more than 10 bytes is named by its column, whether the decoder
// meets it one varint at a time (a short column) or through its stop-byte
// masks (a long one).
TEST(BlockCodec, NamesTheColumnOfAnOverlongVarint) {
  DecodedBlock out;
  std::string error;
  std::vector<uint8_t> overlong(11, 0xff);
  overlong.push_back(0x01);
  std::vector<uint8_t> raw = PayloadWithColumn(1, 6, overlong);
  EXPECT_FALSE(DecodeBlockPayload(raw.data(), raw.size(), 1, kFormatVersion, &out, &error));
  EXPECT_EQ(error, "column 6 does not match the event count");

  // 50 zero bytes, the overlong varint, 188 zero bytes (filled in place:
  // GCC 12 sees out-of-bounds copies in an insert here that are none).
  std::vector<uint8_t> long_column(50 + overlong.size() + 188, 0);
  std::copy(overlong.begin(), overlong.end(), long_column.begin() + 50);
  raw = PayloadWithColumn(240, 9, long_column);
  EXPECT_FALSE(DecodeBlockPayload(raw.data(), raw.size(), 240, kFormatVersion, &out, &error));
  EXPECT_EQ(error, "column 9 does not match the event count");

  // The same columns with the varint well formed decode.
  raw = PayloadWithColumn(240, 9, std::vector<uint8_t>(240, 0));
  EXPECT_TRUE(DecodeBlockPayload(raw.data(), raw.size(), 240, kFormatVersion, &out, &error)) << error;
}

// The same with a block of 3000 random events, whose columns are long enough
// for the decoder's 64-byte stop masks: bytes set to 0xff (a varint that never
// ends) or to random values, in runs. A sanitizer build checks the reads.
TEST(BlockCodec, SurvivesCorruptionOfLongColumns) {
  EventGenerator gen(5);
  BlockSpec spec;
  testing::ThreadRun run{1, {}};
  for (int i = 0; i < 3000; ++i) run.events.push_back(gen.Next());
  spec.runs.push_back(run);
  const std::vector<uint8_t> good = EncodePayload(spec);
  std::mt19937 rng(17);
  DecodedBlock out;
  int rejected = 0;
  for (int round = 0; round < 400; ++round) {
    std::vector<uint8_t> bad = good;
    const size_t at = rng() % bad.size();
    const size_t len = std::min<size_t>(1 + rng() % 40, bad.size() - at);
    const bool ones = rng() % 2 == 0;
    for (size_t k = at; k < at + len; ++k) bad[k] = ones ? 0xff : static_cast<uint8_t>(rng());
    std::string error;
    if (!DecodeBlockPayload(bad.data(), bad.size(), 3000, kFormatVersion, &out, &error)) {
      EXPECT_FALSE(error.empty());
      ++rejected;
    } else {
      EXPECT_EQ(out.events.size(), 3000u);
    }
  }
  EXPECT_GT(rejected, 100);
}

}  // namespace
}  // namespace dlprof::format
