// Process-wide interned strings (file paths, later kernel and region names).
//
// A string gets a small id the first time it is seen; events carry the id,
// and the flusher writes each string into the trace once, in the block that
// first needs it. Interning is lock-free: ids come from an atomic counter,
// bytes from a bump arena, and a fixed open-addressing table of
// (hash tag, id) words dedupes them. All memory is reserved once with
// MAP_NORESERVE, so pages cost only when touched.
#ifndef DLPROF_LIB_CORE_STRING_TABLE_H_
#define DLPROF_LIB_CORE_STRING_TABLE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace dlprof::core {

class Sidecar;

class StringTable {
 public:
  static constexpr uint32_t kMaxStrings = 1u << 20;
  static constexpr size_t kArenaBytes = size_t{128} << 20;

  // Reserves memory; false if the reservation fails.
  bool Init();

  // Returns the id of `s` (1-based), or 0 when the table is full.
  uint32_t Intern(const char* s, size_t len);

  // Flusher side: calls `emit(id, text, len)` for every published string not
  // emitted yet. Any id handed out by Intern before this call is published
  // (Intern publishes before it returns), so strings of drained events are
  // always in the same block as the events.
  template <typename Emit>
  void EmitNew(Emit&& emit) {
    uint32_t end = next_id_.load(std::memory_order_acquire);
    if (end > kMaxStrings) end = kMaxStrings;
    uint32_t id = first_unemitted_;
    bool contiguous = true;
    for (; id < end; ++id) {
      Entry& e = entries_[id];
      if (e.emitted) continue;
      if (!e.ready.load(std::memory_order_acquire)) {
        if (contiguous) first_unemitted_ = id;
        contiguous = false;
        continue;
      }
      emit(id, e.text, e.len);
      e.emitted = true;
    }
    if (contiguous) first_unemitted_ = end;
  }

  // After fork: the child's trace starts empty, so every string is new again.
  void MarkAllUnemitted();

  // Every new string also goes into the rings sidecar's string log, where
  // the decoder finds the strings of events recovered after a crash.
  void UseLog(Sidecar* log) { log_ = log; }
  // After fork, into the child's new log: the strings so far (the newest
  // kStringLogBytes of them survive), which the child's events may name.
  void ReplayIntoLog();

  const char* Lookup(uint32_t id, size_t* len) const;

 private:
  struct Entry {
    const char* text;
    uint32_t len;
    std::atomic<bool> ready;
    bool emitted;  // flusher only
  };
  static constexpr uint32_t kSlots = kMaxStrings * 2;

  std::atomic<uint64_t>* slots_ = nullptr;  // (tag << 32) | id, 0 = empty
  Entry* entries_ = nullptr;
  char* arena_ = nullptr;
  std::atomic<size_t> arena_used_{0};
  std::atomic<uint32_t> next_id_{1};
  uint32_t first_unemitted_ = 1;
  Sidecar* log_ = nullptr;
};

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_STRING_TABLE_H_
