// What dlprof-dump says of a bounded run beside what it shows (bounded_note.h).
#include "tools/dump/bounded_note.h"

#include "lib/text/text.h"

namespace dlprof::dump {

std::string SecondsFrom(uint64_t origin_ns, uint64_t t) {
  return text::Fmt("%.2f s", t > origin_ns ? (t - origin_ns) / 1e9 : 0.0);
}

std::string BoundedSummaryLine(const read::KeptStretches& k) {
  if (!k.bounded) return "";
  const uint64_t origin = k.run_start_ns;
  if (k.stretches.empty()) {
    return "a bounded trace (DLPROF_KEEP): no event is kept; the whole run's figures: --summary";
  }
  return "a bounded trace (DLPROF_KEEP): the events cover " + SecondsFrom(origin, k.from_ns) +
         " - " + SecondsFrom(origin, k.to_ns) + " of the run (seconds from its first " +
         "process's start" + (k.several() ? "; each process's below" : "") +
         "); the whole run's figures: --summary";
}

std::string StretchLines(const read::KeptStretches& k, uint64_t origin_ns, const char* indent,
                         size_t rows) {
  std::string s;
  if (k.several()) {
    for (size_t i = 0; i < k.stretches.size() && i < rows; ++i) {
      const read::KeptStretch& r = k.stretches[i];
      s += text::Fmt("%spid %d on %s: %s - %s\n", indent, r.pid, r.host.c_str(),
                     SecondsFrom(origin_ns, r.from_ns).c_str(),
                     SecondsFrom(origin_ns, r.to_ns).c_str());
    }
    if (k.stretches.size() > rows) {
      s += text::Fmt("%s(and %zu more, the last ending at %s)\n", indent,
                     k.stretches.size() - rows, SecondsFrom(origin_ns, k.to_ns).c_str());
    }
  }
  if (k.counters_only > 0) {
    s += text::Fmt("%s%zu ended %s no event left, only %s counters (the whole run's figures)\n",
                   indent, k.counters_only, k.counters_only == 1 ? "process has" : "processes have",
                   k.counters_only == 1 ? "its" : "their");
  }
  return s;
}

}  // namespace dlprof::dump
