// The --from/--to/--pid/--rank selection applied to a stream of events.
#include "lib/read/event_filter.h"

#include <algorithm>

namespace dlprof::dump {

size_t EventFilter::Next(StreamEvent* out, size_t max) {
  const bool active = selection_.active();
  for (;;) {
    const size_t got = inner_->Next(out, max);
    if (got == 0) return 0;
    if (!active) {
      for (EventObserver* o : observers_) {
        for (size_t i = 0; i < got; ++i) o->Add(out[i], true);
      }
      passed_ += got;
      return got;
    }
    size_t kept = 0;
    for (size_t i = 0; i < got; ++i) {
      const bool keep = Keep(out[i]);
      for (EventObserver* o : observers_) o->Add(out[i], keep);
      if (keep) out[kept++] = out[i];
    }
    if (kept > 0) {
      passed_ += kept;
      return kept;
    }
  }
}

bool EventFilter::Keep(const StreamEvent& r) const {
  const EventSelection& s = selection_;
  // An event before the base (a damaged file merged out of order) is at 0.
  const uint64_t start = r.event->start_ns;
  const uint64_t t = start > s.base_ns ? start - s.base_ns : 0;
  if ((s.has_from && t < s.from_ns) || (s.has_to && t >= s.to_ns)) return false;
  auto listed = [](const std::vector<int32_t>& v, int32_t x) {
    return v.empty() || std::find(v.begin(), v.end(), x) != v.end();
  };
  const format::ProcessInfo& p = processes()[r.process].info;
  return listed(s.pids, p.pid) && listed(s.ranks, r.rank) &&
         (s.hosts.empty() || std::find(s.hosts.begin(), s.hosts.end(), p.host) != s.hosts.end());
}

}  // namespace dlprof::dump
