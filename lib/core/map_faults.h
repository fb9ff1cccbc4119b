// Reading through memory maps: the page faults of a process's threads on
// its mapped files (issue 49).
//
// A read through a map is a page fault, no call a wrapper could time. Where
// the kernel allows it (perf_event_open; kernel.perf_event_paranoid up to 2
// for user-space faults, no seccomp rule against it) each thread of a
// process that maps a traced file gets a software event for its major
// faults, sampled every one with the faulting address and time, and its
// context switches: the flusher reads the kernel's buffers (never the
// program's threads: the hot path is untouched) and makes a `major_fault`
// event of each fault whose address a mapped file holds (map_table.h),
// timed from when it held the thread to when it was served. Where it is
// refused, every annotation region of such a process records its thread's
// major faults and time off the CPU instead (`region_faults`), and the
// trace's header says which it is (`faults`), once.
//
// A process that maps no traced file pays nothing beyond one probe at
// start-up and a small allocation per thread it starts (whose end is then
// seen: OnThreadEnding): no event, no descriptor, no buffer. One that does holds a
// descriptor (at 100 or above, close-on-exec) and a 68 KiB buffer per
// thread (docs/RELIABILITY.md); a program that closes it loses that
// thread's fault events, never a file of its own.
//
// The buffers are locked memory, of which the kernel allows a user
// kernel.perf_event_mlock_kb per CPU, and then RLIMIT_MEMLOCK (root: no
// limit): a process of many threads may run out. The threads that were
// there when the first file was mapped, and those the flusher finds later,
// are given one in case they read through a map; once the kernel refuses
// one, no more such. A thread known to read (it maps a file, or starts, or
// records its first call, while maps are read) that is refused takes the
// buffer of one given in case that has taken no fault (EvictIdle), and
// where there is none its faults are not events: a `faults_unwatched`
// record names it, and stderr says so once (map_fault_gaps.cc). Mappings
// the map table could not hold are counted (`maps_untracked`) alike.
//
// A fault's time: the kernel's records give when the thread stopped to
// wait for the page (its switch-out) and when the fault was served (the
// sample); the fault's entry and its read's submission before the switch
// are not timed. When the thread came back to the CPU, or from its
// previous fault, at most kFaultEntryNs before that switch, the fault is
// taken to start there (but not before the end of the thread's last traced
// call): back-to-back faults (numpy indexing a map) then cover their whole
// time, and an isolated fault is not given the time of work before it. A
// fault may take no context switch at all (its page read before it had to
// wait: a loaded virtual machine's, while the host held its CPU): a wait
// the thread came back from and then ran on for more than kFaultEntryNs
// (its time on the CPU between the kernel's switch records) is then not
// the fault's, and such a fault is timed from the thread's return to the
// CPU, as above, or not at all. Nor is a wait the thread made a traced call
// after (a read() that blocked).
//
// A wait for a page being read: a scan reads ahead, and a touch of a page
// the kernel is still reading waits on a fault it counts minor (it found
// the page in the cache, locked). While a thread reads a map from storage
// (it mapped a file, inherited maps, took a fault on one or read ahead, in
// the last 2 s) its faults as they are taken and its minor faults as they
// are served are sampled into a buffer of their own (map_waits.cc), and a
// fault taken, a stop to wait, and the same fault served minor on a traced
// file's page is a `map_wait` event from taken to served, bytes 0 (its
// page is the read-ahead's). Those records and the major faults' are read
// in time order up to when the flusher's pass began draining the threads'
// calls (a record after it waits for the next pass).
//
// A fault's bytes: the pages the kernel read for it, read-around included,
// are what the thread's storage reads grew by (/proc/self/task/TID/io
// read_bytes, read by the flusher once per pass for each thread that
// faulted) less what its read calls brought meanwhile and what its major
// faults on pages of files it does not trace read (a library's code paged
// in again under memory pressure: the kernel's default window around a
// fault, 128 KiB, each), at least a page a fault, shared out among the
// faults of the pass. A read counts there
// from its submission, before the thread waits for it, and its fault comes
// into the buffer once served: a thread stopped in a wait when its buffer
// is read may be in its next fault, and a page is left for that fault (its
// read-ahead is not looked at meanwhile). A sequential scan of a
// map takes one major fault and then reads ahead on minor ones, and may
// take none at all behind another thread's fault (a forked worker's): a
// thread that faulted on a map or mapped one, and a forked child's that
// inherited one, has its storage reads looked at every 50 ms (while the
// process's grew), and what grew beyond its calls is a `map_readahead`
// event on the file of its last fault (else the file it mapped last, else
// the process's latest mapping); a forked child's, not while its own read
// calls moved bytes (their read-ahead). Any other thread's storage reads
// may be anything's (an excluded path's, a library paged in): not looked
// at, so a second thread scanning a map with no fault of its own is not
// counted. A thread that ends takes its last count itself
// (OnThreadEnding). Storage
// reads through calls it does not record (an excluded path's read(), a
// system call by number), and what an untraced file's fault read beyond
// 128 KiB (a device set to read around more), would be counted there too.
#ifndef DLPROF_LIB_CORE_MAP_FAULTS_H_
#define DLPROF_LIB_CORE_MAP_FAULTS_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "dlprof/format.h"
#include "lib/core/config.h"
#include "lib/core/map_table.h"

