// Which stretch of a bounded run its kept events cover (kept_stretches.h).
#include "lib/read/kept_stretches.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "dlprof/format.h"
#include "lib/format/trace_layout.h"

namespace dlprof::read {
uint32_t SegmentNumberOf(const std::string& path) {
  const std::string stem = format::TraceStemOf(path);
  if (path.size() <= stem.size() + 2 || path.compare(stem.size(), 2, ".k") != 0) return 0;
  return static_cast<uint32_t>(std::strtoul(path.c_str() + stem.size() + 2, nullptr, 10));
}

bool KeptStretches::several() const {
  for (const KeptStretch& s : stretches) {
    if (s.from_ns != stretches.front().from_ns || s.to_ns != stretches.front().to_ns) return true;
  }
  return false;
}

KeptStretches FindKeptStretches(const TraceCatalog& catalog, const ClockAlignment& clocks) {
  KeptStretches k;
  struct Segment {
    uint32_t n;
    size_t trace;
  };
  std::map<std::string, std::vector<Segment>> images;  // by stem: a process image's segments
  for (size_t i = 0; i < catalog.traces.size(); ++i) {
    const CatalogEntry& t = catalog.traces[i];
    if (!t.opened || !(t.info.flags & kHeaderFlagSegment)) continue;
    k.bounded = true;
    const std::string stem = format::TraceStemOf(t.path);
    images[stem].push_back(Segment{SegmentNumberOf(t.path), i});
    const uint64_t start =
        clocks.identity() ? t.info.process_start_ns : clocks.of(i).Map(t.info.process_start_ns);
    k.run_start_ns = std::min(k.run_start_ns, start);
  }
  for (auto& [stem, segments] : images) {
    ++k.processes;
    std::sort(segments.begin(), segments.end(),
              [](const Segment& a, const Segment& b) { return a.n < b.n; });
    bool any = false;
    KeptStretch s;
    for (size_t j = 0; j < segments.size(); ++j) {
      const CatalogEntry& t = catalog.traces[segments[j].trace];
      // A segment deleted before this one: a stretch of its own from here.
      if (j > 0 && segments[j].n != segments[j - 1].n + 1 && s.to_ns != 0) {
        k.stretches.push_back(s);
        s = KeptStretch();
      }
      if (t.first_start_ns == UINT64_MAX) continue;  // no event (an idle span, an end segment)
      const uint64_t end =
          clocks.identity() ? t.last_end_ns : clocks.of(segments[j].trace).Map(t.last_end_ns);
      s.host = t.info.host;
      s.pid = t.info.pid;
      s.from_ns = s.to_ns == 0 ? t.first_start_ns : std::min(s.from_ns, t.first_start_ns);
      s.to_ns = std::max(s.to_ns, end);
      any = true;
    }
    if (s.to_ns != 0) k.stretches.push_back(s);
    if (!any) ++k.counters_only;
  }
  std::sort(k.stretches.begin(), k.stretches.end(),
            [](const KeptStretch& a, const KeptStretch& b) {
              return a.from_ns != b.from_ns ? a.from_ns < b.from_ns : a.pid < b.pid;
            });
  for (const KeptStretch& s : k.stretches) {
    k.from_ns = std::min(k.from_ns, s.from_ns);
    k.to_ns = std::max(k.to_ns, s.to_ns);
  }
  k.run_end_ns = k.to_ns;
  return k;
}

}  // namespace dlprof::read
