// Single-producer/single-consumer ring of events, one per traced thread.
//
// Like the perf ring buffer, head and tail are counters that only grow; the
// slot of counter c is c & mask. The producer owns head, the consumer (the
// process's flusher) owns tail:
//
//        tail                      head
//   ......|=========================|..........
//         ^ oldest unflushed event  ^ next free slot
//
// Recording is a store of one 64-byte slot and a release store of head: no
// lock, no system call, no allocation.
//
// The ring may live in the rings sidecar's shared file mapping
// (lib/core/sidecar.h), where a decoder reads head and tail after the
// process is gone: their offsets are part of the file format
// (lib/format/sidecar.h), checked below.
#ifndef DLPROF_LIB_CORE_RING_H_
#define DLPROF_LIB_CORE_RING_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "dlprof/format.h"

namespace dlprof::core {

class EventRing {
 public:
  // `slots` must hold `capacity` events, `capacity` a power of two.
  void Init(Event* slots, uint64_t capacity) {
    slots_ = slots;
    mask_ = capacity - 1;
    head_.store(0, std::memory_order_relaxed);
    tail_.store(0, std::memory_order_relaxed);
    cached_tail_ = 0;
  }
  // Forgets all content; only when no other thread uses the ring.
  void Reset() { Init(slots_, mask_ + 1); }

  // The format's view of the fields (lib/format/sidecar.h).
  static constexpr size_t HeadOffset() { return offsetof(EventRing, head_); }
  static constexpr size_t TailOffset() { return offsetof(EventRing, tail_); }

  uint64_t capacity() const { return mask_ + 1; }  // slots; it holds one event fewer

  // Producer side, in two steps so an event is built in place: Reserve()
  // returns the next free slot (nullptr when the ring is full) without
  // publishing it; Commit() publishes the reserved slot. The ring holds
  // capacity - 1 events: one slot always stays free, so that a producer
  // never stores into the slot of the oldest event the consumer has not
  // released, and a decoder of the rings sidecar can take every one of
  // them whole (lib/format/sidecar.cc).
  Event* Reserve() {
    uint64_t h = head_.load(std::memory_order_relaxed);
    if (h - cached_tail_ >= mask_) {
      cached_tail_ = tail_.load(std::memory_order_acquire);
      if (h - cached_tail_ >= mask_) return nullptr;
    }
    // The next event will go one slot further: start fetching its cache
    // line now, so that store does not wait for it.
    __builtin_prefetch(&slots_[(h + 1) & mask_], 1, 3);
    return &slots_[h & mask_];
  }
  void Commit() {
    head_.store(head_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
  }

  // Producer side. Returns false when the ring is full.
  bool TryPush(const Event& e) {
    Event* slot = Reserve();
    if (slot == nullptr) return false;
    *slot = e;
    Commit();
    return true;
  }

  // Consumer side: how many events are ready.
  uint64_t Readable() const {
    return head_.load(std::memory_order_acquire) - tail_.load(std::memory_order_relaxed);
  }

  // Consumer side: hands the ready events to `sink(const Event*, size_t)` in
  // at most two contiguous pieces, then frees their slots.
  template <typename Sink>
  uint64_t Drain(Sink&& sink) {
    const uint64_t t = tail_.load(std::memory_order_relaxed);
    const uint64_t n = Peek(t, sink);
    tail_.store(t + n, std::memory_order_release);
    return n;
  }

  // Consumer side, in two steps, for a ring whose events must stay in it
  // until they are safe elsewhere (the rings sidecar's: until the trace
  // holds them, lib/core/sidecar.h): Peek hands the events from position
  // `from` (at or past tail) to the newest, as Drain does, and returns how
  // many, without freeing a slot; Release frees the slots before `to`.
  // Until then a producer that comes round to them finds the ring full.
  template <typename Sink>
  uint64_t Peek(uint64_t from, Sink&& sink) const {
    const uint64_t h = head_.load(std::memory_order_acquire);
    if (h == from) return 0;
    const uint64_t first = from & mask_;
    const uint64_t n = h - from;
    const uint64_t piece = n < capacity() - first ? n : capacity() - first;
    sink(slots_ + first, static_cast<size_t>(piece));
    if (piece < n) sink(slots_, static_cast<size_t>(n - piece));
    return n;
  }
  void Release(uint64_t to) { tail_.store(to, std::memory_order_release); }
  // Consumer side: events past position `from` (Readable() from tail).
  uint64_t ReadableFrom(uint64_t from) const {
    return head_.load(std::memory_order_acquire) - from;
  }

 private:
  alignas(64) std::atomic<uint64_t> head_{0};
  uint64_t cached_tail_ = 0;  // producer's last view of tail_
  alignas(64) std::atomic<uint64_t> tail_{0};
  alignas(64) Event* slots_ = nullptr;
  uint64_t mask_ = 0;
};

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_RING_H_
