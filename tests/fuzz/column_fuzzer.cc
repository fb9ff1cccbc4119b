// libFuzzer target: the column codecs of a block payload (block_codec.cc):
// every column's varints, deltas and predictions, the repeated-column
// template, the stop-mask path for long varints, thread runs and strings.
//
// Byte 0 picks the mode:
//
//   even  round trip: the rest of the input describes a block (info,
//         strings, events field by field -- each field repeats the previous
//         event's, moves by a small step or takes any 64-bit value -- and
//         thread changes); BlockEncoder encodes it and DecodeBlockPayload
//         must give back exactly the same block, with the facts DecodedBlock
//         notes (span, order, file runs) as a plain walk computes them
//   odd   hostile payload: u32 event count, then payload bytes, decoded as
//         a block's would be. A payload the decoder accepts must survive a
//         round trip through the encoder unchanged
//
// Any difference is a crash.
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "dlprof/format.h"
#include "lib/format/block_codec.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

namespace format = dlprof::format;
using dlprof::Event;

constexpr size_t kMaxEvents = 1 << 16;

// The facts DecodedBlock notes, computed the plain way.
void CheckNotes(const format::DecodedBlock& b) {
  const auto& ev = b.events;
  uint64_t min_start = ev.empty() ? 0 : UINT64_MAX, max_end = 0;
  bool wraps = false, in_order = true;
  std::vector<format::DecodedBlock::FileRun> runs;
  for (size_t i = 0; i < ev.size(); ++i) {
    const uint64_t end = ev[i].start_ns + ev[i].dur_ns;
    min_start = ev[i].start_ns < min_start ? ev[i].start_ns : min_start;
    max_end = end > max_end ? end : max_end;
    wraps |= end < ev[i].start_ns;
    if (i > 0) {
      in_order &= ev[i].start_ns > ev[i - 1].start_ns ||
                  (ev[i].start_ns == ev[i - 1].start_ns && b.tids[i] >= b.tids[i - 1]);
    }
    if (i == 0 || ev[i].file != ev[i - 1].file) {
      runs.push_back({ev[i].file, static_cast<uint32_t>(i)});
    }
  }
  FUZZ_CHECK(b.min_start_ns == min_start && b.max_end_ns == max_end && b.end_wraps == wraps);
  FUZZ_CHECK(b.in_start_order == in_order);
  FUZZ_CHECK(b.file_runs.size() == runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    FUZZ_CHECK(b.file_runs[i].file == runs[i].file && b.file_runs[i].first == runs[i].first);
  }
}

// Encodes `b` (its info, strings, events and tids) and decodes the payload:
// the result must equal `b`. Events are taken as on disk: kEventFlagTicks
// marks a writer's event still in TSC ticks, which the encoder converts to
// ns (tick_scale.h) and no decoded event carries.
void RoundTrip(const format::DecodedBlock& in) {
  format::DecodedBlock b = in;
  for (Event& e : b.events) {
    e.flags = static_cast<uint16_t>(e.flags & ~dlprof::kEventFlagTicks);
  }
  format::BlockEncoder enc;
  enc.Begin(b.info);
  for (const auto& s : b.strings) enc.AddString(s.id, s.text.data(), s.text.size());
  for (size_t i = 0; i < b.events.size();) {
    size_t j = i + 1;
    while (j < b.events.size() && b.tids[j] == b.tids[i]) ++j;
    enc.AddEvents(b.tids[i], &b.events[i], j - i);
    i = j;
  }
  std::vector<uint8_t> raw;
  enc.Finish(&raw);
  format::DecodedBlock out;
  std::string error;
  FUZZ_CHECK(format::DecodeBlockPayload(raw.data(), raw.size(),
                                        static_cast<uint32_t>(b.events.size()),
                                        dlprof::kFormatVersion, &out, &error));
  FUZZ_CHECK(out.info.clock_mono_ns == b.info.clock_mono_ns &&
             out.info.clock_real_ns == b.info.clock_real_ns && out.info.rank == b.info.rank &&
             out.info.dropped_events == b.info.dropped_events);
  FUZZ_CHECK(out.strings.size() == b.strings.size());
  for (size_t i = 0; i < b.strings.size(); ++i) {
    FUZZ_CHECK(out.strings[i].id == b.strings[i].id && out.strings[i].text == b.strings[i].text);
  }
  FUZZ_CHECK(out.tids == b.tids);
  FUZZ_CHECK(out.events.size() == b.events.size());
  for (size_t i = 0; i < b.events.size(); ++i) {
    FUZZ_CHECK(std::memcmp(&out.events[i], &b.events[i], sizeof(Event)) == 0);
  }
  CheckNotes(out);
}

