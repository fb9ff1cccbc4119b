// The set of per-thread buffers the flusher drains.
//
// Buffers live on a list that only grows, so the flusher can walk it without
// a lock (a forked child's starts anew with one). A thread claims a free
// buffer (or adds a new one) on its first traced call and retires it when
// it exits; the flusher drains a retired buffer and frees it for the next
// thread once its events are written. A thread that finds none free while
// many wait to be freed writes them itself rather than add one
// (Runtime::AttachThread), which bounds memory in thread storms by the
// number of threads alive at once plus a few dozen.
//
// Each buffer is one region of the rings sidecar's file when there is one
// (lib/core/sidecar.h), else anonymous memory: a region starts with the
// ThreadBuffer, whose first fields are part of the sidecar's format
// (lib/format/sidecar.h), and its slots follow.
#ifndef DLPROF_LIB_CORE_THREAD_REGISTRY_H_
#define DLPROF_LIB_CORE_THREAD_REGISTRY_H_

#include <atomic>
#include <cstdint>

#include "lib/core/ring.h"

namespace dlprof::core {

struct ThreadBuffer {
  enum State : uint32_t { kFree, kClaiming, kOwned, kRetired };

  EventRing ring;
  // Up to `pending`, fixed offsets of the sidecar format.
  uint32_t magic = 0;                // format::kRegionMagic once set up in a sidecar
  int32_t tid = 0;
  // Ring positions the trace file holds: events [0, written) are in
  // complete blocks, [written, pending) in the block being written (the
  // sidecar header's inflight_end says whether it is complete). Flusher only.
  std::atomic<uint64_t> written{0};
  uint64_t pending = 0;
  uint64_t drained = 0;              // events handed to the encoder; flusher only
  std::atomic<uint32_t> state{kFree};
  bool shared = false;               // a region of the sidecar's file
  std::atomic<uint64_t> dropped{0};  // written by the owner only
  uint64_t dropped_reported = 0;     // flusher only
  ThreadBuffer* next = nullptr;      // immutable once on the list
};

class Sidecar;

class ThreadRegistry {
 public:
  void Configure(uint64_t ring_capacity) { ring_capacity_ = ring_capacity; }
  uint64_t ring_capacity() const { return ring_capacity_; }
  // Bytes of one buffer: the ThreadBuffer, its slots, to a whole page.
  uint64_t RegionBytes() const;
  // New buffers are regions of `sidecar` from now on (null: anonymous).
  void UseSidecar(Sidecar* sidecar) { sidecar_ = sidecar; }

  // Returns a buffer owned by the calling thread `tid`, or nullptr if memory
  // cannot be had: a free one (Claim), else a new one (Add).
  ThreadBuffer* Acquire(int32_t tid) {
    ThreadBuffer* b = Claim(tid, nullptr);
    return b != nullptr ? b : Add(tid);
  }
  // A free buffer, now owned by `tid`; nullptr when there is none, and then
  // `*retired` (if not null) counts the buffers retired and not yet freed:
  // those the flusher frees once their events are in the trace.
  ThreadBuffer* Claim(int32_t tid, uint32_t* retired);
  // A new buffer on the list, owned by `tid`; nullptr if memory cannot be had.
  ThreadBuffer* Add(int32_t tid);
  // The owner is gone; the flusher frees the buffer once it is drained.
  static void Retire(ThreadBuffer* b) {
    b->state.store(ThreadBuffer::kRetired, std::memory_order_release);
  }

  template <typename F>
  void ForEach(F&& f) {
    for (ThreadBuffer* b = head_.load(std::memory_order_acquire); b; b = b->next) f(b);
  }

  // In a forked child: the parent's events are the parent's to write, and
  // its other threads do not exist here. Their buffers leave the list and
  // are unmapped; `keep` (the forking thread's, may be null) is emptied and
  // stays owned, the only one. In the parent's sidecar it is mapped afresh
  // at the same address, from the child's sidecar (UseSidecar first) or
  // anonymous memory: its pages are still the parent's, and a store into
  // them would write into the parent's rings. False when `keep` could not
  // be given memory of its own: it is unmapped, and the thread must forget
  // it.
  bool ResetAfterFork(ThreadBuffer* keep, int32_t keep_tid);

 private:
  void* MapBuffer(void* fixed, bool* shared);
  uint64_t ring_capacity_ = 4096;
  Sidecar* sidecar_ = nullptr;
  std::atomic<ThreadBuffer*> head_{nullptr};
};

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_THREAD_REGISTRY_H_
