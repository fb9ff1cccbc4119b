// The counters stream of a bounded trace (DLPROF_KEEP; docs/FORMAT.md,
// "Bounded traces"): what a process did over each interval of the whole
// run, in a few hundred bytes, beside the trace segments that keep only the
// last DURATION of events. The runtime's flusher writes it
// (lib/core/interval_counters.h) and the reader sums it
// (lib/analysis/whole_run.h); this is the one definition both use.
//
//   NAME.dlcount := FileHeader (the trace's, docs/FORMAT.md) Record*
//   Record       := RecordHeader (16 bytes) payload (varints)
//
// Records are appended and never rewritten, but for the record of the
// interval so far, always the last, which each write goes over: so a file
// cut anywhere (SIGKILL, a full disk) is a valid prefix, and a torn last
// record is skipped. Strings are defined once per file, in a strings record
// before the first record that names them.
#ifndef DLPROF_LIB_FORMAT_COUNTERS_H_
#define DLPROF_LIB_FORMAT_COUNTERS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "lib/format/trace_file.h"

namespace dlprof::format {

inline constexpr char kCountersSuffix[] = ".dlcount";
constexpr uint32_t kCounterMagic = 0x43504C44;  // "DLPC"

struct CounterRecordHeader {
  uint32_t magic;          // kCounterMagic
  uint16_t type;           // CounterRecordType
  uint16_t reserved;       // 0
  uint32_t payload_bytes;  // bytes after this header
  uint32_t payload_crc;    // CRC-32C of the payload
};
static_assert(sizeof(CounterRecordHeader) == 16,
              "docs/FORMAT_BOUNDED.md: record header is 16 bytes");
constexpr uint32_t kMaxCounterPayload = 1u << 20;  // a reader refuses larger records

enum CounterRecordType : uint16_t {
  kCounterStrings = 1,   // varint n; n x (varint id, varint len, bytes)
  kCounterInterval = 2,  // IntervalRecord
  kCounterKeep = 3,      // KeepRecord
  kCounterBatches = 4,   // BatchRecord (a reader without it skips it)
  kCounterGpu = 5,       // GpuRecord (likewise)
  kCounterSteps = 6,     // StepRecord (likewise)
  // IntervalRecord: the interval in progress, so far. Always the file's
  // last record: the writer writes each record over it (a reader without
  // it skips it).
  kCounterIntervalSoFar = 7,
  kCounterDataStall = 8,  // DataStallRecord (a reader without it skips it)
  kCounterLost = 9,       // LostRecord: trace blocks a full disk refused (likewise)
  // StepRecord's preprocessing_ns, after its steps record (likewise: a
  // reader without it counts all of a step's wait reading).
  kCounterStepSplit = 10,
  // Strings as kCounterStrings, but of the record so far alone: the names
  // its file rows bring that the records kept do not define. Written over
  // with it, right before it (the records kept end where it begins), so
  // that a record so far's passing names cost no room for good (a reader
  // without it skips it: those rows then go unnamed).
  kCounterStringsSoFar = 11,
  // StepRecord's unseen_* figures, after its steps record where any is
  // set (likewise: a reader without it takes the steps' waits as measured).
  kCounterStepUnseen = 12,
  // Of the interval record after it, the region rows no batch came out of
  // (RegionRow::no_batch), where any (likewise: a reader without it counts
  // a pass's end as a batch).
  kCounterNoBatch = 13,
  kCounterSaves = 14,  // SavesRecord (likewise: a reader without it sees no checkpoint)
  // StepRecord's mapping_ns and map_copy_ns, after its steps record where
  // either is set (likewise: a reader without it names no part).
  kCounterStepParts = 15,
};

// The file classes of docs/ANALYSIS.md, in the order of the analysis's
// FileClass: what the writer decided from the path and the process's use.
constexpr int kCounterClasses = 5;  // data, code, outputs, system, other

struct IoTotals {
  uint64_t reads = 0, read_bytes = 0, read_ns = 0;
  uint64_t writes = 0, write_bytes = 0, write_ns = 0;
  uint64_t other_calls = 0, other_ns = 0;  // opens, stats, seeks, closes ...
  void Add(const IoTotals& o);
  uint64_t calls() const { return reads + writes + other_calls; }
  uint64_t ns() const { return read_ns + write_ns + other_ns; }
};

struct KindRow {
  uint32_t kind = 0;
  uint64_t calls = 0, bytes = 0, ns = 0, errors = 0;
};

struct FileRow {
  uint32_t file = 0;  // string id of the path
  uint8_t cls = 0;
  IoTotals io;
};

struct RegionRow {
  uint32_t name = 0;  // string id of the region's name
  uint64_t count = 0, ns = 0, max_ns = 0;
  uint64_t first_start_ns = 0, last_end_ns = 0;
  // Of `count`, the regions that held their thread's "end" or "raised"
  // mark (lib/read/regions.h): requests that found a pass over, or raised,
  // no batch. Not in the interval record: in the no-batch record (13)
  // right before it.
  uint64_t no_batch = 0;
};

// One interval of one process: the events the flusher drained in it.
struct IntervalRecord {
  uint64_t start_ns = 0, end_ns = 0;  // the interval, flusher's clock
  int32_t rank = -1;
  uint64_t events = 0;                // every event, of every kind
  std::vector<KindRow> kinds;         // I/O and GPU kinds that occurred
  IoTotals classes[kCounterClasses];  // every I/O call not nested in another
  std::vector<FileRow> files;         // the files most time went to (rest: in classes)
  std::vector<RegionRow> regions;     // annotation and NVTX regions, per name
  // Not in the file: its record type. The interval in progress when the
  // file was read (the process killed, or still running), up to the
  // flusher's last pass: its batch, step and GPU records are not written
  // yet.
  bool so_far = false;
};

// A window kept whole: the events of [from_ns, to_ns] stay on disk.
struct KeepRecord {
  uint64_t at_ns = 0, from_ns = 0, to_ns = 0;
  std::string reason;  // "batch_wait 31% > 25%", "dlprof keep", ...
};

// The batch waits of one interval, for the whole run's split of the wait by
// cause (lib/core/batch_sampler.h writes it, lib/analysis/whole_run_causes.h
// joins it across processes). A wait whose batch a loader worker made is
// split by joining it to that worker's fetch, so both sides keep samples:
// the batches of a pass numbered n (the low kBatchIndexBits of the batch
// flow's id, python/dlprof/__init__.py _BatchIter) with n < kAlwaysSampled
// or the flow id's hash with `level` low bits 0. Every process picks its
// own level from its own batch rate; the reader joins a batch where both
// sides kept it, which is where the hash has max(levels) low bits 0: a
// sample of known weight. Hashed, not n itself, because batch n goes to
// worker n % workers: multiples of 2^level would all be one worker's. A
// wait with no batch flow (a loader without workers, a get_batch loop, the
// call that ends a pass, iter(loader)) is summed where it happened, with
// its thread's own reads and pinning in it, in one of three OwnWaits.
//
// A hashed sample misses the rare wait -- a worker descheduled, a read
// that stalled -- whose batch was not ready, and with it a share of the
// reading or preprocessing it held. So each process also keeps, beside the
// hashed ones, the interval's longest waits (`longest`) and the fetches
// that ended longest after their thread's previous one (in `fetches`), of
// the batches not sampled always, whatever their hash: a wait kept for its
// length stands for itself, and is joined to its fetch where that worker
// kept it too (a late batch is a long wait and a late fetch). The hashed
// waits are a sample of the others.
constexpr int kBatchIndexBits = 24;
constexpr uint64_t kAlwaysSampled = 16;  // a pass's first batches (workers starting)
constexpr int kFetchParts = 8;           // a fetch's data reads, in eighths of it

struct WaitSample {
  uint64_t id = 0;                  // the batch flow's id
  uint64_t start_ns = 0, end_ns = 0;  // the wait (a "load_batch" region)
};
struct FetchSample {
  uint64_t id = 0;
  uint64_t start_ns = 0, end_ns = 0;  // the fetch (a worker's "fetch_batch" region)
  bool first = false;                 // its process's first fetch of the pass: a worker starting
  uint32_t read_us[kFetchParts] = {};  // data reads of the fetching thread in each eighth
};
struct OwnWaits {
  uint64_t count = 0, ns = 0;
  uint64_t reading_ns = 0;  // the waiting thread's data reads in them
  uint64_t pin_ns = 0;      // its pin_batch regions in them
  bool empty() const { return count == 0; }
};
struct BatchRecord {
  uint64_t start_ns = 0;  // the interval's (its IntervalRecord's start_ns)
  uint8_t level = 0;
  OwnWaits read;  // load_batch without a flow, in which the thread read data
  OwnWaits idle;  // load_batch without a flow or reads of its own
  OwnWaits iter;  // loader_iter: iter(loader), starting a pass
  uint64_t flow_waits = 0, flow_wait_ns = 0;  // waits for a worker's batch, every one
  std::vector<WaitSample> waits;              // of those, the sampled ones ...
  std::vector<WaitSample> longest;            // ... and the longest (none of them both)
  std::vector<FetchSample> fetches;           // this process's sampled and latest fetches
  // Not in the file: a reader that thins a long run's samples to a level
  // of its own (lib/analysis/whole_run_causes.h, ThinBatchSamples) keeps
  // the longest waits whose hash it samples, and the time of those it drops.
  uint8_t longest_level = 0;
  uint64_t longest_dropped_ns = 0;
  // ... and, past its budget, a pass's first batches (kept whatever their
  // hash) only where the pass's hash samples them at this level, the time
  // of the waits dropped kept.
  uint8_t pass_level = 0;
  uint64_t first_dropped_ns = 0;
  bool empty() const {
    return read.empty() && idle.empty() && iter.empty() && flow_waits == 0 && fetches.empty();
  }
};

// The GPU work of one interval: the union of the spans of the kernels,
// copies and memsets the flusher drained in it (every device of the
// process; GPU records arrive late, in CUPTI's buffers), less what an
// earlier interval's spans already covered; written after the interval
// record it belongs to, when the interval drained any.
struct GpuRecord {
  uint64_t start_ns = 0;  // the interval's (its IntervalRecord's start_ns)
  uint64_t busy_ns = 0;   // the union's length
  uint64_t first_ns = 0, last_ns = 0;  // its first span's start, its last end
  uint64_t spans = 0;     // the kernels, copies and memsets
};

// The data stall of a stretch of time, as a process with GPU work measured
// it: the time some process of its rank (itself and the processes sharing
// its rank's I/O map, lib/core/rank_io_map.h: its loader workers) had an
// I/O call outstanding, and of that the time none of this process's GPU
// work ran. Measured one interval late, once the other processes' flushers
// and CUPTI's buffers have handed over that stretch's events; written after
// the interval record during which it was measured. Stretches follow one
// another from the process's first GPU work on.
struct DataStallRecord {
  uint64_t from_ns = 0, to_ns = 0;  // the stretch
  uint64_t io_ns = 0;     // with I/O outstanding in the rank
  uint64_t stall_ns = 0;  // of io_ns, with no GPU work of the process running
};

// The waits of a loop without a DataLoader (docs/ANALYSIS.md, "Loops
// without a DataLoader"), one interval's: a thread that steps an optimizer
// ("optimizer_step" regions) waits, before each step, for the reading it
// does on data files since its previous step (calls and page faults, those
// less than 1 ms apart one stretch with the time between); the first
// step's window is as long as the second's period. Written after the
// interval record it belongs to, when a step ended in it.
struct StepRecord {
  uint64_t start_ns = 0;       // the interval's (its IntervalRecord's start_ns)
  uint64_t waits = 0;          // windows before steps, settled in the interval
  uint64_t wait_ns = 0;        // the reading in them
  uint64_t loop_start_ns = 0;  // the first step's window's start; 0: not here
  // Of wait_ns, the time between calls not next to a page fault (the
  // program's own work: BatchSampler::StretchNsIn). Written apart, in a
  // step split record, and read so: a reader hands that over as a record
  // of its own, this alone set (the rest 0); a writer before it wrote none.
  uint64_t preprocessing_ns = 0;
  // Of preprocessing_ns, in a step parts record: the calls making and
  // tearing down data files' maps (the full events' "mapping" part), and
  // the time between calls while a map the thread made for the batch was
  // open (its "copies out of maps": BatchSampler::MapCall).
  uint64_t mapping_ns = 0, map_copy_ns = 0;
  // What the waits cannot see (the full events' StepLoop::Result, for the
  // verdict's "not measured": docs/ANALYSIS.md, "Loops without a
  // DataLoader"), in a step unseen record: the interval's steps' time
  // between reads (calls that moved bytes, page faults) 1 ms or more
  // apart, the median step's times the steps; the data I/O of the
  // process's threads that had not stepped, after some thread's first
  // step (each thread's calls a union, joined as a step's); and the time
  // within the loop (the first step's start to the latest step's end) a
  // data file's map was live in the process.
  uint64_t unjoined_ns = 0, other_threads_io_ns = 0, map_live_ns = 0;
  bool any_unseen() const { return unjoined_ns + other_threads_io_ns + map_live_ns > 0; }
};

// The checkpoint saves of one interval (docs/ANALYSIS_CHECKPOINTS.md): each
// "save_checkpoint" region that ended in it (the PyTorch bootstrap's
// torch.save, dcp's and safetensors' saves), with its thread's writes in
// it and its thread; the threads that ran the loop (waited for a batch,
// stepped an optimizer), each in the interval of its first step; and the
// files such saves wrote that the process then read as data, after a later
// step of the saving thread (a cache of samples filled in epoch 0: its
// saves are no checkpoints where it loaded kMinCacheFiles of them).
// Written after the interval record it belongs to, where any.
struct SaveSample {
  uint64_t start_ns = 0, end_ns = 0;
  uint64_t bytes = 0, write_ns = 0;  // its thread's writes in it
  uint32_t file = 0;                 // string id of the file it wrote most to (0: none)
  uint32_t thread = 0;               // its thread's id
  // Not in the file: its thread ran the loop (the reader's, from the
  // process's loop threads; lib/analysis/whole_run_saves.h).
  bool loop_thread = false;
};
struct SavesRecord {
  uint64_t start_ns = 0;  // the interval's (its IntervalRecord's start_ns)
  std::vector<SaveSample> saves;
  std::vector<uint32_t> loaded;  // saved files read as data (string ids), each once
  uint64_t unsampled = 0;        // saves beyond kMaxSaveSamples, not in `saves`
  std::vector<uint32_t> loop_threads;  // threads whose first step ended in it
  bool empty() const {
    return saves.empty() && loaded.empty() && unsampled == 0 && loop_threads.empty();
  }
};
constexpr size_t kMaxSaveSamples = 256;  // an interval's saves, each
// The rules the kept events' CheckpointMeter and the flusher's
// CheckpointSaves share: files loaded as data that make a cache, how soon
// after a save its file's sync or close settles it, the least bytes of a
// burst of writes that is a save, and the pause that ends a smaller one.
constexpr size_t kMinCacheFiles = 4;
constexpr uint64_t kSaveSettleNs = 100000000;
constexpr uint64_t kMinBurstBytes = 1 << 20;
constexpr uint64_t kBurstGapNs = 50000000;

// Events the trace segments lack: blocks whose write failed for want of
// space (ENOSPC, EDQUOT) while the counters, which count every event, went
// on; written when writing resumes in a new segment, or at the process's
// end. One record a stretch of failures.
struct LostRecord {
  uint64_t from_ns = 0, to_ns = 0;  // the oldest and newest event lost (else the failed writes')
  uint64_t events = 0;              // events in the blocks not written
  uint64_t blocks = 0;              // blocks not written
  uint32_t error = 0;               // the write's errno (ENOSPC, EDQUOT)
};

// Whether batch `id` is sampled at `level`, and what a sample then stands for.
inline uint64_t BatchIndexOf(uint64_t id) { return id & ((1ull << kBatchIndexBits) - 1); }
inline uint64_t BatchHash(uint64_t id) {  // splitmix64's finalizer
  id = (id ^ (id >> 30)) * 0xbf58476d1ce4e5b9ull;
  id = (id ^ (id >> 27)) * 0x94d049bb133111ebull;
  return id ^ (id >> 31);
}
inline bool BatchSampled(uint64_t id, uint8_t level) {
  return BatchIndexOf(id) < kAlwaysSampled || (BatchHash(id) & ((1ull << level) - 1)) == 0;
}
inline uint64_t BatchWeight(uint64_t id, uint8_t level) {
  return BatchIndexOf(id) < kAlwaysSampled ? 1 : 1ull << level;
}

// Appends a whole record (header and payload) to `out`. A strings
// record's `type`: kCounterStrings, or kCounterStringsSoFar.
void AppendStringsRecord(const std::vector<std::pair<uint32_t, std::string>>& strings,
                         std::vector<uint8_t>* out, uint16_t type = kCounterStrings);
// Its type: kCounterIntervalSoFar where r.so_far.
void AppendIntervalRecord(const IntervalRecord& r, std::vector<uint8_t>* out);
// The no-batch record of `r`'s region rows, to write right before it:
// nothing where none of them has a no_batch.
void AppendNoBatchRecord(const IntervalRecord& r, std::vector<uint8_t>* out);
void AppendKeepRecord(const KeepRecord& r, std::vector<uint8_t>* out);
void AppendBatchRecord(const BatchRecord& r, std::vector<uint8_t>* out);
void AppendGpuRecord(const GpuRecord& r, std::vector<uint8_t>* out);
// A steps record, its step split record after it where preprocessing_ns > 0,
// its step unseen record where any_unseen(), and its step parts record
// where mapping_ns or map_copy_ns is set.
void AppendStepRecord(const StepRecord& r, std::vector<uint8_t>* out);
void AppendDataStallRecord(const DataStallRecord& r, std::vector<uint8_t>* out);
void AppendSavesRecord(const SavesRecord& r, std::vector<uint8_t>* out);
void AppendLostRecord(const LostRecord& r, std::vector<uint8_t>* out);

// A counters file read back.
struct CountersFile {
  std::string path;
  ProcessInfo info;
  std::unordered_map<uint32_t, std::string> strings;
  std::vector<IntervalRecord> intervals;
  std::vector<KeepRecord> keeps;
  std::vector<BatchRecord> batches;
  std::vector<GpuRecord> gpu;
  std::vector<StepRecord> steps;
  std::vector<DataStallRecord> stalls;
  std::vector<SavesRecord> saves;
  // Filled by every read (VisitCountersFile), whatever the visitor: rare
  // and small, and what a reader must say about the kept events.
  std::vector<LostRecord> lost;
  bool torn = false;  // the last record was cut short (the process was killed)
  bool so_far = false;  // the last interval is the one in progress (IntervalRecord::so_far)
  // Where its record, or the strings so far before it, begins: the records
  // kept end there.
  uint64_t so_far_at = 0;
  uint64_t damaged = 0;  // stretches of damage skipped (a record, or more)
  struct Damage {
    uint64_t at = 0;     // its first byte
    uint64_t bytes = 0;  // skipped: reading went on at the next whole record
  };
  std::vector<Damage> damage;
  uint64_t bytes = 0;  // read
};

// What a counters file's records say, handed over one at a time as they
// are read (a month of one process's records is gigabytes decoded; they
// are read through a window of a few MiB). A visitor may move from what it
// is given.
class CountersVisitor {
 public:
  virtual ~CountersVisitor() = default;
  virtual void Interval(IntervalRecord& r) {}
  virtual void Keep(KeepRecord& r) {}
  virtual void Batches(BatchRecord& r) {}
  virtual void Gpu(GpuRecord& r) {}
  virtual void Steps(StepRecord& r) {}
  virtual void DataStall(DataStallRecord& r) {}
  virtual void Saves(SavesRecord& r) {}
};

// Reads `path`, its first `limit` bytes at most (a file still appended to,
// read twice, reads the same twice), handing each record to `visit` in the
// file's order; `out` gets the process, the strings (each as its record is
// read: before the records that name it), the bytes read and what was torn
// or damaged, but none of the records. False with `error` when it is no
// counters file at all.
bool VisitCountersFile(const std::string& path, CountersVisitor* visit, CountersFile* out,
                       std::string* error, uint64_t limit = UINT64_MAX);
// Reads `path` whole into `out`.
bool ReadCountersFile(const std::string& path, CountersFile* out, std::string* error,
                      uint64_t limit = UINT64_MAX);

// The counters file of a trace segment: its stem (format::TraceStemOf)
// with kCountersSuffix.
std::string CountersPathOf(const std::string& trace_path);

}  // namespace dlprof::format

#endif  // DLPROF_LIB_FORMAT_COUNTERS_H_