namespace dlprof::core {

// How faults are recorded in this process (the header's `faults` string).
enum class FaultMode : uint8_t { kOff, kCounts, kEvents };

// A fault's start is taken back to the thread's return to the CPU when
// that was at most this long before it stopped for the page.
constexpr uint64_t kFaultEntryNs = 50000;

// Set once a traced file is mapped (or inherited through fork): regions
// record their thread's faults from then on. Read on every region's begin
// and end.
extern std::atomic<bool> g_map_faults_on;

// A page fault of a thread as it was taken, or a minor one as it was
// served: its time and address (map_waits.cc).
struct MinorFault {
  uint64_t ns, addr;
  bool taken;
};

// One thread's faults read from the kernel in a pass.
struct ThreadFaults {
  int32_t tid = 0;
  std::vector<Event> events;
};

class MapFaults {
 public:
  static MapFaults& Get();

  // Decides the mode once per image at start-up (probing perf_event_open),
  // or keeps the parent's in a forked child. `posix`: the major_fault kind
  // is recorded (DLPROF_TRACE).
  void Decide(MapFaultsSetting setting, bool posix);
  FaultMode mode() const { return mode_; }
  // The header's `faults` string.
  const std::string& description() const { return description_; }

  // A traced file was just mapped by the calling thread, from `fd`:
  // tracking starts (regions count faults; with events, the thread's event
  // opens now and the other threads' at the flusher's next pass), unless
  // the file is the MPI runtime's own (InSessionDir). True when tracking
  // starts with this map.
  bool OnFileMapped(uint32_t file, int fd);
  // Before an mmap with MAP_POPULATE of `file` by a thread with fault events:
  // the kernel reads the file inside the call, and a flusher pass then is to
  // take those reads for this map's read-ahead, not the last fault's file.
  void BeforePopulating(uint32_t file);
  // A thread records its first event while tracking: its event opens.
  void OnThreadAttached(int32_t tid);
  // The calling thread is ending (its start routine returned, pthread_exit,
  // its thread-specific data destroyed): with an event, its storage reads
  // are taken now, for its faults and read-ahead not yet read from its
  // buffer (the kernel no longer says once it has ended). Not a hot path.
  void OnThreadEnding();
  // The flusher's thread, which is never given an event.
  void set_flusher_tid(int32_t tid) { flusher_tid_.store(tid, std::memory_order_relaxed); }

  // Whether `tid` has an event (its faults are major_fault events).
  bool Covers(int32_t tid) const;
  bool CoversThisThread() const;
  // `tid`'s traced calls drained in this pass: the bytes its reads moved
  // (the storage reads they may have made are not its faults'), and when
  // each call ended, in order (a fault starts after the call before it).
  void NoteCalls(int32_t tid, uint64_t read_bytes, const std::vector<uint64_t>& ends);
  // Any records waiting in the kernel's buffers; `half` when one is half
  // full (the flusher passes at once).
  bool Pending(bool* half) const;

  // The flusher, in each pass: opens the events of threads not covered yet
  // (at most every kScanNs), reads every buffer, and appends the faults
  // resolved against the map table to `out` (one entry per thread that
  // faulted); `lost` grows by the records the kernel could not buffer.
  // Mappings that ended before the pass began are freed afterwards.
  // `last`: the process's last pass (exit, exec): every reader's storage
  // reads are looked at. `cut`: when the pass began draining the threads'
  // calls (NoteCalls has every call that ended before it): records after
  // it of a thread whose minor faults are read wait for the next pass.
  void Drain(std::vector<ThreadFaults>* out, uint64_t* lost, bool last, uint64_t cut);

  // In a forked child: the parent's events are its own; the child's
  // thread gets one if it inherited a mapped file.
  void AfterFork(int32_t tid);

  struct Stream;  // one thread's event and buffer (map_faults_stream.h)
  static constexpr int kStreams = 512;

 private:
  friend class MapFaultsTestPeer;  // tests/unit/map_fault_records_test.cc
  static constexpr uint64_t kScanNs = 50000000;  // 50 ms between looks for threads

