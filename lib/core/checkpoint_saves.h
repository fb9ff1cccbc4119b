// The checkpoint saves of a bounded trace's whole run, on the flusher
// (DLPROF_KEEP; docs/ANALYSIS_CHECKPOINTS.md): each "save_checkpoint"
// region (the PyTorch bootstrap's torch.save, dcp's and safetensors'
// saves) as a SaveSample of the interval it ended in (lib/format/
// counters.h), with its thread's writes in it and its thread, and the
// threads that ran the loop (waited for a batch or stepped an optimizer;
// a save before a loop thread's first step is that thread's too), so that
// the reader can tell how long the loop stopped for saves long after the
// events are gone; and the files those saves wrote that the process then
// read as data after a later step of the saving thread (a cache of
// samples, no checkpoint, where it read kMinCacheFiles of them).
//
// A save with no region (np.save, raw writes, DLIO's and other frameworks'
// checkpointing) is a burst of writes, as the full events find one
// (lib/analysis/meters/checkpoint_meter.h): a job file's writes by one
// thread, from its first write (or the open for output that came just
// before it, truncating the last save) to the close, sync or rename of the
// file that ends it, of at least kMinBurstBytes; a step of the thread ends it
// too, and a pause of kBurstGapNs while it is smaller drops it (a log
// written a little at a time). A burst inside a save region of its thread
// is the region's, one right after a region that wrote nothing (torch.save
// into memory, then the bytes written) joins it, and one on a file the
// process then reads is the data set being made, no save. (Unlike the full
// events: a read by another process, or in a later interval, does not make
// one the data set's.)
//
// A thread's writes are kept as runs since its last step (a batch wait,
// iter(), an optimizer step: a save holds none), runs of one file less
// than 1 ms apart joined; past kWriteRuns, the two of one file closest in
// time join, so that a save of many tensors, each written after its copy
// off the GPU, keeps all its bytes and the writes before it stay apart.
// Costs: a few instructions per run of writes; the rest once a region.
#ifndef DLPROF_LIB_CORE_CHECKPOINT_SAVES_H_
#define DLPROF_LIB_CORE_CHECKPOINT_SAVES_H_

#include <array>
#include <cstdint>
#include <memory>
#include <unordered_map>

#include "lib/core/region_roles.h"
#include "lib/format/counters.h"

namespace dlprof::core {

class CheckpointSaves {
 public:
  explicit CheckpointSaves(StringTable* strings) : roles_(strings) {}

  // The thread whose events the calls below are about, until the next call.
  void SetThread(uint32_t tid);
  // A run of the thread's write calls on `file`, [start_ns, end_ns), `ns`
  // of it in the calls, `bytes` written; `job`: a job file's (neither code
  // nor the system's by its path), which may be a burst's.
  void Write(uint32_t file, uint64_t start_ns, uint64_t end_ns, uint64_t bytes, uint64_t ns,
             bool job);
  // The thread opened a job file for output (OpensForOutput): a burst of
  // writes on it that follows within kSettleNs begins there.
  void OutputOpen(uint32_t file, uint64_t start_ns, uint64_t end_ns) {
    thread_->output_open = WriteRun{start_ns, end_ns, 0, 0, file};
  }
  // Whether a burst of writes on `file` is under way: its close or sync
  // ends it, the save's call, no data I/O.
  bool Bursting(uint32_t file) const { return !bursts_.empty() && bursts_.count(file) != 0; }
  // The thread read `file` (a call, a page fault): a saved file read as
  // data, where its saving thread has stepped since the save.
  void Read(uint32_t file) {
    if (!burst_samples_.empty()) DropBurst(file);
    if (!saved_.empty()) ReadSaved(file);
  }
  // The run ends: bursts still under way end.
  void Finish();
  // A run of the thread's syncs, closes or renames of `file` (0: sync(),
  // every file) over [start_ns, end_ns): where it begins within kSettleNs after
  // the file's latest save of the interval (its thread's, for sync()), that
  // save's, which it settles (torch.save, then fsync: the full events'
  // CheckpointMeter::SettlesSave) -- but where the file was written since
  // (a save over the same file at every step: the next save's close) or
  // read (a load verifying it: the load's close).
  void Settle(uint32_t file, uint64_t start_ns, uint64_t end_ns) {
    if (file != 0 && Bursting(file)) EndBurst(file, end_ns, true);
    if (!record_.saves.empty()) SettleSave(file, start_ns, end_ns);
  }
  // A region of the thread ended; returns, for a save, the file it wrote
  // most to (its calls other than reads are no data I/O from then on, as
  // the full events' IsCheckpointCall has it: a cache's file opened to
  // drop its pages before its load), else 0.
  uint32_t Region(uint32_t name, uint64_t start_ns, uint64_t end_ns);
  // The record of the interval [start_ns, end_ns) (empty() where it has
  // nothing); the next interval starts afresh, but for the saves that
  // ended within kSettleNs of `end_ns`: their file's sync or close may
  // still come (or be drained late), and they go in the next interval's
  // record (`last`: none, the run's end).
  format::SavesRecord Take(uint64_t start_ns, uint64_t end_ns, bool last);

