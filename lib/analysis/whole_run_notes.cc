// Notes on a bounded trace's counters (whole_run_notes.h).
#include "lib/analysis/whole_run_notes.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <set>

#include "lib/format/counters.h"

namespace dlprof::analysis {

CountersNotes ReadCountersNotes(const read::TraceCatalog& catalog,
                                const read::ClockAlignment& clocks) {
  CountersNotes notes;
  std::set<std::string> seen;
  for (size_t i = 0; i < catalog.traces.size(); ++i) {
    const read::CatalogEntry& t = catalog.traces[i];
    if (!t.opened || !(t.info.flags & kHeaderFlagSegment)) continue;
    notes.bounded = true;
    const std::string path = format::CountersPathOf(t.path);
    if (!seen.insert(path).second) continue;
    // Every record is read (the file has no index), none kept but the
    // lost ones, which every read collects.
    format::CountersVisitor none;
    format::CountersFile c;
    std::string error;
    if (!format::VisitCountersFile(path, &none, &c, &error)) {
      ++notes.unreadable;
      continue;
    }
    ++notes.counters;
    const read::DomainMap* clock = clocks.identity() ? nullptr : &clocks.of(i);
    for (const format::LostRecord& r : c.lost) {
      LostStretch s;
      s.host = c.info.host;
      s.pid = c.info.pid;
      s.from_ns = clock != nullptr ? clock->Map(r.from_ns) : r.from_ns;
      s.to_ns = clock != nullptr ? clock->Map(r.to_ns) : r.to_ns;
      s.events = r.events;
      s.blocks = r.blocks;
      s.error = r.error;
      notes.lost.push_back(s);
    }
  }
  return notes;
}

void AddCountersNotes(const CountersNotes& notes, WholeRun* w) {
  auto at = [&](uint64_t t) {
    char b[32];
    const uint64_t base = w->present && w->start_ns != UINT64_MAX ? w->start_ns : 0;
    snprintf(b, sizeof(b), "%.2f s", static_cast<double>(t > base ? t - base : 0) / 1e9);
    return std::string(b);
  };
  for (const LostStretch& s : notes.lost) {
    char b[320];
    snprintf(b, sizeof(b),
             "warning: pid %d on %s: %" PRIu64 " events (%" PRIu64 " blocks) of its trace were "
             "lost to \"%s\" between %s and %s of the run; the whole run's counts have them, "
             "the kept events lack them",
             s.pid, s.host.c_str(), s.events, s.blocks, std::strerror(static_cast<int>(s.error)),
             at(s.from_ns).c_str(), at(s.to_ns).c_str());
    w->messages.push_back(b);
  }
  if (notes.bounded && notes.counters == 0) {
    w->messages.push_back(
        "warning: a bounded trace (DLPROF_KEEP) whose counters files are missing or unreadable: "
        "there is no whole run; every figure covers the kept events only, not the run");
  }
}

}  // namespace dlprof::analysis
