// What the asynchronous I/O trackers (io_uring, Linux AIO, POSIX AIO) share:
// the table of requests in flight, keyed by what the program's completion
// will name (an io_uring request's user_data, an iocb's or aiocb's
// address), and the recording of a request once the tracer has seen it
// complete and reaped.
//
// The hot path rule holds: a table is memory set aside when its ring or
// context is set up (or a static array), and its slots are claimed and
// taken with atomic compare-and-swap, never a lock; recording is a ring push.
// Many threads may submit and reap on one ring or context at once.
#ifndef DLPROF_LIB_INTERCEPT_ASYNC_REQUESTS_H_
#define DLPROF_LIB_INTERCEPT_ASYNC_REQUESTS_H_

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>

#include "dlprof/format.h"
#include "lib/core/runtime.h"
#include "lib/intercept/wrapper.h"

namespace dlprof::intercept::async {

// One request in flight. `event` is filled at submission with all but the
// outcome: kind, flags, start (the submission), file, fd, offset, size and
// the submitter and opcode in aux.
struct Request {
  enum State : uint32_t { kFree, kFilling, kPending, kCompleted };
  std::atomic<uint32_t> state;
  // Of the slot as a key's home: how far past it any claim for a key at
  // home here has had to go (RequestTable). In the padding before `key`.
  std::atomic<uint32_t> reach;
  std::atomic<uint64_t> key;
  uint64_t seq;           // submission order: the oldest of equal keys completes first
  uint64_t completed_ns;  // when the tracer first saw it complete
  uint64_t position;      // the tracker's own: io_uring's SQ position
  uint32_t extra;         // the tracker's own: io_uring's fixed-file slot + 1 (openat, close)
  uint32_t extra2;        // the tracker's own: io_uring's openat flags
  uint64_t address;       // the tracker's own: io_uring's files-update fd array
  bool record;            // false: tracked for what its completion does (an ignored file's
                          // openat or close keeps the fd table true), not recorded
  bool quiet_success;     // io_uring's IOSQE_CQE_SKIP_SUCCESS: no completion if it succeeds
  bool resolve_fixed;     // io_uring: its fixed slot (extra - 1) looked up at its completion
  bool appends;           // io_uring: a write that lands at the file's end (offset -1;
                          // at the file's position, it moves it there)
  Event event;
};

// A fixed table of requests, open addressing on the key's hash. Slots are
// never moved: a search looks from the key's home as far as any claim for a
// key of that home ever had to go (the home slot's `reach`), so a freed
// slot on the way ends no search. Per home, not one bound for the table: a
// table a few times larger than what is in flight has homes whose claims
// mostly stop at home, and a long run's one unlucky cluster lengthens the
// searches of its own homes only (a table-wide bound made every search
// look as far as the farthest claim ever made).
class RequestTable {
 public:
  constexpr RequestTable() = default;
  // A table over static memory, ready before any code runs.
  constexpr RequestTable(Request* slots, uint32_t count) : slots_(slots), mask_(count - 1) {}
  // `slots` zeroed memory for `count` requests, a power of two.
  void Init(Request* slots, uint32_t count) {
    slots_ = slots;
    mask_ = count - 1;
  }
  bool ready() const { return slots_ != nullptr; }
  uint32_t capacity() const { return slots_ != nullptr ? mask_ + 1 : 0; }

  // A free slot for `key`, claimed (kFilling) with its submission order;
  // nullptr when the table is full. Publish() once its event is filled.
  Request* Claim(uint64_t key) { return ClaimWith(key, next_seq_); }
  // The same, its submission order counted by `seq` (one for several
  // tables: async_growing.h).
  Request* ClaimWith(uint64_t key, std::atomic<uint64_t>& seq) {
    const uint32_t home = Home(key);
    for (uint32_t i = 0; i <= mask_; ++i) {
      Request& r = slots_[(home + i) & mask_];
      uint32_t free = Request::kFree;
      if (r.state.load(std::memory_order_relaxed) != Request::kFree ||
          !r.state.compare_exchange_strong(free, Request::kFilling, std::memory_order_acquire)) {
        continue;
      }
      // Before it is published: a completion can only be looked for once
      // its request was submitted, after Publish.
      std::atomic<uint32_t>& reach = slots_[home].reach;
      uint32_t far = reach.load(std::memory_order_relaxed);
      while (far < i && !reach.compare_exchange_weak(far, i, std::memory_order_relaxed)) {
      }
      r.key.store(key, std::memory_order_relaxed);
      r.seq = seq.fetch_add(1, std::memory_order_relaxed);
      r.completed_ns = 0;
      r.extra = r.extra2 = 0;
      r.record = true;
      r.quiet_success = r.resolve_fixed = false;
      return &r;
    }
    return nullptr;
  }
  static void Publish(Request* r) { r->state.store(Request::kPending, std::memory_order_release); }

