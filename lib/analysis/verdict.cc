// The verdict's figures and findings (verdict.h; rules in docs/ANALYSIS.md,
// "Verdict").
#include "lib/analysis/verdict.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <set>
#include <utility>

#include "lib/analysis/file_classes.h"
#include "lib/analysis/partial_summary.h"
#include "lib/analysis/rank_meter.h"
#include "lib/read/escape.h"

namespace dlprof::dump {
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
constexpr uint64_t kFewFilesRunPerMille = 10;   // and 1 % of the run
constexpr uint64_t kMetadataPerMille = 300;     // 30 % of the I/O time in metadata
constexpr uint64_t kMetadataMinOps = 1000;
constexpr uint64_t kBusyWorkersPerMille = 500;  // workers in I/O half their lifetime

// The launchers and shells a job starts its processes through.
bool IsLauncher(const std::string& exe) {
  static const std::set<std::string> kLaunchers = {
      "mpirun", "mpiexec", "orterun", "prterun", "prted", "orted", "hydra_pmi_proxy",
      "mpiexec.hydra", "mpiexec.mpich", "mpirun.openmpi", "mpirun.mpich", "torchrun", "srun",
      "flux", "aprun", "jsrun", "dlprof", "sh", "bash", "dash", "env", "timeout"};
  return kLaunchers.count(exe) != 0;
}

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
  if (!v.has_batch_wait) return;
  const uint64_t share = PerMille(v.batch_wait_ns, v.loop_ns);
  if (share >= kBatchWaitPerMille) {
    out->push_back({"batch_wait",
                    Fmt("The training loop waited for data %s of the run (%s over %" PRIu64
                        " steps).",
                        PerMilleText(share).c_str(), DurationText(v.batch_wait_ns).c_str(), v.steps),
                    "more DataLoader workers, a larger prefetch_factor, or faster storage for "
                    "the data set",
                    v.batch_wait_ns});
  }
  // One rank's loader slower than the others'.
  const RankDistribution& d = s.rank_job.batch_wait;
  if (s.rank_figures.size() >= 2 && d.max_ns >= kSlowRankFactor * std::max<uint64_t>(d.median_ns, 1) &&
      !d.top.empty() && share >= kBatchWaitPerMille / 2) {
    const int32_t rank = d.top.front().first;
    std::string host;
    for (const RankFigures& r : s.rank_figures) {
      if (r.rank == rank) host = r.host;
    }
    out->push_back({"slow_rank",
                    Fmt("Rank %d (%s) waited %s for batches, the median rank %s: its loader "
                        "holds the other ranks back.",
                        rank, host.c_str(), DurationText(d.max_ns).c_str(), DurationText(d.median_ns).c_str()),
                    "look at that rank's storage, data shard and number of workers",
                    d.max_ns - d.median_ns});
  }
}

