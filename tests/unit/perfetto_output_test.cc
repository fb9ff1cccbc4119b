// The Perfetto exporter's slice order (tools/dump/perfetto_output.cc) on
// traces built in memory: events that start in the same nanosecond begin
// longest first (the longer holds the shorter), however the stream's
// batches of 256 cut them; every event is one BEGIN and one END; the
// sequence's times never go back.
#include "tools/dump/perfetto_output.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "tests/helpers/output_to_string.h"
#include "tests/helpers/stream_order.h"
#include "tests/helpers/trace_builder.h"
#include "tools/dump/perfetto_fields.h"

namespace dlprof::dump {
namespace {

namespace pf = perfetto_fields;

// A protobuf message's fields, read back: (field, varint value or bytes).
struct Field {
  uint32_t number = 0;
  uint64_t value = 0;
  std::string bytes;
};

uint64_t ReadVarint(const std::string& s, size_t* at) {
  uint64_t v = 0;
  for (int shift = 0; *at < s.size(); shift += 7) {
    const uint8_t b = static_cast<uint8_t>(s[(*at)++]);
    v |= uint64_t{b & 0x7fu} << shift;
    if (b < 0x80) return v;
  }
  ADD_FAILURE() << "a varint runs past the end";
  return v;
}

std::vector<Field> Fields(const std::string& s) {
  std::vector<Field> out;
  for (size_t at = 0; at < s.size();) {
    const uint64_t tag = ReadVarint(s, &at);
    Field f;
    f.number = static_cast<uint32_t>(tag >> 3);
    switch (tag & 7) {
      case 0: f.value = ReadVarint(s, &at); break;
      case 1: at += 8; break;
      case 2: {
        const size_t n = ReadVarint(s, &at);
        f.bytes = s.substr(at, n);
        at += n;
        break;
      }
      default: ADD_FAILURE() << "wire type " << (tag & 7); return out;
    }
    out.push_back(std::move(f));
  }
  return out;
}

// A slice packet of the slice sequence: its time and, for a BEGIN, the
// value of its `size` annotation (which the tests number events with).
struct SlicePacket {
  uint64_t type;
  uint64_t at_ns;
  uint64_t size;
};

std::vector<SlicePacket> SlicePackets(const std::string& trace) {
  std::vector<SlicePacket> out;
  uint64_t clock = 0;
  bool clock_set = false;
  for (const Field& packet : Fields(trace)) {
    EXPECT_EQ(packet.number, pf::kTracePacket);
    uint64_t delta = 0;
    const Field* event = nullptr;
    std::vector<Field> fields = Fields(packet.bytes);
    for (const Field& f : fields) {
      if (f.number == pf::kPacketTimestamp) delta = f.value;
      if (f.number == pf::kPacketTrackEvent) event = &f;
      if (f.number == pf::kPacketClockSnapshot && !clock_set) {
        // The incremental clock starts at the first clock's timestamp.
        for (const Field& c : Fields(Fields(f.bytes).at(0).bytes)) {
          if (c.number == pf::kClockTimestamp) clock = c.value;
        }
        clock_set = true;
      }
    }
    if (event == nullptr) continue;
    SlicePacket s{0, 0, 0};
    for (const Field& f : Fields(event->bytes)) {
      if (f.number == pf::kEventType) s.type = f.value;
      if (f.number != pf::kEventAnnotations) continue;
      std::vector<Field> a = Fields(f.bytes);
      // The interned names are those of perfetto_output.cc's Arg: size is 6.
      if (a.size() == 2 && a[0].value == 6 && a[1].number == pf::kAnnotationInt) {
        s.size = a[1].value;
      }
    }
    if (s.type != pf::kTypeSliceBegin && s.type != pf::kTypeSliceEnd) continue;
    clock += delta;
    s.at_ns = clock;
    out.push_back(s);
  }
  return out;
}

std::string WriteToString(const TraceSet& set) {
  return testing::OutputToString([&](OutBuffer* out) {
    TraceSetSource source(set);
    WritePerfetto(source, out, {}, PerfettoCompression::kNone);
  });
}

// `before` reads at 1, 2, ...; `together` reads all starting at 1000 with
// durations that tie and differ; `after` reads from 100000 on. The size of
// each read is its number (from 1), in stream order.
struct Layout {
  int before, together, after;
};

TEST(PerfettoOutput, EventsOfOneNanosecondBeginLongestFirstAcrossBatches) {
  // The stream hands events out in batches of 256: runs that end at, cross
  // or fill a batch's end, and one that spans several.
  const Layout layouts[] = {{0, 1, 3},   {0, 2, 0},   {255, 2, 10}, {256, 2, 1},
                            {254, 2, 0}, {10, 256, 5}, {0, 257, 0}, {100, 700, 300},
                            {3, 3, 0}};
  for (const Layout& layout : layouts) {
    SCOPED_TRACE(::testing::Message() << "before " << layout.before << ", together "
                                      << layout.together << ", after " << layout.after);
    ProcessTrace p;
    p.info = testing::DefaultProcess();
    p.opened = true;
    std::vector<uint64_t> dur;  // by size - 1
    auto add = [&](uint64_t start, uint64_t d) {
      Event e = testing::MakeEvent(EventKind::Pread, start, d);
      e.fd = 3;
      e.size = p.events.size() + 1;
      e.ret = static_cast<int64_t>(e.size);
      p.events.push_back(e);
      p.tids.push_back(7);
      p.ranks.push_back(-1);
      dur.push_back(d);
    };
    for (int i = 0; i < layout.before; ++i) add(1 + static_cast<uint64_t>(i), 0);
    for (int i = 0; i < layout.together; ++i) add(1000, 10 + static_cast<uint64_t>(i * 7 % 5));
    for (int i = 0; i < layout.after; ++i) add(100000 + static_cast<uint64_t>(i), 1);
    TraceSet set;
    set.processes.push_back(std::move(p));
    testing::MergeInStreamOrder(&set);

    const std::vector<SlicePacket> packets = SlicePackets(WriteToString(set));
    const size_t events = dur.size();
    std::vector<uint64_t> begun;  // sizes, in the order their BEGINs came
    size_t ends = 0;
    for (size_t i = 0; i < packets.size(); ++i) {
      if (i > 0) {
        EXPECT_GE(packets[i].at_ns, packets[i - 1].at_ns) << "packet " << i;
      }
      if (packets[i].type == pf::kTypeSliceBegin) {
        begun.push_back(packets[i].size);
      } else {
        ++ends;
      }
    }
    EXPECT_EQ(ends, events);
    // Stream order, except that the run of one nanosecond begins longest
    // first, ties in stream order.
    std::vector<uint64_t> expected;
    for (size_t i = 0; i < events; ++i) expected.push_back(i + 1);
    const auto run = expected.begin() + layout.before;
    std::stable_sort(run, run + layout.together,
                     [&dur](uint64_t a, uint64_t b) { return dur[a - 1] > dur[b - 1]; });
    EXPECT_EQ(begun, expected);
  }
}

}  // namespace
}  // namespace dlprof::dump
