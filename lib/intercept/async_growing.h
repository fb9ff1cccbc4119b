// A table of requests in flight (async_requests.h's RequestTable) that grows
// when it is full: an io_uring ring's kernel holds as many requests in
// flight as the program submits -- completions beyond the CQ ring wait in
// its overflow list (IORING_FEAT_NODROP) -- not a number the ring's size
// tells. (A table of twice the ring's entries lost the rest: 512 of 1280
// reads of a program that submitted 20 rounds of 64 before reaping.)
//
// Slots are never moved: a full table gets another part, as large as all
// before it (so the whole doubles), mapped then -- one system call, on the
// path of the request that found the table full, a power of two requests
// apart -- and the parts before it stay as they are, read by whoever reads
// them meanwhile. A request is claimed in the first part with room; a search
// looks in each part (one part, all most programs ever have, costs what the
// RequestTable's search costs). The parts beyond the first are let go when
// the table is set up again (Init: a ring set up anew in the same place,
// which none reads).
#ifndef DLPROF_LIB_INTERCEPT_ASYNC_GROWING_H_
#define DLPROF_LIB_INTERCEPT_ASYNC_GROWING_H_

#include <sched.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdint>

#include "lib/core/raw_map.h"
#include "lib/intercept/async_requests.h"

namespace dlprof::intercept::async {

class GrowingRequests {
 public:
  // All parts together hold at most so many requests (128 MiB of them):
  // beyond it, a request is not recorded (said by the caller).
  static constexpr uint32_t kMost = 1u << 20;

  // The first part: `slots`, zeroed memory for `count` requests, a power of
  // two (the caller's, kept from one set-up to the next). Parts added since
  // the last Init are let go.
  void Init(Request* slots, uint32_t count) {
    const uint32_t parts = parts_count_.load(std::memory_order_relaxed);
    for (uint32_t i = 1; i < parts; ++i) {
      core::RawMunmap(parts_[i].At(0), size_t{parts_[i].capacity()} * sizeof(Request));
    }
    parts_[0].Init(slots, count);
    first_[0] = 0;
    parts_count_.store(1, std::memory_order_release);
  }

  // A free slot for `key`, claimed (RequestTable::Claim); nullptr when every
  // part is full (then Grow() and claim again).
  Request* Claim(uint64_t key) {
    const uint32_t parts = parts_count_.load(std::memory_order_acquire);
    for (uint32_t i = 0; i < parts; ++i) {
      if (Request* r = parts_[i].ClaimWith(key, seq_)) return r;
    }
    return nullptr;
  }

  // Another part, as large as all before it: false at kMost, or when the
  // memory cannot be had. One thread grows at a time; one that finds
  // another growing waits for it and claims again (true).
  bool Grow() {
    bool busy = false;
    if (!growing_.compare_exchange_strong(busy, true, std::memory_order_acquire)) {
      while (growing_.load(std::memory_order_acquire)) sched_yield();
      return true;
    }
    const uint32_t parts = parts_count_.load(std::memory_order_relaxed);
    const uint32_t total = first_[parts - 1] + parts_[parts - 1].capacity();
    bool grown = false;
    if (parts < kMaxParts && total <= kMost / 2) {
      void* m = core::RawMmap(nullptr, size_t{total} * sizeof(Request), PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m != MAP_FAILED) {
        parts_[parts].Init(static_cast<Request*>(m), total);
        first_[parts] = total;
        parts_count_.store(parts + 1, std::memory_order_release);
        grown = true;
      }
    }
    growing_.store(false, std::memory_order_release);
    return grown;
  }

  // RequestTable's, over all parts.
  Request* Take(uint64_t key, bool loud_only = false) {
    if (__builtin_expect(parts_count_.load(std::memory_order_acquire) == 1, 1)) {
      return parts_[0].Take(key, loud_only);
    }
    return RequestTable::TakeFound([&] { return Find(key, nullptr, loud_only); });
  }
  Request* Find(uint64_t key, uint32_t* matches = nullptr, bool loud_only = false) {
    const uint32_t parts = parts_count_.load(std::memory_order_acquire);
    Request* oldest = nullptr;
    uint32_t found = 0;
    for (uint32_t i = 0; i < parts; ++i) {
      uint32_t here = 0;
      Request* r = parts_[i].Find(key, &here, loud_only);
      found += here;
      if (r != nullptr && (oldest == nullptr || r->seq < oldest->seq)) oldest = r;
    }
    if (matches != nullptr) *matches = found;
    return oldest;
  }
  template <typename F>
  void ForEach(uint32_t state, F&& f) {
    const uint32_t parts = parts_count_.load(std::memory_order_acquire);
    for (uint32_t i = 0; i < parts; ++i) parts_[i].ForEach(state, f);
  }
  // A request's place over all parts, and the request at one.
  uint32_t Index(const Request* r) const {
    const uint32_t parts = parts_count_.load(std::memory_order_acquire);
    for (uint32_t i = 0; i < parts; ++i) {
      const Request* base = parts_[i].At(0);
      if (r >= base && r < base + parts_[i].capacity()) return first_[i] + parts_[i].Index(r);
    }
    return 0;  // (not one of ours: none asks)
  }
  Request* At(uint32_t index) const {
    uint32_t i = parts_count_.load(std::memory_order_acquire) - 1;
    while (i > 0 && index < first_[i]) --i;
    return parts_[i].At(index - first_[i]);
  }
  uint32_t capacity() const {
    const uint32_t parts = parts_count_.load(std::memory_order_acquire);
    return first_[parts - 1] + parts_[parts - 1].capacity();
  }

 private:
  // (The first part at least 64 requests: 15 doublings reach kMost.)
  static constexpr uint32_t kMaxParts = 16;
  RequestTable parts_[kMaxParts];
  uint32_t first_[kMaxParts] = {};  // each part's first place over all parts
  std::atomic<uint32_t> parts_count_{1};
  std::atomic<bool> growing_{false};
  std::atomic<uint64_t> seq_{0};  // submission order over all parts
};

}  // namespace dlprof::intercept::async

#endif  // DLPROF_LIB_INTERCEPT_ASYNC_GROWING_H_
