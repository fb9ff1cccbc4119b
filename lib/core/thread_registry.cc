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

namespace {

ThreadBuffer* Own(ThreadBuffer* b, int32_t tid) {
  b->tid = tid;
  b->state.store(ThreadBuffer::kOwned, std::memory_order_release);
  return b;
}

}  // namespace

ThreadBuffer* ThreadRegistry::Claim(int32_t tid, uint32_t* retired) {
  uint32_t waiting = 0;
  for (ThreadBuffer* b = head_.load(std::memory_order_acquire); b; b = b->next) {
    const uint32_t state = b->state.load(std::memory_order_relaxed);
    uint32_t expected = ThreadBuffer::kFree;
    if (state == ThreadBuffer::kFree &&
        b->state.compare_exchange_strong(expected, ThreadBuffer::kClaiming,
                                         std::memory_order_acq_rel)) {
      return Own(b, tid);
    }
    if (state == ThreadBuffer::kRetired) ++waiting;
  }
  if (retired != nullptr) *retired = waiting;
  return nullptr;
}

ThreadBuffer* ThreadRegistry::Add(int32_t tid) {
  bool shared = false;
  void* mem = MapBuffer(nullptr, &shared);
  if (mem == nullptr) return nullptr;
  ThreadBuffer* b = SetUp(mem, ring_capacity_, shared, nullptr);
  ThreadBuffer* old = head_.load(std::memory_order_relaxed);
  do {
    b->next = old;
  } while (!head_.compare_exchange_weak(old, b, std::memory_order_release,
                                        std::memory_order_relaxed));
  return Own(b, tid);
}

bool ThreadRegistry::ResetAfterFork(ThreadBuffer* keep, int32_t keep_tid) {
  // Only this thread exists: the list is rebuilt in place. Every buffer but
  // `keep` is the ring of a thread of the parent's, which does not exist
  // here: its memory (the parent's pages, shared or copied) goes, and the
  // child's sidecar gets one region, not one for each ring the parent ever
  // had (before: a child of a parent with 256 threads got 130 MB of
  // sidecar, and a fork took 0.4 s).
  for (ThreadBuffer* b = head_.load(std::memory_order_relaxed); b != nullptr;) {
    ThreadBuffer* next = b->next;
    if (b != keep) RawMunmap(b, RegionBytes());
    b = next;
  }
  head_.store(nullptr, std::memory_order_relaxed);
  if (keep == nullptr) return true;
  if (keep->shared || sidecar_ != nullptr) {
    bool shared = false;
    if (MapBuffer(keep, &shared) == nullptr) {
      // Neither file nor memory at this address: never write into the
      // parent's ring. The thread forgets it (Runtime::OnForkChild).
      RawMunmap(keep, RegionBytes());
      return false;
    }
    SetUp(keep, ring_capacity_, shared, nullptr);
  } else {
    // Anonymous memory: the child's own copy already.
    keep->ring.Reset();
    keep->written.store(0, std::memory_order_relaxed);
    keep->pending = 0;
    keep->drained = 0;
    keep->next = nullptr;
  }
  keep->dropped.store(0, std::memory_order_relaxed);
  keep->dropped_reported = 0;
  Own(keep, keep_tid);
  head_.store(keep, std::memory_order_release);
  return true;
}

}  // namespace dlprof::core
