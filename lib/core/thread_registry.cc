// Per-thread event buffers: claiming, retiring, and their memory (anonymous
// or a region of the rings sidecar) -- thread_registry.h.
#include "lib/core/thread_registry.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <new>

#include "lib/core/raw_map.h"
#include "lib/core/sidecar.h"
#include "lib/format/sidecar.h"

namespace dlprof::core {

// The fields the decoder reads from a region sit where the format says.
static_assert(offsetof(ThreadBuffer, ring) + EventRing::HeadOffset() == format::kRegionHeadAt);
static_assert(offsetof(ThreadBuffer, ring) + EventRing::TailOffset() == format::kRegionTailAt);
static_assert(offsetof(ThreadBuffer, magic) == format::kRegionMagicAt);
static_assert(offsetof(ThreadBuffer, tid) == format::kRegionTidAt);
static_assert(offsetof(ThreadBuffer, written) == format::kRegionWrittenAt);
static_assert(offsetof(ThreadBuffer, pending) == format::kRegionPendingAt);
static_assert(sizeof(ThreadBuffer) % 64 == 0, "slots start on a cache line");

uint64_t ThreadRegistry::RegionBytes() const {
  const uint64_t page = 4096;
  return (sizeof(ThreadBuffer) + sizeof(Event) * ring_capacity_ + page - 1) / page * page;
}

void* ThreadRegistry::MapBuffer(void* fixed, bool* shared) {
  void* mem = sidecar_ != nullptr ? sidecar_->MapRegion(fixed) : nullptr;
  *shared = mem != nullptr;
  if (mem == nullptr) {
    mem = RawMmap(fixed, RegionBytes(), PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | (fixed != nullptr ? MAP_FIXED : 0), -1, 0);
    if (mem == MAP_FAILED) return nullptr;
  }
  return mem;
}

namespace {

// A fresh buffer in `mem`; `magic` last, so that a decoder never takes a
// region set up halfway for one.
ThreadBuffer* SetUp(void* mem, uint64_t capacity, bool shared, ThreadBuffer* next) {
  auto* b = new (mem) ThreadBuffer();
  auto* slots = reinterpret_cast<Event*>(static_cast<char*>(mem) + sizeof(ThreadBuffer));
  b->ring.Init(slots, capacity);
  b->shared = shared;
  b->next = next;
  b->state.store(ThreadBuffer::kClaiming, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  if (shared) b->magic = format::kRegionMagic;
  return b;
}

}  // namespace

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
  bool shared = false;
  void* mem = MapBuffer(nullptr, &shared);
  if (mem == nullptr) return nullptr;
  ThreadBuffer* b = SetUp(mem, ring_capacity_, shared, nullptr);
  ThreadBuffer* old = head_.load(std::memory_order_relaxed);
  do {
    b->next = old;
  } while (!head_.compare_exchange_weak(old, b, std::memory_order_release,
                                        std::memory_order_relaxed));
  return claim(b);
}

bool ThreadRegistry::ResetAfterFork(ThreadBuffer* keep, int32_t keep_tid) {
  bool kept = true;
  // Only this thread exists: the list can be rebuilt in place.
  ForEach([&](ThreadBuffer* b) {
    ThreadBuffer* next = b->next;
    if (b->shared || sidecar_ != nullptr) {
      bool shared = false;
      if (MapBuffer(b, &shared) == nullptr) {
        // Neither file nor memory at this address: never write into the
        // parent's ring; the buffer stays on the list, never to be claimed.
        b->state.store(ThreadBuffer::kClaiming, std::memory_order_relaxed);
        if (b == keep) kept = false;
        return;
      }
      SetUp(b, ring_capacity_, shared, next);
    } else {
      b->ring.Reset();
      b->written.store(0, std::memory_order_relaxed);
      b->pending = 0;
      b->drained = 0;
    }
    b->dropped.store(0, std::memory_order_relaxed);
    b->dropped_reported = 0;
    if (b == keep) {
      b->tid = keep_tid;
      b->state.store(ThreadBuffer::kOwned, std::memory_order_relaxed);
    } else {
      b->state.store(ThreadBuffer::kFree, std::memory_order_relaxed);
    }
  });
  return kept;
}

}  // namespace dlprof::core
