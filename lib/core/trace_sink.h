// The trace file of one process and the flusher thread that fills it.
//
// The flusher wakes every millisecond while events arrive (every
// DLPROF_FLUSH_MS when idle), and writes a block when a ring passes half
// full, when DLPROF_FLUSH_MS has passed since the last block, or when forced
// (exit, exec, termination signal). A pass drains every ring fully, so a
// block holds a few thousand events and compresses well. A process that
// writes no block for 5 s writes an empty one: every block carries a
// (monotonic_raw, realtime) pair, and the decoder needs them all run long.
//
// A program thread holds the sink's lock only with every signal blocked
// (TraceSink::Lock): a handler that ran on top of the lock -- ours for
// SIGTERM, which waits for the flusher's final pass, or a program's that
// calls exit() -- would wait for a lock its own thread holds.
//
// The sink holds no descriptor between two writes: each write opens the
// trace (O_APPEND), checks it is still the file it created, and closes it,
// so that a program never finds one of ours among its descriptors, counts
// one fewer below its RLIMIT_NOFILE, or closes or dup2()s onto ours
// (issue 38). fork() waits for a write in progress (own_fd.h), so no
// child inherits that descriptor either. With no descriptor free
// (EMFILE), the blocks wait in memory and go out at a later write.
// The one exception is a process that changes its credentials and can no
// longer open its trace by its path (a root process that becomes nobody):
// the descriptor opened before the change is kept from then on
// (trace_sink_credentials.cc).
//
// The flusher counts as a thread for glibc, which ends a process with
// exit(0) when its last thread leaves through pthread_exit() (or returns
// from its start routine): without us the process would end there. Once
// the program's first thread is gone (WatchLastThread), the flusher looks
// for the others and, when none is left, calls exit(0) itself, as glibc
// would have done on the last thread.
#ifndef DLPROF_LIB_CORE_TRACE_SINK_H_
#define DLPROF_LIB_CORE_TRACE_SINK_H_

#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <sys/stat.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "lib/core/config.h"
#include "lib/core/interval_counters.h"
#include "lib/core/map_faults.h"
#include "lib/core/sidecar.h"
#include "lib/core/string_table.h"
#include "lib/core/thread_registry.h"
#include "lib/core/tsc_clock.h"
#include "lib/format/block_codec.h"
#include "lib/format/trace_file.h"

namespace dlprof::core {

class TraceSink {
 public:
  // The one way to hold the sink's lock. On a program thread, every signal
  // is blocked while it is held (and the old mask back after): a signal
  // that comes meanwhile waits the pass out and is then handled, on this
  // thread or another, with the lock free. The flusher blocks every signal
  // for good and skips the two system calls.
  class Lock {
   public:
    explicit Lock(TraceSink* sink) : Lock(sink, false) {}
    // With `try_only`, owns() says whether the lock was free.
    Lock(TraceSink* sink, bool try_only);
    ~Lock();
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;
    bool owns() const { return owns_; }

   private:
    TraceSink* sink_;
    bool owns_ = false;
    bool masked_ = false;
    sigset_t old_;
  };

  TraceSink(ThreadRegistry* registry, StringTable* strings, const Config& config);

  // Creates the directory (0700) and the file (0600, O_EXCL|O_NOFOLLOW) and
  // writes the header. On failure returns false with the reason.
  bool Open(const format::ProcessInfo& info, std::string* error);
  const std::string& path() const { return path_; }

  bool StartFlusher();
  // Stops the flusher, then writes what is left with `block_flags`.
  void Close(uint32_t block_flags);
  // For _exit(): the final pass written by the flusher, waited for (bounded
  // as from a signal), not on this thread -- _exit may come from a signal
  // handler on top of malloc holding its arena's lock (torch's DataLoader
  // workers _exit on their parent's SIGTERM): a pass here, which allocates,
  // then waited for that lock for ever. kStalled: the flusher made no
  // progress (this thread may hold what it needs): nothing more is written;
  // the rings sidecar keeps the events.
  enum class FlusherFinish { kWritten, kStalled, kNoFlusher };
  FlusherFinish FinishOnFlusher();