  // The oldest pending request of `key`, taken (kCompleted: no other
  // thread will take it); nullptr when none. Free() it once recorded.
  // `loud_only`: none that posts no completion when it succeeds (an
  // io_uring completion of success is never one of those).
  Request* Take(uint64_t key, bool loud_only = false) {
    return TakeFound([&] { return Find(key, nullptr, loud_only); });
  }
  // The request `find()` returns (the oldest pending of a key), taken; found
  // again where another thread took it first (GrowingRequests' too).
  template <typename FindFn>
  static Request* TakeFound(FindFn find) {
    for (;;) {
      Request* oldest = find();
      if (oldest == nullptr) return nullptr;
      uint32_t pending = Request::kPending;
      if (oldest->state.compare_exchange_strong(pending, Request::kCompleted,
                                                std::memory_order_acquire)) {
        return oldest;
      }
    }
  }
  // The oldest pending request of `key`, left pending (POSIX AIO notes
  // when it saw one done before the program reaps it).
  // `matches`: how many are pending with the key; `loud_only` as Take's.
  Request* Find(uint64_t key, uint32_t* matches = nullptr, bool loud_only = false) {
    const uint32_t home = Home(key);
    const uint32_t probes = slots_[home].reach.load(std::memory_order_relaxed);
    Request* oldest = nullptr;
    uint32_t found = 0;
    for (uint32_t i = 0; i <= probes; ++i) {
      Request& r = slots_[(home + i) & mask_];
      if (r.state.load(std::memory_order_acquire) == Request::kPending &&
          r.key.load(std::memory_order_relaxed) == key && !(loud_only && r.quiet_success)) {
        ++found;
        if (oldest == nullptr || r.seq < oldest->seq) oldest = &r;
      }
    }
    if (matches != nullptr) *matches = found;
    return oldest;
  }
  // Take() for keys in flight once at most (an iocb's or aiocb's address):
  // the requests of `key` older than its newest are over though no
  // completion of theirs was seen -- a program that reaps from the kernel's
  // ring itself (fio's userspace_reap), or reuses an aiocb without
  // aio_return -- and go to `stale(request)`, taken, oldest first; the
  // newest is taken and returned. (Counted in the one search Take makes.)
  template <typename Stale>
  Request* TakeNewest(uint64_t key, Stale&& stale) {
    for (;;) {
      uint32_t matches = 0;
      Request* oldest = Find(key, &matches);
      if (oldest == nullptr) return nullptr;
      uint32_t pending = Request::kPending;
      if (!oldest->state.compare_exchange_strong(pending, Request::kCompleted,
                                                 std::memory_order_acquire)) {
        continue;
      }
      if (matches == 1) return oldest;
      stale(oldest);
    }
  }
  static void Free(Request* r) { r->state.store(Request::kFree, std::memory_order_release); }
  uint32_t Index(const Request* r) const { return static_cast<uint32_t>(r - slots_); }
  Request* At(uint32_t index) const { return &slots_[index]; }

  // Every slot in `state` (the slow paths: a submission the kernel took
  // only in part, a ring closed with requests in flight).
  template <typename F>
  void ForEach(uint32_t state, F&& f) {
    for (uint32_t i = 0; slots_ != nullptr && i <= mask_; ++i) {
      if (slots_[i].state.load(std::memory_order_acquire) == state) f(&slots_[i]);
    }
  }