 private:
  static constexpr size_t kWriteRuns = 64;
  static constexpr uint64_t kJoinGapNs = 1000000;
  static constexpr size_t kSavedFiles = 4096;  // files a save wrote, looked for in reads
  static constexpr uint64_t kSettleNs = format::kSaveSettleNs;
  static constexpr uint64_t kMinBurstBytes = format::kMinBurstBytes;
  static constexpr uint64_t kBurstGapNs = format::kBurstGapNs;
  struct WriteRun {
    uint64_t start = 0, end = 0, bytes = 0, ns = 0;
    uint32_t file = 0;
  };
  struct Thread {
    uint32_t tid = 0;
    std::array<WriteRun, kWriteRuns> writes;  // in time order
    size_t count = 0;
    WriteRun output_open;  // its latest open for output (OutputOpen)
    uint64_t last_step_start = 0;  // its latest step's start (0: none yet)
    bool looped = false;           // it has waited for a batch or stepped
  };
  struct Saved {
    const Thread* thread = nullptr;
    uint64_t end = 0;      // its latest save's
    // Written since (the next save's) or read (torch.load verifying it):
    // that save settles no more.
    bool touched = false;
  };
  // Joins two runs of the thread next to each other, of one file where
  // any are, closest in time (a room for the next).
  static void JoinClosest(Thread* t);
  // The sample of a save of the thread over [start_ns, end_ns).
  format::SaveSample SaveOf(const Thread& t, uint64_t start_ns, uint64_t end_ns) const;
  void ReadSaved(uint32_t file);
  void SettleSave(uint32_t file, uint64_t start_ns, uint64_t end_ns);
  // Adds a sample to the interval's record (or counts it unsampled), and
  // notes its file as saved.
  void AddSample(const format::SaveSample& s, const Thread& t);
  // A burst of writes on `file` ended at `end_ns` (`by_file_call`: by its
  // close or sync, after which the file's next ones within kSettleNs are
  // the save's too): a save where it is large enough.
  void EndBurst(uint32_t file, uint64_t end_ns, bool by_file_call);
  // The interval's burst sample of `file`, where any, dropped: the file
  // read, the data set being made.
  void DropBurst(uint32_t file);
  // A burst of writes under way: whose, and how much so far.
  struct Burst {
    Thread* thread = nullptr;
    uint64_t start = 0, end = 0, bytes = 0, write_ns = 0;
  };

  RegionRoles roles_;
  std::unordered_map<uint32_t, std::unique_ptr<Thread>> threads_;
  Thread* thread_ = nullptr;
  std::unordered_map<uint32_t, Saved> saved_;  // by file id
  std::unordered_map<uint32_t, Burst> bursts_;  // by file id
  // The record's samples that are bursts, by file (its latest): dropped
  // where the process reads the file (the data set being made).
  std::unordered_map<uint32_t, size_t> burst_samples_;
  format::SavesRecord record_;
};

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_CHECKPOINT_SAVES_H_
