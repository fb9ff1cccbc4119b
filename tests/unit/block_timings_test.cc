// The payload's timing columns across format versions: version 3 predicts an
// event's gap and duration from the block's last event of its kind
// (TimingPredictor), version 2 stored them as they were, and a reader
// decodes each by its own rules. (The rest of the codec: block_codec_test.cc.)
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "lib/format/block_codec.h"
#include "lib/format/varint.h"
#include "tests/helpers/trace_builder.h"

namespace dlprof::format {
namespace {

using testing::BlockSpec;
using testing::EncodePayload;
using testing::MakeEvent;

// A payload cut into what precedes its columns and the columns' bytes.
struct PayloadParts {
  std::vector<uint8_t> head;  // everything before the first column's length
  std::vector<uint8_t> columns[kColumnCount];
};

PayloadParts SplitPayload(const std::vector<uint8_t>& raw) {
  ByteReader in(raw.data(), raw.size());
  for (int i = 0; i < 4; ++i) in.Varint();  // clock pair, rank, dropped events
  const uint64_t strings = in.Varint();
  for (uint64_t i = 0; i < strings; ++i) {
    in.Varint();
    in.Bytes(in.Varint());
  }
  const uint64_t runs = in.Varint();
  for (uint64_t i = 0; i < 2 * runs; ++i) in.Varint();
  PayloadParts parts;
  parts.head.assign(raw.data(), in.position());
  for (auto& column : parts.columns) {
    const uint64_t size = in.Varint();
    const uint8_t* bytes = in.Bytes(size);
    if (bytes) column.assign(bytes, bytes + size);
  }
  EXPECT_TRUE(in.ok() && in.at_end());
  return parts;
}

std::vector<uint8_t> JoinPayload(const PayloadParts& parts) {
  std::vector<uint8_t> raw = parts.head;
  for (const auto& column : parts.columns) {
    PutVarint(raw, column.size());
    raw.insert(raw.end(), column.begin(), column.end());
  }
  return raw;
}

// The spec's events, in run order.
std::vector<Event> EventsOf(const BlockSpec& spec) {
  std::vector<Event> events;
  for (const auto& run : spec.runs) events.insert(events.end(), run.events.begin(), run.events.end());
  return events;
}

// Decodes `raw` as a payload of format `version` and compares its timings
// with `events`' (the other columns are the same in both versions).
void ExpectTimings(const std::vector<uint8_t>& raw, uint32_t version,
                   const std::vector<Event>& events) {
  DecodedBlock out;
  std::string error;
  ASSERT_TRUE(DecodeBlockPayload(raw.data(), raw.size(), static_cast<uint32_t>(events.size()),
                                 version, &out, &error))
      << error;
  ASSERT_EQ(out.events.size(), events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    ASSERT_EQ(out.events[i].start_ns, events[i].start_ns) << "event " << i;
    ASSERT_EQ(out.events[i].dur_ns, events[i].dur_ns) << "event " << i;
    ASSERT_EQ(out.events[i].kind, events[i].kind) << "event " << i;
  }
}

// A loop of open, read, close whose calls each keep their gap and duration
// encodes both as zeros from its second round on, whatever the kinds in
// between.
TEST(BlockTimings, ArePredictedFromTheLastEventOfTheirKind) {
  BlockSpec spec;
  testing::ThreadRun run{42, {}};
  uint64_t now = 0;  // the first open's gap, from zero, is the loop's too
  const EventKind kinds[] = {EventKind::Open64, EventKind::Read, EventKind::Close};
  const uint64_t gaps[] = {700, 90, 40}, durs[] = {5000, 81000, 900};
  for (int round = 0; round < 50; ++round) {
    for (int k = 0; k < 3; ++k) {
      now += gaps[k];
      run.events.push_back(MakeEvent(kinds[k], now, durs[k]));
      now += durs[k];
    }
  }
  spec.runs.push_back(run);
  const std::vector<uint8_t> raw = EncodePayload(spec);
  ExpectTimings(raw, kFormatVersion, run.events);
  const PayloadParts parts = SplitPayload(raw);
  for (Column c : {Column::Start, Column::Dur}) {
    const auto& bytes = parts.columns[static_cast<int>(c)];
    ByteReader in(bytes.data(), bytes.size());
    for (int k = 0; k < 3; ++k) EXPECT_NE(in.Varint(), 0u);  // the first round's
    ASSERT_EQ(in.remaining(), 3u * 49) << static_cast<int>(c);
    EXPECT_TRUE(std::all_of(in.position(), in.position() + in.remaining(),
                            [](uint8_t b) { return b == 0; }))
        << static_cast<int>(c);
  }
}

// Random timings: a few kinds and now and then any kind (slots shared by
// kinds 256 apart: the asynchronous requests, from 256 on, with the POSIX
// calls 256 below them), starts that step forward, jump anywhere or go back
// (nesting; a request recorded at its reaping starts long before), durations
// from 0 to 2^64 - 1, over three thread runs.
BlockSpec RandomTimings(uint64_t seed) {
  std::mt19937_64 rng(seed);
  const uint16_t kinds[] = {2, 12, 15, 16, 58, 2 + 256,
                            static_cast<uint16_t>(EventKind::UringRead),
                            static_cast<uint16_t>(EventKind::LinuxAioPread)};
  static_assert(static_cast<int>(EventKind::LinuxAioPread) % 256 == 16);
  BlockSpec spec;
  uint64_t now = rng();
  for (int r = 0; r < 3; ++r) {
    testing::ThreadRun run{static_cast<int32_t>(100 + r), {}};
    for (int i = 0; i < 300; ++i) {
      const uint16_t kind =
          rng() % 8 == 0 ? static_cast<uint16_t>(rng()) : kinds[rng() % std::size(kinds)];
      switch (rng() % 10) {
        case 0: now = rng(); break;
        case 1: now -= rng() % 10000; break;
        default: now += rng() % 3000; break;
      }
      const uint64_t dur = rng() % 16 == 0 ? ~uint64_t{0} - rng() % 3 : rng() % 100000;
      run.events.push_back(MakeEvent(static_cast<EventKind>(kind), now, dur));
    }
    spec.runs.push_back(std::move(run));
  }
  return spec;
}

TEST(BlockTimings, RoundTripRandomTimings) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const BlockSpec spec = RandomTimings(seed);
    ExpectTimings(EncodePayload(spec), kFormatVersion, EventsOf(spec));
  }
}