  // Drains every ring into blocks and writes them.
  void Pass(uint32_t block_flags);
  // Drain from a producer whose ring is full and whose flusher is slow or
  // gone; false when another thread is writing right now.
  bool TryDrainFromProducer();
  // The same, waiting for the pass another thread may be making.
  void DrainFromProducer();
  void Wake();
  bool flusher_running() const { return flusher_running_.load(std::memory_order_acquire); }
  // From a signal handler: asks the flusher for a final pass and waits for it
  // (bounded). Returns false if it could not be done. With no flusher, the
  // pass would run on this thread, on top of what the signal interrupted
  // (malloc holding its arena's lock: it waited for it for ever); where the
  // rings are in the sidecar (`rings_kept`), which a reader recovers as after
  // SIGKILL, it is not written: false.
  bool FinalPassFromSignal(bool rings_kept);
  // The final pass asked for by FinalPassFromSignal() is written.
  bool final_done() const { return final_request_.load(std::memory_order_acquire) == 2; }

  // From a signal handler: polls `done()` every millisecond for as long as
  // the trace is being written (a ring drained, a block written: progress()
  // moves). Gives up after kStallNs without progress, or kWaitCapNs in all.
  // A busy machine may keep the flusher off a core for a while, and a pass
  // over large rings takes seconds; waiting while it moves costs nothing,
  // and the caps keep a stuck writer from holding the process's death.
  static constexpr uint64_t kStallNs = 5000000000ull;
  static constexpr uint64_t kWaitCapNs = 20000000000ull;
  template <typename Done>
  bool AwaitFromSignal(Done done) const {
    uint64_t seen = progress();
    uint64_t waited = 0, stalled = 0;
    while (!done()) {
      if (waited >= kWaitCapNs || stalled >= kStallNs) return false;
      struct timespec ms = {0, 1000000};
      syscall(SYS_nanosleep, &ms, nullptr);
      waited += 1000000;
      uint64_t now = progress();
      stalled = now == seen ? stalled + 1000000 : 0;
      seen = now;
    }
    return true;
  }
  uint64_t progress() const { return progress_.load(std::memory_order_relaxed); }

  // The process's first thread (its thread-group leader) is leaving, or
  // is not glibc's main thread and may leave by returning: from now on the
  // flusher watches for the last program thread to be gone.
  void WatchLastThread() { watch_.store(true, std::memory_order_release); }
  // A program thread is leaving: with the watch on, the flusher looks soon.
  void NoteThreadExit();

  // The rings are in `sidecar` (lib/core/sidecar.h): each events block's
  // write is framed so that a decoder knows which events the trace holds.
  void UseSidecar(Sidecar* sidecar) {
    sidecar_ = sidecar;
    PublishTickScale();
  }

  void set_rank(int32_t rank) { rank_.store(rank, std::memory_order_relaxed); }
  // Events in blocks on disk (not those held in pending_).
  uint64_t events_written() const { return events_written_; }
  // Blocks held for want of a descriptor are not in the trace: at the end,
  // only the rings sidecar has their events (Runtime keeps it then).
  bool holds_unwritten() const { return !pending_.empty(); }
  // Says on stderr which events are not in the trace and where they are.
  void ReportUnwritten();
  uint64_t events_dropped() const { return events_dropped_; }
  // Bounded traces: events in blocks a full disk refused (the counters
  // have them; docs/FORMAT_BOUNDED.md, record 9).
  uint64_t events_lost() const { return events_lost_; }
  bool failed() const { return failed_; }
  // Around a change of the process's credentials (Runtime::
  // BeforeCredentialChange): the flusher thread leaves (StopFlusher: false
  // when none ran) and comes back with the new credentials (StartFlusher),
  // so that glibc's set-id call, which it makes on every thread, runs on
  // the program's threads alone; the trace is opened while the old
  // credentials allow and kept (KeepDescriptor), and given back afterwards
  // where the new ones open it by its path too (ReleaseDescriptor).
  bool StopFlusher();
  void KeepDescriptor();
  // for_life: the call made or entered a mount namespace, where a later
  // mount (over the traces' directory: a container's start) may hide the
  // path that opens now; the descriptor stays until the process ends.
  void ReleaseDescriptor(bool for_life);
  // In a forked child, on the parent's sink: closes the descriptor it kept
  // (the child writes a trace of its own).
  void CloseKeptDescriptorInChild();

  // Bounded traces (DLPROF_KEEP, trace_segments.cc): whether this sink
  // writes segments and counters, and `dlprof keep`'s request, looked for
  // by the flusher.
  bool keeping() const { return counters_ != nullptr; }
  void LookForKeepRequest(uint64_t now);
  // The file `dlprof keep RUN_DIR` touches (tools/launcher).
  static constexpr char kKeepRequestName[] = "dlprof.keep";