  // Opens `tid`'s event; false when it is refused or there is no room.
  // `wanted`: the thread is known to read through maps (else it is watched
  // in case, and only until the kernel first refused a buffer); a refused
  // one takes an idle thread's buffer, or is recorded as unwatched.
  bool Open(int32_t tid, bool wanted);
  // One try; `*refused_errno` set when the kernel refused the buffer.
  bool OpenOnce(int32_t tid, bool speculative, int* refused_errno);
  // The flusher's: closes a gone thread's event (unless EvictIdle has it).
  void Close(Stream& s);
  // Closes the event of a thread watched in case that took no fault yet,
  // its buffer's locked memory going back to the kernel; false when there
  // is none (map_fault_gaps.cc). Not the flusher's: it waits for the
  // flusher to leave the buffers (in_rings_).
  bool EvictIdle();
  // `tid` was refused a buffer: a faults_unwatched record at the next pass.
  void NoteUnwatched(int32_t tid, bool reader, int err);
  // The flusher: faults_unwatched and maps_untracked records of what was
  // refused since its last pass, and the one note on stderr of each.
  void AddGapRecords(std::vector<ThreadFaults>* out, uint64_t now);
  // The process's threads (/proc/self/task), at most `capacity`, in order
  // of tid; returns how many.
  static int ListThreads(int32_t* tids, int capacity);
  void ScanThreads();
  // Marks gone the open streams of threads not in `tids` (sorted), a list
  // begun at `listed_ns`.
  void MarkGone(const std::vector<int32_t>& tids, uint64_t listed_ns);
  // Reads one thread's records (those of its minor faults too, up to
  // `cut`); faults and waits to `faults`. Returns how many major faults.
  size_t Read(Stream& s, const std::vector<FileMapping>& maps, ThreadFaults* faults,
              uint64_t* lost, uint64_t cut);
  // When a fault sampled at `t` began (map_faults.h, "A fault's time"), and
  // whether it waited: a switch-out before it was its own.
  uint64_t FaultStart(const Stream& s, uint64_t t, bool* waited) const;
  // A major_fault or map_wait event of the page at `addr` in `map`.
  Event FaultEvent(EventKind kind, const FileMapping& map, uint64_t addr, uint64_t start,
                   uint64_t t) const;
  // The bytes of the faults from `first` on (or, with none, a map_readahead
  // event of what the thread read ahead), from its storage reads.
  void AddBytes(Stream& s, ThreadFaults* faults, size_t first, uint64_t now);
  // `tid` reads through a map (it mapped `file`).
  void MarkReader(int32_t tid, uint32_t file);
  // `fd` is a file of the MPI runtime's session directory (Open MPI's and
  // PMIx's, from the rank's environment: PMIX_SERVER_TMPDIR,
  // OMPI_MCA_orte_top_session_dir): shared-memory segments and locks that
  // every rank maps and polls, never data. Their processes switch so often
  // that the events' context-switch records overflowed the kernel's
  // buffers under load. One readlink, only where such a directory is set.
  bool InSessionDir(int fd) const;

  FaultMode mode_ = FaultMode::kOff;
  bool switches_ = false;  // context-switch records allowed: faults are timed
  bool decided_ = false;
  std::string description_;
  std::vector<std::string> session_dirs_;  // set by Decide
  uint64_t page_ = 4096;
  std::atomic<int32_t> flusher_tid_{0};
  // The kernel refused a buffer: no more opens in case (Open's `wanted`).
  std::atomic<bool> refused_{false};
  // 1 while the flusher reads the buffers (Pending, Drain, NoteCalls): a
  // buffer EvictIdle took is unmapped only once it is 0.
  mutable std::atomic<uint32_t> in_rings_{0};
  std::atomic<uint64_t> evictions_{0};  // tls_covered may be stale after one
  // Threads refused a buffer, (tid << 32 | reader << 16 | errno), 0: not
  // written yet; past kUnwatched only counted.
  static constexpr uint32_t kUnwatched = 256;
  std::atomic<uint64_t> unwatched_[kUnwatched] = {};
  std::atomic<uint32_t> unwatched_n_{0};
  uint32_t unwatched_reported_ = 0;  // the flusher's
  uint64_t untracked_reported_ = 0;  // maps not tracked, written so far
  bool noted_unwatched_ = false, noted_untracked_ = false;
  uint64_t last_scan_ns_ = 0;           // flusher only
  Stream* streams_ = nullptr;           // kStreams, allocated once
  std::vector<MinorFault> minors_;      // the flusher's, one thread's at a time
};

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_MAP_FAULTS_H_
