// Process-wide interned strings (file paths, later kernel and region names).
//
// A string gets a small id the first time it is seen; events carry the id,
// and the flusher writes each string into the trace once, in the block that
// first needs it. Interning is lock-free: ids come from atomic counters,
// bytes from a bump arena, and open-addressing tables of (hash tag, id)
// words dedupe them.
//
// The dedupe table grows in levels (each four times the one before) rather
// than being one table for the largest case: a hash table's pages are
// touched at random, so one sized for 89 M strings would cost its whole
// size in resident memory after a few thousand paths, and again in every
// forked worker that interns its own. A level is mapped when the one before
// it fills; ids stay contiguous across levels. A string goes into a level
// only after every insert into the levels before it has finished, so it is
// never in two levels (one string, one id). All memory is mapped with
// MAP_NORESERVE, lazily, so pages cost only when touched.
#ifndef DLPROF_LIB_CORE_STRING_TABLE_H_
#define DLPROF_LIB_CORE_STRING_TABLE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace dlprof::core {

class Sidecar;

class StringTable {
 public:
  static constexpr int kLevels = 4;
  // Level k holds base << 2k strings: 85 * base in all. The default base
  // keeps the first level as large as the whole table used to be (2^20).
  static constexpr uint32_t kDefaultBase = 1u << 20;
  static constexpr uint64_t kDefaultMaxStrings = uint64_t{85} * kDefaultBase;
  // Text of the strings, in chunks mapped as they are needed.
  static constexpr size_t kChunkBytes = size_t{64} << 20;
  static constexpr int kChunks = 256;  // 16 GiB

  // Sets the capacity (`max_strings`, at least 85; 0: the default) and
  // maps the first level; false if that fails.
  bool Init(uint64_t max_strings = 0);

  // Returns the id of `s` (1-based), or 0 when it cannot be kept (the table
  // or its text arena is full: said once on stderr, and counted in
  // lost_strings()).
  uint32_t Intern(const char* s, size_t len);
  uint64_t lost_strings() const { return lost_.load(std::memory_order_relaxed); }

  // Flusher side: calls `emit(id, text, len)` for every published string not
  // emitted yet. Any id handed out by Intern before this call is published
  // (Intern publishes before it returns), so strings of drained events are
  // always in the same block as the events.
  template <typename Emit>
  void EmitNew(Emit&& emit) {
    const uint32_t end = EndId();
    uint32_t id = first_unemitted_;
    bool contiguous = true;
    for (; id < end; ++id) {
      Entry& e = At(id);
      if (e.emitted) continue;
      if (!e.ready.load(std::memory_order_acquire)) {
        if (contiguous) first_unemitted_ = id;
        contiguous = false;
        continue;
      }
      if (e.text != nullptr) emit(id, e.text, e.len);  // null: its text was not kept
      e.emitted = true;
    }
    if (contiguous) first_unemitted_ = end;
  }

  // After fork: the child's trace starts empty, so every string is new again.
  // (Also when a bounded trace starts a new segment.)
  void MarkAllUnemitted();
  // In a forked child: inserts that the parent's other threads had in
  // progress will never finish; nothing may wait for them.
  void AfterFork();

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
  struct Level {
    uint32_t first_id = 0;  // ids [first_id, first_id + cap)
    uint32_t cap = 0;
    uint64_t slot_mask = 0;  // slots: a power of two, at least twice cap
    std::atomic<std::atomic<uint64_t>*> slots{nullptr};  // (tag << 32) | id, 0 = empty
    std::atomic<Entry*> entries{nullptr};
    std::atomic<uint64_t> reserved{0};  // ids handed out (may run past cap)
    std::atomic<uint32_t> done{0};      // of those below cap, inserts finished
  };

  // Slow paths (string_table.cc).
  bool MapLevel(Level& l);
  void WaitSettled(const Level& l) const;
  uint32_t Find(const Level& l, uint64_t h, uint64_t tag, const char* s, size_t len) const;
  // 0: the level filled under us (try the next one); kLost: cannot keep it.
  uint32_t InsertOrFind(Level& l, uint64_t h, uint64_t tag, const char* s, size_t len);
  char* StoreText(const char* s, size_t len);
  uint32_t Lost();

  // One past the last id handed out (ids are contiguous across levels).
  uint32_t EndId() const {
    for (int k = kLevels - 1; k >= 0; --k) {
      const uint64_t r = levels_[k].reserved.load(std::memory_order_acquire);
      if (r > 0) return levels_[k].first_id + static_cast<uint32_t>(r < levels_[k].cap ? r
                                                                         : levels_[k].cap);
    }
    return 1;
  }
  Entry& At(uint32_t id) const {
    int k = 0;
    while (k + 1 < kLevels && id >= levels_[k + 1].first_id) ++k;
    return levels_[k].entries.load(std::memory_order_acquire)[id - levels_[k].first_id];
  }

  static constexpr uint32_t kLost = 0xffffffffu;
  Level levels_[kLevels];
  std::atomic<char*> chunks_[kChunks] = {};
  std::atomic<uint64_t> arena_used_{0};
  std::atomic<uint64_t> lost_{0};
  std::atomic<bool> warned_{false};
  uint32_t first_unemitted_ = 1;
  Sidecar* log_ = nullptr;
};

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_STRING_TABLE_H_
