// A thread's page faults as they are taken and its minor faults as they
// are served, for its waits on pages already being read (map_faults.h, "A
// wait for a page being read"): two more perf events of the thread,
// sampled with their time and address into a buffer they share, which
// only the flusher opens, reads and closes. A fault taken, then a stop to
// wait (a context switch record in the major faults' buffer), then the
// same fault served minor: the thread waited for a page the kernel was
// already reading, and the fault's whole time is the wait's. (The kernel
// counts such a fault minor: it found the page in the cache, locked for
// the read.)
//
// Why a buffer of their own: a thread that writes fresh memory takes a
// minor fault per page (a collate's batch in shared memory: thousands a
// batch), far more than the major faults and context switches beside them,
// and a full buffer loses what comes next: those records must not take
// the major faults' place. Why only while the thread reads from storage:
// the kernel writes two records for every fault of the thread while the
// events are enabled, fresh memory's too, and a warm page cache has no
// page to wait for.
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "lib/core/map_faults_stream.h"
#include "lib/core/own_fd.h"
#include "lib/core/raw_map.h"

namespace dlprof::core {

namespace {

// Enabled this long after the thread last read from storage through a map
// (a fault, read-ahead, a wait). A loader worker reads a batch in a burst
// between its transforms, and a burst read ahead may take no major fault:
// were the event off between bursts, a look at its read-ahead (every
// kReadaheadLookNs) would turn it on only once the burst was over. A
// warm page cache costs the thread this long of its fresh memory's faults
// recorded, once.
constexpr uint64_t kWaitsLingerNs = 2000000000;

uint64_t RingBytes(uint64_t page) { return (kWaitsPages + 1) * page; }

void Toggle(MapFaults::Stream& s, bool on) {
  if (s.waits_on == on) return;
  for (int fd : {s.waits_fd, s.served_fd}) {
    syscall(SYS_ioctl, fd, on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
  }
  s.waits_on = on;
}

// Closes `fd` unless the program closed ours and got the number back.
void CloseEvent(int fd, uint64_t id) {
  if (fd >= 0 && EventId(fd) == id) syscall(SYS_close, fd);
}

}  // namespace

void UpdateWaits(MapFaults::Stream& s, uint64_t read_ns, uint64_t now, uint64_t page) {
  if (read_ns != 0) s.waits_until = std::max(s.waits_until, read_ns + kWaitsLingerNs);
  if (s.waits_ring != nullptr) {
    Toggle(s, now < s.waits_until);
    return;
  }
  if (now >= s.waits_until || s.waits_refused) return;
  OwnFdScope scope;  // fork waits: no child inherits them half set up
  const int32_t tid = s.tid.load(std::memory_order_relaxed);
  const int taken = OpenFaultEvent(tid, PERF_COUNT_SW_PAGE_FAULTS, false, PERF_SAMPLE_IDENTIFIER);
  const int served =
      taken < 0 ? -1
                : OpenFaultEvent(tid, PERF_COUNT_SW_PAGE_FAULTS_MIN, false, PERF_SAMPLE_IDENTIFIER);
  void* ring = served < 0 ? MAP_FAILED
                          : RawMmap(nullptr, RingBytes(page), PROT_READ | PROT_WRITE, MAP_SHARED,
                                    taken, 0);
  // (The served faults' records go to the taken ones' buffer.)
  if (ring == MAP_FAILED ||
      syscall(SYS_ioctl, served, PERF_EVENT_IOC_SET_OUTPUT, taken) != 0) {
    // Refused, or locked memory spent: its waits go unseen.
    if (ring != MAP_FAILED) RawMunmap(ring, RingBytes(page));
    for (int fd : {taken, served}) {
      if (fd >= 0) syscall(SYS_close, fd);
    }
    s.waits_refused = true;
    return;
  }
  s.waits_fd = taken;
  s.served_fd = served;
  s.waits_id = EventId(taken);
  s.served_id = EventId(served);
  s.waits_ring = static_cast<uint8_t*>(ring);
  s.taken_ns = 0;
  s.waits_on = true;  // (opened enabled)
}

void ReadWaits(MapFaults::Stream& s, uint64_t cut, uint64_t page, std::vector<MinorFault>* out,
               uint64_t* lost) {
  out->clear();
  if (s.waits_ring == nullptr) return;
  PerfRecords records(s.waits_ring, page, kWaitsPages);
  perf_event_header h;
  uint64_t body[4];
  while (records.Next(&h, body)) {
    if (h.type == PERF_RECORD_SAMPLE) {
      // { u64 id; u32 pid, tid; u64 time; u64 addr; }
      if (body[2] > cut) break;  // the next pass's, with the switches before it
      out->push_back({body[2], body[3], body[0] != s.served_id});
    } else if (h.type == PERF_RECORD_LOST) {
      // Minor faults the full buffer could not take, mostly fresh
      // memory's: a wait among them goes unseen (a map_waits_lost record
      // says so; they would have been events only where they waited).
      *lost += body[1];  // { u64 id, lost; }
    }
    records.Take();
  }
}

void CloseWaits(MapFaults::Stream& s, uint64_t page) {
  if (s.waits_ring != nullptr) {
    RawMunmap(s.waits_ring, RingBytes(page));
    CloseEvent(s.served_fd, s.served_id);
    CloseEvent(s.waits_fd, s.waits_id);
  }
  s.waits_ring = nullptr;
  s.waits_fd = s.served_fd = -1;
  s.waits_on = false;
  s.waits_refused = false;
  s.waits_until = 0;
  s.taken_ns = 0;
}

uint64_t WaitsPending(const MapFaults::Stream& s) {
  if (s.waits_ring == nullptr) return 0;
  const auto* meta = reinterpret_cast<const perf_event_mmap_page*>(s.waits_ring);
  return __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE) - meta->data_tail;
}

}  // namespace dlprof::core
