// The whole run in counters (DLPROF_KEEP; docs/USER_GUIDE.md, "Bounded
// traces"): while the trace keeps only its last DURATION of events, the
// flusher sums every event it drains into per-interval counters -- I/O
// calls, bytes and time by kind and file class, the files most time went
// to, annotation regions (batch waits, steps) per name, GPU work and its
// busy time, and, in a process with GPU work, the data stall against the
// I/O of its rank (rank_io_map.h) -- and appends one record per interval to
// NAME.dlcount (lib/format/counters.h).
//
// Everything here runs on the flusher, under the sink's lock, from events
// already in the rings: the traced calls record exactly what they recorded
// before (no lock, allocation or system call added where events are made).
// The counts are exact: every event drained is counted once, whichever
// segment of the trace it went to or whether that segment is still on disk.
#ifndef DLPROF_LIB_CORE_INTERVAL_COUNTERS_H_
#define DLPROF_LIB_CORE_INTERVAL_COUNTERS_H_

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "dlprof/format.h"
#include "lib/core/batch_sampler.h"
#include "lib/core/checkpoint_saves.h"
#include "lib/format/counters.h"
#include "lib/format/tick_scale.h"

namespace dlprof::core {

class RankIoMap;
class StringTable;

class IntervalCounters {
 public:
  // How long one record covers: DURATION, from 1 s to 5 s ("every few
  // seconds": 720 to 3600 records an hour), so that the DLPROF_KEEP_WHEN
  // rule looks at the last DURATION, which its window keeps whole.
  static uint64_t IntervalFor(uint64_t keep_ms) {
    const uint64_t ns = keep_ms * 1000000ull;
    return ns < 1000000000ull ? 1000000000ull : ns > 5000000000ull ? 5000000000ull : ns;
  }
  // Files named per record (the rest are in their classes' totals only):
  // with ~60-byte paths defined once, a record stays near 300 bytes.
  static constexpr size_t kTopFiles = 8;

  // `io_map`: where the rank's I/O is marked and the data stall read
  // (null: neither).
  IntervalCounters(StringTable* strings, uint64_t interval_ns, RankIoMap* io_map = nullptr)
      : strings_(strings), interval_ns_(interval_ns), batches_(strings, interval_ns),
        saves_(strings), io_map_(io_map) {}

  // Creates `path` (0600, O_EXCL|O_NOFOLLOW) and writes `header` (the
  // trace's file header). False with the reason in `error`. The caller
  // holds an OwnFdScope (TraceSink::Open).
  bool Open(const std::string& path, const std::vector<uint8_t>& header, uint64_t now_ns,
            std::string* error);
  bool open() const { return !path_.empty(); }
  const std::string& path() const { return path_; }

  // Counts drained events of thread `tid`; times in TSC ticks
  // (kEventFlagTicks) are converted with `scale`.
  void Add(uint32_t tid, const Event* ev, size_t n, const format::TickScale& scale);
  // A pass of the flusher has drained every ring, then the page faults:
  // the batch waits that ended are looked at with every read in them.
  void EndPass() { batches_.Settle(); }

  // Appends the interval's record when `now_ns` has reached its end, or
  // whatever it holds when `force` (exit). Returns true when a record was
  // written; last() then holds it. Before the interval's end, and where
  // `so_far` (a pass on the flusher's thread, not a program's), writes what
  // it holds so far in the record so far (docs/FORMAT_BOUNDED.md), which
  // the next write replaces: a process killed, or read while it runs,
  // leaves the interval's counts up to the flusher's last pass.
  bool MaybeEmit(uint64_t now_ns, int32_t rank, bool force, bool so_far = true);
  const format::IntervalRecord& last() const { return last_; }

  // Records that a window was kept whole, and why.
  void Keep(const format::KeepRecord& k);
  // Records that trace blocks were not written (a full disk).
  void Lost(const format::LostRecord& r);

  // The share of the last record's span spent in instances of region
  // `name` (the batch waits), in percent; -1 when it had none of them.
  double LastRegionShare(const std::string& name) const;

  uint64_t bytes_written() const { return bytes_written_; }
  // The start of the newest event drained so far (the latest of each
  // thread's, whose rings hold their events in order): the end of the
  // stretch a bounded trace keeps (trace_segments.cc). 0 before any.
  uint64_t newest_event_ns() const { return newest_event_ns_; }
  // The start of the oldest event drained since the last call (UINT64_MAX:
  // none): where the segment being written begins (trace_segments.cc).
  uint64_t TakeOldestEventNs() {
    const uint64_t oldest = oldest_event_ns_;
    oldest_event_ns_ = UINT64_MAX;
    return oldest;
  }

