// What MapFaults (map_faults.h) keeps of one thread's perf_event_open event:
// shared by map_faults.cc, which opens and closes the events, and
// map_fault_records.cc, which makes the kernel's records into events.
#ifndef DLPROF_LIB_CORE_MAP_FAULTS_STREAM_H_
#define DLPROF_LIB_CORE_MAP_FAULTS_STREAM_H_

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "lib/core/map_faults.h"

namespace dlprof::core {

constexpr uint64_t kDataPages = 16;  // per thread: 64 KiB of records (~800 timed faults)
constexpr uint64_t kWaitsPages = 16;  // its minor faults': 2048 records of 32 bytes
// A thread that reads through a map has its storage reads looked at this
// often when it took no major fault: read-ahead for a sequential scan.
constexpr uint64_t kReadaheadLookNs = 50000000;
// What a major fault on a page of a file dlprof does not trace (a library's
// code paged in again) is taken to have read: the kernel's default window
// around a fault (VM_READAHEAD_PAGES). A device set to read more around its
// faults (read_ahead_kb) leaves the rest counted for the traced map.
constexpr uint64_t kUntracedReadAroundBytes = 128 << 10;

// kClosing: its owner (the flusher closing a gone thread's, or a thread
// taking an idle one's place: MapFaults::EvictIdle) unmaps it; no one else
// touches it.
enum : uint32_t { kFree = 0, kOpening = 1, kOpen = 2, kClosing = 3 };

struct MapFaults::Stream {
  std::atomic<uint32_t> state{kFree};
  std::atomic<int32_t> tid{0};
  int fd = -1;
  uint64_t id = 0;  // the event's id: `fd` is still ours while it says so
  uint8_t* ring = nullptr;
  // The flusher's, for timing faults (map_faults.h): when the thread last
  // stopped for a page (0: not since its last fault), and the last moment
  // it was known to run (its return to the CPU, or its last fault's end).
  uint64_t block_start = 0;
  uint64_t block_out = 0;  // the switch-out itself
  uint64_t block_ran = 0;  // on the CPU since it came back from that wait
  uint64_t mark = 0;
  bool waiting = false;  // its last switch record: it stopped to wait
  std::vector<uint64_t> call_ends;  // its traced calls' ends since, in order
  uint64_t read_bytes = 0;  // ThreadReadBytes when last read
  bool read_bytes_known = false;
  uint64_t call_bytes = 0;  // its read calls' bytes since
  uint64_t other_faults = 0;  // its major faults on no traced file's page since
  // It reads through a map for certain (it faulted on one, or mapped one
  // itself): its storage reads beyond its calls and faults are read-ahead
  // for the map.
  std::atomic<bool> reader{false};
  // The thread of a forked child that inherited live maps (a DataLoader
  // worker of a loop over np.memmap): it may read through them without a
  // major fault, behind its parent's. Its storage reads beyond its calls
  // are taken as the maps' read-ahead too, but not over a look in which its
  // own read calls moved bytes (those calls' read-ahead, which their bytes
  // do not cover). Any other thread's are not looked at: its storage reads
  // may be anything's (an excluded path's reads, a library paged in).
  bool inherited = false;
  bool call_reads = false;  // its read calls moved bytes since the last look
  uint32_t last_file = 0;    // the file of its last fault
  uint64_t last_fault_ns = 0;  // and when
  std::atomic<uint32_t> mapped_file{0};  // the file it mapped last
  std::atomic<uint64_t> mapped_ns{0};    // and when
  // Its first mmap with MAP_POPULATE since the flusher's last look
  // (BeforePopulating): the thread's own read_bytes just before the call, and
  // the file. The storage reads from there on are that map's (less faults
  // after it), not those of faults before it in the same pass. populate_ns:
  // when (0 none; kWriting while the thread writes the three).
  std::atomic<uint64_t> populate_ns{0};
  std::atomic<uint64_t> populate_read_bytes{0};
  std::atomic<uint32_t> populate_file{0};
  // The mapping of each fault read in this pass (Read), in order: its start
  // and length, which the fault's bytes (those of the pass's faults on it
  // together) do not exceed.
  std::vector<std::pair<uint64_t, uint64_t>> fault_maps;
  // When read_bytes was read last (atomic: BeforePopulating reads it).
  std::atomic<uint64_t> last_look_ns{0};
  // The process's storage reads read before read_bytes was last: while they
  // stay the same, no thread's grew, and a look at this one is spared.
  uint64_t process_bytes = UINT64_MAX;
  // ThreadReadBytes taken by the thread itself as it ended (OnThreadEnding):
  // after its end the kernel no longer says; UINT64_MAX until then.
  std::atomic<uint64_t> exit_read_bytes{UINT64_MAX};
  bool gone = false;        // the thread has exited: close after the next read
  uint64_t opened_ns = 0;   // when it was opened (written before kOpen)
  // Opened by a look at every thread (not for a thread that maps, or starts
  // or records a call while maps are read), and no fault of it read yet:
  // its buffer may go to a thread that reads through a map when the kernel
  // allows no more (MapFaults::EvictIdle).
  bool speculative = false;
  std::atomic<bool> faulted{false};  // any major fault of it read (the flusher's)
  // Its faults as they are taken and its minor faults as they are served,
  // while it reads a map's pages from storage (map_waits.cc): two more
  // events and a buffer they share, the flusher's alone. waits_on: enabled;
  // waits_until: it stays so until then unless the thread reads on;
  // waits_refused: the kernel refused one, not asked again.
  int waits_fd = -1;      // faults taken (the buffer's)
  int served_fd = -1;     // minor faults served
  uint64_t waits_id = 0;  // the kernel's ids of the two
  uint64_t served_id = 0;
  uint8_t* waits_ring = nullptr;
  // The fault the thread was last seen to take and not yet seen served:
  // when (0: none), at what address, and whether it stopped to wait since.
  uint64_t taken_ns = 0;
  uint64_t taken_addr = 0;
  bool taken_waited = false;
  bool waits_on = false;
  bool waits_refused = false;
  uint64_t waits_until = 0;
};

// A perf_event_open software event of `tid`'s page faults (`config`:
// major or minor ones as they are served, or any as it is taken), sampling
// each with its time and address (and `more_sample`), with context switch
// records where `switches`; at kHighFd or above, close-on-exec. -1 and
// errno when refused.
int OpenFaultEvent(int32_t tid, uint64_t config, bool switches, uint64_t more_sample = 0);

// What the flusher does with a stream's minor-fault event (map_waits.cc):
// on while the thread `read_ns` (it took a major fault, read ahead or
// waited for a page then, or mapped a file: 0 never) a short while ago,
// off once it has read nothing for a while. Only where context switches
// are recorded.
void UpdateWaits(MapFaults::Stream& s, uint64_t read_ns, uint64_t now, uint64_t page);
// Its samples up to `cut` (later ones stay for the next pass), in order;
// `lost` grows by the records its buffer could not hold.
void ReadWaits(MapFaults::Stream& s, uint64_t cut, uint64_t page, std::vector<MinorFault>* out,
               uint64_t* lost);
// Closes it, if any (the stream is closing).
void CloseWaits(MapFaults::Stream& s, uint64_t page);
// The records waiting in its buffer, in bytes.
uint64_t WaitsPending(const MapFaults::Stream& s);

// The flusher reading the buffers (MapFaults::in_rings_) for its lifetime:
// after the store, a buffer found kOpen cannot be unmapped under it
// (EvictIdle sets kClosing, then waits for 0; a full fence on each side).
class InRings {
 public:
  explicit InRings(std::atomic<uint32_t>* flag) : flag_(flag) {
    flag_->store(1, std::memory_order_seq_cst);
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  ~InRings() { flag_->store(0, std::memory_order_release); }
  InRings(const InRings&) = delete;
  InRings& operator=(const InRings&) = delete;

 private:
  std::atomic<uint32_t>* flag_;
};

// A perf event's buffer read from its tail (its metadata page, then
// `pages` pages of records, wrapping): Next gives each record's header and
// its first four words, Take moves past it, and the destructor hands the
// space read back to the kernel. (A record not fully written yet ends it.)
class PerfRecords {
 public:
  PerfRecords(uint8_t* ring, uint64_t page, uint64_t pages)
      : meta_(reinterpret_cast<perf_event_mmap_page*>(ring)),
        data_(ring + page),
        size_(pages * page),
        head_(__atomic_load_n(&meta_->data_head, __ATOMIC_ACQUIRE)),
        tail_(meta_->data_tail) {}
  ~PerfRecords() { __atomic_store_n(&meta_->data_tail, tail_, __ATOMIC_RELEASE); }
  PerfRecords(const PerfRecords&) = delete;
  PerfRecords& operator=(const PerfRecords&) = delete;

