// Worker threads that decode trace blocks ahead of FileStream's merge: while
// the merge and the analysis run on the calling thread, each file's next
// blocks are already being decompressed, decoded and sorted. Many files
// decode in parallel.
#ifndef DLPROF_LIB_READ_DECODE_POOL_H_
#define DLPROF_LIB_READ_DECODE_POOL_H_

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "lib/format/trace_file.h"

namespace dlprof::read {

constexpr uint32_t kNoBlock = UINT32_MAX;

// A block one file will need next, decoded and sorted on a worker thread.
struct Prefetch {
  uint32_t block = kNoBlock;  // kNoBlock: idle
  format::BlockLocation where;
  const format::TraceReader* reader = nullptr;
  std::atomic<bool> done{false};  // set under the pool's mutex; the rest belongs
  bool ok = false;                // to the worker until done, then to the file
  std::string why;
  format::DecodedBlock data;
  std::vector<uint32_t> order;
};

class DecodePool {
 public:
  explicit DecodePool(unsigned threads);
  ~DecodePool();

  // Queues `p` (its block, where and reader set) for a worker.
  void Submit(Prefetch* p);
  // Returns once `p` is decoded.
  void Wait(Prefetch* p);

 private:
  void Work();

  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<Prefetch*> queue_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

// One file's blocks in the pool's hands: a few slots, each idle or holding a
// block submitted and not yet taken.
class PrefetchSlots {
 public:
  using Slots = std::array<Prefetch, 4>;

  // The slot holding block `k`, or null.
  Prefetch* Find(uint32_t k) {
    for (Prefetch& slot : slots_) {
      if (slot.block == k) return &slot;
    }
    return nullptr;
  }
  bool Holds(uint32_t k) const {
    for (const Prefetch& slot : slots_) {
      if (slot.block == k) return true;
    }
    return false;
  }
  // Events of the blocks submitted and not yet taken.
  uint64_t InFlightEvents() const {
    uint64_t n = 0;
    for (const Prefetch& slot : slots_) {
      if (slot.block != kNoBlock) n += slot.where.event_count;
    }
    return n;
  }
  Slots::iterator begin() { return slots_.begin(); }
  Slots::iterator end() { return slots_.end(); }

 private:
  Slots slots_;
};

}  // namespace dlprof::read

#endif  // DLPROF_LIB_READ_DECODE_POOL_H_