 private:
  static void* FlusherMain(void* self);
  void PassLocked(uint32_t block_flags);
  void Loop();
  bool ShouldPass(uint64_t now, bool* active);
  void DrainInto(ThreadBuffer* b);
  // The faults the kernel recorded since the last pass (map_faults.h).
  void DrainFaults(bool last, uint64_t calls_until);
  // Frees the retired sidecar rings whose events are all in the trace.
  void FreeWritten();
  // Writes a block of no events, for its clock pair.
  void ClockPass();
  void BeginBlock();
  // With the TSC as the events' clock: a fresh calibration pair for the
  // block's events, also in the rings sidecar for crash recovery.
  void RefreshTickScale();
  void PublishTickScale();
  // When the flusher next refreshes the scale for the sidecar alone; 0: no
  // need (no TSC, no sidecar).
  uint64_t ScaleDue() const;
  void FinishBlock(uint32_t block_flags);
  void AddNewStrings();
  bool WriteBlock(const format::BlockEncoder& encoder, uint32_t events, uint32_t block_flags);
  void ReportUnwrittenLocked();
  // Appends to the trace (opened and closed around it), after the blocks
  // that wait for a descriptor; a block that finds none waits too. `last`:
  // the process's final block, after which nothing could write them.
  bool WriteAll(const uint8_t* p, size_t n, bool last);
  int WriteDescriptorAboveLimit();
  bool WriteFd(int fd, const uint8_t* p, size_t n);
  bool WriteOnce(const uint8_t* p, size_t n, bool last, bool anew, int* err);
  // The trace opened for appending, checked to be the file Open() made;
  // -1 with errno set (ENOENT when it was removed or replaced).
  int OpenForAppend();
  // Whether `fd` is the file Open() made.
  bool IsTrace(int fd) const;
  // The descriptor a write goes through: the kept one while it is still
  // the trace (else it is forgotten: the program closed it, or put another
  // file there), or one opened now; -1 with errno set.
  int WriteDescriptor();
  // The last-thread watch (last_thread.cc). WatchDue: whether the flusher
  // should look now, and how long it may sleep before the next look.
  bool WatchDue(uint64_t now, uint64_t* wait_ns);
  // True when the program's last thread is gone (/proc/self/stat).
  bool ProgramThreadsGone();
  [[noreturn]] void ExitAsLastThread();

  // Bounded traces (trace_segments.cc).
  struct Segment {
    std::string path;
    uint64_t start_ns, last_ns;  // created; its last block written
    bool pinned;                 // in a window kept whole: never deleted
    uint64_t first_event_ns;     // its oldest event's start (UINT64_MAX: none yet)
  };
  static constexpr uint64_t kKeepLookNs = 500000000ull;
  static constexpr uint32_t kMaxKeptWindows = 16;
  static constexpr const char* kBatchRegionName = "load_batch";  // lib/read/regions.h
  uint64_t SegmentSpanNs() const;
  void StartKeeping(const std::vector<uint8_t>& header, uint64_t now_ns);
  // `room`: bytes past the header that must fit too (0: not looked at).
  bool CreateSegment(const std::string& path, struct stat* st, uint64_t room = 0);
  void AfterBlockKeeping(uint32_t block_flags);
  // Ends the segment being written and begins the next; false where it
  // could not (`after_loss`: the disk was full, the segments past DURATION
  // are deleted first to make room).
  bool Rotate(uint64_t now, bool after_loss = false);
  // A block not written for want of space (`error`): counted in loss_, its
  // ring positions taken as written (the counters hold its events).
  void LoseBlock(const format::BlockEncoder& encoder, uint32_t events, uint32_t block_flags,
                 int error);
  // Tries to begin a new segment after a loss; where it does, the loss's
  // record goes to the counters (CloseLoss: also at the process's end).
  void ResumeAfterLoss(uint64_t now);
  void CloseLoss(bool resumed);
  // The disk full and nothing else to free: cuts the segment being written
  // back to its header where its last block is older than DURATION before
  // `newest` (all of its events past it); true where it did.
  bool EmptyStaleSegment(uint64_t newest);
  // Deletes the segments with no event of the DURATION before `newest`
  // (`disk_full`: also where the segment after them does not reach back).
  void DropOldSegments(uint64_t newest, bool disk_full = false);
  void KeepWindow(uint64_t now, const std::string& reason);
  void ApplyKeepRule(uint64_t now);

