// The kernel's records of one thread's major faults and context switches,
// and of its faults taken and served (map_waits.cc), made into
// major_fault, map_wait and map_readahead events (map_faults.h: a fault's
// time, a wait for a page being read, a fault's bytes), and what a
// populating mmap read told apart from the faults before it
// (BeforePopulating); the flusher's pass over every thread's (Drain).
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "lib/core/clock.h"
#include "lib/core/map_faults_stream.h"
#include "lib/core/own_fd.h"

namespace dlprof::core {

namespace {

// populate_ns while the thread writes its mark (map_faults_stream.h).
constexpr uint64_t kWriting = UINT64_MAX;

// A thread's mark of its populating mmap, as the flusher reads it.
struct Populate {
  uint64_t ns = 0, read_bytes = 0;
  uint32_t file = 0;
};

// The mark of a populating mmap made after `since` and no later than
// `now` (one made after `now` is the next look's), if any.
bool PopulatedSince(const MapFaults::Stream& s, uint64_t since, uint64_t now, Populate* p) {
  p->ns = s.populate_ns.load(std::memory_order_acquire);
  if (p->ns == 0 || p->ns == kWriting || p->ns <= since || p->ns > now) return false;
  p->read_bytes = s.populate_read_bytes.load(std::memory_order_relaxed);
  p->file = s.populate_file.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  return s.populate_ns.load(std::memory_order_relaxed) == p->ns;  // not rewritten meanwhile
}

// The bytes of the faults `events[first...]`, whose mappings are `maps`
// (their starts and lengths, in the same order), from the pages beyond one
// each that they read.
void ShareOut(const std::vector<std::pair<uint64_t, uint64_t>>& maps, std::vector<Event>* events,
              size_t first, uint64_t extra_pages, uint64_t page) {
  // A page each, then the pages beyond shared out in order, in rounds, no
  // map's faults given more than its length together: beyond that, what
  // the thread's storage reads grew by was another file's (an excluded
  // path's read(), an untraced file's fault reading around more than
  // kUntracedReadAroundBytes; a 3.8 MiB index was given 9.2 MiB), and is
  // not counted. (A fault on a map of part of a file may read around beyond
  // the map: that much is then short.)
  const size_t n = events->size() - first;
  std::vector<std::pair<uint64_t, uint64_t>> room;  // a map's start, the pages it can take
  std::vector<size_t> of(n);
  const bool known = maps.size() == n;  // (else no bound)
  for (size_t i = 0; i < n; ++i) {
    const uint64_t start = known ? maps[i].first : 0;
    size_t k = 0;
    while (k < room.size() && room[k].first != start) ++k;
    if (k == room.size()) {
      room.emplace_back(start, known ? (maps[i].second + page - 1) / page : ~0ull);
    }
    of[i] = k;
    if (room[k].second > 0) --room[k].second;  // its own page
  }
  std::vector<uint64_t> pages(n, 1);
  for (uint64_t left = extra_pages; left > 0;) {
    size_t open = 0;
    for (size_t i = 0; i < n; ++i) open += room[of[i]].second > 0;
    if (open == 0) break;
    const uint64_t share = std::max<uint64_t>(1, left / open);
    for (size_t i = 0; i < n && left > 0; ++i) {
      uint64_t& r = room[of[i]].second;
      const uint64_t give = std::min({share, r, left});
      pages[i] += give;
      r -= give;
      left -= give;
    }
  }
  for (size_t i = 0; i < n; ++i) {
    (*events)[first + i].ret = static_cast<int64_t>(pages[i] * page);
  }
}

// The mapping of a traced file that held `addr` at `t` (ended ones too: a
// fault read after its munmap), or null. `maps` in order of start.
const FileMapping* MappingAt(const std::vector<FileMapping>& maps, uint64_t addr, uint64_t t) {
  auto it = std::upper_bound(maps.begin(), maps.end(), addr,
                             [](uint64_t a, const FileMapping& m) { return a < m.start; });
  for (int k = 0; it != maps.begin() && k < 64; ++k) {
    --it;
    if (it->Holds(addr) && it->LiveAt(t)) return &*it;
  }
  return nullptr;
}

}  // namespace

uint64_t MapFaults::FaultStart(const Stream& s, uint64_t t, bool* waited) const {
  uint64_t start = s.block_start;
  // A wait the thread came back from and then ran on for more than
  // kFaultEntryNs was not this fault's: a fault whose page was read before
  // it had to wait takes no context switch at all (a loaded virtual
  // machine's, while its CPU was taken away), and the wait before it (a
  // waitpid) is no part of it. Nor was a wait the thread made a traced call
  // after (one inside a read() that blocked).
  if (start != 0 && s.mark > s.block_out && s.block_ran + (t - s.mark) > kFaultEntryNs) {
    start = 0;
  }
  if (start != 0) {
    auto after = std::upper_bound(s.call_ends.begin(), s.call_ends.end(), s.block_out);
    if (after != s.call_ends.end() && *after < t) start = 0;
  }
  *waited = start != 0;
  const uint64_t stopped = start != 0 ? s.block_out : t;
  if (start == 0) {
    start = switches_ && s.mark != 0 && t - s.mark <= kFaultEntryNs ? s.mark : t;
  }
  // Not before the thread's last call that ended before it stopped.
  auto call = std::upper_bound(s.call_ends.begin(), s.call_ends.end(), stopped);
  if (call != s.call_ends.begin() && *(call - 1) > start) start = *(call - 1);
  return start <= t ? start : t;
}

Event MapFaults::FaultEvent(EventKind kind, const FileMapping& map, uint64_t addr, uint64_t start,
                            uint64_t t) const {
  Event e{};
  e.kind = static_cast<uint16_t>(kind);
  e.start_ns = start;
  e.dur_ns = t - start;
  e.file = map.file;
  e.fd = -1;
  e.offset = static_cast<int64_t>((map.file_offset + (addr - map.start)) & ~(page_ - 1));
  e.size = page_;
  e.ret = static_cast<int64_t>(page_);
  e.aux = addr;
  return e;
}

void MapFaults::BeforePopulating(uint32_t file) {
  if (mode_ != FaultMode::kEvents || file == 0 || !CoversThisThread()) return;
  const int saved = errno;
  const auto tid = static_cast<int32_t>(syscall(SYS_gettid));
  MarkReader(tid, file);
  for (int i = 0; i < kStreams; ++i) {
    Stream& s = streams_[i];
    if (s.state.load(std::memory_order_acquire) != kOpen ||
        s.tid.load(std::memory_order_relaxed) != tid) {
      continue;
    }
    // The first since the flusher last looked keeps its place: the storage
    // reads after it are all populating maps' (counted for its file).
    const uint64_t marked = s.populate_ns.load(std::memory_order_relaxed);
    if (marked != 0 && marked > s.last_look_ns.load(std::memory_order_relaxed)) break;
    uint64_t bytes;
    {
      OwnFdScope scope;
      bytes = ThreadReadBytes(tid);
    }
    if (bytes == UINT64_MAX) break;
    s.populate_ns.store(kWriting, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    s.populate_read_bytes.store(bytes, std::memory_order_relaxed);
    s.populate_file.store(file, std::memory_order_relaxed);
    // Taken after the count: a mark the flusher finds no later than its
    // own clock read counted before its own look at the thread's.
    s.populate_ns.store(NowNs(), std::memory_order_release);
    break;
  }
  errno = saved;
}

size_t MapFaults::Read(Stream& s, const std::vector<FileMapping>& maps, ThreadFaults* faults,
                       uint64_t* lost, uint64_t cut) {
  // With the thread's faults taken and minor faults served in a buffer of
  // their own (map_waits.cc), both buffers are read up to `cut`, in time
  // order: a fault taken, a stop to wait, and the same fault served minor
  // waited for a page being read (a map_wait).
  uint64_t waits_lost = 0;
  ReadWaits(s, cut, page_, &minors_, &waits_lost);
  const uint64_t until = s.waits_ring != nullptr ? cut : UINT64_MAX;
  size_t minor = 0;
  std::vector<Event> waits;
  auto take_minors = [&](uint64_t before) {
    for (; minor < minors_.size() && minors_[minor].ns < before; ++minor) {
      const MinorFault& m = minors_[minor];
      if (m.taken) {
        s.taken_ns = m.ns;
        s.taken_addr = m.addr;
        s.taken_waited = false;
        continue;
      }
      const uint64_t taken = s.taken_ns;
      s.taken_ns = 0;
      if (taken == 0 || s.taken_addr != m.addr || !s.taken_waited) continue;
      // The thread's last wait was this fault's, not a later one's.
      s.block_start = 0;
      s.mark = m.ns;
      s.waiting = false;
      // (A page of no traced file: a library's being read, another map's.)
      if (const FileMapping* hit = MappingAt(maps, m.addr, m.ns)) {
        waits.push_back(FaultEvent(EventKind::MapWait, *hit, m.addr, taken, m.ns));
        waits.back().ret = 0;  // its page's bytes are the read-ahead's
      }
    }
  };
  const size_t first = faults->events.size();
  s.fault_maps.clear();
  PerfRecords records(s.ring, page_, kDataPages);
  perf_event_header h;
  uint64_t body[4];
  while (records.Next(&h, body)) {
    // Its time: a sample's and a switch's second word, a lost record's
    // fourth (its sample_id after { u64 id, lost; }).
    const uint64_t at = h.type == PERF_RECORD_LOST ? body[3] : body[1];
    if (at > until) break;  // the next pass's, with the minor faults before it
    take_minors(at);
    records.Take();
    if (h.type == PERF_RECORD_SAMPLE) {
      // { u32 pid, tid; u64 time; u64 addr; }
      const uint64_t t = body[1], addr = body[2];
      bool waited = false;
      const uint64_t start = FaultStart(s, t, &waited);
      s.block_start = 0;
      s.mark = t;
      s.waiting = false;
      s.taken_ns = 0;  // (served, major)
      s.faulted.store(true, std::memory_order_release);  // not idle: keeps its buffer
      const FileMapping* hit = MappingAt(maps, addr, t);
      if (hit == nullptr) {  // not a traced file's page, nor are its reads ours
        ++s.other_faults;
        continue;
      }
      faults->events.push_back(FaultEvent(EventKind::MajorFault, *hit, addr, start, t));
      s.fault_maps.emplace_back(hit->start, hit->end - hit->start);
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
          if (s.taken_ns != 0) s.taken_waited = true;  // in a fault taken
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
  take_minors(UINT64_MAX);  // (all no later than `cut`)
  // The calls' ends a record left for the next pass may need: from the
  // last one before `cut` on.
  auto keep = std::upper_bound(s.call_ends.begin(), s.call_ends.end(), until);
  if (keep != s.call_ends.begin()) s.call_ends.erase(s.call_ends.begin(), keep - 1);
  const size_t n = faults->events.size() - first;
  if (n > 0) AddBytes(s, faults, first, NowNs());
  faults->events.insert(faults->events.end(), waits.begin(), waits.end());
  if (waits_lost > 0) {
    // (Its time: the pass's, before which they were lost.)
    Event e{};
    e.kind = static_cast<uint16_t>(EventKind::MapWaitsLost);
    e.start_ns = cut != UINT64_MAX ? cut : NowNs();
    e.fd = -1;
    e.ret = static_cast<int64_t>(waits_lost);
    faults->events.push_back(e);
  }
  return n;
}

void MapFaults::AddBytes(Stream& s, ThreadFaults* faults, size_t first, uint64_t now) {
  // The pages brought in: what the thread's storage reads grew by, less its
  // read calls' bytes and what its faults on untraced files' pages read (up
  // to kUntracedReadAroundBytes each), at least a page a fault. Of the pages
  // beyond one each, those read after a populating mmap of the thread since
  // the last look (BeforePopulating: its own count then), less a page for
  // each fault after it, are that map's read-ahead (a map_readahead event);
  // the rest are shared out in order among the faults, or without a fault
  // are read-ahead for its map (a map_readahead event on its last fault's
  // file, else the file mapped last).
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
  const uint64_t since = s.last_look_ns.load(std::memory_order_relaxed);
  s.last_look_ns.store(now, std::memory_order_relaxed);
  if (now_bytes == UINT64_MAX) return;
  const uint64_t was = s.read_bytes;
  const uint64_t grew = s.read_bytes_known && now_bytes >= was ? now_bytes - was : 0;
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
  // The populating map's: what grew from its mark on, less the faults after
  // it (a page each) and a fault in flight; the read calls' bytes and the
  // untraced faults' are taken off the faults before it first.
  Populate pop;
  const bool populated = extra_pages > 0 && PopulatedSince(s, since, now, &pop);
  size_t after = n;  // the first fault after the mark
  uint64_t pop_pages = 0;
  if (populated) {
    auto ended = [](const Event& e) { return e.start_ns + e.dur_ns; };
    after = 0;
    while (after < n && ended(faults->events[first + after]) < pop.ns) ++after;
    const uint64_t later = now_bytes - std::clamp(pop.read_bytes, was, now_bytes);
    const uint64_t theirs = (n - after) * page_ + in_flight;
    pop_pages = std::min(extra_pages, later > theirs ? (later - theirs) / page_ : 0);
  }
  const uint64_t rest = extra_pages - pop_pages;
  if (n > 0) ShareOut(s.fault_maps, &faults->events, first, rest, page_);
  if (pop_pages > 0) {
    Event e{};
    e.kind = static_cast<uint16_t>(EventKind::MapReadahead);
    e.start_ns = pop.ns;  // read inside that mmap, in order among the faults
    e.file = pop.file;
    e.fd = -1;
    e.offset = -1;
    e.ret = static_cast<int64_t>(pop_pages * page_);
    faults->events.insert(faults->events.begin() + static_cast<ptrdiff_t>(first + after), e);
  }
  if (n > 0 || rest == 0) return;
  // A forked child's thread not known to read through maps whose read
  // calls moved bytes meanwhile: what its storage reads grew by beyond them
  // is their read-ahead (a sequential read() of another file), not a map's.
  if (calls_read && !s.reader.load(std::memory_order_relaxed)) return;
  // Of the file it faulted on last and the one it mapped last, the later
  // (a map with MAP_POPULATE, or read-ahead for a new map, comes after the
  // last fault on another; but what grew before a populating mmap is not
  // its), else the process's latest mapping of those it held since the last
  // look (a scan's map may be gone by this look).
  const uint32_t mapped = s.mapped_file.load(std::memory_order_relaxed);
  const bool mapped_later =
      mapped != 0 && !populated && s.mapped_ns.load(std::memory_order_relaxed) > s.last_fault_ns;
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
  e.ret = static_cast<int64_t>(rest * page_);
  // (Before the populating map's, which came after.)
  faults->events.insert(faults->events.begin() + static_cast<ptrdiff_t>(first), e);
}

void MapFaults::Drain(std::vector<ThreadFaults>* out, uint64_t* lost, bool last, uint64_t cut) {
  out->clear();
  if (!g_map_faults_on.load(std::memory_order_acquire)) return;
  const uint64_t now = NowNs();
  AddGapRecords(out, now);
  if (mode_ != FaultMode::kEvents) {
    ProcessMaps().FreeEndedBefore(now);  // no fault to resolve
    return;
  }
  if (now - last_scan_ns_ >= kScanNs) {
    ScanThreads();
    last_scan_ns_ = now;
  }
  InRings busy(&in_rings_);
  std::vector<FileMapping> maps;
  bool snapshot = false;
  uint64_t process_bytes = UINT64_MAX;
  bool process_read = false;
  for (int i = 0; i < kStreams; ++i) {
    Stream& s = streams_[i];
    if (s.state.load(std::memory_order_acquire) != kOpen) continue;
    auto* meta = reinterpret_cast<perf_event_mmap_page*>(s.ring);
    ThreadFaults tf;
    tf.tid = s.tid.load(std::memory_order_relaxed);
    const uint64_t looked = s.last_look_ns;
    size_t faulted = 0;  // major faults on traced files' pages
    if (__atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE) != meta->data_tail ||
        WaitsPending(s) > 0) {
      if (!snapshot) {
        ProcessMaps().Snapshot(&maps);
        std::sort(maps.begin(), maps.end(),
                  [](const FileMapping& a, const FileMapping& b) { return a.start < b.start; });
        snapshot = true;
      }
      faulted = Read(s, maps, &tf, lost, last ? UINT64_MAX : cut);
    }
    // A reader through maps that took no fault here: its read-ahead, now
    // and then (and when it has exited, for the last time); a forked child
    // that inherited maps likewise (map_faults_stream.h: inherited). Not
    // while it is stopped in a wait: a fault's read counts in
    // read_bytes when it is submitted, before the thread waits, and the
    // fault comes into the buffer only once served (a look between took
    // its page for read-ahead, and the fault a page of its own as well).
    // Not while the process read nothing from storage since its last look
    // (one file read for all its threads). A thread that has ended
    // (OnThreadEnding) at once: the map it read may be unmapped, and
    // forgotten, before it is seen gone.
    const bool ended = s.exit_read_bytes.load(std::memory_order_acquire) != UINT64_MAX;
    const bool reads_maps = s.reader.load(std::memory_order_relaxed) || s.inherited;
    if (faulted == 0 && reads_maps && s.read_bytes_known &&
        ((now - looked >= kReadaheadLookNs && !s.waiting) || ended || s.gone || last)) {
      if (!process_read) {
        OwnFdScope scope;
        process_bytes = ProcessReadBytes();
        process_read = true;
      }
      if (process_bytes == UINT64_MAX || process_bytes != s.process_bytes || ended || s.gone ||
          last) {
        s.process_bytes = process_bytes;
        AddBytes(s, &tf, tf.events.size(), now);  // (after its waits: no fault)
      } else {
        s.last_look_ns = now;  // nothing read since: the next look's events start here
      }
    }
    // Reading from storage through a map now, or about to (it mapped a
    // file, or inherited maps, since): its minor faults are read too
    // (map_waits.cc).
    if (switches_ && !s.gone) {
      const uint64_t mapped = s.inherited ? s.opened_ns : s.mapped_ns.load(std::memory_order_relaxed);
      UpdateWaits(s, !tf.events.empty() ? now : mapped, now, page_);
    }
    if (!tf.events.empty()) {
      std::stable_sort(tf.events.begin(), tf.events.end(),
                       [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; });
      out->push_back(std::move(tf));
    }
    if (s.gone) Close(s);
  }
  // Every fault before `now` (or `cut`, where later records were left) was
  // in the buffers just read.
  ProcessMaps().FreeEndedBefore(last ? now : std::min(now, cut));
}

}  // namespace dlprof::core
