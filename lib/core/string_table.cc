// Interning and emitting the process's strings (string_table.h).
#include "lib/core/string_table.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

#include "lib/core/raw_log.h"
#include "lib/core/raw_map.h"
#include "lib/core/sidecar.h"

namespace dlprof::core {
namespace {

void* Reserve(size_t bytes) {
  void* p = RawMmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

// Maps `bytes` into `*at` unless another thread did first (then its mapping
// stands and ours goes).
template <typename T>
T* MapOnce(std::atomic<T*>* at, size_t bytes) {
  T* p = at->load(std::memory_order_acquire);
  if (p != nullptr) return p;
  T* mine = static_cast<T*>(Reserve(bytes));
  if (mine == nullptr) return nullptr;
  if (at->compare_exchange_strong(p, mine, std::memory_order_acq_rel)) return mine;
  RawMunmap(mine, bytes);
  return p;
}

uint64_t Hash(const char* s, size_t n) {  // FNV-1a, then a final mix
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<uint8_t>(s[i])) * 1099511628211ull;
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 32);
}

}  // namespace

bool StringTable::Init(uint64_t max_strings) {
  if (max_strings == 0 || max_strings > kDefaultMaxStrings) max_strings = kDefaultMaxStrings;
  uint64_t base = max_strings / 85;
  if (base == 0) base = 1;
  uint32_t first = 1;
  for (int k = 0; k < kLevels; ++k) {
    Level& l = levels_[k];
    l.first_id = first;
    l.cap = static_cast<uint32_t>(base << (2 * k));
    uint64_t slots = 2;
    while (slots < 2 * uint64_t{l.cap}) slots <<= 1;
    l.slot_mask = slots - 1;
    first += l.cap;
  }
  return MapLevel(levels_[0]);
}

bool StringTable::MapLevel(Level& l) {
  return MapOnce(&l.slots, sizeof(uint64_t) * (l.slot_mask + 1)) != nullptr &&
         MapOnce(&l.entries, sizeof(Entry) * l.cap) != nullptr;
}

// Inserts into a full level may still be in progress: they finish in a few
// instructions, so wait for them (bounded: a signal handler interning on a
// thread interrupted mid-insert would otherwise wait for itself; past the
// bound a string may at worst get a second id).
void StringTable::WaitSettled(const Level& l) const {
  for (int i = 0; i < 100000 && l.done.load(std::memory_order_acquire) < l.cap; ++i) {
    syscall(SYS_sched_yield);
  }
}

uint32_t StringTable::Find(const Level& l, uint64_t h, uint64_t tag, const char* s,
                           size_t len) const {
  const std::atomic<uint64_t>* slots = l.slots.load(std::memory_order_acquire);
  const Entry* entries = l.entries.load(std::memory_order_acquire);
  if (slots == nullptr || entries == nullptr) return 0;
  for (uint64_t probe = 0; probe <= l.slot_mask; ++probe) {
    const uint64_t v = slots[(h + probe) & l.slot_mask].load(std::memory_order_acquire);
    if (v == 0) return 0;
    if ((v >> 32) != tag) continue;
    const uint32_t id = static_cast<uint32_t>(v);
    const Entry& e = entries[id - l.first_id];
    if (e.len == len && std::memcmp(e.text, s, len) == 0) return id;
  }
  return 0;
}

uint32_t StringTable::Lost() {
  lost_.fetch_add(1, std::memory_order_relaxed);
  if (!warned_.exchange(true, std::memory_order_relaxed)) {
    RawLog("string table full (%llu strings, %llu bytes): events on files, and annotations "
           "with names, first seen from now on are not recorded, and are counted as dropped",
           static_cast<unsigned long long>(EndId() - 1),
           static_cast<unsigned long long>(arena_used_.load(std::memory_order_relaxed)));
  }
  return kLost;
}

char* StringTable::StoreText(const char* s, size_t len) {
  for (;;) {
    const uint64_t at = arena_used_.fetch_add(len + 1, std::memory_order_relaxed);
    const uint64_t chunk = at / kChunkBytes;
    if (chunk >= kChunks) return nullptr;
    if ((at + len) / kChunkBytes != chunk) continue;  // would straddle: the tail stays unused
    char* base = MapOnce(&chunks_[chunk], kChunkBytes);
    if (base == nullptr) return nullptr;
    char* p = base + at % kChunkBytes;
    std::memcpy(p, s, len);
    p[len] = '\0';
    return p;
  }
}

