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
  // of it in the calls, `bytes` written.
  void Write(uint32_t file, uint64_t start_ns, uint64_t end_ns, uint64_t bytes, uint64_t ns);
  // The thread read `file` (a call, a page fault): a saved file read as
  // data, where its saving thread has stepped since the save.
  void Read(uint32_t file) {
    if (!saved_.empty()) ReadSaved(file);
  }
  // A run of the thread's syncs or closes of `file` (0: sync(), every
  // file) over [start_ns, end_ns): where it begins within kSettleNs after
  // the file's latest save of the interval (its thread's, for sync()), that
  // save's, which it settles (torch.save, then fsync: the full events'
  // CheckpointMeter::SettlesSave) -- but where the file was written since
  // (a save over the same file at every step: the next save's close) or
  // read (a load verifying it: the load's close).
  void Settle(uint32_t file, uint64_t start_ns, uint64_t end_ns) {
    if (!record_.saves.empty()) SettleSave(file, start_ns, end_ns);
  }
  // A region of the thread ended; returns, for a save, the file it wrote
  // most to (its calls other than reads are no data I/O from then on, as
  // the full events' IsCheckpointCall has it: a cache's file opened to
  // drop its pages before its load), else 0.
  uint32_t Region(uint32_t name, uint64_t start_ns, uint64_t end_ns);
  // The interval's record (empty() where it has nothing); the next
  // interval starts afresh.
  format::SavesRecord Take(uint64_t start_ns);

 private:
  static constexpr size_t kWriteRuns = 64;
  static constexpr uint64_t kJoinGapNs = 1000000;
  static constexpr size_t kSavedFiles = 4096;  // files a save wrote, looked for in reads
  static constexpr uint64_t kSettleNs = format::kSaveSettleNs;
  struct WriteRun {
    uint64_t start = 0, end = 0, bytes = 0, ns = 0;
    uint32_t file = 0;
  };
  struct Thread {
    uint32_t tid = 0;
    std::array<WriteRun, kWriteRuns> writes;  // in time order
    size_t count = 0;
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

  RegionRoles roles_;
  std::unordered_map<uint32_t, std::unique_ptr<Thread>> threads_;
  Thread* thread_ = nullptr;
  std::unordered_map<uint32_t, Saved> saved_;  // by file id
  format::SavesRecord record_;
};

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_CHECKPOINT_SAVES_H_