  bool Next(perf_event_header* h, uint64_t body[4]) {
    if (tail_ + sizeof(perf_event_header) > head_) return false;
    Copy(tail_, h, sizeof(*h));
    if (h->size < sizeof(*h) || tail_ + h->size > head_) return false;  // never written so
    std::memset(body, 0, 4 * sizeof(uint64_t));
    Copy(tail_ + sizeof(*h), body, std::min<size_t>(4 * sizeof(uint64_t), h->size - sizeof(*h)));
    last_size_ = h->size;
    return true;
  }
  void Take() { tail_ += last_size_; }

 private:
  void Copy(uint64_t at, void* to, size_t n) const {
    const uint64_t from = at % size_;
    const size_t part = static_cast<size_t>(std::min<uint64_t>(n, size_ - from));
    std::memcpy(to, data_ + from, part);
    if (part < n) std::memcpy(static_cast<uint8_t*>(to) + part, data_, n - part);
  }
  perf_event_mmap_page* meta_;
  const uint8_t* data_;
  uint64_t size_, head_, tail_;
  uint16_t last_size_ = 0;
};

// The kernel's id of the event at `fd`, 0 when `fd` is no perf event (the
// program closed ours and reused the number).
inline uint64_t EventId(int fd) {
  uint64_t id = 0;
  return syscall(SYS_ioctl, fd, PERF_EVENT_IOC_ID, &id) == 0 ? id : 0;
}

// The storage reads `tid` made (read_bytes of its io accounting), or
// UINT64_MAX when the kernel does not say. Inside an OwnFdScope.
uint64_t ThreadReadBytes(int32_t tid);
// The same of the whole process, its ended threads' included.
uint64_t ProcessReadBytes();

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_MAP_FAULTS_STREAM_H_