uint32_t StringTable::InsertOrFind(Level& l, uint64_t h, uint64_t tag, const char* s,
                                   size_t len) {
  std::atomic<uint64_t>* slots = l.slots.load(std::memory_order_acquire);
  Entry* entries = l.entries.load(std::memory_order_acquire);
  uint32_t new_id = 0;
  for (uint64_t probe = 0; probe <= l.slot_mask; ++probe) {
    std::atomic<uint64_t>& slot = slots[(h + probe) & l.slot_mask];
    uint64_t v = slot.load(std::memory_order_acquire);
    while (v == 0) {
      if (new_id == 0) {
        // Publish the entry first so whoever finds the slot finds the text.
        const uint64_t r = l.reserved.fetch_add(1, std::memory_order_acq_rel);
        if (r >= l.cap) return 0;
        new_id = l.first_id + static_cast<uint32_t>(r);
        Entry& e = entries[r];
        e.text = StoreText(s, len);
        e.len = e.text != nullptr ? static_cast<uint32_t>(len) : 0;
        e.ready.store(true, std::memory_order_release);
        if (e.text == nullptr) {  // the arena is full: the id stays unused
          l.done.fetch_add(1, std::memory_order_acq_rel);
          return Lost();
        }
      }
      if (slot.compare_exchange_weak(v, (tag << 32) | new_id, std::memory_order_acq_rel)) {
        if (log_ != nullptr) log_->AppendString(new_id, s, len);
        l.done.fetch_add(1, std::memory_order_acq_rel);
        return new_id;
      }
    }
    if ((v >> 32) == tag) {
      const uint32_t id = static_cast<uint32_t>(v);
      const Entry& e = entries[id - l.first_id];
      if (e.len == len && std::memcmp(e.text, s, len) == 0) {
        // Another thread put it in first: our entry, if any, stays unused.
        if (new_id != 0) l.done.fetch_add(1, std::memory_order_acq_rel);
        return id;
      }
    }
  }
  // Never reached (a level holds at most half its slots), but an id is an id.
  if (new_id != 0) {
    if (log_ != nullptr) log_->AppendString(new_id, s, len);
    l.done.fetch_add(1, std::memory_order_acq_rel);
  }
  return new_id;
}

uint32_t StringTable::Intern(const char* s, size_t len) {
  if (levels_[0].slots.load(std::memory_order_relaxed) == nullptr || len > 65535) return 0;
  const uint64_t h = Hash(s, len);
  const uint64_t tag = (h >> 32) | 1;  // never 0, so a used slot is never empty
  for (int k = 0; k < kLevels; ++k) {
    Level& l = levels_[k];
    if (l.reserved.load(std::memory_order_acquire) < l.cap) {
      if (!MapLevel(l)) {
        Lost();
        return 0;
      }
      const uint32_t id = InsertOrFind(l, h, tag, s, len);
      if (id == kLost) return 0;
      if (id != 0) return id;
      // The level filled while we probed it: it is searched again below,
      // complete, before the next one.
    }
    WaitSettled(l);
    const uint32_t id = Find(l, h, tag, s, len);
    if (id != 0) return id;
  }
  Lost();
  return 0;
}

void StringTable::AfterFork() {
  for (Level& l : levels_) {
    const uint64_t r = l.reserved.load(std::memory_order_relaxed);
    l.done.store(static_cast<uint32_t>(r < l.cap ? r : l.cap), std::memory_order_relaxed);
  }
  // An entry a vanished thread had reserved and not published: no text.
  const uint32_t end = EndId();
  for (uint32_t id = first_unemitted_; id < end; ++id) {
    Entry& e = At(id);
    if (!e.ready.load(std::memory_order_relaxed)) {
      e.text = nullptr;
      e.len = 0;
      e.ready.store(true, std::memory_order_release);
    }
  }
}

void StringTable::ReplayIntoLog() {
  if (log_ == nullptr) return;
  const uint32_t end = EndId();
  // Only the newest that fit: older ones would be overwritten anyway (a
  // process with a million paths must not copy them all at each fork).
  uint32_t from = end;
  for (size_t bytes = 0; from > 1; --from) {
    bytes += format::kStringRecordHeader + At(from - 1).len + 7;
    if (bytes > format::kStringLogBytes) break;
  }
  for (uint32_t id = from; id < end; ++id) {
    const Entry& e = At(id);
    if (e.ready.load(std::memory_order_acquire) && e.text != nullptr) {
      log_->AppendString(id, e.text, e.len);
    }
  }
}

void StringTable::MarkAllUnemitted() {
  const uint32_t end = EndId();
  for (uint32_t id = 1; id < end; ++id) At(id).emitted = false;
  first_unemitted_ = 1;
}

const char* StringTable::Lookup(uint32_t id, size_t* len) const {
  if (id == 0 || id >= EndId()) return nullptr;
  const Entry& e = At(id);
  if (!e.ready.load(std::memory_order_acquire) || e.text == nullptr) return nullptr;
  *len = e.len;
  return e.text;
}

}  // namespace dlprof::core
