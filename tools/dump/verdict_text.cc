// The verdict as text: what --summary prints first, and alone with compact
// tables unless --details asks for the full listing. It fits one screen
// (about 50 lines) whatever the job's size: the tables keep their top rows
// and say how many they left out.
//
//   dlprof verdict: the training loop waited for data 23.4 % of the loop; of that wait,
//   reading 81.0 %
//     run 12.30 s, 3 processes (1 main, 2 loader workers), 1472 events
//     loop         10.1 s, 120 optimizer steps; start-up before it 2.2 s (...)
//     batch wait   23.4 % of the loop (2.36 s over 120 batches)
//                  of it reading 81.0 %, preprocessing 12.5 %, hand-over 6.5 %
//     data stall   no GPU activity recorded
//     I/O time     main 0.12 s (10.5 %), loader workers 1.02 s (89.5 %) of the I/O time
//   Findings
//     1. The training loop waited for data 23.4 % of the run (...).
//        try: more DataLoader workers, ...
//   ...
#include <algorithm>
#include <cinttypes>

#include "lib/analysis/summary/file_classes.h"
#include "lib/analysis/findings/verdict.h"
#include "lib/text/text.h"
#include "tools/dump/summary_output.h"
#include "tools/dump/summary_ranks_text.h"

namespace dlprof::dump {
using namespace dlprof::analysis;
using namespace dlprof::text;
namespace {

std::string LeftOut(size_t n) {
  return n == 0 ? "" : Fmt("    ... and %zu more (--top N, --details)\n", n);
}

// "over 34 optimizer steps" or "over 34 batches".
std::string StepsText(const Verdict& v) {
  return Fmt("%" PRIu64 " %s", v.loop_steps, v.optimizer_steps ? "optimizer steps" : "batches");
}

// Waiting for other ranks in collective MPI-IO calls: taken out of the
// figures above (the batch wait's reading, the I/O time), said here.
void CollectiveWaitsText(const CollectiveWaitFigures& c, std::string* out) {
  if (c.wait_ns > 0) {
    std::string late;
    for (const auto& [rank, ns] : c.late_ranks) {
      late += Fmt("%srank %d (%s)", late.empty() ? "" : ", ", rank, DurationText(ns).c_str());
    }
    *out += Fmt("  collective   waiting for other ranks in collective MPI-IO calls %s, not "
                "reading (out of the I/O time; of it %s out of the batch wait, %s of the "
                "start-up's I/O); the ranks waited for: %s\n",
                DurationText(c.wait_ns).c_str(), DurationText(c.loop_wait_ns).c_str(),
                DurationText(c.startup_wait_ns).c_str(), late.c_str());
  }
  if (c.not_kept > 0) {
    *out += Fmt("  collective   matched the first %" PRIu64 " collective MPI-IO calls of each "
                "process only: %" PRIu64 " later ones counted as they were (their waiting for "
                "other ranks as reading)\n", c.kept_per_process, c.not_kept);
  }
}

void Figures(const Summary& s, const Verdict& v, std::string* out) {
  std::string roles;
  for (const RoleShare& r : v.roles) {
    if (r.processes == 0) continue;
    roles += Fmt("%s%" PRIu64 " %s", roles.empty() ? "" : ", ", r.processes, r.role.c_str());
    if (r.at_once < r.processes) roles += Fmt(" (%" PRIu64 " at a time)", r.at_once);
  }
  // (No process: a --pid, --rank or --host that kept none.)
  std::string processes = s.processes == 0   ? std::string("no process")
                          : s.processes == 1 ? std::string("1 process")
                                             : Fmt("%" PRIu64 " processes", s.processes);
  if (!roles.empty()) processes += " (" + roles + ")";
  *out += Fmt("  run %s, %s, %" PRIu64 " events\n", DurationText(v.run_ns).c_str(),
              processes.c_str(), s.events);
  if (v.bad_end_count > 0) *out += "  ended        " + BadEndsText(v) + "\n";
  // Over ranks, each figure is the ranks' sum: a job's start-up of 31.5 s
  // in a run of 14.7 s read as one process's.
  const std::string summed = s.rank_figures.size() > 1
                                 ? Fmt(" (each summed over %zu ranks)", s.rank_figures.size())
                                 : "";
  const char* all = s.rank_figures.empty() ? "" : ", all ranks";
  switch (v.loop_basis) {
    case LoopBasis::kDataLoader:
    case LoopBasis::kSteps:
      *out +=
          Fmt("  loop         %s, %s; start-up before it %s (I/O %s, %s read%s%s)%s\n",
              DurationText(v.loop_ns).c_str(), StepsText(v).c_str(),
              DurationText(v.startup_ns).c_str(), DurationText(v.startup_io_ns).c_str(),
              ByteText(v.startup_read_bytes).c_str(),
              v.startup_map_bytes == 0
                  ? ""
                  : (", " + ByteText(v.startup_map_bytes) + " of it through memory maps").c_str(),
              v.checkpoint.restore_ns == 0
                  ? ""
                  : ("; restoring a checkpoint " + DurationText(v.checkpoint.restore_ns) + ", " +
                     ByteText(v.checkpoint.restore_bytes) + " read")
                        .c_str(),
              summed.c_str());
      if (v.loop_basis == LoopBasis::kSteps) {
        *out += "               no DataLoader: the loop is the optimizer steps, each batch wait "
                "the stepping thread's data I/O between two\n";
      }
      break;
    case LoopBasis::kGpu:
      *out += Fmt("  loop         %s: no batch seen, the GPU's first to last record%s\n",
                  DurationText(v.loop_ns).c_str(), all);
      break;
    case LoopBasis::kRun:
      *out += Fmt("  loop         no batch and no GPU work seen: the run's %s\n",
                  DurationText(v.loop_ns).c_str());
      break;
  }
  if (v.has_batch_wait) {
    const std::string raised =
        v.raised == 0 ? ""
                      : Fmt(" and %" PRIu64 " next() call%s that raised", v.raised,
                            v.raised == 1 ? "" : "s");
    *out += Fmt("  batch wait   %s of the loop (%s over %" PRIu64 " %s%s%s)\n",
                PerMilleText(PerMille(v.batch_wait_ns, v.wait_loop_ns)).c_str(),
                DurationText(v.batch_wait_ns).c_str(), v.steps,
                v.loop_basis == LoopBasis::kSteps ? "steps" : "batches", raised.c_str(), all);
    if (v.split && v.batch_wait_ns > 0) {
      *out += Fmt("               of it reading %s, preprocessing %s, hand-over %s, "
                  "worker start-up %s\n",
                  PerMilleText(PerMille(v.reading_ns, v.batch_wait_ns)).c_str(),
                  PerMilleText(PerMille(v.preprocessing_ns, v.batch_wait_ns)).c_str(),
                  PerMilleText(PerMille(v.handover_ns, v.batch_wait_ns)).c_str(),
                  PerMilleText(PerMille(v.worker_startup_ns, v.batch_wait_ns)).c_str());
      if (v.worker_startup_ns > 0) {
        *out += "               worker start-up by pass: " + PassStartupText(v) + "\n";
      }
      if (v.loader_waits.size() > 1) {  // (a training and a validation loader)
        std::string by = "               by loader:";
        for (const LoaderWait& w : v.loader_waits) {
          // "loader 0 at train.py:42": where the program made it, when told.
          const std::string name = LoaderText(w);
          by += Fmt("%s %s %s (%s of the loop, %" PRIu64 " batches)",
                    &w == &v.loader_waits[0] ? "" : ",", name.c_str(),
                    DurationText(w.ns).c_str(),
                    PerMilleText(PerMille(w.ns, v.wait_loop_ns)).c_str(), w.batches);
        }
        if (v.loaders_left_out > 0) {
          by += Fmt(", %" PRIu64 " more %s", v.loaders_left_out,
                    DurationText(v.loaders_left_out_ns).c_str());
        }
        *out += by + "\n";
      }
      if (v.reading_faults_ns > 0) {
        *out += Fmt("               of the reading, page faults on mapped data files %s%s\n",
                    DurationText(v.reading_faults_ns).c_str(),
                    v.handover_faults_ns == 0
                        ? ""
                        : (", " + DurationText(v.handover_faults_ns) +
                           " of them while made batches waited to be sent").c_str());
      }
      if (!v.preprocessing_parts.empty() && v.preprocessing_ns > 0) {
        std::string parts = PartsText(v);  // " (of the workers' ...: A 70.0 %, B 20.0 %)"
        parts = parts.substr(parts.find(": ") + 2);
        *out += "               preprocessing by part: " + parts.substr(0, parts.size() - 1) + "\n";
      }
      if (v.handover_ns > 0) {
        const char* cause = HandoverCauseName(v.handover_cause);
        // The waits while non-persistent workers shut down at the passes'
        // ends (part of rebuilt: the main process's).
        const std::string ends =
            v.pass_end_shutdown_ns == 0
                ? ""
                : "; workers shut down at the passes' ends " +
                      PerMilleText(PerMille(v.pass_end_shutdown_ns, v.handover_ns));
        *out += Fmt("               hand-over: in the worker %s, in transit %s, rebuilt %s%s%s%s\n",
                    PerMilleText(PerMille(v.handover_in_worker_ns, v.handover_ns)).c_str(),
                    PerMilleText(PerMille(v.handover_in_transit_ns, v.handover_ns)).c_str(),
                    PerMilleText(PerMille(v.handover_rebuild_ns, v.handover_ns)).c_str(),
                    ends.c_str(),
                    !*cause ? "" : ends.empty() ? "; held up by: " : "; the rest held up by: ",
                    cause);
      }
      if (v.head_of_line_ns > 0) {
        *out += Fmt("               head-of-line %s of the wait: a later batch was ready while "
                    "the loop waited (in order)\n",
                    PerMilleText(PerMille(v.head_of_line_ns, v.batch_wait_ns)).c_str());
      }
    }
  } else {
    *out += "  batch wait   not measured: " + v.batch_wait_missing + "\n";
  }
  *out += CheckpointLine(v);
  if (v.lockstep.found) {
    // The ranks step together: what the sums above read at 1/N.
    const Lockstep& l = v.lockstep;
    std::string stops;
    if (v.has_batch_wait) {
      stops = Fmt("a rank waiting for a batch %s (%s of a rank's loop)",
                  DurationText(l.wait_ns).c_str(), PerMilleText(v.wait_per_mille()).c_str());
    }
    if (l.save_ns > 0) {
      stops += Fmt("%sthe longest saving %s (%s)", stops.empty() ? "" : ", ",
                   DurationText(l.save_ns).c_str(), PerMilleText(v.save_per_mille()).c_str());
    }
    *out += Fmt("  lockstep     the %zu ranks step together (their loops run alike, what "
                "they stopped for differs): %s\n", l.ranks, stops.c_str());
  }
  CollectiveWaitsText(s.collective_waits, out);
  if (v.has_gpu) {
    *out += Fmt("  GPU busy     %s of the loop (%s)\n",
                PerMilleText(PerMille(v.gpu_busy_ns, v.loop_ns)).c_str(),
                DurationText(v.gpu_busy_ns).c_str());
    *out += Fmt("  data stall   %s of the loop (%s)\n",
                PerMilleText(PerMille(v.data_stall_ns, v.loop_ns)).c_str(),
                DurationText(v.data_stall_ns).c_str());
  } else {
    *out += "  data stall   no GPU activity recorded\n";
  }
  uint64_t io = 0;
  for (const RoleShare& r : v.roles) io += r.io_ns;
  std::string by_role;
  for (const RoleShare& r : v.roles) {
    if (r.processes == 0) continue;
    by_role += Fmt("%s%s %s (%s)", by_role.empty() ? "" : ", ", r.role.c_str(),
                   DurationText(r.io_ns).c_str(), PerMilleText(PerMille(r.io_ns, io)).c_str());
  }
  if (!by_role.empty()) *out += "  I/O time     " + by_role + " of the I/O time\n";
}

void Findings(const Verdict& v, std::string* out) {
  if (v.findings.empty()) {
    *out += "Findings: none above their thresholds (docs/ANALYSIS.md, \"Verdict\")\n";
    return;
  }
  *out += "Findings (most costly first)\n" + FindingLines(v.findings, "  ");
}

void TopFiles(const Summary& s, size_t rows, std::string* out) {
  std::vector<std::pair<const std::string*, const IoStats*>> files;
  for (const auto& [path, io] : s.files) {
    if (ClassifyFile(path, io) == FileClass::kData) files.emplace_back(&path, &io);
  }
  if (files.empty()) return;
  // (Page faults on a file's map count as its I/O, their bytes as read.)
  auto time = [](const IoStats& io) { return io.io_time_ns() + io.maps.time_ns; };
  std::stable_sort(files.begin(), files.end(),
                   [&](const auto& a, const auto& b) { return time(*a.second) > time(*b.second); });
  *out += Fmt(
      "Data files by I/O time, all calls (%zu data files; docs/ANALYSIS.md, \"File classes\")\n",
      files.size());
  for (size_t i = 0; i < files.size() && i < rows; ++i) {
    const IoStats& io = *files[i].second;
    std::string notes;
    if (io.maps.bytes > 0) notes += " (" + ByteText(io.maps.bytes) + " through its map)";
    if (io.mpi_collective_wait_ns > 0) {
      notes += " (less " + DurationText(io.mpi_collective_wait_ns) +
               " waiting for other ranks in collective calls)";
    }
    *out += Fmt("  %11s %11s read  %s%s\n", DurationText(time(io)).c_str(),
                ByteText(io.read.bytes + io.maps.bytes).c_str(), files[i].first->c_str(),
                notes.c_str());
  }
  *out += LeftOut(files.size() > rows ? files.size() - rows : 0);
}

}  // namespace

std::string CheckpointLine(const Verdict& v) {
  if (!v.has_checkpoint) return "";
  const CheckpointFigures& c = v.checkpoint;
  const std::string saves = Fmt("%" PRIu64 " save%s (%s written)", c.saves,
                                c.saves == 1 ? "" : "s", ByteText(c.bytes).c_str());
  if (c.blocking_ns > 0) {
    return Fmt("  checkpoints  %s of the loop stopped for %s, %s; %s in the background\n",
               PerMilleText(PerMille(c.blocking_ns, v.loop_ns)).c_str(), saves.c_str(),
               DurationText(c.blocking_ns).c_str(), DurationText(c.background_ns).c_str());
  }
  return Fmt("  checkpoints  %s, all in the background (%s): the loop never stopped for one\n",
             saves.c_str(), DurationText(c.background_ns).c_str());
}

std::string VerdictHeadline(const Verdict& v) {
  const uint64_t wait = v.wait_per_mille();
  // In lockstep the shares are a rank's loop's, each step's slowest rank's.
  const std::string lockstep = v.lockstep.found ? " (the ranks step together)" : "";
  const uint64_t idle = PerMille(v.loop_ns - std::min(v.gpu_busy_ns, v.loop_ns), v.loop_ns);
  switch (v.bound) {
    case Bound::kData:
      return "the training loop waited for data " + PerMilleText(wait) + " of the loop" +
             lockstep +
             (v.split ? Fmt("; of that wait, %s %s", WaitCauseText(v.cause),
                            PerMilleText(PerMille(v.cause_ns(), v.batch_wait_ns)).c_str())
                      : "");
    case Bound::kCheckpoint:
      return "the training loop stopped for checkpoint saves " +
             PerMilleText(v.save_per_mille()) + " of the loop" + lockstep;
    case Bound::kHost:
      return "held back by the host: the GPU idled " + PerMilleText(idle) +
             " of the loop without waiting for data (Python, kernel launches, communication)";
    case Bound::kNeither:
      return "not held back by data (" +
             (v.has_batch_wait ? "batch wait " + PerMilleText(wait)
                               : "GPU busy " + PerMilleText(1000 - idle)) +
             " of the loop" + lockstep + ")";
    case Bound::kUnknown: break;
  }
  // A loop of steps whose wait the trace cannot tell (verdict.h): no
  // verdict on data, and why ("batch wait not measured" below).
  if (v.wait_unmeasured) {
    return "not known whether data holds the loop back: its wait for data is not measured "
           "(batch wait below)";
  }
  return "no training loop seen (no batches waited for, no GPU work): the I/O below";
}

std::string FindingLines(const std::vector<Finding>& findings, const char* indent) {
  std::string out;
  for (size_t i = 0; i < findings.size(); ++i) {
    out += Fmt("%s%zu. %s\n%s   try: %s\n", indent, i + 1, findings[i].what.c_str(), indent,
               findings[i].advice.c_str());
  }
  return out;
}

std::string VerdictText(const Summary& s) {
  // Nothing to judge: a --pid, --rank or --host that kept no process (the
  // regions' table alone still held the others' batches: "not held back by
  // data, 0.0 % of the loop (66.7 ms over 9 batches)").
  if (s.processes == 0 && s.events == 0 && s.processes_stats.empty() &&
      s.rank_figures.empty() && !s.has_unranked_group) {
    return "dlprof verdict: none: the selection (--pid, --rank, --host) kept no process\n";
  }
  const Verdict v = ComputeVerdict(s);
  std::string out = "dlprof verdict: " + VerdictHeadline(v) + "\n";
  Figures(s, v, &out);
  out += ClocksText(s);
  out += "\n";
  Findings(v, &out);
  return out;
}

std::string CompactSummaryText(const Summary& s, size_t rows) {
  std::string out = VerdictText(s);
  // The per-rank table of the full listing, at most `rows` ranks, most
  // batch wait first (summary_ranks_text.cc).
  TextRanks(s, rows, &out);
  std::string files;
  TopFiles(s, rows, &files);
  if (!files.empty()) out += "\n" + files;
  out += "\n(--details: the full listing per host, rank, process and file)\n";
  return out;
}

}  // namespace dlprof::dump