void StallFinding(const Verdict& v, std::vector<Finding>* out) {
  const uint64_t share = PerMille(v.data_stall_ns, v.gpu_window_ns);
  if (!v.has_gpu || share < kDataStallPerMille) return;
  out->push_back({"data_stall",
                  Fmt("The GPU sat idle with data I/O outstanding %s of its active time (%s).",
                      PerMilleText(share).c_str(), DurationText(v.data_stall_ns).c_str()),
                  "overlap loading with compute: more workers, pinned memory, prefetching "
                  "batches to the GPU",
                  v.data_stall_ns});
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
  const uint64_t small = PerMille(reads.small_ops, reads.ops);
  if (reads.ops >= kSmallReadsMinOps && small >= kSmallReadsPerMille) {
    out->push_back({"small_reads",
                    Fmt("%s of the %" PRIu64 " data reads are under 64 KiB (%s read in %s).",
                        PerMilleText(small).c_str(), reads.ops, ByteText(reads.bytes).c_str(),
                        DurationText(reads.time_ns).c_str()),
                    "read in larger pieces: buffered reads, larger records or shard files",
                    static_cast<uint64_t>(static_cast<unsigned __int128>(reads.time_ns) * small / 1000)});
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
  // job makes it, is not).
  const uint64_t data_ns = reads.time_ns;
  if (files.size() >= kFewFilesMinFiles && data_ns > 0) {
    std::sort(files.begin(), files.end(), [](const DataFile& a, const DataFile& b) {
      return a.io->read.time_ns != b.io->read.time_ns ? a.io->read.time_ns > b.io->read.time_ns
                                                      : *a.path < *b.path;
    });
    uint64_t top = 0;
    for (size_t i = 0; i < kFewFiles; ++i) top += files[i].io->read.time_ns;
    const uint64_t share = PerMille(top, data_ns);
    if (share >= kFewFilesPerMille && PerMille(top, v.run_ns) >= kFewFilesRunPerMille) {
      out->push_back({"few_files",
                      Fmt("%zu of %zu data files take %s of the data read time; the slowest is "
                          "%s (%s).",
                          kFewFiles, files.size(), PerMilleText(share).c_str(), files[0].path->c_str(),
                          DurationText(files[0].io->read.time_ns).c_str()),
                      "look at those files: their size, where they are stored, their striping",
                      top});
    }
  }
}

void MetadataFinding(const Summary& s, std::vector<Finding>* out) {
  const IoStats& r = s.run;
  const int open = static_cast<int>(OpGroup::Open), meta = static_cast<int>(OpGroup::Meta);
  const uint64_t ops = r.ops[open] + r.ops[meta];
  const uint64_t ns = r.time_ns[open] + r.time_ns[meta];
  const uint64_t share = PerMille(ns, r.io_time_ns());
  if (ops < kMetadataMinOps || share < kMetadataPerMille) return;
  out->push_back({"metadata",
                  Fmt("Opens and metadata calls (stat, ...) take %s of the I/O time (%" PRIu64
                      " calls, %s).",
                      PerMilleText(share).c_str(), ops, DurationText(ns).c_str()),
                  "fewer, larger files; list directories once and cache what stat tells",
                  ns});
}

void WorkerFinding(const Summary& s, const Verdict& v, std::vector<Finding>* out) {
  if (!v.has_batch_wait || PerMille(v.batch_wait_ns, v.loop_ns) < kBatchWaitPerMille) return;
  uint64_t workers = 0, io = 0, lifetime = 0;
  for (const auto& [key, st] : s.processes_stats) {
    if (ProcessRole(s, key) != "loader workers" || st.last_ns <= st.first_ns) continue;
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

}  // namespace

std::string ProcessRole(const Summary& s, const std::string& key) {
  auto it = s.process_ids.find(key);
  if (it == s.process_ids.end()) return "main";
  const Summary::ProcessId& me = it->second;
  if (me.forked) return "loader workers";
  if (IsLauncher(me.exe)) return "launcher";
  // A process another traced (non-launcher) process of its rank started is
  // "other" (a helper it spawned); the rest are the job's main processes,
  // among them every rank's first process, whoever started it.
  for (const auto& [other, parent] : s.process_ids) {
    if (parent.pid == me.ppid && parent.host == me.host && other != key &&
        !IsLauncher(parent.exe) && parent.rank == me.rank) {
      return "other";
    }
  }
  return "main";
}

Verdict ComputeVerdict(const Summary& s) {
  Verdict v;
  v.run_ns = s.run_end_ns > s.run_start_ns ? s.run_end_ns - s.run_start_ns : 0;
  // Batch wait and data stall: per rank where there are ranks.
  for (const RankFigures& r : s.rank_figures) {
    if (!r.steps.empty()) {
      v.has_batch_wait = true;
      v.batch_wait_ns += r.batch_wait_ns;
      v.loop_ns += v.run_ns;
      v.steps += r.steps.size();
    }
    if (r.gpu) {
      v.has_gpu = true;
      v.data_stall_ns += r.data_stall_ns;
      v.gpu_window_ns += r.gpu_last_ns - r.gpu_first_ns;
    }
  }
  if (s.rank_figures.empty()) {
    for (const RegionStats& r : s.regions) {
      if (!r.outside && r.name == kDefaultBatchRegion && r.instances > 0) {
        v.has_batch_wait = true;
        v.batch_wait_ns = r.region_ns;
        v.loop_ns = v.run_ns;
        v.steps = r.instances;
      }
    }
    if (!s.gpus.empty()) {
      v.has_gpu = true;
      v.data_stall_ns = s.data_stall_ns;
      v.gpu_window_ns = s.gpu_last_ns - s.gpu_first_ns;
    }
  }
  // I/O by role.
  for (const char* role : {"main", "loader workers", "launcher", "other"}) {
    v.roles.push_back({role, 0, 0, 0});
  }
  for (const auto& [key, st] : s.processes_stats) {
    const std::string role = ProcessRole(s, key);
    for (RoleShare& r : v.roles) {
      if (r.role != role) continue;
      ++r.processes;
      r.io_ns += st.io_time_ns();
      r.read_bytes += st.read.bytes;
    }
  }
  // The findings, most costly first.
  std::vector<Finding> f;
  BatchWaitFindings(s, v, &f);
  StallFinding(v, &f);
  DataFindings(s, v, &f);
  MetadataFinding(s, &f);
  WorkerFinding(s, v, &f);
  std::stable_sort(f.begin(), f.end(),
                   [](const Finding& a, const Finding& b) { return a.cost_ns > b.cost_ns; });
  if (f.size() > kMaxFindings) f.resize(kMaxFindings);
  v.findings = std::move(f);
  return v;
}

}  // namespace dlprof::dump
