// The set of per-thread buffers the flusher drains.
//
// Buffers live on a list that only grows, so the flusher can walk it without
// a lock. A thread claims a free buffer (or adds a new one) on its first
// traced call and retires it when it exits; the flusher drains a retired
// buffer and frees it for the next thread, which bounds memory in thread
// storms by the number of threads alive at once.
#ifndef DLPROF_LIB_CORE_THREAD_REGISTRY_H_
#define DLPROF_LIB_CORE_THREAD_REGISTRY_H_

#include <atomic>
#include <cstdint>

#include "lib/core/ring.h"

namespace dlprof::core {

struct ThreadBuffer {
  enum State : uint32_t { kFree, kClaiming, kOwned, kRetired };

  EventRing ring;
  std::atomic<uint32_t> state{kFree};
  int32_t tid = 0;
  std::atomic<uint64_t> dropped{0};  // written by the owner only
  uint64_t dropped_reported = 0;     // flusher only
  ThreadBuffer* next = nullptr;      // immutable once on the list
};

class ThreadRegistry {
 public:
  void Configure(uint64_t ring_capacity) { ring_capacity_ = ring_capacity; }

  // Returns a buffer owned by the calling thread `tid`, or nullptr if memory
  // cannot be had.
  ThreadBuffer* Acquire(int32_t tid);
  // The owner is gone; the flusher frees the buffer once it is drained.
  static void Retire(ThreadBuffer* b) { b->state.store(ThreadBuffer::kRetired, std::memory_order_release); }

  template <typename F>
  void ForEach(F&& f) {
    for (ThreadBuffer* b = head_.load(std::memory_order_acquire); b; b = b->next) f(b);
  }

  // In a forked child: the parent's events are the parent's to write, and
  // its other threads do not exist here. Every buffer is emptied and freed;
  // `keep` (the forking thread's) stays owned.
  void ResetAfterFork(ThreadBuffer* keep, int32_t keep_tid);

 private:
  uint64_t ring_capacity_ = 4096;
  std::atomic<ThreadBuffer*> head_{nullptr};
};

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_THREAD_REGISTRY_H_
