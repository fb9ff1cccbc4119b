// What a followed io_uring instance does with its requests (uring_ring.h):
// the submission queue entries read as the program hands them over, and the
// completion ring looked at for completions and reaps.
#include <fcntl.h>
#include <sched.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "lib/core/file_ids.h"
#include "lib/intercept/describe.h"
#include "lib/intercept/program_memory.h"
#include "lib/intercept/uring_ring.h"

namespace dlprof::intercept::uring {

// ---- submission ------------------------------------------------------------

uint32_t Ring::FixedFileOf(uint32_t slot, int32_t* out_fd) const {
  FixedFile* table = fixed_.load(std::memory_order_acquire);
  if (table == nullptr || slot >= fixed_count_.load(std::memory_order_relaxed)) {
    *out_fd = -1;
    return 0;
  }
  *out_fd = table[slot].fd.load(std::memory_order_relaxed);
  return table[slot].file.load(std::memory_order_relaxed);
}

// (Describe and Complete are inlined in their one caller each: a call and
// its frame a request.)
__attribute__((always_inline)) inline Ring::Interest Ring::Describe(const Sqe& s, int32_t tid,
                                                                     Event* e,
                                                                     uint32_t* open_flags) {
  *e = Event{};
  e->offset = -1;
  e->fd = -1;
  e->aux = PackAsyncAux(0, s.opcode, tid);
  uint16_t flags = (s.flags & (kSqeIoLink | kSqeIoHardlink)) ? kEventFlagLinked : 0;
  const bool fixed = (s.flags & kSqeFixedFile) != 0;
  uint32_t file = 0;
  int32_t fd = s.fd;
  // A fixed slot the tracer knows no file in: one a request before it in
  // flight fills (an openat into that slot, submitted with it and linked
  // before it), looked up again at its completion.
  bool later = false;
  auto file_of_fd = [&] {
    if (fixed) {
      flags |= kEventFlagFixedFile;
      file = FixedFileOf(static_cast<uint32_t>(s.fd), &fd);
      later = file == FdTable::kUnknown;
    } else if (fd >= 0) {
      file = core::FileOfFd(*core::g_runtime, fd);
    }
  };
  auto rw = [&](EventKind kind, uint64_t size) {
    e->kind = static_cast<uint16_t>(kind);
    file_of_fd();
    e->size = size;
    e->offset = s.off == ~uint64_t{0} ? -1 : static_cast<int64_t>(s.off);
  };
  bool keep_untraced = false;  // its completion keeps the fd table true
  switch (s.opcode) {
    case kOpRead: rw(EventKind::UringRead, s.len); break;
    case kOpWrite: rw(EventKind::UringWrite, s.len); break;
    case kOpReadFixed:
      flags |= kEventFlagFixedBuffer;
      rw(EventKind::UringReadFixed, s.len);
      break;
    case kOpWriteFixed:
      flags |= kEventFlagFixedBuffer;
      rw(EventKind::UringWriteFixed, s.len);
      break;
    case kOpReadv:
    case kOpWritev: {
      // (An array the program's pointer does not reach: the kernel fails
      // the request with -EFAULT; its size recorded as 0, unknown.)
      uint64_t bytes = 0;
      ProgramIovBytes(reinterpret_cast<const void*>(s.addr), s.len, &bytes);
      rw(s.opcode == kOpReadv ? EventKind::UringReadv : EventKind::UringWritev, bytes);
      break;
    }
    case kOpFsync:
      rw(EventKind::UringFsync, s.len);
      if (s.off == 0 && s.len == 0) e->offset = -1;  // the whole file
      break;
    case kOpOpenat:
    case kOpOpenat2: {
      e->kind = static_cast<uint16_t>(EventKind::UringOpenat);
      // A path the program's pointer does not reach: the kernel fails it
      // with -EFAULT, and it opens nothing to follow.
      char path[PATH_MAX];
      if (!CopyStringFromProgram(path, reinterpret_cast<const char*>(s.addr), sizeof(path))) {
        return kNone;
      }
      file = core::ResolvePath(*core::g_runtime, s.fd, path);
      fd = -1;
      if (s.opcode == kOpOpenat2) {
        OpenHow how{};
        const bool read = CopyFromProgram(&how, reinterpret_cast<const void*>(s.off),
                                          sizeof(how.flags));
        *open_flags = read ? static_cast<uint32_t>(how.flags) : 0;
      } else {
        *open_flags = s.op_flags;
      }
      if (s.file_index != 0) flags |= kEventFlagFixedFile;
      keep_untraced = true;
      break;
    }
    case kOpClose:
      e->kind = static_cast<uint16_t>(EventKind::UringClose);
      if (s.file_index != 0) {
        flags |= kEventFlagFixedFile;
        file = FixedFileOf(s.file_index - 1, &fd);
        later = file == FdTable::kUnknown;
      } else {
        file = core::g_runtime->fds().File(fd);
      }
      keep_untraced = true;
      break;
    case kOpFilesUpdate:  // its completion changes the registered files
      e->kind = static_cast<uint16_t>(EventKind::UringOp);
      keep_untraced = true;
      break;
    case kOpStatx: {
      e->kind = static_cast<uint16_t>(EventKind::UringStatx);
      char path[PATH_MAX];
      if (!CopyStringFromProgram(path, reinterpret_cast<const char*>(s.addr), sizeof(path))) {
        return kNone;  // (the kernel's -EFAULT)
      }
      if (path[0] == '\0') {
        file_of_fd();
      } else {
        file = core::ResolvePath(*core::g_runtime, s.fd, path);
        fd = s.fd >= 0 ? s.fd : -1;
      }
      break;
    }
    default:
      // Any other request (an unknown opcode too): what its fd tells.
      e->kind = static_cast<uint16_t>(EventKind::UringOp);
      file_of_fd();
      e->offset = static_cast<int64_t>(s.off) >= 0 ? static_cast<int64_t>(s.off) : -1;
      e->size = s.len;
      break;
  }
  e->flags = flags;
  e->file = file;
  e->fd = fd;
  if (FdTable::Named(file)) return kRecord;
  NotNamed(file);  // one on a file the string table had no room for: dropped
  if (later) return kLater;
  return keep_untraced ? kTrack : kNone;
}

uint32_t Ring::Submit(uint32_t end, uint32_t published, const async::Clock& now,
                      core::ThreadContext& t, uint32_t* from) {
  const int32_t tid = async::CallingTid(t);
  const uint16_t flags = async::SubmittedFlags(t);
  const uint32_t head = SqHead();
  uint32_t reg = sq_registered_.load(std::memory_order_relaxed);
  uint32_t start;
  if (SeqBefore(reg, head)) {
    // The kernel took entries that no call of ours saw submitted.
    MakeBlind(kBlindWhy);
    return 0;
  }
  for (;;) {
    start = SeqBefore(reg, head) ? head : reg;
    if (!SeqBefore(start, end)) return 0;
    if (end - start > sq_entries_) end = start + sq_entries_;  // not a real range
    if (sq_registered_.compare_exchange_weak(reg, end, std::memory_order_relaxed)) break;
  }
  *from = start;
  for (uint32_t pos = start; pos != end; ++pos) {
    const uint32_t index = sq_array_ != nullptr && SeqBefore(pos, published)
                               ? sq_array_[pos & sq_mask_]
                               : pos & sq_mask_;
    if (index >= sq_entries_) continue;  // the kernel drops it
    // (The program's entry: it stays as it is until the kernel has it.)
    const auto& s = *reinterpret_cast<const Sqe*>(sqes_ + (size_t{index} << sqe_shift_));
    async::Request* r = requests_.Claim(s.user_data);
    // A table full of requests that succeeded without a word, or of ones
    // followed only to be matched (a server's receives on its sockets, in
    // flight for long): they make room.
    if (r == nullptr && (LetGoQuietOnes(t) + LetGoUnrecorded() > 0 || LetGoLost(t))) {
      r = requests_.Claim(s.user_data);
    }
    if (r == nullptr) {
      NoteOnce(kNoteFull,
               "more requests in flight than the tracer can follow; some are not recorded");
      continue;
    }
    uint32_t open_flags = 0;
    const Interest interest = Describe(s, tid, &r->event, &open_flags);
    // A request the tracer does not record (a pipe's, a socket's, a NOP)
    // is still followed, so that its completion, which may name the same
    // user_data as a recorded one's, is taken by it: it does nothing.
    if (interest == kNone) r->event.kind = static_cast<uint16_t>(EventKind::UringOp);
    r->event.start_ns = now.now;
    r->event.flags |= flags | now.flag;
    r->position = pos;
    if (s.opcode == kOpOpenat || s.opcode == kOpOpenat2 || s.opcode == kOpClose) {
      r->extra = s.file_index;
    } else if (s.opcode == kOpFilesUpdate) {
      r->extra = static_cast<uint32_t>(s.off);  // the first slot (the kernel's u32)
      r->address = s.addr;
    } else {
      r->extra = (s.flags & kSqeFixedFile) ? static_cast<uint32_t>(s.fd) + 1 : 0;  // its slot
    }
    r->extra2 = open_flags;
    r->record = interest == kRecord;
    r->resolve_fixed = interest == kLater;
    r->quiet_success = (s.flags & kSqeCqeSkipSuccess) != 0;
    async::RequestTable::Publish(r);
  }
  return end - start;
}

uint32_t Ring::LetGoQuietOnes(core::ThreadContext& t) {
  // Most likely done long ago (a failure would have posted its completion);
  // one still in flight that fails later posts one that matches nothing.
  uint32_t freed = 0;
  requests_.ForEach(async::Request::kPending, [&](async::Request* r) {
    uint32_t pending = async::Request::kPending;
    if (!r->quiet_success ||
        !r->state.compare_exchange_strong(pending, async::Request::kCompleted)) {
      return;
    }
    RecordQuietOne(r, t);
    ++freed;
  });
  return freed;
}

namespace {
bool MovesData(uint16_t kind) {
  switch (static_cast<EventKind>(kind)) {
    case EventKind::UringRead:
    case EventKind::UringWrite:
    case EventKind::UringReadv:
    case EventKind::UringWritev:
    case EventKind::UringReadFixed:
    case EventKind::UringWriteFixed: return true;
    default: return false;
  }
}
}  // namespace

void Ring::RecordQuietOne(async::Request* r, core::ThreadContext& t) {
  // No failure posted: it succeeded, as far as anyone can tell -- its bytes
  // asked moved (0 for a request that moves none) -- at a time nobody knows:
  // no duration (its submission-to-now span is no I/O time), and unreaped
  // (there was nothing to reap). An openat's fd is not known: in flight.
  Event& e = r->event;
  if (e.kind == static_cast<uint16_t>(EventKind::UringOpenat)) {
    e.ret = -EINPROGRESS;
  } else {
    e.ret = MovesData(e.kind) ? static_cast<int64_t>(e.size) : 0;
  }
  r->completed_ns = e.start_ns;
  if (r->record) {
    const async::Clock at{static_cast<uint16_t>(e.flags & kEventFlagTicks), e.start_ns};
    async::RecordRequest(t, e, e.start_ns, e.ret, at, kEventFlagUnreaped);
  }
  async::RequestTable::Free(r);
}

uint32_t Ring::LetGoUnrecorded() {
  // Their completions, should they come, then match nothing (or, sharing a
  // user_data, a recorded request's: only when the table was full).
  uint32_t freed = 0;
  requests_.ForEach(async::Request::kPending, [&](async::Request* r) {
    uint32_t pending = async::Request::kPending;
    if (r->record || r->event.kind != static_cast<uint16_t>(EventKind::UringOp) ||
        !r->state.compare_exchange_strong(pending, async::Request::kFree)) {
      return;
    }
    ++freed;
  });
  return freed;
}

bool Ring::LetGoLost(core::ThreadContext& t) {
  // Whose completions were lost nobody knows: the oldest request submitted
  // before the last loss was found (completions come mostly in the order
  // submitted), recorded as never seen complete, with no duration (none of
  // its time is known to be I/O time). Only when the table is full: one
  // guessed wrong, still in flight, goes only when it stood in the way.
  uint32_t lost = cq_lost_.load(std::memory_order_acquire);
  while (lost != 0) {
    const uint32_t before = cq_lost_sq_.load(std::memory_order_relaxed);
    async::Request* oldest = nullptr;
    requests_.ForEach(async::Request::kPending, [&](async::Request* r) {
      if (SeqBefore(static_cast<uint32_t>(r->position), before) &&
          (oldest == nullptr || r->seq < oldest->seq)) {
        oldest = r;
      }
    });
    if (oldest == nullptr) {
      // All gone already (let go otherwise, or at a close): nothing owed.
      cq_lost_.compare_exchange_strong(lost, 0, std::memory_order_relaxed);
      return false;
    }
    if (!cq_lost_.compare_exchange_weak(lost, lost - 1, std::memory_order_acq_rel)) continue;
    uint32_t pending = async::Request::kPending;
    if (!oldest->state.compare_exchange_strong(pending, async::Request::kCompleted)) {
      cq_lost_.fetch_add(1, std::memory_order_relaxed);  // taken meanwhile: look again
      lost = cq_lost_.load(std::memory_order_acquire);
      continue;
    }
    Event& e = oldest->event;
    if (oldest->record) {
      const async::Clock at{static_cast<uint16_t>(e.flags & kEventFlagTicks), e.start_ns};
      async::RecordRequest(t, e, e.start_ns, -EINPROGRESS, at, 0);
    }
    async::RequestTable::Free(oldest);
    return true;
  }
  return false;
}

void Ring::UnsubmitSome(uint32_t from, uint32_t end) {
  // Not taken: those the kernel's head has not passed; on an SQPOLL ring,
  // whose kernel thread takes what is published when it comes to it, those
  // the program has not published (liburing's, prepared, when the call only
  // waited: io_uring_wait_cqe_timeout with IORING_FEAT_EXT_ARG).
  const uint32_t left = sqpoll() ? SqTail() : SqHead();
  if (!SeqBefore(left, end)) return;  // all taken
  const uint32_t first = SeqBefore(from, left) ? left : from;
  requests_.ForEach(async::Request::kPending, [&](async::Request* r) {
    const auto pos = static_cast<uint32_t>(r->position);
    uint32_t pending = async::Request::kPending;
    if (!SeqBefore(pos, first) && SeqBefore(pos, end)) {
      r->state.compare_exchange_strong(pending, async::Request::kFree, std::memory_order_acq_rel);
    }
  });
  uint32_t expected = end;
  sq_registered_.compare_exchange_strong(expected, first, std::memory_order_relaxed);
}


// ---- completion ------------------------------------------------------------

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
        MakeBlind(kBlindWhy);  // submitted where the tracer did not see it
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
    MakeBlind(kBlindWhy);
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
