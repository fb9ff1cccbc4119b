// Interning and emitting the process's strings (string_table.h).
#include "lib/core/string_table.h"

#include <sys/mman.h>

#include <cstring>

#include "lib/core/raw_map.h"
#include "lib/core/sidecar.h"

namespace dlprof::core {
namespace {

void* Reserve(size_t bytes) {
  void* p = RawMmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

uint64_t Hash(const char* s, size_t n) {  // FNV-1a, then a final mix
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<uint8_t>(s[i])) * 1099511628211ull;
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 32);
}

}  // namespace

bool StringTable::Init() {
  slots_ = static_cast<std::atomic<uint64_t>*>(Reserve(sizeof(uint64_t) * kSlots));
  entries_ = static_cast<Entry*>(Reserve(sizeof(Entry) * kMaxStrings));
  arena_ = static_cast<char*>(Reserve(kArenaBytes));
  return slots_ && entries_ && arena_;
}

uint32_t StringTable::Intern(const char* s, size_t len) {
  if (!slots_ || len > 65535) return 0;
  uint64_t h = Hash(s, len);
  uint64_t tag = (h >> 32) | 1;  // never 0, so a used slot is never empty
  uint32_t new_id = 0;
  for (uint32_t probe = 0; probe < kSlots; ++probe) {
    std::atomic<uint64_t>& slot = slots_[(h + probe) & (kSlots - 1)];
    uint64_t v = slot.load(std::memory_order_acquire);
    while (v == 0) {
      if (new_id == 0) {
        // Publish the entry first so whoever finds the slot finds the text.
        size_t at = arena_used_.fetch_add(len + 1, std::memory_order_relaxed);
        uint32_t id = next_id_.fetch_add(1, std::memory_order_relaxed);
        if (at + len + 1 > kArenaBytes || id >= kMaxStrings) return 0;
        std::memcpy(arena_ + at, s, len);
        arena_[at + len] = '\0';
        entries_[id].text = arena_ + at;
        entries_[id].len = static_cast<uint32_t>(len);
        entries_[id].ready.store(true, std::memory_order_release);
        new_id = id;
      }
      if (slot.compare_exchange_weak(v, (tag << 32) | new_id, std::memory_order_acq_rel)) {
        if (log_ != nullptr) log_->AppendString(new_id, s, len);
        return new_id;
      }
    }
    if ((v >> 32) == tag) {
      const Entry& e = entries_[v & 0xffffffffu];
      if (e.len == len && std::memcmp(e.text, s, len) == 0) return static_cast<uint32_t>(v);
    }
  }
  // Table full: our unreferenced entry is still a valid id.
  if (new_id != 0 && log_ != nullptr) log_->AppendString(new_id, s, len);
  return new_id;
}

void StringTable::ReplayIntoLog() {
  if (log_ == nullptr) return;
  uint32_t end = next_id_.load(std::memory_order_acquire);
  if (end > kMaxStrings) end = kMaxStrings;
  // Only the newest that fit: older ones would be overwritten anyway (a
  // process with a million paths must not copy them all at each fork).
  uint32_t from = end;
  for (size_t bytes = 0; from > 1; --from) {
    bytes += format::kStringRecordHeader + entries_[from - 1].len + 7;
    if (bytes > format::kStringLogBytes) break;
  }
  for (uint32_t id = from; id < end; ++id) {
    if (entries_[id].ready.load(std::memory_order_acquire)) {
      log_->AppendString(id, entries_[id].text, entries_[id].len);
    }
  }
}

void StringTable::MarkAllUnemitted() {
  uint32_t end = next_id_.load(std::memory_order_acquire);
  if (end > kMaxStrings) end = kMaxStrings;
  for (uint32_t id = 1; id < end; ++id) entries_[id].emitted = false;
  first_unemitted_ = 1;
}

const char* StringTable::Lookup(uint32_t id, size_t* len) const {
  if (id == 0 || id >= kMaxStrings || id >= next_id_.load(std::memory_order_acquire) ||
      !entries_[id].ready.load(std::memory_order_acquire)) {
    return nullptr;
  }
  *len = entries_[id].len;
  return entries_[id].text;
}

}  // namespace dlprof::core
