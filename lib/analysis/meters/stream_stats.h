// The analysis's per-stream statistics: the counters one process keeps for
// one file under one rank while the summary walks the events, and how they
// roll up into the run, rank, process and file figures (summary_builder.cc).
#ifndef DLPROF_LIB_ANALYSIS_STREAM_STATS_H_
#define DLPROF_LIB_ANALYSIS_STREAM_STATS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lib/analysis/summary/summary.h"

namespace dlprof::analysis {

// Counts of the first kStreamDistinct distinct keys of one stream (later new
// keys are not counted: like Darshan's common-value counters, which stop at
// 32), in a flat table that stays in L1: the summary looks one up per read
// or write, and a random access pattern has a new stride every time.
constexpr size_t kStreamDistinct = 64;

template <typename K>
class BoundedCounts {
 public:
  // Counts `key` `n` times (n > 0).
  [[gnu::always_inline]] void Add(K key, uint64_t n = 1) {
    // Most streams repeat one access size: the last key's slot is kept.
    if (last_ != nullptr && last_->key == key) {
      last_->count += n;
      return;
    }
    const uint64_t hash = Hash(key);
    // Once full, a key not in the table is not counted: a random access
    // pattern brings a new stride every time, and the filter turns nearly
    // all of those away on one bit, without a probe or its mispredictions.
    if (filter_ != nullptr && (filter_[(hash >> 58)] >> ((hash >> 52) & 63) & 1) == 0) return;
    if (slots_.empty()) Grow();
    const size_t mask = slots_.size() - 1;
    for (size_t i = (hash >> 20) & mask;; i = (i + 1) & mask) {
      Slot& s = slots_[i];
      if (s.count != 0 && s.key == key) {
        s.count += n;
        last_ = &s;
        return;
      }
      if (s.count == 0) {
        if (used_ >= kStreamDistinct) return;
        s = {key, n};
        last_ = &s;
        // At most a quarter full: a key that is not there is found out quickly.
        if (++used_ * 4 > slots_.size()) Grow();
        if (used_ == kStreamDistinct) BuildFilter();
        return;
      }
    }
  }
  template <typename Map>
  void MergeInto(Map* into) const {
    for (const Slot& s : slots_) {
      if (s.count == 0) continue;
      auto it = into->find(s.key);
      if (it != into->end()) {
        it->second += s.count;
      } else if (into->size() < kMaxDistinctSizes) {
        into->emplace(s.key, s.count);
      }
    }
  }

 private:
  struct Slot {
    K key;
    uint64_t count;
  };
  static uint64_t Hash(K key) { return static_cast<uint64_t>(key) * 0x9E3779B97F4A7C15ull; }
  [[gnu::noinline]] void Grow() {
    last_ = nullptr;
    std::vector<Slot> old(slots_.empty() ? 16 : slots_.size() * 2);
    old.swap(slots_);
    const size_t mask = slots_.size() - 1;
    for (const Slot& s : old) {
      if (s.count == 0) continue;
      size_t i = (Hash(s.key) >> 20) & mask;
      while (slots_[i].count != 0) i = (i + 1) & mask;
      slots_[i] = s;
    }
  }
  // 4096 bits, one per value of the hash's top 12 bits: the 64 keys set
  // under 2% of them.
  [[gnu::noinline]] void BuildFilter() {
    filter_ = std::make_unique<uint64_t[]>(64);
    for (const Slot& s : slots_) {
      if (s.count == 0) continue;
      const uint64_t hash = Hash(s.key);
      filter_[hash >> 58] |= uint64_t{1} << ((hash >> 52) & 63);
    }
  }
  std::vector<Slot> slots_;
  std::unique_ptr<uint64_t[]> filter_;  // null until the table is full
  size_t used_ = 0;
  Slot* last_ = nullptr;  // the slot of the last key added
};

// Where one process's previous read, and previous write, of one file ended.
// Shared by its streams of every rank: MPI_Init gives a process its rank
// mid-run.
struct Cursor {
  struct End {
    bool known = false;
    uint64_t at = 0;
  };
  End read, write, map;  // map: the end of the previous fault's page
};

// The common access sizes and strides of reads, or of writes.
struct Counts {
  BoundedCounts<uint64_t> sizes;
  BoundedCounts<int64_t> strides;
};

// The I/O of one process to one file under one rank. Each event updates its
// stream only (one set of counters, not one per level); the streams are
// rolled up into the run, rank, process and file figures at the end.
struct Stream {
  IoStats stats;
  Cursor* cursor;
  Counts read, write;
  IoStats* levels[4] = {};
  int level_count = 0;
  const std::string* file_key = nullptr;  // its file's name in Summary::files
};

// Adds the stream's figures to each of its levels.
void RollUp(Stream& st);

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_STREAM_STATS_H_
