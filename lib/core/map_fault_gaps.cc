// What MapFaults (map_faults.h) could not watch, and making room for what it
// must: a thread known to read through maps taking the fault buffer of one
// watched in case (EvictIdle) when the kernel allows no more locked memory,
// and the faults_unwatched and maps_untracked records (catalogue.h) with
// their one note on stderr, so that faults missing from a trace are said
// rather than silently short.
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/core/map_faults_stream.h"
#include "lib/core/raw_log.h"
#include "lib/core/raw_map.h"

namespace dlprof::core {

bool MapFaults::EvictIdle() {
  for (int i = 0; i < kStreams; ++i) {
    Stream& s = streams_[i];
    if (s.state.load(std::memory_order_acquire) != kOpen || !s.speculative || s.inherited ||
        s.faulted.load(std::memory_order_acquire) || s.reader.load(std::memory_order_acquire)) {
      continue;
    }
    uint32_t open = kOpen;
    if (!s.state.compare_exchange_strong(open, kClosing, std::memory_order_acq_rel)) continue;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    // The flusher may be reading it (it found it open before): wait until
    // it has left the buffers. A pass takes milliseconds; past about a
    // second it is left as it was.
    int spins = 0;
    while (in_rings_.load(std::memory_order_seq_cst) != 0 && spins < 200000) {
      syscall(SYS_sched_yield);
      ++spins;
    }
    auto* meta = reinterpret_cast<perf_event_mmap_page*>(s.ring);
    const bool unread = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE) != meta->data_tail;
    if (in_rings_.load(std::memory_order_seq_cst) != 0 ||
        s.faulted.load(std::memory_order_acquire) || unread) {
      // (A record not read yet may be a fault: it stays.)
      s.state.store(kOpen, std::memory_order_release);
      if (spins >= 200000) return false;
      continue;
    }
    evictions_.fetch_add(1, std::memory_order_relaxed);
    const int32_t tid = s.tid.load(std::memory_order_relaxed);
    RawMunmap(s.ring, (kDataPages + 1) * page_);
    if (EventId(s.fd) == s.id) syscall(SYS_close, s.fd);
    s.ring = nullptr;
    s.fd = -1;
    s.state.store(kFree, std::memory_order_release);
    NoteUnwatched(tid, false, EPERM);  // watched no more, should it read after all
    return true;
  }
  return false;
}

void MapFaults::NoteUnwatched(int32_t tid, bool reader, int err) {
  const uint64_t tag = static_cast<uint64_t>(static_cast<uint32_t>(tid)) << 32;
  const uint32_t n = unwatched_n_.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < n && i < kUnwatched; ++i) {
    const uint64_t v = unwatched_[i].load(std::memory_order_acquire);
    // Once a thread, and a reader's refusal after one in case again.
    if ((v >> 32) == (tag >> 32) && (((v >> 16) & 1) != 0 || !reader)) return;
  }
  const uint32_t at = unwatched_n_.fetch_add(1, std::memory_order_acq_rel);
  if (at >= kUnwatched) return;  // counted only
  const uint64_t v = tag | (reader ? 1u << 16 : 0u) | (static_cast<uint32_t>(err) & 0xffff);
  unwatched_[at].store(v, std::memory_order_release);
}

void MapFaults::AddGapRecords(std::vector<ThreadFaults>* out, uint64_t now) {
  auto record = [&](int32_t tid, EventKind kind, uint64_t size, int64_t ret) {
    ThreadFaults tf;
    tf.tid = tid;
    Event e{};
    e.kind = static_cast<uint16_t>(kind);
    e.start_ns = now;
    e.fd = -1;
    e.size = size;
    e.ret = ret;
    tf.events.push_back(e);
    out->push_back(std::move(tf));
  };
  const int32_t flusher = flusher_tid_.load(std::memory_order_relaxed);
  const uint64_t untracked = ProcessMaps().not_tracked();
  if (untracked > untracked_reported_) {
    record(flusher, EventKind::MapsUntracked, untracked,
           static_cast<int64_t>(untracked - untracked_reported_));
    untracked_reported_ = untracked;
    if (!noted_untracked_) {
      noted_untracked_ = true;
      RawLog("%llu mappings of traced files found no room in the map table (%u slots, or the "
             "kernel would not map more): page faults on them are not recorded "
             "(maps_untracked records count them)",
             static_cast<unsigned long long>(untracked), MapTable::kMaxSlots);
    }
  }
  const uint32_t n = unwatched_n_.load(std::memory_order_acquire);
  uint32_t readers = 0;
  for (; unwatched_reported_ < n; ++unwatched_reported_) {
    if (unwatched_reported_ >= kUnwatched) {  // past the list: one record of the count
      record(flusher, EventKind::FaultsUnwatched, 0, 0);
      out->back().events.back().aux = n - unwatched_reported_;
      unwatched_reported_ = n;
      break;
    }
    const uint64_t v = unwatched_[unwatched_reported_].load(std::memory_order_acquire);
    if (v == 0) break;  // being written: the next pass
    const bool reader = ((v >> 16) & 1) != 0;
    record(static_cast<int32_t>(v >> 32), EventKind::FaultsUnwatched, reader ? 1 : 0,
           static_cast<int64_t>(v & 0xffff));
    if (reader) ++readers;
  }
  if (readers > 0 && !noted_unwatched_) {
    noted_unwatched_ = true;
    RawLog("the kernel refused a page-fault buffer to a thread reading through a map (locked "
           "memory spent: kernel.perf_event_mlock_kb, or RLIMIT_MEMLOCK where the user lacks "
           "CAP_IPC_LOCK): its faults are not recorded (faults_unwatched records name it)");
  }
}

}  // namespace dlprof::core