 private:
  // A file's I/O this interval.
  struct TouchedFile {
    uint32_t id = 0;
    format::IoTotals io;
  };
  struct RegionAcc {
    uint64_t count = 0, ns = 0, max_ns = 0, first = UINT64_MAX, last_end = 0;
    uint64_t no_batch = 0;  // of count, those no batch came out of (BatchSampler)
  };
  // What the flusher knows of a file id, by string id over the whole run:
  // 8 bytes an id (a data set of a million files read over a month costs
  // 8 MB here; its I/O this interval is in `touched_`).
  struct FileInfo {
    uint32_t touched = 0;      // 1 + its index in touched_; 0: none this interval
    uint8_t path_class = 255;  // format::PathClassOf; 255: not looked up yet
    bool read = false, written = false;
    bool saved = false;  // a save region wrote it (CheckpointSaves)
  };
  static_assert(sizeof(FileInfo) == 8, "a file id's whole-run state: 8 bytes");
  FileInfo& InfoOf(uint32_t file) {
    if (file >= file_info_.size()) {
      file_info_.resize(std::max<size_t>(file + 1, file_info_.size() * 2));
    }
    return file_info_[file];
  }
  uint8_t ClassOf(uint32_t file);
  // Whether the wait a call or fault falls in counts it (batch_sampler.h):
  // a file neither code nor the system's by its path, whatever its use so
  // far, as the full events' (lib/analysis/meters/path_classes.h). By use,
  // a file written before the first read the flusher drained is an output:
  // a pass drains the rings before the faults, so a loop's opens and maps
  // of a file it wrote and reads only through a map were left out of its
  // steps' waits while the flusher, on a busy machine, lagged behind.
  bool JobFile(uint32_t file);
  // A run [from, to) of `ev`, calls on a data file (`reads`: reads, else
  // its other calls), `dur` their summed duration: its spans to the
  // batch sampler.
  void DataSpans(const Event* ev, size_t from, size_t to, bool reads, uint64_t dur,
                 const format::TickScale& scale);
  // A run [from, to) of `ev`, other calls: a sync's, close's or rename's
  // (of its old path), to the checkpoint saves (CheckpointSaves::Settle),
  // and an open for output of a job file's (CheckpointSaves::OutputOpen).
  void SettleRun(const Event* ev, size_t from, size_t to, const format::TickScale& scale);
  // A run [from, to) of `ev`, write calls that wrote `bytes` in `dur`: to
  // the checkpoint saves (CheckpointSaves::Write).
  void WriteRun(const Event* ev, size_t from, size_t to, uint64_t bytes, uint64_t dur,
                const format::TickScale& scale);
  // A run [from, to) of `ev`, calls on a data file's maps (mmap, munmap,
  // mremap): to the batch sampler (BatchSampler::MapCall).
  void DataMaps(const Event* ev, size_t from, size_t to, const format::TickScale& scale);
  // The interval's record up to `end_ns`; `take` starts the next
  // interval afresh, else the tables stay as they are.
  format::IntervalRecord Record(uint64_t end_ns, int32_t rank, bool take);
  void WriteSoFar(uint64_t now_ns, int32_t rank);
  // Writes `kept` where the records kept end, then `so_far` as the new
  // record so far (else the one there again). False where it failed: for
  // a pass's record so far (`so_far`), only that write is lost; records
  // kept wait in memory (unwritten_) and go first at the next write, so
  // that a disk full for a while loses none of the whole run's counts.
  bool Write(const std::vector<uint8_t>& kept, const std::vector<uint8_t>* so_far);
  // Appends to `out` a strings record (`type`) of those names of `r` -- its
  // files' where `files`, its regions' where `regions` -- that the file does
  // not define yet, their ids to `fresh`: Defined() once written for good.
  void StringsOf(const format::IntervalRecord& r, bool files, bool regions, uint16_t type,
                 std::vector<uint8_t>* out, std::vector<uint32_t>* fresh);
  void Defined(const std::vector<uint32_t>& ids);
  // The interval's GPU record: its spans' union, then none held.
  format::GpuRecord TakeGpu(uint64_t start_ns);
  // Marks the calls [from, to) of `ev` as I/O outstanding (rank_io_map.h).
  void MarkIo(const Event* ev, size_t from, size_t to, const format::TickScale& scale);
  // The data stall from where the last record's stretch ended to `to_ns`
  // (the interval before the one that ends: the other processes' calls,
  // and CUPTI's records, of that time are in by now, but for calls still
  // running), read at `now_ns`; false where there is none to write (no
  // GPU work yet).
  bool TakeStall(uint64_t to_ns, uint64_t now_ns, format::DataStallRecord* r);

  StringTable* strings_;
  const uint64_t interval_ns_;
  std::string path_;
  uint64_t interval_start_ns_ = 0;
  uint64_t events_ = 0;
  format::KindRow kinds_[kEventKindLimit];
  std::vector<TouchedFile> touched_;  // the files with I/O this interval
  std::vector<FileInfo> file_info_;   // indexed by string id, whole run
  std::unordered_map<uint32_t, RegionAcc> regions_;
  std::vector<bool> defined_;         // string ids the file defines
  BatchSampler batches_;  // the batch waits' samples (batch_sampler.h)
  CheckpointSaves saves_;  // the checkpoint saves (checkpoint_saves.h)
  std::vector<std::pair<uint64_t, uint64_t>> gpu_spans_;    // this interval's GPU work
  std::vector<std::pair<uint64_t, uint64_t>> gpu_counted_;  // the union counted, last 2 intervals
  RankIoMap* io_map_;
  // The data stall: the GPU spans from stall_from_ns_ on (merged), and where
  // the next stretch starts (0: no GPU work yet).
  std::vector<std::pair<uint64_t, uint64_t>> gpu_busy_;
  uint64_t stall_from_ns_ = 0;
  bool gpu_attached_ = false;  // CUPTI attached, or GPU work drained
  format::IntervalRecord last_;
  uint64_t bytes_written_ = 0;          // the records kept
  std::vector<uint8_t> unwritten_;      // records kept whose write failed, for the next
  std::vector<uint8_t> so_far_record_;  // the record so far (its strings so far first) after them
  size_t tail_bytes_ = 0;               // the bytes after them (a failed write's too)
  uint64_t so_far_events_ = 0;          // events_ when it was written
  uint64_t newest_event_ns_ = 0;
  uint64_t oldest_event_ns_ = UINT64_MAX;
  bool failed_ = false;
  bool told_unwritten_ = false;
  // Records held for a later write: beyond, the counters stop (a day of a
  // busy process's records).
  static constexpr size_t kMaxUnwrittenBytes = 16u << 20;
};

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_INTERVAL_COUNTERS_H_
