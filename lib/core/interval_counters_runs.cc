// The runs of calls the flusher's counters hand over (interval_counters.h):
// a data file's calls and maps to the batch sampler (the waits' reading),
// writes, syncs and closes to the checkpoint saves. Each run's times put on
// the ns clock once, here.
#include <algorithm>
#include <cstdint>

#include "dlprof/catalogue.h"
#include "lib/core/interval_counters.h"
#include "lib/format/event_rules.h"

namespace dlprof::core {

void IntervalCounters::DataMaps(const Event* ev, size_t from, size_t to,
                                const format::TickScale& scale) {
  const uint16_t kind = ev[from].kind;
  const int live = kind == static_cast<uint16_t>(EventKind::Munmap)   ? -1
                   : kind == static_cast<uint16_t>(EventKind::Mremap) ? 0
                                                                      : 1;
  for (size_t k = from; k < to; ++k) {
    uint64_t start = ev[k].start_ns, dur = ev[k].dur_ns;
    if (ev[k].flags & kEventFlagTicks) scale.Times(start, dur, &start, &dur);
    batches_.MapCall(start, start + dur, live);
  }
}

void IntervalCounters::SettleRun(const Event* ev, size_t from, size_t to,
                                 const format::TickScale& scale) {
  const uint16_t kind = ev[from].kind;
  const OpClass op = kEventKinds.info[kind].op_class;
  const bool output_open = op == OpClass::Open && OpensForOutput(ev[from]);
  if (op != OpClass::Sync && op != OpClass::Close && !IsRename(kind) && !output_open) return;
  uint64_t start = ev[from].start_ns, unused = 0, last = ev[to - 1].start_ns,
           last_dur = ev[to - 1].dur_ns;
  if (ev[from].flags & kEventFlagTicks) {
    scale.Times(start, 0, &start, &unused);
    scale.Times(last, last_dur, &last, &last_dur);
  }
  if (output_open) {
    if (JobFile(ev[from].file)) saves_.OutputOpen(ev[from].file, start, last + last_dur);
    return;
  }
  const bool every_file = kind == static_cast<uint16_t>(EventKind::Sync) ||
                          kind == static_cast<uint16_t>(EventKind::Syncfs);
  saves_.Settle(every_file ? 0 : ev[from].file, start, last + last_dur);
}

void IntervalCounters::WriteRun(const Event* ev, size_t from, size_t to, uint64_t bytes,
                                uint64_t dur, const format::TickScale& scale) {
  uint64_t start = ev[from].start_ns, unused = 0, last = ev[to - 1].start_ns,
           last_dur = ev[to - 1].dur_ns;
  if (ev[from].flags & kEventFlagTicks) {
    scale.Times(start, 0, &start, &unused);
    scale.Times(last, last_dur, &last, &last_dur);
  }
  saves_.Write(ev[from].file, start, last + last_dur, bytes, dur, JobFile(ev[from].file));
}

void IntervalCounters::DataSpans(const Event* ev, size_t from, size_t to, bool reads,
                                 uint64_t dur, const format::TickScale& scale) {
  const bool ticks = (ev[from].flags & kEventFlagTicks) != 0;
  auto span = [&](size_t first, size_t last, uint64_t raw_ns) {
    // [first, last] of `ev`, its calls' summed time `raw_ns`, on the ns clock.
    uint64_t start = ev[first].start_ns, end_start = ev[last].start_ns, end_dur = ev[last].dur_ns;
    // (A duration read across CPUs may be a few ticks below 0.)
    uint64_t ns = static_cast<int64_t>(raw_ns) < 0 ? 0 : raw_ns;
    if (ticks) {
      uint64_t unused;
      scale.Times(start, 0, &start, &unused);
      scale.Times(end_start, end_dur, &end_start, &end_dur);
      ns = scale.Span(ns);
    }
    const uint64_t end = std::max(start, end_start + end_dur);
    if (reads) {
      batches_.DataRead(start, end, ns);
    } else {
      batches_.OtherDataCalls(start, end, ns);
    }
  };
  // A thread has its reading in stretches that leave out gaps of
  // kStepReadingJoinNs or more (a thread descheduled between two reads; a
  // prefetcher's decoding between its reads, which is not its I/O), as the
  // full events' step loop does: its runs are split there, the test made in
  // the events' own units (ticks or ns), so that a run costs a compare an
  // event. Also before any thread of the process was seen to step: the
  // threads' rings are drained one after another, and a prefetcher's,
  // drained first, holds reads of the loop (BatchSampler::OtherIo).
  (void)dur;
  const uint64_t join =
      ticks && scale.mult != 0
          ? static_cast<uint64_t>(
                (static_cast<unsigned __int128>(format::kStepReadingJoinNs) << 32) / scale.mult)
          : format::kStepReadingJoinNs;
  size_t first = from;
  uint64_t reached = ev[from].start_ns + ev[from].dur_ns, in_calls = ev[from].dur_ns;
  for (size_t k = from + 1; k < to; ++k) {
    if (ev[k].start_ns >= reached + join) {
      span(first, k - 1, in_calls);
      first = k;
      in_calls = 0;
    }
    reached = std::max(reached, ev[k].start_ns + ev[k].dur_ns);
    in_calls += ev[k].dur_ns;
  }
  span(first, to - 1, in_calls);
}

}  // namespace dlprof::core
