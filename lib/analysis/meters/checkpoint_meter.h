// Checkpoints in the training loop (docs/ANALYSIS_CHECKPOINTS.md): when
// the loop stopped for saves, what was saved in the background, how many
// bytes and how fast; and, before the loop, how long restoring one took.
//
// A save is
//   - a `save_checkpoint` region: the PyTorch bootstrap marks torch.save,
//     torch.distributed.checkpoint's saves and safetensors' save calls
//     (python/dlprof/_torch.py); its bytes are the writes its process made
//     while it was open;
//     a sync, close or rename of a file it wrote that follows it within
//     kSettleNs (torch.save, then fsync) is part of it, where it is the
//     file's latest save, the call lies inside no other save or load, and
//     the file was neither written since (saving the same file every few
//     steps: the next save's own close is the next save's) nor read (a
//     torch.load verifying the save closes what it read);
//   - or, where no such region holds them, a burst of writes on one of the
//     job's own files (neither code nor the system's by its path) from one
//     thread, from its first write (or the open for output, OpensForOutput,
//     that came just before it on that thread: open(path, "wb") truncating
//     the last save) to the close, fsync or rename that ends it, of at
//     least kMinBurstBytes: what other frameworks and DLIO's
//     checkpointing write; where such a call ended it, its file's sync,
//     close or rename that follow within kSettleNs are the save's too
//     (np.save(f) closes a stream on a dup of f's descriptor, then the
//     program fsyncs f). A save writes without stopping for the loop: a
//     step of the loop on the writing thread (a batch waited for, an
//     optimizer step) ends the burst, and so does a pause of kBurstGapNs
//     between two writes while the burst is under kMinBurstBytes, so a
//     file kept open and written a little at a time (predictions, a log)
//     is no save, however much it holds at its close, while a save that
//     compresses between its writes (np.savez_compressed) stays one. A
//     burst that follows a save region of its thread (torch.save into a
//     BytesIO, then the bytes written: Lightning's atomic save) within
//     kSettleNs is that save's. Nor is a burst
//     on a file a process of the group reads (by its path) after the
//     burst: that is the data set being made, as
//     docs/ANALYSIS.md's file classes have it (a file read is data, also
//     when the job wrote it first). A file read before it is written (a
//     checkpoint restored, then saved over) stays a save.
// A `load_checkpoint` region (torch.load, dcp's loads, safetensors' loads)
// before the loop is a restore, with the bytes its process read meanwhile;
// one in the loop reading back a file a save wrote (a save verified, the
// best model reloaded) holds no reading of the loop's (IsCheckpointCall)
// and is no save either. One in the loop after a later step of the saving
// thread reads what that save wrote as data, and where such loads read
// kMinCachePaths files or more, the save was a cache of samples
// (torch.save of each decoded sample in the first epoch, torch.load in the
// next), no checkpoint: CacheFills hands its time to the step's
// batch wait. The latest save region of each path is kept for that, at
// most kKeptSavedPaths paths (their 64-bit hashes; about 3 MiB), the oldest
// dropped: a cache of more files loses its oldest first, and those of its
// saves still count as checkpoints.
//
// Which saves stopped the loop is known only at the end, from the loop's
// window and the threads that ran it (those that waited for batches or
// stepped an optimizer): a save on such a thread inside the loop blocked it,
// one elsewhere (another thread, another process) ran in the background. A
// save on such a thread right after the last step (saving every N steps)
// ends the loop (LoopEnd).
// Memory grows with the saves and the files written at once, never with the
// events.
#ifndef DLPROF_LIB_ANALYSIS_CHECKPOINT_METER_H_
#define DLPROF_LIB_ANALYSIS_CHECKPOINT_METER_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "lib/analysis/meters/path_classes.h"
#include "lib/analysis/summary/rank_figures.h"
#include "lib/format/counters.h"
#include "lib/read/event_source.h"

namespace dlprof::analysis {
using namespace dlprof::read;

class CheckpointMeter {
 public:
  // A burst of writes smaller than this is a log or a result, not a save.
  static constexpr uint64_t kMinBurstBytes = format::kMinBurstBytes;
  // How soon after a save's region its file's sync, close or rename is its.
  static constexpr uint64_t kSettleNs = format::kSaveSettleNs;
  // A pause between two writes of a file that ends their burst while it is
  // under kMinBurstBytes: writes a little at a time.
  static constexpr uint64_t kBurstGapNs = format::kBurstGapNs;

  explicit CheckpointMeter(const std::vector<ProcessTrace>& processes)
      : processes_(processes), paths_(processes) {}

