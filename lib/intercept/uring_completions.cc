// What a followed io_uring instance does with its requests' completions
// (uring_ring.h): the completion ring looked at for completions and reaps,
// what each completion does to the fd table, and the requests still in flight
// when the ring goes. Their submission: uring_requests.cc.
#include <fcntl.h>
#include <sched.h>

#include <cerrno>

#include "lib/core/file_ids.h"
#include "lib/intercept/describe.h"
#include "lib/intercept/program_memory.h"
#include "lib/intercept/uring_ring.h"

namespace dlprof::intercept::uring {

// The fd an openat request gave, as the tracer sees its completion. Seen
// late -- the program took it with no call the tracer sees (liburing's
// io_uring_peek_cqe) and has used the fd since -- the table may know the fd
// already from the program's own calls: the same file (written to, its
// position advanced: kept as it is), or another (a dup2 onto it, or a
// close the tracer missed: asked of the kernel, which knows).
// Set as opened only while the table does not know it.
namespace {
void SetOpened(core::FdTable& fds, int32_t fd, uint32_t file, bool append) {
  const uint32_t known = fds.File(fd);
  if (__builtin_expect(known == core::FdTable::kUnknown, 1)) {
    fds.Set(fd, file, append ? core::FdTable::kNoPosition : 0, append);
  } else if (known != file) {
    InTracerCode tracer;  // (its system calls are the tracer's)
    const bool shared = fds.KernelPosition(fd);  // a dup2 onto it, say: still so
    core::IdentifyFd(*core::g_runtime, fd);
    if (shared) fds.PositionFromKernel(fd);
  }
}
}  // namespace

// A request's completion: the result kept, and what it does to the fd
// table (an openat's new fd, a close, a read at the file's position).
__attribute__((always_inline)) inline void Ring::Complete(async::Request* r, int32_t res,
                                                         const async::Clock& now) {
  Event& e = r->event;
  r->completed_ns = async::OnClockOf(e, now);
  e.ret = res;
  if (__builtin_expect(r->resolve_fixed, 0)) {
    // Its slot's file, filled by now if a request before it filled it.
    int32_t slot_fd = -1;
    const uint32_t file = FixedFileOf(r->extra - 1, &slot_fd);
    if (FdTable::Named(file)) {
      e.file = file;
      e.fd = slot_fd;
      r->record = true;
    } else {
      NotNamed(file);  // one on a file the string table had no room for: dropped
    }
  }
  core::FdTable& fds = core::g_runtime->fds();
  switch (static_cast<EventKind>(e.kind)) {
    case EventKind::UringOpenat:
      if (res < 0) break;
      if (r->extra != 0) {
        // A direct descriptor, in the fixed slot asked for (or the one the
        // kernel picked, which is the result).
        SetFixed(r->extra == kFileIndexAlloc ? static_cast<uint32_t>(res) : r->extra - 1, -1,
                 e.file);
      } else {
        SetOpened(fds, res, e.file, (r->extra2 & O_APPEND) != 0);
        e.fd = res;
      }
      break;
    case EventKind::UringClose:
      if (r->extra != 0) {
        if (res == 0) SetFixed(r->extra - 1, -1, 0);
      } else if (res != -EBADF) {
        FdLeavesSlots(e.fd, true);
        fds.Clear(e.fd);  // (Linux frees the fd even when close fails otherwise)
      }
      break;
    case EventKind::UringOp:
      if (res > 0 && UnpackAsyncAux(e.aux).opcode == kOpFilesUpdate) {
        UpdateFilesByRequest(r->extra, r->address, static_cast<uint32_t>(res));
      }
      break;
    case EventKind::UringFsync:
    case EventKind::UringStatx:
      break;
    default:
      // A read or write at the file's position (offset -1) moved it: its
      // fd's, or its registered file's (whose fd may be gone).
      if (e.offset >= 0) break;
      if (r->appends) {
        // At the file's end, where is not known; one at the file's position
        // moved it there: the kernel's from now on (pwritev2's RWF_APPEND
        // at -1 moves it so), not this write's bytes on from where it was.
        if (!(e.flags & kEventFlagFixedFile) && e.fd >= 0) fds.PositionFromKernel(e.fd);
        break;
      }
      if (e.flags & kEventFlagFixedFile) {
        e.offset = AdvanceFixed(r->extra - 1, &e.fd, res > 0 ? res : 0);
      } else if (e.fd >= 0) {
        e.offset = fds.Advance(e.fd, res > 0 ? res : 0);
      }
      break;
  }
}

__attribute__((always_inline)) inline void Ring::RecordReaped(async::Request* r,
                                                            const async::Clock& now,
                                                            core::ThreadContext& t,
                                                            uint16_t flags) {
  if (r->record) {  // (not an untraced file's)
    async::RecordRequest(t, r->event, r->completed_ns, r->event.ret, now, flags);
  }
  async::RequestTable::Free(r);
}

void Ring::Observe(const async::Clock& now, core::ThreadContext& t) {
  if (blind()) return;
  const core::ThreadContext* none = nullptr;
  if (!observer_.compare_exchange_strong(none, &t, std::memory_order_acquire)) {
    return;  // another thread looks (or this one, interrupted by a handler)
  }
  ObserveLocked(now, t);
  observer_.store(nullptr, std::memory_order_release);
}

void Ring::ObserveLocked(const async::Clock& now, core::ThreadContext& t) {
  const uint32_t head = cq_head_->load(std::memory_order_acquire);
  const uint32_t tail = cq_tail_->load(std::memory_order_acquire);
  uint32_t seen = cq_seen_.load(std::memory_order_relaxed);
  uint32_t reaped = cq_reaped_.load(std::memory_order_relaxed);
  // Reaped: the program's head passed them.
  const uint32_t reaped_to = SeqBefore(head, seen) ? head : seen;
  for (; SeqBefore(reaped, reaped_to); ++reaped) {
    uint32_t& slot = cq_request_[reaped & cq_mask_];
    if (slot != 0) RecordReaped(requests_.At(slot - 1), now, t, 0);
    slot = 0;
  }
  // Completed: the kernel's tail passed them. Entries more than a ring
  // behind were overwritten before any call of the program let us look.
  uint32_t lost = 0;
  if (tail - seen > cq_entries_) {
    lost = tail - cq_entries_ - seen;
    seen = tail - cq_entries_;
    if (SeqBefore(reaped, seen)) reaped = seen;
  }
  for (; SeqBefore(seen, tail); ++seen) {
    const uint32_t pos = seen;
    const auto* c = reinterpret_cast<const Cqe*>(cqes_ + (size_t{pos & cq_mask_} << cqe_shift_));
    const uint64_t user_data = c->user_data;
    const int32_t res = c->res;
    const uint32_t cflags = c->flags;
    cq_request_[pos & cq_mask_] = 0;
    // (The entry read before the positions that say whether it still held.)
    std::atomic_thread_fence(std::memory_order_acquire);
    if (MayBeOverwritten(pos)) {
      ++lost;
      continue;
    }
    if (cflags & kCqeFlagMore) {
      // A multishot request goes on: each completion is a piece of it,
      // from the last one (or its submission).
      async::Request* r = requests_.Find(user_data);
      if (r == nullptr) continue;
      const uint64_t at = async::OnClockOf(r->event, now);
      if (r->record) async::RecordRequest(t, r->event, at, res, now, 0);
      r->event.start_ns = at;
      continue;
    }
    // (A request that posts no completion when it succeeds may share its
    // user_data with one that does: a success is the latter's.)
    async::Request* r = requests_.Take(user_data, res >= 0);
    if (r == nullptr) {
      if (SeqBefore(sq_registered_.load(std::memory_order_relaxed), SqHead())) {
        MakeBlind(BlindWhy());  // submitted where the tracer did not see it
        break;
      }
      NoteOnce(kNoteUnmatched,
               "completions that match no request the tracer saw submitted are not recorded");
      continue;
    }
    Complete(r, res, now);
    if (SeqBefore(pos, head)) {
      RecordReaped(r, now, t, 0);  // reaped before we looked
    } else {
      cq_request_[pos & cq_mask_] = requests_.Index(r) + 1;
    }
  }
  if (!SeqBefore(head, seen) && SeqBefore(reaped, seen)) reaped = seen;
  cq_seen_.store(seen, std::memory_order_relaxed);
  cq_reaped_.store(reaped, std::memory_order_relaxed);
  if (lost != 0) {
    NoteOnce(kNoteLost,
             "completions were reaped and overwritten between two calls the tracer saw; their "
             "requests show as never completed");
    cq_lost_sq_.store(SqHead(), std::memory_order_relaxed);
    cq_lost_.fetch_add(lost, std::memory_order_release);
  }
}

bool Ring::MayBeOverwritten(uint32_t pos) const {
  // The kernel writes CQ position pos + entries (pos's slot) only once it
  // has seen the program's head past pos, and publishes its tail after it
  // writes. So an entry not reaped holds even with the tail at pos + entries
  // (a ring exactly full: a wait for all it holds, an overflow flushed into
  // it); one reaped before we looked is taken as written over once the tail
  // has reached pos + entries. (A kernel that fills several entries before
  // it publishes its tail could be sooner: an entry peeked unseen, then a
  // ring all but full of completions since.)
  const uint32_t ahead = cq_tail_->load(std::memory_order_relaxed) - pos;
  if (ahead > cq_entries_) return true;  // (no kernel lets one unreaped fall so far behind)
  return ahead == cq_entries_ && SeqBefore(pos, cq_head_->load(std::memory_order_relaxed));
}

void Ring::TearDown(uint64_t now_ns, core::ThreadContext& t) {
  const async::Clock now{0, now_ns};  // (a request on the TSC reads it again)
  // Whoever looks at the completion ring finishes first (briefly: it makes
  // no call that can block) -- unless it is this thread, interrupted by the
  // signal handler that closes the ring or calls _exit: that look is left
  // as it was (it goes on if the handler returns), and only the requests
  // it has not taken are recorded here.
  const core::ThreadContext* none = nullptr;
  while (!observer_.compare_exchange_weak(none, &t, std::memory_order_acquire)) {
    if (none == &t) {
      RecordInFlight(now, t);
      UnregisterFiles();
      return;
    }
    none = nullptr;
    sched_yield();
  }
  if (!blind() && SeqBefore(sq_registered_.load(std::memory_order_relaxed), SqHead())) {
    MakeBlind(BlindWhy());
  }
  if (blind()) {
    // What the tracer can tell: the ring over the time it knew it.
    Event e{};
    e.kind = static_cast<uint16_t>(EventKind::UringRing);
    e.start_ns = since_ns_;
    e.dur_ns = now_ns > since_ns_ ? now_ns - since_ns_ : 0;
    e.fd = fd.load(std::memory_order_relaxed);
    e.offset = -1;
    e.size = SqHead() - sq_base_;
    e.ret = cq_tail_->load(std::memory_order_acquire) - cq_base_;
    e.aux = setup_flags_;
    async::RecordWhole(t, e);
  } else {
    ObserveLocked(now, t);
  }
  // Completed, not reaped: the program let them be.
  uint32_t reaped = cq_reaped_.load(std::memory_order_relaxed);
  const uint32_t seen = cq_seen_.load(std::memory_order_relaxed);
  for (; SeqBefore(reaped, seen); ++reaped) {
    uint32_t& slot = cq_request_[reaped & cq_mask_];
    if (slot != 0) RecordReaped(requests_.At(slot - 1), now, t, kEventFlagUnreaped);
    slot = 0;
  }
  cq_reaped_.store(reaped, std::memory_order_relaxed);
  RecordInFlight(now, t);
  UnregisterFiles();
  observer_.store(nullptr, std::memory_order_release);
}

void Ring::RecordInFlight(const async::Clock& now, core::ThreadContext& t) {
  // No completion seen (each taken first: a look in progress takes none twice).
  requests_.ForEach(async::Request::kPending, [&](async::Request* r) {
    uint32_t pending = async::Request::kPending;
    if (!r->state.compare_exchange_strong(pending, async::Request::kCompleted)) return;
    if (r->quiet_success) {
      RecordQuietOne(r, t);
      return;
    }
    r->completed_ns = async::OnClockOf(r->event, now);
    r->event.ret = -EINPROGRESS;
    RecordReaped(r, now, t, 0);
  });
}

}  // namespace dlprof::intercept::uring
