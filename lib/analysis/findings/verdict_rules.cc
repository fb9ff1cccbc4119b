// The verdict's rules (verdict.h; docs/ANALYSIS.md, "Verdict"): what holds
// the loop back (BoundOf) and the findings, each rule with its threshold.
// They test the figures verdict.cc measures; the batch wait's own findings,
// the memory maps' and the roles are in verdict_wait.cc, verdict_maps.cc and
// verdict_roles.cc.
#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lib/analysis/findings/verdict.h"
#include "lib/analysis/summary/file_classes.h"
#include "lib/analysis/summary/rank_figures.h"
#include "lib/text/text.h"

namespace dlprof::analysis {
using namespace dlprof::text;
namespace {

// The thresholds of the rules (docs/ANALYSIS.md, "Verdict").
constexpr uint64_t kBatchWaitPerMille = 100;    // 10 % of the loop's time
constexpr uint64_t kDataStallPerMille = 100;    // 10 % of the GPU's window
constexpr uint64_t kSlowRankFactor = 2;         // max batch wait >= 2 x the median
constexpr uint64_t kSmallReadsPerMille = 500;   // half of the data reads under 64 KiB
constexpr uint64_t kSmallReadsMinOps = 100;
constexpr uint64_t kRereadPerMille = 1500;      // data read 1.5 times over
constexpr uint64_t kRereadMinBytes = 1 << 20;
constexpr size_t kFewFiles = 3;                 // the 3 slowest data files to read ...
constexpr uint64_t kFewFilesPerMille = 500;     // ... take half the data read time
constexpr size_t kFewFilesMinFiles = 10;        // of 10 or more,
constexpr uint64_t kFewFilesRunPerMille = 10;   // and 1 % of the loop
constexpr uint64_t kMetadataPerMille = 300;     // 30 % of the I/O time in metadata
constexpr uint64_t kMetadataMinOps = 1000;
constexpr uint64_t kStartupCodePerMille = 100;  // imports >= 10 % of the start-up
constexpr uint64_t kBusyWorkersPerMille = 500;  // workers fetching (or in I/O) half the loop
constexpr uint64_t kGpuIdlePerMille = 500;      // the GPU idle most of the loop: host-bound
constexpr uint64_t kCheckpointPerMille = 100;   // the loop stopped 10 % of it for saves

struct DataFile {
  const std::string* path;
  const IoStats* io;
};

std::vector<DataFile> DataFiles(const Summary& s) {
  std::vector<DataFile> out;
  for (const auto& [path, io] : s.files) {
    if (ClassifyFile(path, io) == FileClass::kData) out.push_back({&path, &io});
  }
  return out;
}

void BatchWaitFindings(const Summary& s, const Verdict& v, std::vector<Finding>* out) {
  const RankDistribution& d = s.rank_job.batch_wait;
  std::string host;
  for (const RankFigures& r : s.rank_figures) {
    if (!d.top.empty() && r.rank == d.top.front().first) host = r.host;
  }
  LoopWaitFindings(v, d, s.rank_figures.size(), host, out);
}

void DataFindings(const Summary& s, const Verdict& v, std::vector<Finding>* out) {
  std::vector<DataFile> files = DataFiles(s);
  IoStats data;
  uint64_t extent = 0;
  for (const DataFile& f : files) {
    MergeIoStats(&data, *f.io);
    extent += f.io->read_extent;
  }
  const AccessStats& reads = data.read;
  // The share is of the reads that moved data: a read that returned
  // nothing (the end of file Python's f.read() probes for with one byte
  // after each whole file) moved neither small nor large pieces, and
  // counted in the denominator it would dilute a loop of 4 KiB reads by the
  // number of files (4 KiB files read in 4 KiB pieces: exactly half). Its
  // cost is the small reads' own time: the read time times the share gave
  // 702 ms where a whole-file loop's 1-byte probes took 9.2 ms.
  const uint64_t moved = reads.ops - std::min(reads.empty_ops, reads.ops);
  const uint64_t small = PerMille(reads.small_ops, moved);
  if (moved >= kSmallReadsMinOps && small >= kSmallReadsPerMille) {
    out->push_back({"small_reads",
                    Fmt("%s of the %" PRIu64 " data reads are under 64 KiB (%s read in %s; "
                        "those reads %s).",
                        PerMilleText(small).c_str(), moved, ByteText(reads.bytes).c_str(),
                        DurationText(reads.time_ns).c_str(),
                        DurationText(reads.small_time_ns).c_str()),
                    "read in larger pieces: buffered reads, larger records or shard files",
                    reads.small_time_ns});
  }
  const uint64_t times_over = PerMille(reads.bytes, extent);
  if (extent > 0 && times_over >= kRereadPerMille && reads.bytes - extent >= kRereadMinBytes) {
    out->push_back({"reread",
                    Fmt("The data set was read %" PRIu64 ".%" PRIu64 " times over (%s read "
                        "for %s of data): files are re-read, e.g. every epoch.",
                        times_over / 1000, times_over % 1000 / 100,
                        ByteText(reads.bytes).c_str(), ByteText(extent).c_str()),
                    "keep the data set in memory or on a local disk after the first epoch",
                    reads.time_ns - reads.time_ns * 1000 / times_over});
  }
  // Read time: what the loader waits for (writing the data set, where the
  // job makes it, is not): its read calls' and its page faults' on mapped
  // data files (a shard read through its map has no call: naming the file
  // of most read calls named a warm one read once).
  const auto read_ns = [](const DataFile& f) { return f.io->read.time_ns + f.io->maps.time_ns; };
  const uint64_t data_ns = reads.time_ns + data.maps.time_ns;
  if (files.size() >= kFewFilesMinFiles && data_ns > 0) {
    std::sort(files.begin(), files.end(), [&](const DataFile& a, const DataFile& b) {
      return read_ns(a) != read_ns(b) ? read_ns(a) > read_ns(b) : *a.path < *b.path;
    });
    uint64_t top = 0;
    for (size_t i = 0; i < kFewFiles; ++i) top += read_ns(files[i]);
    const uint64_t share = PerMille(top, data_ns);
    if (share >= kFewFilesPerMille && PerMille(top, v.loop_ns) >= kFewFilesRunPerMille) {
      out->push_back({"few_files",
                      Fmt("%zu of %zu data files take %s of the data read time; the slowest to "
                          "read is %s (%s in reads%s).",
                          kFewFiles, files.size(), PerMilleText(share).c_str(),
                          files[0].path->c_str(), DurationText(read_ns(files[0])).c_str(),
                          data.maps.time_ns > 0 ? " and page faults" : ""),
                      "look at those files: their size, where they are stored, their striping",
                      top});
    }
  }
}

void MetadataFinding(const Summary& s, std::vector<Finding>* out) {
  // The data set's opens and lookups: Python's imports stat and open
  // thousands of code files, which are not the data layout's doing.
  IoStats data;
  for (const DataFile& f : DataFiles(s)) MergeIoStats(&data, *f.io);
  const int open = static_cast<int>(OpGroup::Open), meta = static_cast<int>(OpGroup::Meta);
  const uint64_t ops = data.ops[open] + data.ops[meta];
  const uint64_t ns = data.time_ns[open] + data.time_ns[meta];
  const uint64_t share = PerMille(ns, data.io_time_ns());
  if (ops < kMetadataMinOps || share < kMetadataPerMille) return;
  out->push_back({"metadata",
                  Fmt("Opens and metadata calls (stat, ...) on data files take %s of their I/O "
                      "time (%" PRIu64 " calls, %s).",
                      PerMilleText(share).c_str(), ops, DurationText(ns).c_str()),
                  "fewer, larger files; list directories once and cache what stat tells",
                  ns});
}

// Python's imports (I/O on code files), on their own: on a parallel file
// system at scale they take minutes before the first batch.
void StartupFinding(const Summary& s, const Verdict& v, std::vector<Finding>* out) {
  const FileClassTotals code = TotalsByClass(s)[static_cast<int>(FileClass::kCode)];
  const uint64_t ns = code.io.io_time_ns();
  const bool loop = v.loop_basis == LoopBasis::kDataLoader || v.loop_basis == LoopBasis::kSteps;
  const uint64_t before = loop ? v.startup_ns : v.run_ns;
  if (ns == 0 || PerMille(ns, before) < kStartupCodePerMille) return;
  out->push_back({"startup",
                  Fmt("Start-up read code (imports) for %s in %" PRIu64 " calls on %" PRIu64
                      " code files; %s passed before the first batch.",
                      DurationText(ns).c_str(), code.io.ops[static_cast<int>(OpGroup::Open)] +
                                                    code.io.ops[static_cast<int>(OpGroup::Read)] +
                                                    code.io.ops[static_cast<int>(OpGroup::Meta)],
                      code.files, DurationText(before).c_str()),
                  "keep the Python environment on a local disk or in a container image, and "
                  "import less at start-up",
                  ns});
}

// The old rule, for a loader whose fetches were not recorded (no
// fetch_batch regions): the workers' time in I/O calls over their lifetime.
void WorkerIoFinding(const Summary& s, const Verdict& v, std::vector<Finding>* out) {
  const std::map<std::string, std::string> roles = ProcessRoles(s);
  uint64_t workers = 0, io = 0, lifetime = 0;
  for (const auto& [key, st] : s.processes_stats) {
    auto role = roles.find(key);
    if (role == roles.end() || role->second != "loader workers" || st.last_ns <= st.first_ns) {
      continue;
    }
    ++workers;
    io += st.io_time_ns();
    lifetime += st.last_ns - st.first_ns;
  }
  const uint64_t busy = PerMille(io, lifetime);
  if (workers == 0 || busy < kBusyWorkersPerMille) return;
  out->push_back({"few_workers",
                  Fmt("The %" PRIu64 " loader workers spent %s of their time in I/O calls while "
                      "the loop waited: they cannot hide the read latency.",
                      workers, PerMilleText(busy).c_str()),
                  "more workers (num_workers), or fewer, larger reads per sample",
                  v.batch_wait_ns / 2});
}

// The loader's workers from their recorded fetches (docs/ANALYSIS_LOADER.md,
// "Loader workers: what more would give"): when the loop waited and they
// were fetching most of it, the wait expected with 2 and 4 times as many,
// summed over the ranks, and what would stop more from helping.
void WorkerFinding(const Summary& s, const Verdict& v, std::vector<Finding>* out) {
  if (!v.has_batch_wait || v.wait_per_mille() < kBatchWaitPerMille) return;
  const std::vector<uint64_t> factors = {2, 4};
  std::vector<WorkerModel> models;
  uint64_t wait = 0, fetch = 0, io = 0, fetches = 0, capacity = 0, workers = 0, cpus = 0;
  std::vector<WorkerPoint> sum(factors.size());
  WorkerLimit limit = WorkerLimit::kNone;
  WorkerModel model;
  uint64_t limit_wait = 0;  // the wait of the rank whose bound names the limit
  size_t storage = SIZE_MAX;  // the first rank whose reads did not speed up
  for (const RankFigures* r : LoopGroups(s)) {
    const WorkerFigures& w = r->workers;
    WorkerModel m = MakeWorkerModel(w, r->loop_ns(), r->batch_wait_ns, r->batches(),
                                    r->worker_startup_ns, r->resumed_startup_ns);
    if (!m.valid) continue;
    const std::vector<WorkerPoint> points = EstimateWorkers(m, factors);
    for (size_t i = 0; i < points.size(); ++i) sum[i].batch_wait_ns += points[i].batch_wait_ns;
    if (points.back().batch_wait_ns >= limit_wait) {
      limit_wait = points.back().batch_wait_ns;
      limit = points.back().bound;
      model = m;
    }
    wait += r->batch_wait_ns;
    fetch += w.fetch_ns;
    io += w.fetch_io_ns;
    fetches += w.fetches;
    capacity += m.workers * r->loop_ns();  // (the workers at once: WorkersAtOnce)
    workers = std::max(workers, m.workers);
    cpus = std::max(cpus, m.cpus);
    if (m.storage_saturated && storage == SIZE_MAX) storage = models.size();
    models.push_back(m);
  }
  if (models.empty()) return WorkerIoFinding(s, v, out);
  // Busy: the workers were fetching most of the loop (reading or working).
  const uint64_t busy = PerMille(fetch, capacity);
  if (busy < kBusyWorkersPerMille) return;
  for (size_t i = 0; i < factors.size(); ++i) sum[i].workers = factors[i] * workers;
  // Judged on the smallest estimate: with non-persistent workers the
  // start-up grows with their number, so 2x may save while 4x costs.
  const uint64_t most = sum.back().batch_wait_ns, best = LeastWait(sum).batch_wait_ns;
  const bool helps = best + wait / 10 <= wait;  // saves a tenth of the wait or more
  const uint64_t per_fetch = fetch / fetches, per_io = std::min(io / fetches, per_fetch);
  const bool several = models.size() > 1;
  std::string what = Fmt("The %s%" PRIu64 " loader worker%s fetched batches %s of the loop (%s "
                         "per batch, %s of it in I/O calls) while the loop waited %s",
                         several ? "ranks' " : "", workers, workers == 1 ? "" : "s",
                         PerMilleText(busy).c_str(), DurationText(per_fetch).c_str(),
                         PerMilleText(PerMille(per_io, per_fetch)).c_str(),
                         DurationText(wait).c_str());
  if (helps) {
    what += ": with " + EstimateText(sum, wait, several ? " a rank" : "");
  } else if (most > wait) {
    what += "; with " + std::to_string(sum.back().workers) + " workers it would grow to about " +
            DurationText(most) + " (their start-up grows with their number).";
  } else {
    what += "; with " + std::to_string(sum.back().workers) + " workers it would still be about " +
            DurationText(most) + ".";
  }
  std::string advice = (most > best ? "num_workers=" + std::to_string(LeastWait(sum).workers) +
                                          " (more start up longer)"
                                    : std::string("more workers (num_workers)")) +
                       ", or fewer, larger reads and cheaper transforms per sample";
  uint64_t cost = wait - std::min(wait, best);
  const char* beyond = helps ? " beyond that" : "";
  // Where more help up to a limit: the fewest workers that get within a
  // tenth of the wait the most would.
  std::string enough;
  for (const WorkerPoint& p : sum) {
    if (helps && enough.empty() && p.batch_wait_ns - best <= (wait - best) / 10) {
      enough = "num_workers=" + std::to_string(p.workers) + ", then ";
    }
  }
  if (limit == WorkerLimit::kCpu) {
    what += Fmt(" More workers would not help%s: the rank's %s all busy.", beyond,
                cpus == 1 ? "one CPU is" : (std::to_string(cpus) + " CPUs are").c_str());
    advice = enough + "cheaper transforms, or caching decoded samples; more CPUs per rank";
  } else if (limit == WorkerLimit::kStorage && storage != SIZE_MAX) {
    const WorkerModel& m = models[storage];
    auto per_mib = [](uint64_t ps_per_byte) {
      return DurationText(ps_per_byte * 1048576 / 1000) + " per MiB";
    };
    what += Fmt(" More workers would not help%s: the reads did not speed up with concurrency "
                "(%s with %" PRIu64 " read%s at once, %s with %" PRIu64 ").",
                beyond, per_mib(m.low_ps_per_byte).c_str(), m.low_level,
                m.low_level == 1 ? "" : "s", per_mib(m.high_ps_per_byte).c_str(), m.high_level);
    advice = enough + "faster storage, fewer and larger reads, or caching the data set: more "
             "workers only queue on it";
  } else if (!helps) {
    return;  // the wait is not the workers' doing (start-up, hand-over)
  } else if (per_io * 2 >= per_fetch &&
             std::all_of(models.begin(), models.end(),
                         [](const WorkerModel& m) { return m.read_levels < 2; })) {
    // Reads never overlapped: nothing shows whether the storage serves
    // several at once, which the estimate takes it to (a storage serving one
    // read at a time kept 2 and 4 workers waiting as long as 1 in
    // bench/worker_estimate.py --mode serial).
    what += " That assumes the storage serves reads at once: this run never had two in "
            "flight, so it cannot tell (a run with more workers shows it).";
  }
  if (!helps) {
    // What the limit stands for: the wait's part the limiting work takes.
    const uint64_t part = limit == WorkerLimit::kCpu ? per_fetch - per_io : per_io;
    cost = static_cast<uint64_t>(static_cast<unsigned __int128>(wait) * part /
                                 std::max<uint64_t>(per_fetch, 1));
  }
  Finding f{"few_workers", what, advice, cost};
  f.workers = workers;
  f.estimate = sum;
  f.limit = WorkerLimitName(limit);
  f.model = model;
  out->push_back(std::move(f));
}

}  // namespace

void LoopWaitFindings(const Verdict& v, const RankDistribution& d, size_t ranks,
                      const std::string& host, std::vector<Finding>* out) {
  if (!v.has_batch_wait) return;
  const uint64_t share = v.wait_per_mille();
  if (share >= kBatchWaitPerMille) out->push_back(BatchWaitFinding(v, share));
  // One rank's loader slower than the others'.
  if (ranks >= 2 && d.max_ns >= kSlowRankFactor * std::max<uint64_t>(d.median_ns, 1) &&
      !d.top.empty() && share >= kBatchWaitPerMille / 2) {
    const int32_t rank = d.top.front().first;
    out->push_back({"slow_rank",
                    Fmt("Rank %d%s waited %s for batches, the median rank %s: its loader "
                        "holds the other ranks back.",
                        rank, host.empty() ? "" : (" (" + host + ")").c_str(),
                        DurationText(d.max_ns).c_str(), DurationText(d.median_ns).c_str()),
                    "look at that rank's storage, data shard and number of workers",
                    d.max_ns - d.median_ns});
  }
}

// The loop stopped for checkpoint saves: what it cost, how fast the storage
// wrote them against how fast it read the data.
void CheckpointFinding(const Verdict& v, uint64_t data_read_bytes, uint64_t data_read_ns,
                       std::vector<Finding>* out) {
  const CheckpointFigures& c = v.checkpoint;
  const uint64_t share = v.save_per_mille();
  if (!v.has_checkpoint || share < kCheckpointPerMille) return;
  const uint64_t write_rate = BytesPerSecond(c.bytes, c.write_ns);
  const uint64_t read_rate = BytesPerSecond(data_read_bytes, data_read_ns);
  std::string what = Fmt("The loop stopped for %" PRIu64 " checkpoint save%s %s of the loop "
                         "(%s; %s written",
                         c.saves, c.saves == 1 ? "" : "s", PerMilleText(share).c_str(),
                         DurationText(c.blocking_ns).c_str(), ByteText(c.bytes).c_str());
  if (write_rate > 0) what += ", " + ByteText(write_rate) + "/s in write calls";
  if (read_rate > 0) what += "; the data set read at " + ByteText(read_rate) + "/s";
  if (v.lockstep.found) {
    what += "; the ranks step together, so every rank waited for the longest saving, " +
            DurationText(v.lockstep.save_ns);
  }
  what += ").";
  std::string advice = "save asynchronously (torch.distributed.checkpoint.async_save, or a "
                       "background thread or process), save less often or less (sharded, "
                       "incremental)";
  if (write_rate > 0 && read_rate > 0 && write_rate * 2 < read_rate) {
    advice += ", or a faster storage for checkpoints: this one writes at under half the speed "
              "it reads";
  }
  // In lockstep every rank lost the longest saving.
  const uint64_t cost = v.lockstep.found ? v.lockstep.save_ns * v.lockstep.ranks : 0;
  out->push_back({"checkpoint", what, advice, std::max(c.blocking_ns, cost)});
}

void DataStallFinding(const Verdict& v, std::vector<Finding>* out) {
  const uint64_t share = PerMille(v.data_stall_ns, v.gpu_window_ns);
  if (!v.has_gpu || share < kDataStallPerMille) return;
  out->push_back({"data_stall",
                  Fmt("The GPU sat idle with data I/O outstanding %s of its active time (%s).",
                      PerMilleText(share).c_str(), DurationText(v.data_stall_ns).c_str()),
                  "overlap loading with compute: more workers, pinned memory, prefetching "
                  "batches to the GPU",
                  v.data_stall_ns});
}

Bound BoundOf(const Verdict& v) {
  // Data or checkpoints, whichever stopped the loop longer; then the host,
  // the GPU idle for other reasons (not while the loop stopped for a save).
  const uint64_t waited = v.wait_per_mille();
  const uint64_t saving = v.save_per_mille();
  const uint64_t idle = v.loop_ns - std::min(v.gpu_busy_ns + v.checkpoint.blocking_ns, v.loop_ns);
  if (waited >= kBatchWaitPerMille && waited >= saving) return Bound::kData;
  if (saving >= kCheckpointPerMille) return Bound::kCheckpoint;
  if (v.has_gpu && v.loop_ns > 0 && PerMille(idle, v.loop_ns) >= kGpuIdlePerMille) {
    return Bound::kHost;
  }
  if (v.has_batch_wait || v.has_gpu) return Bound::kNeither;
  return Bound::kUnknown;
}

void AllFindings(const Summary& s, const Verdict& v, std::vector<Finding>* out) {
  // In this order: KeepFindings sorts them by cost, stably, so that findings
  // of equal cost keep it.
  BatchWaitFindings(s, v, out);
  DataStallFinding(v, out);
  DataFindings(s, v, out);
  MapFindings(s, v, out);
  MetadataFinding(s, out);
  StartupFinding(s, v, out);
  WorkerFinding(s, v, out);
  WorkerStartupFinding(v, out);
  HeadOfLineFinding(v, out);
  IoStats data;
  for (const DataFile& f : DataFiles(s)) MergeIoStats(&data, *f.io);
  CheckpointFinding(v, data.read.bytes, data.read.time_ns, out);
}

}  // namespace dlprof::analysis
