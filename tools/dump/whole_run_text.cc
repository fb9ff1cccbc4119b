// The whole run of a bounded trace as text (lib/analysis/whole_run.h): what
// --summary prints first over traces written with DLPROF_KEEP, before the
// summary of the kept windows' full events, so that a reader never takes
// the figures of a few seconds for the run's.
//
//   Whole run, from counters (DLPROF_KEEP): 30.1 s, 1 process, 7 intervals
//     verdict      the training loop waited for data 12.1 % of the loop; of that wait, reading 81.0
//     % I/O          600001 calls, 2.29 GiB read, 0 B written, 3.20 s in calls by class     data
//     600001 calls 2.29 GiB read 3.20 s batch wait   12.1 % of the loop (3.64 s over 1000 batches),
//     250 optimizer steps
//       causes     mostly reading: reading 81.0 %, preprocessing 12.2 %, hand-over 6.8 %, ...
//                  (980 waits for workers' batches, 150 of them sampled; 20 split where they were)
//       worst      20.0 s - 25.0 s: batch wait 31.0 % of it, mostly reading (of 7 points of 5.00 s)
//     checkpoints  8.1 % of the loop stopped for 12 saves (4.00 GiB written), 2.44 s; 0 us in ...
//     GPU busy     61.0 % of the loop (18.36 s)
//     data stall   4.2 % of the loop (1.26 s): I/O outstanding, the GPU idle
//     by kind      pread64 600000 calls 2.29 GiB 3.20 s, openat 1 call ...
//     top files    /data/train.bin  600000 calls  2.29 GiB  3.20 s (data)
//     findings     the whole run's (most costly first):
//       1. The training loop waited for data 12.1 % of the loop (3.64 s over ...
//          try: the loader was reading data files: faster storage ...
//   Kept windows (full events below): 5.6 s of the run
//     pid 1234 on node1: 24.5 s - 30.1 s (the last 5 s)
//     pid 1234 on node1: 12.0 s - 22.0 s (batch_wait 31.2% > 25% over the last interval)
#include <algorithm>

#include "dlprof/catalogue.h"
#include "lib/analysis/findings/verdict.h"
#include "lib/analysis/findings/whole_run_verdict.h"
#include "lib/text/text.h"
#include "tools/dump/bounded_note.h"
#include "tools/dump/summary_output.h"
#include "tools/dump/whole_run_text.h"

