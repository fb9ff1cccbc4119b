// The kernel's records of one thread's major faults and context switches
// made into major_fault and map_readahead events (map_faults.h: a fault's
// time, a fault's bytes).
#include <linux/perf_event.h>

#include <algorithm>
#include <cstring>

#include "lib/core/clock.h"
#include "lib/core/map_faults_stream.h"
#include "lib/core/own_fd.h"

namespace dlprof::core {

void MapFaults::Read(Stream& s, const std::vector<FileMapping>& maps, ThreadFaults* faults,
                     uint64_t* lost) {
  auto* meta = reinterpret_cast<perf_event_mmap_page*>(s.ring);
  const uint8_t* data = s.ring + page_;
  const uint64_t size = kDataPages * page_;
  const uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
  uint64_t tail = meta->data_tail;
  const size_t first = faults->events.size();
  auto copy = [&](uint64_t at, void* to, size_t n) {
    const uint64_t from = at % size;
    const size_t part = static_cast<size_t>(std::min<uint64_t>(n, size - from));
    std::memcpy(to, data + from, part);
    if (part < n) std::memcpy(static_cast<uint8_t*>(to) + part, data, n - part);
  };
  while (tail + sizeof(perf_event_header) <= head) {
    perf_event_header h;
    copy(tail, &h, sizeof(h));
    if (h.size < sizeof(h) || tail + h.size > head) break;  // never written so
    uint64_t body[4] = {};
    copy(tail + sizeof(h), body, std::min<size_t>(sizeof(body), h.size - sizeof(h)));
    tail += h.size;
    if (h.type == PERF_RECORD_SAMPLE) {
      // { u32 pid, tid; u64 time; u64 addr; }
      const uint64_t t = body[1], addr = body[2];
      uint64_t start = s.block_start;
      // A wait the thread came back from and then ran on for more than
      // kFaultEntryNs was not this fault's: a fault whose page was read
      // before it had to wait takes no context switch at all (a loaded
      // virtual machine's, while its CPU was taken away), and the wait
      // before it (a waitpid) is no part of it.
      if (start != 0 && s.mark > s.block_out && s.block_ran + (t - s.mark) > kFaultEntryNs) {
        start = 0;
      }
      const uint64_t stopped = start != 0 ? s.block_out : t;
      if (start == 0) {
        start = switches_ && s.mark != 0 && t - s.mark <= kFaultEntryNs ? s.mark : t;
      }
      // Not before the thread's last call that ended before it stopped.
      auto call = std::upper_bound(s.call_ends.begin(), s.call_ends.end(), stopped);
      if (call != s.call_ends.begin() && *(call - 1) > start) start = *(call - 1);
      s.block_start = 0;
      s.mark = t;
      s.waiting = false;
      s.faulted.store(true, std::memory_order_release);  // not idle: keeps its buffer
      // The mapping that held the address at that moment (ended ones too:
      // a fault read after its munmap).
      auto it = std::upper_bound(maps.begin(), maps.end(), addr,
                                 [](uint64_t a, const FileMapping& m) { return a < m.start; });
      const FileMapping* hit = nullptr;
      for (int k = 0; it != maps.begin() && k < 64; ++k) {
        --it;
        if (it->Holds(addr) && it->LiveAt(t)) {
          hit = &*it;
          break;
        }
      }
      if (hit == nullptr) {  // not a traced file's page, nor are its reads ours
        ++s.other_faults;
        continue;
      }
      Event e{};
      e.kind = static_cast<uint16_t>(EventKind::MajorFault);
      e.start_ns = start <= t ? start : t;
      e.dur_ns = t - e.start_ns;
      e.file = hit->file;
      e.fd = -1;
      e.offset = static_cast<int64_t>((hit->file_offset + (addr - hit->start)) & ~(page_ - 1));
      e.size = page_;
      e.ret = static_cast<int64_t>(page_);
      e.aux = addr;
      faults->events.push_back(e);
      s.last_file = hit->file;
      s.last_fault_ns = t;
      s.reader.store(true, std::memory_order_relaxed);
    } else if (h.type == PERF_RECORD_SWITCH) {
      // sample_id: { u32 pid, tid; u64 time; }
      const uint64_t t = body[1];
      s.waiting = (h.misc & PERF_RECORD_MISC_SWITCH_OUT) &&
                  !(h.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT);
      if (!(h.misc & PERF_RECORD_MISC_SWITCH_OUT)) {
        s.mark = t;  // back on the CPU
      } else {
        // Back from the wait and on the CPU until now.
        if (s.block_start != 0 && s.mark > s.block_out) s.block_ran += t - s.mark;
        if (!(h.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT)) {
          // It stopped to wait: for a page, if a fault is served next.
          s.block_start = s.mark != 0 && t - s.mark <= kFaultEntryNs ? s.mark : t;
          s.block_out = t;
          s.block_ran = 0;
        }
      }
    } else if (h.type == PERF_RECORD_LOST) {
      *lost += body[1];  // { u64 id, lost; }
      s.block_start = 0;
      s.mark = 0;
    }
  }
  __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
  if (s.call_ends.size() > 1) s.call_ends.erase(s.call_ends.begin(), s.call_ends.end() - 1);
  const size_t n = faults->events.size() - first;
  if (n > 0) AddBytes(s, faults, first, NowNs());
}

void MapFaults::AddBytes(Stream& s, ThreadFaults* faults, size_t first, uint64_t now) {
  // The pages brought in: what the thread's storage reads grew by, less its
  // read calls' bytes and what its faults on untraced files' pages read (up
  // to kUntracedReadAroundBytes each), at least a page a fault; the pages
  // beyond one each shared out in order. Without a fault, what grew beyond
  // that is read-ahead for its map (a map_readahead event on its last
  // fault's file, else the file mapped last).
  const size_t n = faults->events.size() - first;
  const uint64_t others = s.other_faults;
  s.other_faults = 0;
  // A thread that has ended took its last count itself (OnThreadEnding):
  // the kernel no longer has it, and a thread that faulted just before its
  // end (a pool's short thread) would leave its faults a page each.
  uint64_t now_bytes = s.exit_read_bytes.load(std::memory_order_acquire);
  if (now_bytes == UINT64_MAX) {
    OwnFdScope scope;
    now_bytes = ThreadReadBytes(s.tid.load(std::memory_order_relaxed));
  }
  const bool calls_read = s.call_reads;
  s.call_reads = false;
  const uint64_t since = s.last_look_ns;
  s.last_look_ns = now;
  if (now_bytes == UINT64_MAX) return;
  const uint64_t grew =
      s.read_bytes_known && now_bytes >= s.read_bytes ? now_bytes - s.read_bytes : 0;
  // A thread stopped in a wait when its buffer was read may be in its next
  // fault: that fault's read counts in read_bytes from its submission, and
  // the fault comes in a later pass with a page of its own.
  const uint64_t in_flight = s.waiting ? page_ : 0;
  const uint64_t floor =
      s.call_bytes + n * page_ + in_flight + others * std::max(kUntracedReadAroundBytes, page_);
  const uint64_t extra_pages = grew > floor ? (grew - floor) / page_ : 0;
  s.read_bytes = now_bytes;
  s.read_bytes_known = true;
  s.call_bytes = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t pages = 1 + extra_pages / n + (i < extra_pages % n ? 1 : 0);
    faults->events[first + i].ret = static_cast<int64_t>(pages * page_);
  }
  if (n > 0 || extra_pages == 0) return;
  // A forked child's thread not known to read through maps whose read
  // calls moved bytes meanwhile: what its storage reads grew by beyond them
  // is their read-ahead (a sequential read() of another file), not a map's.
  if (calls_read && !s.reader.load(std::memory_order_relaxed)) return;
  // Of the file it faulted on last and the one it mapped last, the later
  // (a map with MAP_POPULATE, or read-ahead for a new map, comes after the
  // last fault on another), else the process's latest mapping of those it
  // held since the last look (a scan's map may be gone by this look).
  const uint32_t mapped = s.mapped_file.load(std::memory_order_relaxed);
  const bool mapped_later =
      mapped != 0 && s.mapped_ns.load(std::memory_order_relaxed) > s.last_fault_ns;
  uint32_t file = s.last_file != 0 && !mapped_later ? s.last_file : mapped;
  FileMapping latest;
  if (file == 0 && ProcessMaps().LatestSince(since, &latest)) file = latest.file;
  if (file == 0) return;
  Event e{};
  e.kind = static_cast<uint16_t>(EventKind::MapReadahead);
  e.start_ns = since;  // they came in since then
  e.file = file;
  e.fd = -1;
  e.offset = -1;
  e.ret = static_cast<int64_t>(extra_pages * page_);
  faults->events.push_back(e);
}

}  // namespace dlprof::core
