// String ids of small keys, for the record translator (activity_translator).
//
// A GPU job repeats a handful of record shapes (copy direction and memory
// kinds, memset memory kind, synchronization type, API function) millions of
// times, so the translator asks for the same few ids over and over. A
// direct-mapped array answers those with one compare and no hashing of a
// string; the map behind it keeps every key ever seen, so a key evicted from
// its slot never costs another intern.
//
// Not thread-safe, like the translator that owns it.
#ifndef DLPROF_LIB_CUPTI_ID_CACHE_H_
#define DLPROF_LIB_CUPTI_ID_CACHE_H_

#include <array>
#include <cstdint>
#include <unordered_map>

namespace dlprof::cupti {

class IdCache {
 public:
  // The id stored for `key`, or 0 when there is none.
  uint32_t Find(uint64_t key) {
    Slot& s = slots_[SlotOf(key)];
    if (s.id != 0 && s.key == key) return s.id;
    auto it = all_.find(key);
    if (it == all_.end()) return 0;
    s = Slot{key, it->second};
    return it->second;
  }
  // Stores a non-zero id (0 means "not interned yet": asked again next time).
  void Put(uint64_t key, uint32_t id) {
    if (id == 0) return;
    all_[key] = id;
    slots_[SlotOf(key)] = Slot{key, id};
  }
  size_t size() const { return all_.size(); }

 private:
  static constexpr int kSlotBits = 6;
  struct Slot {
    uint64_t key = 0;
    uint32_t id = 0;  // 0: empty
  };
  static size_t SlotOf(uint64_t key) {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> (64 - kSlotBits));
  }
  std::array<Slot, size_t{1} << kSlotBits> slots_{};
  std::unordered_map<uint64_t, uint32_t> all_;
};

}  // namespace dlprof::cupti

#endif  // DLPROF_LIB_CUPTI_ID_CACHE_H_
