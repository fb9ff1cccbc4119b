// For tests that build a TraceSet by hand and compare a streaming reader
// with the in-memory reference: the order FileStream hands events out in,
// and what a filter keeps of it. Header-only: it needs dlprof-dump's
// TraceSet, which the format-level helpers library does not link.
#ifndef DLPROF_TESTS_HELPERS_STREAM_ORDER_H_
#define DLPROF_TESTS_HELPERS_STREAM_ORDER_H_

#include <algorithm>
#include <tuple>
#include <vector>

#include "lib/read/trace_set.h"

namespace dlprof::testing {

// Sets `set->merged` to every event, ordered by (start, pid, tid, input,
// position in the input).
inline void MergeInStreamOrder(read::TraceSet* set) {
  set->merged.clear();
  for (uint32_t p = 0; p < set->processes.size(); ++p) {
    for (uint32_t i = 0; i < set->processes[p].events.size(); ++i) set->merged.push_back({p, i});
  }
  auto key = [set](const read::EventRef& r) {
    const read::ProcessTrace& p = set->processes[r.process];
    return std::make_tuple(p.events[r.index].start_ns, p.info.pid, p.tids[r.index], r.process,
                           r.index);
  };
  std::sort(set->merged.begin(), set->merged.end(),
            [&key](const read::EventRef& a, const read::EventRef& b) { return key(a) < key(b); });
}

// Keeps in `set->merged` the events whose `kept` entry (by position in it)
// is true, as dlprof-dump keeps what --pid/--rank/--from/--to pass.
inline void KeepOnly(read::TraceSet* set, const std::vector<bool>& kept) {
  std::vector<read::EventRef> out;
  for (size_t k = 0; k < set->merged.size(); ++k) {
    if (kept[k]) out.push_back(set->merged[k]);
  }
  set->merged = std::move(out);
}

}  // namespace dlprof::testing

#endif  // DLPROF_TESTS_HELPERS_STREAM_ORDER_H_
