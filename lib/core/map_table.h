// The process's file mappings: which address ranges map which traced file
// from which offset, and since and until when, so that a page fault's
// address names a file and an offset (map_faults.h) and munmap and msync
// name their file.
//
// The mmap, munmap and mremap wrappers keep it true, a partial munmap
// splitting a mapping and MAP_FIXED replacing what it covers; a forked
// child inherits it with the memory it describes. A mapping that ends keeps
// its slot, with its end time, until every fault recorded before that end
// has been resolved (the flusher frees it: FreeEndedBefore), so that a fault
// read from the kernel's buffer after the munmap still finds its file.
//
// Lock-free, because mmap may be called from a signal handler: each slot is
// claimed with a compare-and-swap and published with a release store of its
// state, which carries a generation so that a reader notices a slot reused
// under it. A reader scans the slots up to the highest ever claimed.
//
// The first kSlots slots are in the object itself (mmap may come before any
// constructor); more come in levels, each mapped (MAP_NORESERVE, by the
// system call) when the ones before it are full, as the string table's:
// a Megatron blend maps two per shard, a Hugging Face data set one per
// Arrow file, thousands of them, and a map the table does not hold has its
// faults unnamed. Level k >= 1 holds 3 * kSlots << 2 (k - 1) slots: up to
// kMaxSlots in all, past the kernel's default limit of maps per process
// (vm.max_map_count, 65530) even with as many ended ones not freed yet. A
// mapping that finds no slot (a level the kernel would not map) is counted
// in not_tracked(): the flusher writes the count into the trace
// (maps_untracked) and says so on stderr.
#ifndef DLPROF_LIB_CORE_MAP_TABLE_H_
#define DLPROF_LIB_CORE_MAP_TABLE_H_

#include <atomic>
#include <cstdint>
#include <vector>

namespace dlprof::core {

// One mapping of a file, or a part of one that is left.
struct FileMapping {
  uint64_t start = 0, end = 0;  // address range [start, end)
  uint64_t file_offset = 0;     // the file offset mapped at `start`
  uint32_t file = 0;            // string id of the path
  int32_t fd = -1;              // the descriptor it was mapped through
  uint64_t mapped_ns = 0;       // CLOCK_MONOTONIC_RAW ns
  uint64_t unmapped_ns = 0;     // 0 while mapped

  bool Holds(uint64_t addr) const { return addr >= start && addr < end; }
  // Mapped at `t`: a fault at `t` on an address it holds was a fault on it.
  bool LiveAt(uint64_t t) const { return mapped_ns <= t && (unmapped_ns == 0 || t < unmapped_ns); }
};

class MapTable {
 public:
  static constexpr uint32_t kSlots = 8192;  // in the object
  static constexpr int kLevels = 5;          // the object's and four mapped
  static constexpr uint32_t kMaxSlots = kSlots << 2 * (kLevels - 1);  // 2,097,152

  // [addr, addr + len) now maps `file` from `offset`.
  void Add(uint64_t addr, uint64_t len, uint32_t file, int32_t fd, uint64_t offset, uint64_t now);
  // [addr, addr + len) is no longer mapped (munmap, or MAP_FIXED over it):
  // the mappings it covers end, the parts outside it stay as new mappings.
  void Remove(uint64_t addr, uint64_t len, uint64_t now);
  // mremap: the mapping at `old_addr` is now [new_addr, new_addr + new_len)
  // (as well, with `old_len` 0: the kernel maps the same pages again and
  // leaves the old mapping). False when no traced file is mapped there.
  bool Move(uint64_t old_addr, uint64_t old_len, uint64_t new_addr, uint64_t new_len,
            uint64_t now, FileMapping* moved);
  // The live mapping that holds `addr`, copied to `out`.
  bool FindLive(uint64_t addr, FileMapping* out) const;
  // Of the mappings live at some moment since `t` (ended ones too: those
  // not freed yet, and the latest one freed), the one made last, when there
  // is one. The flusher's, as FreeEndedBefore.
  bool LatestSince(uint64_t t, FileMapping* out) const;
  // Every mapping, live or ended and not yet freed (the flusher's snapshot).
  void Snapshot(std::vector<FileMapping>* out) const;
  // Frees the slots of mappings that ended before `t`.
  void FreeEndedBefore(uint64_t t);
  // From now on a mapping that ends keeps its slot until the flusher frees
  // it, having resolved the faults on it (fault events on). Until then there
  // is no fault to resolve and a slot is free again as its mapping ends:
  // the table never fills with ended mappings (8192 maps and unmaps of a
  // file, and the next one was not tracked).
  void KeepEnded() { keep_ended_.store(true, std::memory_order_release); }
  // Mappings that found no slot, since the start (a forked child: its
  // parent's too).
  uint64_t not_tracked() const { return not_tracked_.load(std::memory_order_relaxed); }
  // Whether a traced file is mapped now (a forked child: inherited).
  bool AnyLive() const { return live_.load(std::memory_order_acquire) > 0; }

 private:
  // state: generation << 2 | kFree / kBusy / kLive / kEnded.
  enum : uint64_t { kFree = 0, kBusy = 1, kLive = 2, kEnded = 3 };
  struct Slot {
    std::atomic<uint64_t> state{0};
    FileMapping m;
    std::atomic<uint64_t> unmapped_ns{0};
  };
  static uint64_t Phase(uint64_t state) { return state & 3; }
  // Claims a free slot (state kBusy), mapping a level when those before it
  // are taken; nullptr when none can be had.
  Slot* Claim(uint64_t* state);
  // The first slot index of level k, and its slots (null: not mapped yet).
  static uint32_t LevelStart(int k) { return k == 0 ? 0 : kSlots << 2 * (k - 1); }
  static uint32_t LevelEnd(int k) { return kSlots << 2 * k; }
  Slot* Level(int k) const {
    return k == 0 ? const_cast<Slot*>(slots_) : more_[k].load(std::memory_order_acquire);
  }
  Slot* MapLevel(int k);
  // Calls f(slot) for the slots [0, high_), level by level.
  template <typename F>
  void ForEachClaimed(F&& f) const {
    const uint32_t high = high_.load(std::memory_order_acquire);
    for (int k = 0; k < kLevels && LevelStart(k) < high; ++k) {
      Slot* level = Level(k);
      if (level == nullptr) return;  // (claimed slots are in mapped levels)
      const uint32_t end = high < LevelEnd(k) ? high : LevelEnd(k);
      for (uint32_t i = LevelStart(k); i < end; ++i) f(level[i - LevelStart(k)]);
    }
  }
  void Publish(Slot* s, uint64_t state, uint64_t phase);
  // A consistent copy of a slot that is live or ended; false otherwise.
  bool Read(const Slot& s, FileMapping* out, bool* live) const;
  // Ends a live slot at `now`; false when another thread ended it first.
  bool End(Slot& s, uint64_t now);

  Slot slots_[kSlots];
  std::atomic<Slot*> more_[kLevels] = {};  // levels 1.. (more_[0] unused)
  std::atomic<uint32_t> high_{0};     // slots [0, high_) have been claimed once
  std::atomic<bool> keep_ended_{false};
  std::atomic<int64_t> live_{0};
  std::atomic<uint64_t> not_tracked_{0};
  // The ended mapping made last of those FreeEndedBefore freed (flusher
  // only): a thread's read-ahead through it may be looked at later.
  FileMapping last_freed_;
};

MapTable& ProcessMaps();

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_MAP_TABLE_H_