  ThreadRegistry* registry_;
  StringTable* strings_;
  const Config& config_;
  std::string path_;
  uint64_t file_dev_ = 0;  // the trace Open() created: a write goes to it or nowhere
  uint64_t file_ino_ = 0;
  std::vector<uint8_t> pending_;  // blocks that found no free descriptor (EMFILE)
  uint64_t pending_events_ = 0;   // the events of those blocks
  bool told_no_fd_ = false;
  std::atomic<bool> waiting_for_fd_{false};  // pending_ is not empty (read unlocked)
  std::atomic<int32_t> rank_{-1};

  std::mutex mu_;  // one writer at a time: flusher, exit, exec, full producer
  format::BlockEncoder encoder_;
  format::BlockEncoder strings_only_;  // the strings that overflow encoder_'s share
  format::BlockFramer framer_;
  std::vector<uint8_t> raw_;
  std::vector<uint8_t> framed_;
  uint64_t dropped_in_block_ = 0;
  uint64_t fault_records_lost_ = 0;  // for the next block's drop count
  std::vector<ThreadFaults> faults_;
  std::vector<uint64_t> call_ends_;  // a drained ring's calls' ends (DrainInto)
  uint64_t events_written_ = 0;
  uint64_t events_dropped_ = 0;
  bool failed_ = false;
  bool write_empty_ = false;  // FinishBlock writes a block even with nothing in it
  std::atomic<uint64_t> last_block_ns_{0};  // written under mu_, read by the flusher unlocked

  pthread_t thread_{};
  bool thread_started_ = false;  // under flusher_mu_
  std::atomic<int> flusher_tid_{0};  // the running flusher's, set by itself (StopFlusher)
  std::mutex flusher_mu_;        // starting, stopping and joining the flusher
  std::atomic<int> kept_fd_{-1};  // the trace, kept across a credential change; under mu_
  bool kept_for_life_ = false;     // ReleaseDescriptor(true) was called; under mu_
  std::atomic<bool> flusher_running_{false};
  std::atomic<bool> stop_{false};
  std::atomic<uint32_t> wake_seq_{0};
  std::atomic<int> final_request_{0};  // 1 requested, 2 done
  std::atomic<uint64_t> progress_{0};  // rings drained and writes made, for AwaitFromSignal
  Sidecar* sidecar_ = nullptr;
  uint64_t file_bytes_ = 0;  // the trace's size: header and blocks written
  bool tsc_ = false;  // traced calls may record TSC ticks (tsc_clock.h)
  TickCalibration tick_clock_;  // under mu_
  std::atomic<uint64_t> scale_ns_{0};  // the last scale's pair, read by the flusher unlocked
  uint64_t opened_ns_ = 0;

  // The last-thread watch.
  std::atomic<bool> watch_{false};
  std::atomic<uint64_t> exit_noted_ns_{0};  // a thread's pthread_exit, for a prompt look
  uint64_t last_look_ns_ = 0;               // flusher only
  sigset_t program_mask_;                   // the mask the flusher's creator had

  // Bounded traces (trace_segments.cc), under mu_.
  std::unique_ptr<IntervalCounters> counters_;  // null: the trace keeps every event
  // A pass made on a program's thread, its ring full (TryDrainFromProducer):
  // the counters' record so far waits for the flusher's (under the lock).
  bool producer_pass_ = false;
  std::vector<uint8_t> header_;                 // every segment's file header
  std::string stem_;                            // the first segment's path less ".dlprof"
  std::string run_dir_;                         // DLPROF_DIR/<run>
  std::vector<Segment> segments_;               // on disk, oldest first
  uint32_t next_segment_ = 1;
  bool told_no_segment_ = false;
  uint64_t pin_until_ns_ = 0;  // segments begun before this are in a kept window
  uint32_t kept_windows_ = 0;
  uint64_t last_keep_look_ns_ = 0;      // flusher only
  uint64_t keep_request_seen_ns_ = 0;   // flusher only
  // Blocks a full disk refused, since the last segment written whole.
  struct Loss {
    bool open = false;
    int error = 0;
    uint64_t events = 0, blocks = 0;
    uint64_t from_ns = UINT64_MAX, to_ns = 0;  // the events lost, where known
    uint64_t first_fail_ns = 0, last_fail_ns = 0;
    uint64_t block_bytes = 0;  // the largest block refused: the room a new segment needs
  };
  Loss loss_;
  bool pass_lost_ = false;        // a block of this pass was lost
  bool last_write_failed_ = false;
  uint64_t events_lost_ = 0;      // the whole run's
  uint32_t losses_told_ = 0;      // stretches said on stderr (a few at most)
};

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_TRACE_SINK_H_