namespace dlprof::dump {
using namespace dlprof::analysis;
using namespace dlprof::text;
namespace {

std::string IoText(const format::IoTotals& io) {
  return Fmt("%llu calls, %s read, %s written, %s in calls",
             static_cast<unsigned long long>(io.calls()), ByteText(io.read_bytes).c_str(),
             ByteText(io.write_bytes).c_str(), DurationText(io.ns()).c_str());
}

std::string At(const WholeRun& w, uint64_t t) {
  return DurationText(t > w.start_ns ? t - w.start_ns : 0);
}

// "mostly reading: reading 81.0 %, preprocessing 12.2 %, hand-over 6.8 %,
// worker start-up 0.0 %" (the largest as the verdict names it); empty
// without waits.
std::string CausesText(const WholeRunCauses& c) {
  const uint64_t all = c.total_ns();
  if (all == 0) return "";
  std::string s;
  if (all > c.unsplit_ns) {
    s = std::string("mostly ") +
        WaitCauseText(LargestCause(c.reading_ns, c.preprocessing_ns, c.handover_ns,
                                   c.worker_startup_ns)) +
        ": ";
  }
  s += "reading " + PerMilleText(PerMille(c.reading_ns, all)) + ", preprocessing " +
                  PerMilleText(PerMille(c.preprocessing_ns, all)) + ", hand-over " +
                  PerMilleText(PerMille(c.handover_ns, all)) + ", worker start-up " +
                  PerMilleText(PerMille(c.worker_startup_ns, all));
  if (c.unsplit_ns > 0) s += ", unsplit " + PerMilleText(PerMille(c.unsplit_ns, all));
  return s;
}

// "    worst      2.50 s - 3.50 s: batch wait 81.0 % of it, mostly
// preprocessing (of 22 points of 1.00 s)": the moment the loop waited
// most (whole_run_points.h); empty where the run is one point.
std::string WorstPointText(const WholeRun& w) {
  const WholeRunPoints& t = w.points;
  if (t.worst < 0 || t.points.size() < 2) return "";
  const WholeRunPoint& p = t.points[t.worst];
  if (p.batch_wait_ns == 0) return "";
  const WholeRunCauses& c = p.causes;
  std::string cause;
  if (c.total_ns() > c.unsplit_ns) {
    cause = std::string(", mostly ") + WaitCauseText(LargestCause(c.reading_ns, c.preprocessing_ns,
                                                                  c.handover_ns,
                                                                  c.worker_startup_ns));
  }
  return Fmt("    worst      %s - %s: batch wait %s of it%s (of %zu points of %s)\n",
             At(w, p.start_ns).c_str(), At(w, p.end_ns).c_str(),
             PerMilleText(PerMille(p.batch_wait_ns, p.waiting_ns)).c_str(), cause.c_str(),
             t.points.size(), DurationText(t.point_ns).c_str());
}

}  // namespace

std::string WholeRunText(const WholeRun& w, const read::KeptStretches& kept, size_t rows) {
  if (!w.present) {
    // A bounded trace without counters (whole_run_notes.h): say so before
    // figures that are the kept events' alone.
    std::string s;
    for (const std::string& m : w.messages) s += m + "\n";
    return s.empty() ? s : s + "\n";
  }
  std::string s;
  s += Fmt("Whole run, from counters (DLPROF_KEEP): %s, %llu process%s, %llu intervals\n",
           DurationText(w.end_ns - w.start_ns).c_str(),
           static_cast<unsigned long long>(w.processes), w.processes == 1 ? "" : "es",
           static_cast<unsigned long long>(w.intervals));
  const Verdict verdict = WholeRunVerdict(w);
  // What the counters can tell: a loop that waited for data or not, or
  // that its wait is not measured (a loop of steps: verdict.h).
  if (verdict.bound != Bound::kUnknown || verdict.wait_unmeasured) {
    s += "  verdict      " + VerdictHeadline(verdict) + "\n";
  }
  s += "  I/O          " + IoText(w.total) + "\n";
  std::string classes;
  for (uint8_t c = 0; c < format::kCounterClasses; ++c) {
    const format::IoTotals& io = w.classes[c];
    if (io.calls() == 0) continue;
    classes += Fmt("%s%s %llu calls %s read %s written %s", classes.empty() ? "" : "; ",
                   CounterClassName(c), static_cast<unsigned long long>(io.calls()),
                   ByteText(io.read_bytes).c_str(), ByteText(io.write_bytes).c_str(),
                   DurationText(io.ns()).c_str());
  }
  if (!classes.empty()) s += "  by class     " + classes + "\n";
  if (verdict.wait_unmeasured) {
    s += "  batch wait   not measured: " + verdict.batch_wait_missing + "\n";
    s += Fmt("  loop         %s, %llu optimizer steps; the steps' own reading %s\n",
             DurationText(w.loop_ns).c_str(), static_cast<unsigned long long>(w.steps),
             DurationText(w.batch_wait_ns).c_str());
  } else if (w.batches > 0) {
    s += "  batch wait   " + PerMilleText(PerMille(w.batch_wait_ns, w.loop_ns)) +
         Fmt(" of the loop (%s over %llu %s); loop %s, %llu optimizer steps\n",
             DurationText(w.batch_wait_ns).c_str(), static_cast<unsigned long long>(w.batches),
             w.loop_of_steps ? "steps" : "batches",
             DurationText(w.loop_ns).c_str(), static_cast<unsigned long long>(w.steps));
    const WholeRunCauses& c = w.causes;
    const std::string causes = CausesText(c);
    if (!causes.empty()) {
      s += "    causes     " + causes + "\n";
      if (c.flow_waits > 0) {
        // The sample's precision, where not every wait was sampled: the
        // largest part's standard error, as a share of the wait.
        const uint64_t error = std::max({c.reading_error_ns, c.preprocessing_error_ns,
                                         c.handover_error_ns, c.worker_startup_error_ns});
        const std::string precision =
            error > 0 ? ", each part within " + PerMilleText(PerMille(error, w.batch_wait_ns)) +
                            " of the wait at one standard error"
                      : "";
        // A long run's samples, thinned as read (whole_run_causes.h).
        std::string thinned =
            c.thinned_one_in > 1 ? Fmt("one in %llu kept as read",
                                       static_cast<unsigned long long>(c.thinned_one_in))
                                 : "";
        if (c.passes_one_in > 1) {
          thinned += Fmt("%sthe first batches of one pass in %llu", thinned.empty() ? "" : ", ",
                         static_cast<unsigned long long>(c.passes_one_in));
        }
        if (!thinned.empty()) thinned = " (" + thinned + ")";
        s += Fmt("               (%llu waits for workers' batches, %llu of them sampled%s%s; "
                 "%llu split where they were)\n",
                 static_cast<unsigned long long>(c.flow_waits),
                 static_cast<unsigned long long>(c.sampled), thinned.c_str(), precision.c_str(),
                 static_cast<unsigned long long>(c.own_waits));
      }
    }
    s += WorstPointText(w);
  } else if (w.steps > 0) {
    s += Fmt("  loop         %s, %llu optimizer steps (no batch waits recorded)\n",
             DurationText(w.loop_ns).c_str(), static_cast<unsigned long long>(w.steps));
  }
  s += CheckpointLine(verdict);
  const char* basis = verdict.loop_basis == LoopBasis::kGpu ? "GPU's window" : "loop";
  if (verdict.has_gpu) {
    s += "  GPU busy     " + PerMilleText(PerMille(verdict.gpu_busy_ns, verdict.loop_ns)) +
         Fmt(" of the %s (%s)\n", basis, DurationText(verdict.gpu_busy_ns).c_str());
  }
  // (None from a writer without data stall records: not a stall of 0.)
  if (verdict.has_data_stall) {
    s += "  data stall   " + PerMilleText(PerMille(verdict.data_stall_ns, verdict.loop_ns)) +
         Fmt(" of the %s (%s): I/O outstanding, the GPU idle\n", basis,
             DurationText(verdict.data_stall_ns).c_str());
  }
  if (verdict.lockstep.found && verdict.has_batch_wait) {
    // The ranks step together: the job waits as its slowest rank
    // (whole_run_verdict.h), where the sums above read it at 1/N.
    s += Fmt("  lockstep     the %zu ranks step together (their loops run alike, their waits "
             "differ): the slowest rank waited %s, %s of a rank's loop\n",
             verdict.lockstep.ranks, DurationText(verdict.lockstep.wait_ns).c_str(),
             PerMilleText(verdict.wait_per_mille()).c_str());
  }
  // The ranks whose batch wait took the largest share of their loop first
  // (none where the wait is not measured: their shares are no wait).
  std::vector<const WholeRunRank*> ranks;
  for (const WholeRunRank& r : w.ranks) {
    if (r.batches > 0 && !verdict.wait_unmeasured) ranks.push_back(&r);
  }
  std::sort(ranks.begin(), ranks.end(), [](const WholeRunRank* a, const WholeRunRank* b) {
    const uint64_t pa = PerMille(a->batch_wait_ns, a->loop_ns);
    const uint64_t pb = PerMille(b->batch_wait_ns, b->loop_ns);
    return pa != pb ? pa > pb : a->rank < b->rank;
  });
  if (ranks.size() > 1) {
    s += Fmt("  ranks        %zu with batch waits, the most waiting first:\n", ranks.size());
    for (size_t i = 0; i < ranks.size() && i < rows; ++i) {
      const WholeRunRank& r = *ranks[i];
      s += Fmt("    rank %-5d batch wait %s of its loop (%s over %llu %s, loop %s), %llu "
               "process%s; %s\n",
               r.rank, PerMilleText(PerMille(r.batch_wait_ns, r.loop_ns)).c_str(),
               DurationText(r.batch_wait_ns).c_str(), static_cast<unsigned long long>(r.batches),
               r.loop_of_steps ? "steps" : "batches",
               DurationText(r.loop_ns).c_str(), static_cast<unsigned long long>(r.processes),
               r.processes == 1 ? "" : "es", CausesText(r.causes).c_str());
    }
    if (ranks.size() > rows) s += Fmt("    (%zu more: --top N)\n", ranks.size() - rows);
  }
  std::vector<format::KindRow> kinds;
  for (const auto& [code, k] : w.kinds) kinds.push_back(k);
  std::sort(kinds.begin(), kinds.end(), [](const format::KindRow& a, const format::KindRow& b) {
    return a.ns != b.ns ? a.ns > b.ns : a.kind < b.kind;
  });
  std::string by_kind;
  for (size_t i = 0; i < kinds.size() && i < rows; ++i) {
    const EventKindInfo* info = LookupKind(kinds[i].kind);
    const std::string name =
        info != nullptr && info->name != nullptr ? info->name : Fmt("kind_%u", kinds[i].kind);
    by_kind += Fmt("%s%s %llu calls %s %s", by_kind.empty() ? "" : "; ", name.c_str(),
                   static_cast<unsigned long long>(kinds[i].calls),
                   ByteText(kinds[i].bytes).c_str(), DurationText(kinds[i].ns).c_str());
  }
  if (!by_kind.empty()) s += "  by kind      " + by_kind + "\n";
  for (size_t i = 0; i < w.files.size() && i < rows; ++i) {
    const WholeRunFile& f = w.files[i];
    s += Fmt("  %s %s  %llu calls  %s  %s (%s)\n", i == 0 ? "top files  " : "           ",
             f.path.c_str(), static_cast<unsigned long long>(f.io.calls()),
             ByteText(f.io.read_bytes + f.io.write_bytes).c_str(),
             DurationText(f.io.ns()).c_str(), CounterClassName(f.cls));
  }
  if (!verdict.findings.empty()) {
    s += "  findings     the whole run's (most costly first):\n" +
         FindingLines(verdict.findings, "    ");
  }
  s += "Kept windows (the full events that everything below is about): " +
       DurationText(w.kept_event_ns) + " of the run" +
       (kept.stretches.empty() ? std::string()
                               : ", " + At(w, kept.from_ns) + " - " + At(w, kept.to_ns)) +
       "\n";
  s += StretchLines(kept, w.start_ns, "  ", rows);
  for (const KeptWindow& k : w.kept) {
    s += Fmt("  pid %d on %s: %s - %s (%s)\n", k.pid, k.host.c_str(), At(w, k.from_ns).c_str(),
             At(w, k.to_ns).c_str(), k.reason.c_str());
  }
  for (const std::string& m : w.messages) s += m + "\n";
  s += "\n";
  return s;
}

}  // namespace dlprof::dump