  // Regions that save or restore a checkpoint, in stream order.
  void AddSave(const StreamEvent& e);
  void AddRestore(const StreamEvent& e);
  // Every I/O call that counts (CountsAsIo), with its class: writes and what
  // ends a burst (close, sync, rename) for the saves, reads for restores.
  // An in-kernel copy (sendfile, copy_file_range) is a read of its source
  // and a write of its destination (aux), as in the summary's files:
  // shutil.copyfile of a checkpoint to model_best.pth.tar saves it again.
  void AddIo(const StreamEvent& e, OpClass op, uint64_t bytes);
  // A page fault on a mapped file: a read of it, as a read call is, of a
  // burst that ended before the loop's first step (a data set written at
  // start-up, then read through np.memmap: its closes are the reading's).
  // A burst in the loop mapped after it (a checkpoint checked, evaluated)
  // stays a save: every save of a loop went with one such map otherwise.
  void AddMapRead(const StreamEvent& e) {
    if (!burst_paths_.empty()) ReadAfterBursts(e, /*before_loop_only=*/true);
  }
  // Whether the I/O call `e` (class `op`) is a checkpoint's, no reading of
  // the loop's: inside a save region of its thread (torch.save's open of its
  // file, truncating the last save's, and its close), or on a file a save
  // region wrote: not a read (the open and close around an fsync after it),
  // or a read in a load region of its thread before the loop's next step
  // (torch.load verifying the save: no data read); after a save found as a
  // burst, only its closes, syncs and renames within kSettleNs; a copy into
  // a traced file from an untraced one or a saved file. Ask before AddIo.
  bool IsCheckpointCall(const StreamEvent& e, OpClass op);
  // A step of the loop (a batch wait, an optimizer step) beginning at
  // `start` on `thread` (ThreadKey): the bursts of writes of that thread end.
  void AddLoopStep(uint64_t thread, uint64_t start);

  // A save region whose file the loop loaded as data (a cache of samples):
  // no checkpoint. Its thread, its span, and its time in write calls.
  struct CacheFill {
    uint64_t thread = 0, start = 0, end = 0, write_ns = 0;
  };
  // The cache fills of a loop ending at `loop_end` (loaded before it), by start.
  std::vector<CacheFill> CacheFills(uint64_t loop_end) const;

  // The loop's end, `loop_end` or the end of a save of a loop thread that
  // begins within `step_ns` after it (the save of the last N steps).
  uint64_t LoopEnd(uint64_t loop_end, uint64_t step_ns,
                   const std::unordered_set<uint64_t>& loop_threads) const;
  // The figures, given the loop's window [loop_start, loop_end] (none: no
  // loop), a step's time (a save begun within it after the loop's end is
  // still the loop's: a background thread saving the last steps) and the
  // threads that ran the loop (ThreadKeys).
  CheckpointFigures Finish(bool loop, uint64_t loop_start, uint64_t loop_end, uint64_t step_ns,
                           const std::unordered_set<uint64_t>& loop_threads);

 private:
  // AddIo of the call `call` as a call of class `op` on `ev`'s file; a read
  // that `reads_back` a path a burst wrote makes that burst no save.
  void AddIoOn(const StreamEvent& call, const Event& ev, OpClass op, uint64_t bytes,
               bool reads_back = true);
  struct Save {
    uint32_t process = 0;
    uint64_t thread = 0;  // ThreadKey
    uint64_t start = 0, end = 0;
    uint64_t bytes = 0, write_ns = 0;
    bool read_after = false;  // a burst whose file was read afterwards: no save
    bool burst = false;       // found as a burst of writes, no region
    bool read_back = false;   // a file it wrote read since: settled no further
    // The first load of a file it wrote after a later step of its thread
    // (UINT64_MAX: none): a cache's, where the loop went on after it.
    uint64_t loaded_as_data = UINT64_MAX;
    uint64_t steps_before = 0;  // the loop's steps seen when it began
    bool before_loop = false;   // a burst ended before the loop's first step
  };
  // An open for output of a job file (OpensForOutput): a burst of writes
  // that follows on its thread within kSettleNs, no step between, begins
  // there. The last few only: a save opens its file just before writing.
  struct OutputOpen {
    uint64_t key = UINT64_MAX;  // ProcessStringKey; UINT64_MAX: none
    uint64_t thread = 0, start = 0, end = 0;
  };
  static constexpr size_t kKeptOutputOpens = 8;
  // The start of the burst that `thread` begins on `key` at `first_write`:
  // its open's, where one came just before.
  uint64_t BurstStart(uint64_t key, uint64_t thread, uint64_t first_write);
  // Writes on one file of one process not inside a save region.
  struct Burst {
    uint64_t thread = 0;
    uint64_t start = 0, end = 0;  // its open (or first write) to its last call
    uint64_t bytes = 0, write_ns = 0;
    bool writing = false;  // a write came since the open
  };
  // A region still open in a process: its writes or reads are its bytes.
  struct Open {
    uint32_t process;
    uint64_t end;
    size_t index;  // into saves_ or restores_
  };
  bool InOpen(std::vector<Open>* open, uint32_t process, uint64_t at, size_t* index);
  // Whether `e` lies in a load region (load_checkpoint) of its own thread
  // (`load_start`: where that region began).
  bool InLoad(const StreamEvent& e, uint64_t* load_start = nullptr);
  // The burst on `key` ends: a save, or part of a save region's; `by_file_call`:
  // ended by a close, sync or rename of its file, which may settle it further.
  void EndBurst(uint64_t key, bool by_file_call = false);
  // A sync, close or rename of `key` by `process` after the latest save
  // that wrote it, neither inside another save nor after the file was
  // written again: the save's.
  bool SettlesSave(uint32_t process, uint64_t key, uint64_t start, uint64_t end);
  // A sync() of `thread` after saves it made, not inside another: theirs.
  void SettlesThreadSaves(uint32_t process, uint64_t thread, uint64_t start, uint64_t end);
  // A read of a job file: the burst saves of its path before it are none
  // (`before_loop_only`: those that ended before the loop's first step).
  void ReadAfterBursts(const StreamEvent& e, bool before_loop_only = false);
  const std::string* PathOf(uint64_t key) const;
  // A save region at `index` wrote the file `key` (ProcessStringKey): kept
  // for its settling (saved_files_) and for loads of its path (saved_paths_).
  void NoteSavedFile(uint64_t key, size_t index);
  // A read of `e`'s file in a load region begun at `load_start` of its
  // thread: the latest save region of its path, if any, and whether the
  // load reads it back (a save verified: true) or as data (a cache: false,
  // which marks the save).
  bool LoadReadsBack(const StreamEvent& e, uint64_t load_start);