// Version 2 payloads (written before version 3) stored the gap from the
// previous event's end and the duration as it was. The same events'
// payload rewritten to version 2's Start and Dur columns, as FORMAT.md
// defines them, decodes to the same events as version 2, and not as 3.
TEST(BlockTimings, Version2PayloadsDecodeByTheirOwnRules) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const BlockSpec spec = RandomTimings(seed);
    const std::vector<Event> events = EventsOf(spec);
    PayloadParts parts = SplitPayload(EncodePayload(spec));
    auto& start = parts.columns[static_cast<int>(Column::Start)];
    auto& dur = parts.columns[static_cast<int>(Column::Dur)];
    start.clear();
    dur.clear();
    uint64_t prev_end = 0;
    for (const Event& e : events) {
      PutVarint(start, ZigZag(static_cast<int64_t>(e.start_ns - prev_end)));
      PutVarint(dur, e.dur_ns);
      prev_end = e.start_ns + e.dur_ns;
    }
    const std::vector<uint8_t> v2 = JoinPayload(parts);
    ExpectTimings(v2, kOldestFormatVersion, events);

    DecodedBlock out;
    std::string error;
    ASSERT_TRUE(DecodeBlockPayload(v2.data(), v2.size(), static_cast<uint32_t>(events.size()),
                                   kFormatVersion, &out, &error))
        << error;
    bool differs = false;
    for (size_t i = 0; i < events.size(); ++i) differs |= out.events[i].dur_ns != events[i].dur_ns;
    EXPECT_TRUE(differs) << seed;
  }
}

}  // namespace
}  // namespace dlprof::format
