// The Perfetto exporter's slice order (tools/dump/perfetto_output.cc) on
// traces built in memory: events that start in the same nanosecond begin
// longest first (the longer holds the shorter), however the stream's
// batches of 256 cut them; every event is one BEGIN and one END; the
// sequence's times never go back. App counters are counter tracks.
#include "tools/dump/perfetto_output.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
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
      case 1:  // fixed64, little-endian
        for (int k = 7; k >= 0 && at + 8 <= s.size(); --k) {
          f.value = (f.value << 8) | static_cast<uint8_t>(s[at + static_cast<size_t>(k)]);
        }
        at += 8;
        break;
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

// App counters (dlprof_counter, dlprof_counter_double): a counter track per
// process and counter name, under the process's track, each sample a
// counter value at its time, the int64 or the double it holds (they were
// slices of no length, the value lost).
TEST(PerfettoOutput, AppCountersAreCounterTracksOfTheirProcess) {
  ProcessTrace p;
  p.info = testing::DefaultProcess();
  p.opened = true;
  p.strings[1] = "loss";
  p.strings[2] = "queue";
  auto sample = [&p](uint64_t at_ns, uint32_t name, uint64_t aux, int64_t is_double) {
    Event e = testing::MakeEvent(EventKind::AppCounter, at_ns);
    e.file = name;
    e.fd = -1;
    e.offset = -1;
    e.aux = aux;
    e.ret = is_double;
    p.events.push_back(e);
    p.tids.push_back(7);
    p.ranks.push_back(-1);
  };
  auto bits = [](double v) {
    uint64_t b;
    std::memcpy(&b, &v, sizeof(b));
    return b;
  };
  sample(1000, 1, bits(0.25), 1);
  sample(2000, 2, 42, 0);
  sample(3000, 1, bits(-1.5), 1);
  sample(4000, 2, static_cast<uint64_t>(int64_t{-3}), 0);
  TraceSet set;
  set.processes.push_back(std::move(p));
  testing::MergeInStreamOrder(&set);
  const std::string trace = WriteToString(set);

  std::map<uint64_t, std::string> counter_tracks;  // uuid -> name
  std::map<uint64_t, uint64_t> parent_of;
  uint64_t process_track = 0;
  std::vector<std::string> samples;  // "name @ ts = value"
  std::vector<std::pair<uint64_t, std::vector<Field>>> events;  // (timestamp, TrackEvent)
  size_t slices = 0;
  for (const Field& packet : Fields(trace)) {
    uint64_t ts = 0;
    for (const Field& f : Fields(packet.bytes)) {
      if (f.number == pf::kPacketTimestamp) ts = f.value;
      if (f.number == pf::kPacketTrackEvent) events.push_back({ts, Fields(f.bytes)});
      if (f.number != pf::kTrackDescriptor) continue;
      uint64_t uuid = 0, parent = 0;
      std::string name;
      bool counter = false, process = false;
      for (const Field& d : Fields(f.bytes)) {
        if (d.number == pf::kTrackUuid) uuid = d.value;
        if (d.number == pf::kTrackParentUuid) parent = d.value;
        if (d.number == pf::kTrackName) name = d.bytes;
        counter |= d.number == pf::kTrackCounter;
        process |= d.number == pf::kTrackProcess;
      }
      if (process) process_track = uuid;
      if (counter) counter_tracks[uuid] = name;
      parent_of[uuid] = parent;
    }
  }
  for (const auto& [ts, fields] : events) {
    uint64_t type = 0, track = 0;
    std::string value = "none";
    for (const Field& f : fields) {
      if (f.number == pf::kEventType) type = f.value;
      if (f.number == pf::kEventTrackUuid) track = f.value;
      if (f.number == pf::kEventCounterValue) {
        value = std::to_string(static_cast<int64_t>(f.value));
      }
      if (f.number == pf::kEventDoubleCounterValue) {
        double v;
        std::memcpy(&v, &f.value, sizeof(v));
        char buf[32];
        std::snprintf(buf, sizeof(buf), "%g (double)", v);
        value = buf;
      }
    }
    slices += type == pf::kTypeSliceBegin;
    if (type != pf::kTypeCounter) continue;
    ASSERT_TRUE(counter_tracks.count(track)) << track;
    const std::string& name = counter_tracks[track];
    if (name == "loss" || name == "queue") {
      EXPECT_EQ(parent_of[track], process_track) << name;
      samples.push_back(name + " @ " + std::to_string(ts) + " = " + value);
    }
  }
  EXPECT_EQ(slices, 0u);  // a sample is no slice
  EXPECT_NE(process_track, 0u);
  std::sort(samples.begin(), samples.end());
  EXPECT_EQ(samples, (std::vector<std::string>{
                         "loss @ 1000 = 0.25 (double)", "loss @ 3000 = -1.5 (double)",
                         "queue @ 2000 = 42", "queue @ 4000 = -3"}));
}

}  // namespace
}  // namespace dlprof::dump