  const std::vector<ProcessTrace>& processes_;
  PathClasses paths_;
  std::vector<Save> saves_, restores_;
  std::vector<Open> open_saves_, open_restores_;
  std::unordered_map<uint64_t, Burst> bursts_;  // by ProcessStringKey
  OutputOpen output_opens_[kKeptOutputOpens];  // a ring, the oldest overwritten
  size_t next_output_open_ = 0;
  // The files the latest saves wrote (ProcessStringKey, save), at most
  // kKeptSavedFiles, the oldest dropped.
  static constexpr size_t kKeptSavedFiles = 64;
  std::vector<std::pair<uint64_t, size_t>> saved_files_;
  // The saves found as bursts, by their file's path (few: a read looks its
  // path up only while there are any), and the last file read's (a loop
  // reading one file asks once).
  std::unordered_map<std::string, std::vector<size_t>> burst_paths_;
  uint64_t last_read_key_ = UINT64_MAX;
  std::vector<size_t>* last_read_saves_ = nullptr;
  // The latest save region of each path written (by the path's hash), at
  // most kKeptSavedPaths, the oldest dropped (`saved_path_order_`, a ring
  // in order of insertion); and the last file a load read (a load reads
  // one file in many calls: looked up once).
  static constexpr size_t kKeptSavedPaths = 1 << 16;
  std::unordered_map<uint64_t, size_t> saved_paths_;
  std::vector<uint64_t> saved_path_order_;
  size_t next_saved_path_ = 0;
  uint64_t last_load_key_ = UINT64_MAX;
  size_t last_load_save_ = SIZE_MAX;
  uint64_t last_load_path_ = 0;  // its path's hash
  // A cache is of many files, filled a sample a step: a save loaded as
  // data after a later step is a cache's fill only where kMinCachePaths
  // paths or more were, and such saves came in one step of two or more
  // over the steps they spanned (CachesDense). A model saved as best.pt
  // and reloaded once mid-run (early stopping) stays a checkpoint (109 ms
  // of a save was taken for a fill, the batch wait's), and so does a
  // checkpoint an epoch reloaded in the next for evaluation (6 epochs: all
  // of 296 ms of saves were). The paths so loaded, up to kMinCachePaths.
  static constexpr size_t kMinCachePaths = format::kMinCacheFiles;
  std::unordered_set<uint64_t> cache_paths_;
  uint64_t steps_seen_ = 0;  // AddLoopStep's calls
  mutable int cache_dense_ = -1;  // CachesDense, once the stream is over (-1: not yet)
  bool CachesDense() const;
  bool IsCache(const Save& s, uint64_t loop_end) const {
    return s.loaded_as_data < loop_end && cache_paths_.size() >= kMinCachePaths &&
           CachesDense();
  }
  // Each loop thread's latest step's start (ThreadKey -> ns): a save
  // before it is one step or more old.
  std::unordered_map<uint64_t, uint64_t> last_step_;
  uint64_t any_last_step_ = UINT64_MAX;  // any loop thread's (UINT64_MAX: none yet)
};

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_CHECKPOINT_METER_H_