 private:
  uint32_t Home(uint64_t key) const {
    return static_cast<uint32_t>((key * 0x9e3779b97f4a7c15ull) >> 32) & mask_;
  }
  Request* slots_ = nullptr;
  uint32_t mask_ = 0;
  std::atomic<uint64_t> next_seq_{0};
};

// A request submitted now by the calling thread: nested when another traced
// call of the thread is in progress (its I/O is that call's).
inline uint16_t SubmittedFlags(const core::ThreadContext& t) {
  return t.depth > 0 ? kEventFlagNested : 0;
}

// Whether a write request lands at the file's end, whatever offset it
// names: its fd is O_APPEND (the kernel appends, as pwrite(2) does there),
// or it asks so itself (RWF_APPEND in its rw_flags). Where is not known at
// submission: its offset is recorded as -1, as a write() without one.
// (RWF_NOAPPEND, Linux 6.9, writes at the offset on an O_APPEND fd.)
inline bool WriteAppends(int32_t fd, uint32_t rw_flags) {
  constexpr uint32_t kRwfAppend = 0x10;    // linux/fs.h
  constexpr uint32_t kRwfNoAppend = 0x20;  // (older headers lack it)
  if ((rw_flags & kRwfAppend) != 0) return true;
  return (rw_flags & kRwfNoAppend) == 0 && fd >= 0 && core::g_runtime->fds().Append(fd);
}

// The calling thread's id, for a request's submitter: its buffer knows it
// once it has recorded anything.
inline int32_t CallingTid(core::ThreadContext& t) {
  if (__builtin_expect(t.buffer != nullptr, 1)) return t.buffer->tid;
  return static_cast<int32_t>(syscall(SYS_gettid));
}

// A request's times are read on the traced calls' clock (tsc_clock.h): TSC
// ticks, which the flusher converts, where the process uses them (its
// event then carries kEventFlagTicks), else clock_gettime. A call reads
// the clock once for all it sees (Clock()); a request submitted on the TSC
// before the process fell back to clock_gettime has its later times read
// again on the TSC (OnClockOf), so that each event is on one clock.
struct Clock {
  uint16_t flag;  // kEventFlagTicks or 0
  uint64_t now;
};
__attribute__((always_inline)) inline Clock ReadClock() {
  const uint16_t flag = __atomic_load_n(&core::g_tick_flag, __ATOMIC_RELAXED);
  return {flag, core::EventNow(flag)};
}
__attribute__((always_inline)) inline uint64_t OnClockOf(const Event& e, const Clock& c) {
  const uint16_t own = static_cast<uint16_t>(e.flags & kEventFlagTicks);
  if (__builtin_expect(own == c.flag, 1)) return c.now;
  return core::EventNow(own);
}

// Records a finished request on the calling thread: `base` (its event as
// filled at submission, on its clock) completed at `completed` (as the
// tracer saw it, on the event's clock) with `result` (bytes moved, a new
// fd, 0, or -errno) and was reaped at `reaped`; `flags` adds to its own
// (which say, kEventFlagNested, whether it was submitted inside another
// traced call: ROMIO's MPI_File_iwrite makes its I/O with aio_write). Built
// straight in the ring's slot, in a recording window (wrapper.h: a signal
// handler's traced calls meanwhile wait for it); the thread's tracer-code
// mark is left as it was. The reaping delay in aux is in ticks on the TSC
// (the flusher makes it microseconds: TickScale::AsyncAux).
// Inlined where it is called: a call and its frame were a sixth of it.
__attribute__((always_inline)) inline void RecordRequest(core::ThreadContext& t, const Event& base,
                                                         uint64_t completed, int64_t result,
                                                         const Clock& reaped_at, uint16_t flags) {
  if (!core::KindEnabled(static_cast<EventKind>(base.kind))) return;
  const uint64_t reaped = OnClockOf(base, reaped_at);
  const bool internal = t.internal;
  OpenWindow(t, DLPROF_CALLER_FRAME());
  Event* slot = core::ReserveSlot(t);
  Event& e = slot != nullptr ? *slot : t.spare;
  e = base;
  e.flags |= flags;
  e.dur_ns = completed > e.start_ns ? completed - e.start_ns : 0;
  e.ret = result;
  e.err = result < 0 && result >= -4095 ? static_cast<int32_t>(-result) : 0;
  const uint64_t after = reaped > completed ? reaped - completed : 0;
  const uint64_t low = (base.flags & kEventFlagTicks)
                           ? format::TickScale::PackTicksAfter(after)
                           : PackAsyncAux(after, 0, 0) & 0xffffffffu;
  e.aux = (e.aux & ~uint64_t{0xffffffff}) | low;
  core::CommitEvent(t, slot);
  CloseWindow(t);
  t.internal = internal;
}

// A request over though the tracer saw no completion of it (TakeNewest's
// `stale`), recorded as the tracer knew it -- seen done (aio_error) with its
// result, unreaped; else in flight (-EINPROGRESS) -- and freed.
inline void RecordStale(core::ThreadContext& t, Request* r, const Clock& now) {
  const Event e = r->event;
  const uint64_t completed = r->completed_ns;
  RequestTable::Free(r);
  if (completed != 0) {
    const Clock seen{static_cast<uint16_t>(e.flags & kEventFlagTicks), completed};
    RecordRequest(t, e, completed, e.ret, seen, kEventFlagUnreaped);
  } else {
    RecordRequest(t, e, OnClockOf(e, now), -EINPROGRESS, now, 0);
  }
}

// Records an event the tracker made whole (io_uring_ring), the same way.
inline void RecordWhole(core::ThreadContext& t, const Event& e) {
  if (!core::KindEnabled(static_cast<EventKind>(e.kind))) return;
  const bool internal = t.internal;
  OpenWindow(t, DLPROF_CALLER_FRAME());
  core::Record(t, e);
  CloseWindow(t);
  t.internal = internal;
}

// Whether the calling thread's asynchronous I/O calls are followed now: the
// runtime runs and the thread is the program's (not in tracer code, not a
// signal handler interrupting a record).
inline bool Following(const core::ThreadContext& t) {
  return __atomic_load_n(&t.busy, __ATOMIC_RELAXED) == 0 &&
         core::g_state.load(std::memory_order_relaxed) ==
             static_cast<int>(core::RuntimeState::kRunning);
}

// The per-process trackers: what each does before the final block is
// written (requests completed and not reaped, or in flight: recorded as
// such) and in a forked child (the parent's rings and contexts are the
// parent's: forgotten). Registered with the runtime once, at the first
// ring or context set up.
void FlushAllAtExit();
void EnsureProcessHooks();
// Whether the process has forked, or is a fork's child, since the hooks were
// registered: a ring or context may then be another process's too.
bool Forked();
void UringFlushAtExit();
void UringForgetAfterFork();
void LinuxAioFlushAtExit();
void LinuxAioForgetAfterFork();
void PosixAioFlushAtExit();
void PosixAioForgetAfterFork();

}  // namespace dlprof::intercept::async

#endif  // DLPROF_LIB_INTERCEPT_ASYNC_REQUESTS_H_
