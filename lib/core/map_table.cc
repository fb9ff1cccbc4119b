// MapTable (map_table.h): the process's file mappings, lock-free.
#include "lib/core/map_table.h"

#include "lib/core/raw_map.h"

namespace dlprof::core {

namespace {
// Constant-initialised (no constructor runs, no guard is taken: mmap may
// come before our constructor or in a signal handler), and trivially
// destroyed: wrappers run during and after the program's static destruction.
MapTable g_process_maps;
}  // namespace

MapTable& ProcessMaps() { return g_process_maps; }

MapTable::Slot* MapTable::MapLevel(int k) {
  Slot* level = more_[k].load(std::memory_order_acquire);
  if (level != nullptr) return level;
  // Zeroed pages are free slots (state 0), touched only as they are used.
  const size_t bytes = sizeof(Slot) * (LevelEnd(k) - LevelStart(k));
  void* p = RawMmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  Slot* mine = static_cast<Slot*>(p);
  if (more_[k].compare_exchange_strong(level, mine, std::memory_order_acq_rel)) return mine;
  RawMunmap(p, bytes);  // another thread mapped it first
  return level;
}

MapTable::Slot* MapTable::Claim(uint64_t* state) {
  for (int k = 0; k < kLevels; ++k) {
    Slot* level = k == 0 ? slots_ : MapLevel(k);
    if (level == nullptr) break;
    for (uint32_t i = LevelStart(k); i < LevelEnd(k); ++i) {
      Slot& s = level[i - LevelStart(k)];
      uint64_t seen = s.state.load(std::memory_order_relaxed);
      if (Phase(seen) != kFree) continue;
      const uint64_t busy = ((seen >> 2) + 1) << 2 | kBusy;
      if (!s.state.compare_exchange_strong(seen, busy, std::memory_order_acquire)) continue;
      uint32_t high = high_.load(std::memory_order_relaxed);
      while (high < i + 1 &&
             !high_.compare_exchange_weak(high, i + 1, std::memory_order_release)) {
      }
      *state = busy;
      return &s;
    }
  }
  not_tracked_.fetch_add(1, std::memory_order_relaxed);
  return nullptr;
}

void MapTable::Publish(Slot* s, uint64_t state, uint64_t phase) {
  s->state.store((state & ~uint64_t{3}) | phase, std::memory_order_release);
}

bool MapTable::Read(const Slot& s, FileMapping* out, bool* live) const {
  for (int attempt = 0; attempt < 4; ++attempt) {
    const uint64_t before = s.state.load(std::memory_order_acquire);
    if (Phase(before) != kLive && Phase(before) != kEnded) return false;
    FileMapping m = s.m;
    m.unmapped_ns = s.unmapped_ns.load(std::memory_order_acquire);
    std::atomic_thread_fence(std::memory_order_acquire);
    if ((s.state.load(std::memory_order_relaxed) >> 2) != (before >> 2)) continue;  // reused
    *out = m;
    *live = m.unmapped_ns == 0;
    return true;
  }
  return false;
}

bool MapTable::End(Slot& s, uint64_t now) {
  uint64_t seen = s.state.load(std::memory_order_acquire);
  if (Phase(seen) != kLive) return false;
  s.unmapped_ns.store(now == 0 ? 1 : now, std::memory_order_release);
  if (!s.state.compare_exchange_strong(seen, (seen & ~uint64_t{3}) | kEnded,
                                       std::memory_order_acq_rel)) {
    return false;
  }
  live_.fetch_sub(1, std::memory_order_relaxed);
  if (!keep_ended_.load(std::memory_order_acquire)) {
    seen = (seen & ~uint64_t{3}) | kEnded;
    s.state.compare_exchange_strong(seen, seen & ~uint64_t{3}, std::memory_order_release);
  }
  return true;
}

void MapTable::Add(uint64_t addr, uint64_t len, uint32_t file, int32_t fd, uint64_t offset,
                   uint64_t now) {
  if (len == 0) return;
  // The kernel gave us this range: whatever the table still held there was
  // unmapped in a way no wrapper saw (a raw system call).
  Remove(addr, len, now);
  uint64_t state;
  Slot* s = Claim(&state);
  if (s == nullptr) return;
  s->m = FileMapping{addr, addr + len, offset, file, fd, now, 0};
  s->unmapped_ns.store(0, std::memory_order_relaxed);
  live_.fetch_add(1, std::memory_order_relaxed);
  Publish(s, state, kLive);
}

void MapTable::Remove(uint64_t addr, uint64_t len, uint64_t now) {
  if (!AnyLive() || len == 0) return;
  const uint64_t lo = addr, hi = addr + len < addr ? UINT64_MAX : addr + len;
  ForEachClaimed([&](Slot& s) {
    FileMapping m;
    bool live = false;
    if (!Read(s, &m, &live) || !live || m.end <= lo || m.start >= hi) return;
    if (!End(s, now)) return;
    // What lies outside the range stays mapped, from the same file.
    auto keep = [&](uint64_t from, uint64_t to) {
      uint64_t state;
      Slot* rest = Claim(&state);
      if (rest == nullptr) return;
      rest->m = FileMapping{from, to, m.file_offset + (from - m.start), m.file, m.fd, now, 0};
      rest->unmapped_ns.store(0, std::memory_order_relaxed);
      live_.fetch_add(1, std::memory_order_relaxed);
      Publish(rest, state, kLive);
    };
    if (m.start < lo) keep(m.start, lo);
    if (m.end > hi) keep(hi, m.end);
  });
}

bool MapTable::Move(uint64_t old_addr, uint64_t old_len, uint64_t new_addr, uint64_t new_len,
                    uint64_t now, FileMapping* moved) {
  FileMapping m;
  if (!FindLive(old_addr, &m)) return false;
  const uint64_t offset = m.file_offset + (old_addr - m.start);
  // An old length of 0 (a shared mapping) makes a copy: the old stays.
  if (old_len != 0) Remove(old_addr, old_len, now);
  Add(new_addr, new_len, m.file, m.fd, offset, now);
  *moved = FileMapping{new_addr, new_addr + new_len, offset, m.file, m.fd, now, 0};
  return true;
}

bool MapTable::FindLive(uint64_t addr, FileMapping* out) const {
  if (!AnyLive()) return false;
  bool found = false;
  ForEachClaimed([&](Slot& s) {
    FileMapping m;
    bool live = false;
    if (!found && Read(s, &m, &live) && live && m.Holds(addr)) {
      *out = m;
      found = true;
    }
  });
  return found;
}

bool MapTable::LatestSince(uint64_t t, FileMapping* out) const {
  bool found = last_freed_.file != 0 && last_freed_.unmapped_ns >= t;
  if (found) *out = last_freed_;
  ForEachClaimed([&](Slot& s) {
    FileMapping m;
    bool live = false;
    if (Read(s, &m, &live) && (live || m.unmapped_ns >= t) &&
        (!found || m.mapped_ns > out->mapped_ns)) {
      *out = m;
      found = true;
    }
  });
  return found;
}

void MapTable::Snapshot(std::vector<FileMapping>* out) const {
  out->clear();
  ForEachClaimed([&](Slot& s) {
    FileMapping m;
    bool live = false;
    if (Read(s, &m, &live)) out->push_back(m);
  });
}

void MapTable::FreeEndedBefore(uint64_t t) {
  ForEachClaimed([&](Slot& s) {
    uint64_t seen = s.state.load(std::memory_order_acquire);
    if (Phase(seen) != kEnded || s.unmapped_ns.load(std::memory_order_relaxed) >= t) return;
    FileMapping m;
    bool live = false;
    if (Read(s, &m, &live) && !live && m.mapped_ns >= last_freed_.mapped_ns) last_freed_ = m;
    s.state.compare_exchange_strong(seen, seen & ~uint64_t{3}, std::memory_order_release);
  });
}

}  // namespace dlprof::core