// One field of the next event: the previous value, a small step from it, or
// any value (the encoder must take every value a field can hold).
template <typename T>
T NextField(dlprof::fuzz::Cursor& in, T prev) {
  const uint8_t how = in.Take<uint8_t>();
  if (how < 0x80) return prev;
  // In unsigned arithmetic: a step past the end of a signed field wraps.
  if (how < 0xf0) {
    return static_cast<T>(static_cast<uint64_t>(prev) +
                          static_cast<uint64_t>(static_cast<int64_t>(how) - 0xb8));
  }
  return static_cast<T>(in.Take<uint64_t>());
}

void FuzzRoundTrip(dlprof::fuzz::Cursor in) {
  format::DecodedBlock b;
  b.info.clock_mono_ns = in.Take<uint64_t>();
  b.info.clock_real_ns = in.Take<uint64_t>();
  b.info.rank = in.Take<int32_t>();
  b.info.dropped_events = in.Take<uint64_t>();
  for (int s = in.Take<uint8_t>() % 4; s > 0; --s) {
    const uint32_t id = in.Take<uint32_t>();
    size_t got;
    const uint8_t* text = in.Bytes(in.Take<uint8_t>(), &got);
    b.strings.push_back({id, std::string(reinterpret_cast<const char*>(text), got)});
  }
  Event e{};
  int32_t tid = in.Take<int32_t>();
  while (!in.empty() && b.events.size() < kMaxEvents) {
    const uint8_t control = in.Take<uint8_t>();
    if (control & 0x80) tid = in.Take<int32_t>();
    e.kind = NextField(in, e.kind);
    e.flags = NextField(in, e.flags);
    e.err = NextField(in, e.err);
    e.start_ns = NextField(in, e.start_ns);
    e.dur_ns = NextField(in, e.dur_ns);
    e.ret = NextField(in, e.ret);
    e.offset = NextField(in, e.offset);
    e.size = NextField(in, e.size);
    e.file = NextField(in, e.file);
    e.fd = NextField(in, e.fd);
    e.aux = NextField(in, e.aux);
    // The low bits repeat the event: long runs of one value are what the
    // decoder's template path is for.
    for (int r = control & 0x3f; r >= 0 && b.events.size() < kMaxEvents; --r) {
      b.events.push_back(e);
      b.tids.push_back(tid);
    }
  }
  RoundTrip(b);
}

void FuzzPayload(dlprof::fuzz::Cursor in) {
  uint32_t events = in.Take<uint32_t>();
  // The top bit picks the oldest format version, whose timings differ.
  const uint32_t version = events >> 31 ? dlprof::kOldestFormatVersion : dlprof::kFormatVersion;
  events &= 0x7fffffffu;
  format::DecodedBlock b;
  std::string error;
  if (!format::DecodeBlockPayload(in.position(), in.left(), events, version, &b, &error)) {
    FUZZ_CHECK(!error.empty());
    return;
  }
  FUZZ_CHECK(b.events.size() == events && b.tids.size() == events);
  CheckNotes(b);
  RoundTrip(b);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  dlprof::fuzz::Cursor in(data + 1, size - 1);
  if (data[0] & 1) {
    FuzzPayload(in);
  } else {
    FuzzRoundTrip(in);
  }
  return 0;
}
