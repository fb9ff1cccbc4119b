// What a followed io_uring instance does with the requests the program
// submits (uring_ring.h): the submission queue entries read as the program
// hands them over, and the requests let go whose completions will not be seen.
// Their completions: uring_completions.cc.
#include <cerrno>
#include <climits>

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
      // (statx's flags share the entry's op_flags; "" without AT_EMPTY_PATH
      // is ENOENT, naming no file.)
      if (path[0] == '\0' && (s.op_flags & AT_EMPTY_PATH) != 0) {
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
    MakeBlind(BlindWhy());
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
    // Else more in flight than it holds (the kernel keeps completions
    // beyond its CQ ring: IORING_FEAT_NODROP): it grows.
    if (r == nullptr && requests_.Grow()) r = requests_.Claim(s.user_data);
    if (r == nullptr) {
      NoteOnce(kNoteFull,
               "more requests in flight on one ring than the tracer can follow (1048576, or no "
               "memory for more); the others are not recorded");
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
    // A write that lands at the file's end whatever its offset: where is
    // not known (-1), and its completion must not take it for a write at
    // the file's position, which it would move by its bytes.
    r->appends = (s.opcode == kOpWrite || s.opcode == kOpWriteFixed || s.opcode == kOpWritev) &&
                 async::WriteAppends(interest == kLater ? -1 : r->event.fd, s.op_flags);
    if (r->appends) r->event.offset = -1;
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

}  // namespace dlprof::intercept::uring
