#include "lib/core/thread_registry.h"

#include <sys/mman.h>

#include <new>

namespace dlprof::core {

ThreadBuffer* ThreadRegistry::Acquire(int32_t tid) {
  auto claim = [tid](ThreadBuffer* b) {
    b->tid = tid;
    b->state.store(ThreadBuffer::kOwned, std::memory_order_release);
    return b;
  };
  for (ThreadBuffer* b = head_.load(std::memory_order_acquire); b; b = b->next) {
    uint32_t expected = ThreadBuffer::kFree;
    if (b->state.load(std::memory_order_relaxed) == ThreadBuffer::kFree &&
        b->state.compare_exchange_strong(expected, ThreadBuffer::kClaiming,
                                         std::memory_order_acq_rel)) {
      return claim(b);
    }
  }
  size_t bytes = sizeof(ThreadBuffer) + sizeof(Event) * ring_capacity_;
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) return nullptr;
  auto* b = new (mem) ThreadBuffer();
  auto* slots = reinterpret_cast<Event*>(static_cast<char*>(mem) + sizeof(ThreadBuffer));
  b->ring.Init(slots, ring_capacity_);
  b->state.store(ThreadBuffer::kClaiming, std::memory_order_relaxed);
  ThreadBuffer* old = head_.load(std::memory_order_relaxed);
  do {
    b->next = old;
  } while (!head_.compare_exchange_weak(old, b, std::memory_order_release,
                                        std::memory_order_relaxed));
  return claim(b);
}

void ThreadRegistry::ResetAfterFork(ThreadBuffer* keep, int32_t keep_tid) {
  ForEach([&](ThreadBuffer* b) {
    b->ring.Reset();
    b->dropped.store(0, std::memory_order_relaxed);
    b->dropped_reported = 0;
    if (b == keep) {
      b->tid = keep_tid;
      b->state.store(ThreadBuffer::kOwned, std::memory_order_relaxed);
    } else {
      b->state.store(ThreadBuffer::kFree, std::memory_order_relaxed);
    }
  });
}

}  // namespace dlprof::core
