// --compare as text: the comparison of lib/analysis/compare (each run's
// figures and after minus before), formatted; nothing is computed here but
// the relative change of a label.
//
//   dlprof compare: before traces-2w, after traces-4w
//     bound                      data -> data
//     batch wait's largest cause reading -> reading
//                              before        after   change
//     time per step           41.2 ms      20.3 ms     -20.9 ms (-50.7 %)
//     ...
//   Data set
//     read                    3.0 MiB      3.0 MiB          0 B (0.0 %)
//   Per rank (before -> after, change)
//     rank 0 (node1): time per step 41.2 ms -> 20.3 ms, -20.9 ms (-50.7 %); ...
//   Findings
//     appeared:  few_workers: ...
//     went away: batch_wait: ...
//     stayed:    small_reads: its time 0.30 s -> 0.10 s, -0.20 s (-66.7 %)
#include <cinttypes>

#include "lib/text/text.h"
#include "tools/dump/compare_output.h"

namespace dlprof::dump {
using namespace dlprof::analysis;
using namespace dlprof::text;
namespace {

std::string ValueText(FigureUnit unit, uint64_t v) {
  switch (unit) {
    case FigureUnit::kNs: return DurationText(v);
    case FigureUnit::kBytes: return ByteText(v);
    case FigureUnit::kPerMille: return PerMilleText(v);
    case FigureUnit::kBytesPerSecond: return ByteText(v) + "/s";
    case FigureUnit::kCount: break;
  }
  return Fmt("%" PRIu64, v);
}

// The change with its sign; a share's in percentage points, the others'
// also relative to before.
std::string ChangeText(const FigureChange& f) {
  if (!f.both()) return "-";
  const int64_t d = f.change();
  const uint64_t size = d < 0 ? static_cast<uint64_t>(-d) : static_cast<uint64_t>(d);
  const char* sign = d < 0 ? "-" : d > 0 ? "+" : "";
  if (f.unit == FigureUnit::kPerMille) {
    return Fmt("%s%" PRIu64 ".%" PRIu64 " points", sign, size / 10, size % 10);
  }
  std::string s = sign + ValueText(f.unit, size);
  if (f.before > 0) {
    s += Fmt(" (%+.1f %%)", 100.0 * static_cast<double>(d) / static_cast<double>(f.before));
  }
  return s;
}

std::string Side(const FigureChange& f, bool after) {
  const bool in = after ? f.in_after : f.in_before;
  return in ? ValueText(f.unit, after ? f.after : f.before) : "-";
}

// A table of a group's figures: before, after, change.
std::string Table(const FigureGroup& g) {
  std::string out;
  for (const FigureChange& f : g.figures) {
    if (!f.in_before && !f.in_after) continue;
    out += Fmt("  %-26s %12s %12s   %s\n", f.label.c_str(), Side(f, false).c_str(),
               Side(f, true).c_str(), ChangeText(f).c_str());
  }
  return out;
}

// One line of a rank's or host's headline figures (time per step, batch
// wait, data stall, GPU busy): "figure before -> after, change".
std::string Line(const std::string& what, const FigureGroup& g) {
  std::string out = "  " + what + ":";
  if (!g.in_before || !g.in_after) {
    return out + (g.in_before ? " in the run before only\n" : " in the run after only\n");
  }
  const char* sep = " ";
  for (const FigureChange& f : g.figures) {
    // The figures of the verdict's headline; the others are in the JSON.
    if (!f.both() || (f.key != "step_ns" && f.key != "batch_wait_ns" &&
                      f.key != "data_stall_ns" && f.key != "gpu_busy_ns")) {
      continue;
    }
    out += sep + f.label + " " + Side(f, false) + " -> " + Side(f, true) + ", " + ChangeText(f);
    sep = "; ";
  }
  return out + "\n";
}

std::string CauseText(const Verdict& v) {
  return v.has_batch_wait && v.split ? WaitCauseText(v.cause) : "-";
}

std::string Findings(const Comparison& c) {
  std::string out;
  for (const FindingChange& f : c.findings) {
    if (f.in_before && f.in_after) {
      FigureChange cost{f.rule, f.rule, FigureUnit::kNs, true, true, f.cost_before_ns,
                        f.cost_after_ns};
      out += Fmt("  stayed:    %s: its time %s -> %s, %s\n", f.rule.c_str(),
                 DurationText(f.cost_before_ns).c_str(), DurationText(f.cost_after_ns).c_str(),
                 ChangeText(cost).c_str());
    } else {
      out += Fmt("  %-10s %s: %s\n", f.in_after ? "appeared:" : "went away:", f.rule.c_str(),
                 (f.in_after ? f.what_after : f.what_before).c_str());
    }
  }
  return out.empty() ? "  none in either run\n" : out;
}

}  // namespace

std::string CompareText(const Comparison& c, const std::string& before, const std::string& after,
                        size_t rows) {
  std::string out = "dlprof compare: before " + before + ", after " + after + "\n";
  out += Fmt("  %-26s %s -> %s\n", "bound", BoundName(c.before.bound), BoundName(c.after.bound));
  out += Fmt("  %-26s %s -> %s\n", "batch wait's largest cause", CauseText(c.before).c_str(),
             CauseText(c.after).c_str());
  out += Fmt("  %-26s %12s %12s   %s\n", "", "before", "after", "change");
  out += Table(c.verdict);
  out += "Data set (files read that are not code, outputs or the system's)\n" + Table(c.data_set);
  if (!c.ranks.empty()) {
    out += "Per rank (before -> after, change)\n";
    for (size_t i = 0; i < c.ranks.size() && i < rows; ++i) {
      const FigureGroup& g = c.ranks[i];
      out += Line("rank " + g.key + (g.host.empty() ? "" : " (" + g.host + ")"), g);
    }
    if (c.ranks.size() > rows) out += Fmt("  ... and %zu more (--top N)\n", c.ranks.size() - rows);
  }
  if (c.hosts.size() > 1 ||
      (c.hosts.size() == 1 && !(c.hosts[0].in_before && c.hosts[0].in_after))) {
    out += "Per host (before -> after, change)\n";
    for (size_t i = 0; i < c.hosts.size() && i < rows; ++i) {
      out += Line(c.hosts[i].host, c.hosts[i]);
    }
    if (c.hosts.size() > rows) out += Fmt("  ... and %zu more (--top N)\n", c.hosts.size() - rows);
  }
  out += "Findings (the verdict's, by rule)\n" + Findings(c);
  return out;
}

}  // namespace dlprof::dump
