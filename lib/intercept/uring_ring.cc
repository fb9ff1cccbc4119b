// Following an io_uring instance (uring_ring.h): its memory and registered
// files, and the table of the rings the process has; what each does with
// the requests handed to it is uring_requests.cc's (submission) and
// uring_completions.cc's.
#include "lib/intercept/uring_ring.h"

#include <sys/mman.h>

#include <cstring>

#include "lib/core/file_ids.h"
#include "lib/core/raw_log.h"
#include "lib/core/raw_map.h"
#include "lib/intercept/describe.h"
#include "lib/intercept/program_memory.h"

namespace dlprof::intercept::uring {
namespace {

constexpr uint32_t kMaxRings = 64;
Ring g_rings[kMaxRings];

void* MapAnonymous(size_t bytes) {
  void* p =
      core::RawMmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

uint32_t PowerOfTwoAtLeast(uint32_t n) {
  uint32_t p = 64;
  while (p < n && p < (1u << 16)) p <<= 1;
  return p;
}

template <typename T>
const std::atomic<T>* At(const uint8_t* base, uint32_t off) {
  return reinterpret_cast<const std::atomic<T>*>(base + off);
}

std::atomic<uint32_t> g_noted{0};

}  // namespace

std::atomic<uint32_t> g_rings_used{0};  // slots past it were never taken

const char* const kBlindWhy =
    "a ring entered by system calls made outside the C library (the syscall instruction itself, as "
    "fio >= 3.27 does): its requests are not traced; the ring is recorded as io_uring_ring at its "
    "close";

// The same, where the process has forked (or is a fork's child): the
// likelier cause then is a ring the two share, one submitting where the
// other's tracer does not see it. (Which it is cannot be told from the ring.)
const char* const kBlindSharedWhy =
    "a ring whose requests were submitted where this process's tracer did not see them: a ring "
    "shared with another process (this one forked; each process's calls are its own tracer's), "
    "or one entered by system calls made outside the C library (the syscall instruction itself, "
    "as fio >= 3.27 does): its requests are not traced; the ring is recorded as io_uring_ring at "
    "its close";

const char* BlindWhy() { return async::Forked() ? kBlindSharedWhy : kBlindWhy; }

void NoteOnce(uint32_t bit, const char* what) {
  if (g_noted.fetch_or(bit, std::memory_order_relaxed) & bit) return;
  core::RawLog("io_uring: %s", what);
}

void NoteUnfollowed(const char* why) { NoteOnce(kNoteRings, why); }

// ---- set-up ----------------------------------------------------------------

bool Ring::Allocate(uint32_t requests, uint32_t cq_entries) {
  const size_t bytes = requests * sizeof(async::Request) + cq_entries * sizeof(uint32_t);
  if (memory_bytes_ < bytes) {
    void* m = MapAnonymous(bytes);
    if (m == nullptr) return false;
    if (memory_ != nullptr) core::RawMunmap(memory_, memory_bytes_);
    memory_ = m;
    memory_bytes_ = bytes;
  } else {
    memset(memory_, 0, bytes);
  }
  requests_.Init(static_cast<async::Request*>(memory_), requests);
  cq_request_ = reinterpret_cast<uint32_t*>(static_cast<uint8_t*>(memory_) +
                                            requests * sizeof(async::Request));
  return true;
}

void Ring::Reset(int ring_fd) {
  const uint32_t head = SqHead();
  sq_registered_.store(head, std::memory_order_relaxed);
  observer_.store(nullptr, std::memory_order_relaxed);
  const uint32_t tail = cq_tail_->load(std::memory_order_acquire);
  cq_seen_.store(tail, std::memory_order_relaxed);
  cq_reaped_.store(tail, std::memory_order_relaxed);
  cq_lost_.store(0, std::memory_order_relaxed);
  sq_base_ = head;
  cq_base_ = tail;
  since_ns_ = core::NowNs();
  blind_.store(false, std::memory_order_relaxed);
  fixed_count_.store(0, std::memory_order_relaxed);
  fd.store(ring_fd, std::memory_order_relaxed);
}

void Ring::MakeBlind(const char* why) {
  if (blind_.exchange(true, std::memory_order_relaxed)) return;
  NoteUnfollowed(why);
}

bool Ring::SetUp(int ring_fd, const Params& p) {
  liburing_sq_head_.store(nullptr, std::memory_order_relaxed);
  setup_flags_ = p.flags;
  if ((p.flags & ~kSetupKnown) != 0 || (p.flags & kSetupRegisteredFdOnly) != 0) return false;
  sqe_shift_ = (p.flags & kSetupSqe128) ? 7 : 6;
  cqe_shift_ = (p.flags & kSetupCqe32) ? 5 : 4;
  const bool no_array = (p.flags & kSetupNoSqArray) != 0;
  const uint8_t *sq_ring, *cq_ring;
  own_maps_ = false;
  if (p.flags & kSetupNoMmap) {
    // The program's own memory: the rings at cq_off.user_addr, the SQEs at
    // sq_off.user_addr.
    sq_ring = cq_ring = reinterpret_cast<const uint8_t*>(p.cq_off.user_addr);
    sqes_ = reinterpret_cast<const uint8_t*>(p.sq_off.user_addr);
  } else {
    // A mapping of our own: the program may unmap its own before it closes
    // the ring, and the ring lives as long as the fd.
    const size_t cq_bytes = p.cq_off.cqes + (size_t{p.cq_entries} << cqe_shift_);
    const size_t sq_bytes = no_array ? cq_bytes : p.sq_off.array + size_t{p.sq_entries} * 4;
    const bool single = (p.features & kFeatSingleMmap) || no_array;
    own_maps_ = true;
    auto map = [&](int i, size_t bytes, uint64_t off) {
      void* m =
          core::RawMmap(nullptr, bytes, PROT_READ, MAP_SHARED, ring_fd, static_cast<off_t>(off));
      if (m == MAP_FAILED) return false;
      maps_[i] = m;
      map_bytes_[i] = bytes;
      return true;
    };
    if (!map(0, single ? (sq_bytes > cq_bytes ? sq_bytes : cq_bytes) : sq_bytes, kOffSqRing) ||
        (!single && !map(1, cq_bytes, kOffCqRing)) ||
        !map(2, size_t{p.sq_entries} << sqe_shift_, kOffSqes)) {
      for (int i = 0; i < 3; ++i) {
        if (maps_[i] != nullptr) core::RawMunmap(maps_[i], map_bytes_[i]);
        maps_[i] = nullptr;
      }
      return false;
    }
    sq_ring = static_cast<const uint8_t*>(maps_[0]);
    cq_ring = single ? sq_ring : static_cast<const uint8_t*>(maps_[1]);
    sqes_ = static_cast<const uint8_t*>(maps_[2]);
  }
  sq_head_ = At<uint32_t>(sq_ring, p.sq_off.head);
  sq_tail_ = At<uint32_t>(sq_ring, p.sq_off.tail);
  sq_array_ = no_array ? nullptr : reinterpret_cast<const uint32_t*>(sq_ring + p.sq_off.array);
  sq_mask_ = At<uint32_t>(sq_ring, p.sq_off.ring_mask)->load(std::memory_order_relaxed);
  sq_entries_ = p.sq_entries;
  cq_head_ = At<uint32_t>(cq_ring, p.cq_off.head);
  cq_tail_ = At<uint32_t>(cq_ring, p.cq_off.tail);
  cqes_ = cq_ring + p.cq_off.cqes;
  cq_mask_ = At<uint32_t>(cq_ring, p.cq_off.ring_mask)->load(std::memory_order_relaxed);
  cq_entries_ = p.cq_entries;
  if (!Allocate(PowerOfTwoAtLeast(2 * (p.sq_entries + p.cq_entries)), p.cq_entries)) return false;
  Reset(ring_fd);
  return true;
}

bool Ring::Adopt(const LiburingRing& r) {
  setup_flags_ = r.flags;
  if ((r.flags & ~kSetupKnown) != 0 || r.sq.khead == nullptr || r.cq.khead == nullptr) {
    return false;
  }
  if (!(r.flags & kSetupNoMmap) && r.sq.ring_ptr != nullptr && r.cq.ring_ptr != nullptr) {
    // Mapped again, as a ring set up by system call: the program may unmap
    // its own before it closes the ring. Where the fields are is where
    // liburing's pointers are in its mappings.
    Params p{};
    p.sq_entries = *r.sq.kring_entries;
    p.cq_entries = *r.cq.kring_entries;
    p.flags = r.flags;
    p.features = r.features;
    auto off = [](const void* field, const void* base) {
      return static_cast<uint32_t>(static_cast<const char*>(field) -
                                   static_cast<const char*>(base));
    };
    p.sq_off.head = off(r.sq.khead, r.sq.ring_ptr);
    p.sq_off.tail = off(r.sq.ktail, r.sq.ring_ptr);
    p.sq_off.ring_mask = off(r.sq.kring_mask, r.sq.ring_ptr);
    p.sq_off.ring_entries = off(r.sq.kring_entries, r.sq.ring_ptr);
    p.sq_off.array = r.sq.array != nullptr ? off(r.sq.array, r.sq.ring_ptr) : 0;
    p.cq_off.head = off(r.cq.khead, r.cq.ring_ptr);
    p.cq_off.tail = off(r.cq.ktail, r.cq.ring_ptr);
    p.cq_off.ring_mask = off(r.cq.kring_mask, r.cq.ring_ptr);
    p.cq_off.ring_entries = off(r.cq.kring_entries, r.cq.ring_ptr);
    p.cq_off.cqes = off(r.cq.cqes, r.cq.ring_ptr);
    if (SetUp(r.ring_fd, p)) {
      liburing_sq_head_.store(r.sq.khead, std::memory_order_relaxed);
      return true;
    }
  }
  liburing_sq_head_.store(r.sq.khead, std::memory_order_relaxed);
  sqe_shift_ = (r.flags & kSetupSqe128) ? 7 : 6;
  cqe_shift_ = (r.flags & kSetupCqe32) ? 5 : 4;
  own_maps_ = false;
  sq_head_ = reinterpret_cast<const std::atomic<uint32_t>*>(r.sq.khead);
  sq_tail_ = reinterpret_cast<const std::atomic<uint32_t>*>(r.sq.ktail);
  sq_array_ = (r.flags & kSetupNoSqArray) ? nullptr : r.sq.array;
  sq_mask_ = *r.sq.kring_mask;
  sq_entries_ = *r.sq.kring_entries;
  sqes_ = static_cast<const uint8_t*>(r.sq.sqes);
  cq_head_ = reinterpret_cast<const std::atomic<uint32_t>*>(r.cq.khead);
  cq_tail_ = reinterpret_cast<const std::atomic<uint32_t>*>(r.cq.ktail);
  cq_mask_ = *r.cq.kring_mask;
  cq_entries_ = *r.cq.kring_entries;
  cqes_ = static_cast<const uint8_t*>(r.cq.cqes);
  if (!Allocate(PowerOfTwoAtLeast(2 * (sq_entries_ + cq_entries_)), cq_entries_)) return false;
  // Met in mid-life: what completed before is no request of ours; the
  // entries not yet submitted are (this call submits them).
  Reset(r.ring_fd);
  return true;
}


bool Ring::TakeAsLiburings(const LiburingRing& r) {
  if (IsLiburings(r)) return true;
  // Set up by system call (liburing's own io_uring_setup, where it makes
  // its calls through the C library): the same ring if it reads the same.
  const unsigned* none = nullptr;
  if (*r.sq.kring_entries != sq_entries_ || *r.cq.kring_entries != cq_entries_ ||
      __atomic_load_n(r.sq.khead, __ATOMIC_ACQUIRE) != SqHead() ||
      __atomic_load_n(r.cq.ktail, __ATOMIC_ACQUIRE) !=
          cq_tail_->load(std::memory_order_acquire)) {
    return false;
  }
  return liburing_sq_head_.compare_exchange_strong(none, r.sq.khead) || none == r.sq.khead;
}

void Ring::ForgetInChild() {
  for (int i = 0; i < 3; ++i) {
    if (maps_[i] != nullptr) core::RawMunmap(maps_[i], map_bytes_[i]);
    maps_[i] = nullptr;
  }
  UnregisterFiles();
  observer_.store(nullptr, std::memory_order_relaxed);
  users_.store(0, std::memory_order_relaxed);  // the parent's other threads are not here
}

void Ring::LetGo() {
  uint32_t closed = kClosed;
  if (!state.compare_exchange_strong(closed, kLettingGo, std::memory_order_acq_rel)) return;
  InTracerCode tracer;  // (on a program's call's way out: its errno kept)
  for (int i = 0; i < 3; ++i) {
    if (maps_[i] != nullptr) core::RawMunmap(maps_[i], map_bytes_[i]);
    maps_[i] = nullptr;
  }
  fd.store(-1, std::memory_order_relaxed);
  state.store(kFree, std::memory_order_release);
}


// ---- registered files ------------------------------------------------------

void Ring::SetFixed(uint32_t slot, int32_t file_fd, uint32_t file) {
  FixedFile* table = fixed_.load(std::memory_order_acquire);
  if (table == nullptr || slot >= fixed_count_.load(std::memory_order_relaxed)) return;
  if (file_fd >= 0) fixed_fd_bits_.fetch_or(uint64_t{1} << (file_fd % 64));
  table[slot].position.store(FdTable::kNoPosition, std::memory_order_relaxed);
  table[slot].fd.store(file_fd, std::memory_order_release);
  table[slot].file.store(file, std::memory_order_relaxed);
}

void Ring::FdsGone(unsigned first, unsigned last, int64_t position) {
  if (first == last && !(fixed_fd_bits_.load(std::memory_order_relaxed) >> (first % 64) & 1)) {
    return;
  }
  FixedFile* table = fixed_.load(std::memory_order_acquire);
  const uint32_t count = fixed_count_.load(std::memory_order_acquire);
  for (uint32_t i = 0; table != nullptr && i < count; ++i) {
    const int32_t fd = table[i].fd.load(std::memory_order_relaxed);
    if (fd < 0 || static_cast<unsigned>(fd) < first || static_cast<unsigned>(fd) > last) continue;
    table[i].position.store(position, std::memory_order_relaxed);
    table[i].fd.store(-1, std::memory_order_release);  // (after its position: AdvanceFixed)
  }
}

int64_t Ring::AdvanceFixed(uint32_t slot, int32_t* fd, int64_t bytes) {
  FixedFile* table = fixed_.load(std::memory_order_acquire);
  if (table == nullptr || slot >= fixed_count_.load(std::memory_order_relaxed)) {
    return FdTable::kNoPosition;
  }
  FixedFile& f = table[slot];
  const int32_t now = f.fd.load(std::memory_order_acquire);
  if (now >= 0) {
    // Named still by the fd it was registered from: the fd's position. (Not
    // the fd it was submitted with, or no longer its file -- a slot updated
    // meanwhile, a close the tracer did not see: none known.)
    core::FdTable& fds = core::g_runtime->fds();
    if (now != *fd || fds.File(now) != f.file.load(std::memory_order_relaxed)) {
      return FdTable::kNoPosition;
    }
    return fds.Advance(now, bytes);
  }
  *fd = -1;  // (gone since it was submitted: the number is another file's now)
  int64_t at = f.position.load(std::memory_order_relaxed);
  if (at < 0 || bytes <= 0) return at;
  return f.position.fetch_add(bytes, std::memory_order_relaxed);
}

void Ring::RegisterFiles(const int32_t* fds, uint32_t count) {
  // A table of its own for each registration; the old one is left to
  // readers that may still hold it (registrations are rare).
  FixedFile* table = count > 0 ? static_cast<FixedFile*>(MapAnonymous(count * sizeof(FixedFile)))
                               : nullptr;
  if (table == nullptr) count = 0;
  fixed_count_.store(0, std::memory_order_relaxed);
  fixed_fd_bits_.store(0, std::memory_order_relaxed);
  fixed_.store(table, std::memory_order_release);
  fixed_count_.store(count, std::memory_order_release);
  UpdateFiles(0, fds, count);
}

void Ring::UpdateFiles(uint32_t offset, const int32_t* fds, uint32_t count) {
  for (uint32_t i = 0; fds != nullptr && i < count; ++i) {
    const int32_t f = fds[i];
    if (f == kRegisterFilesSkip) continue;
    const uint32_t file = f >= 0 ? core::FileOfFd(*core::g_runtime, f) : 0;
    SetFixed(offset + i, f, file);
  }
}

void Ring::UpdateFilesByRequest(uint32_t offset, uint64_t fds, uint32_t count) {
  // The kernel read the array when it ran the request; the program may have
  // let it go since (the slots are then left with no file known: their
  // requests unrecorded rather than named after the file they held). With
  // IORING_FILE_INDEX_ALLOC the kernel wrote each slot it picked over its
  // fd: the slots are known, their files not.
  InTracerCode tracer;  // (the files' identities are asked of the kernel)
  constexpr uint32_t kBatch = 64;
  int32_t copy[kBatch];
  const auto* from = reinterpret_cast<const int32_t*>(fds);
  for (uint32_t done = 0; done < count; done += kBatch) {
    const uint32_t n = count - done < kBatch ? count - done : kBatch;
    const bool read = CopyFromProgram(copy, from + done, n * sizeof(int32_t));
    for (uint32_t i = 0; i < n; ++i) {
      if (offset == kFileIndexAlloc) {
        if (read && copy[i] >= 0) SetFixed(static_cast<uint32_t>(copy[i]), -1, FdTable::kUnknown);
      } else if (!read) {
        SetFixed(offset + done + i, -1, FdTable::kUnknown);
      }
    }
    if (read && offset != kFileIndexAlloc) UpdateFiles(offset + done, copy, n);
  }
}

void Ring::UnregisterFiles() {
  fixed_count_.store(0, std::memory_order_release);
}


// ---- the table of rings ----------------------------------------------------

Ring* FindRing(int fd) {
  if (fd < 0) return nullptr;  // (a ring whose fd liburing closed has -1)
  // The last ring found first: a program drives one ring per thread, most
  // often one ring in all.
  static std::atomic<Ring*> last{nullptr};
  Ring* const hint = last.load(std::memory_order_relaxed);
  if (hint != nullptr && hint->fd.load(std::memory_order_relaxed) == fd &&
      hint->state.load(std::memory_order_acquire) == Ring::kLive) {
    return hint;
  }
  const uint32_t used = g_rings_used.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < used; ++i) {
    Ring& r = g_rings[i];
    if (r.fd.load(std::memory_order_relaxed) == fd &&
        r.state.load(std::memory_order_acquire) == Ring::kLive) {
      last.store(&r, std::memory_order_relaxed);
      return &r;
    }
  }
  return nullptr;
}

namespace {

template <typename Fill>
Ring* TakeSlot(Fill&& fill) {
  for (uint32_t i = 0; i < kMaxRings; ++i) {
    Ring& r = g_rings[i];
    uint32_t free = Ring::kFree;
    if (r.state.load(std::memory_order_relaxed) != Ring::kFree ||
        !r.state.compare_exchange_strong(free, Ring::kSettingUp, std::memory_order_acquire)) {
      continue;
    }
    uint32_t used = g_rings_used.load(std::memory_order_relaxed);
    while (used < i + 1 &&
           !g_rings_used.compare_exchange_weak(used, i + 1, std::memory_order_relaxed)) {
    }
    if (!fill(r)) {
      r.fd.store(-1, std::memory_order_relaxed);
      r.state.store(Ring::kFree, std::memory_order_release);
      return nullptr;
    }
    r.state.store(Ring::kLive, std::memory_order_release);
    return &r;
  }
  NoteOnce(kNoteRings, "more rings than the tracer follows (64); the others are recorded as calls");
  return nullptr;
}

}  // namespace

Ring* SetUpRing(int fd, const Params& p) {
  async::EnsureProcessHooks();
  CloseRing(fd);  // one we lost track of had this fd
  Ring* r = TakeSlot([&](Ring& slot) { return slot.SetUp(fd, p); });
  if (r != nullptr && (p.flags & kSetupSqpoll)) {
    // Its kernel thread takes the entries with no call of the program's.
    r->MakeBlind(
        "a ring with a kernel submission thread (SQPOLL) driven by system calls: its requests are "
        "not traced (liburing's are); the ring is recorded as io_uring_ring at its close, its "
        "io_uring_enter calls as calls");
  }
  if (r == nullptr && (p.flags & ~kSetupKnown) != 0) {
    NoteUnfollowed(
        "a ring set up with flags this tracer does not know: its requests are not traced, only its "
        "io_uring_enter calls");
  }
  return r;
}

Ring* FindLiburingRing(const LiburingRing* lr) {
  if (lr == nullptr) return nullptr;
  if (Ring* r = FindRing(lr->ring_fd); r != nullptr && r->IsLiburings(*lr)) return r;
  if (lr->ring_fd >= 0) return nullptr;
  const uint32_t used = g_rings_used.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < used; ++i) {
    Ring& r = g_rings[i];
    if (r.IsLiburings(*lr) && r.state.load(std::memory_order_acquire) == Ring::kLive) return &r;
  }
  return nullptr;
}

Ring* LiburingRingOf(const LiburingRing* lr) {
  if (lr == nullptr) return nullptr;
  if (lr->ring_fd < 0) return FindLiburingRing(lr);
  if (Ring* r = FindRing(lr->ring_fd)) {
    if (r->TakeAsLiburings(*lr)) return r;
    CloseRing(r);  // the fd's ring before: closed where the tracer did not see it
  }
  async::EnsureProcessHooks();
  return TakeSlot([&](Ring& slot) { return slot.Adopt(*lr); });
}

void CloseRing(int fd) {
  if (Ring* r = FindRing(fd)) CloseRing(r);
}

void CloseRing(Ring* r) {
  uint32_t live = Ring::kLive;
  if (!r->state.compare_exchange_strong(live, Ring::kClosing, std::memory_order_acq_rel)) return;
  r->TearDown(core::NowNs(), core::CurrentThread());
  r->state.store(Ring::kClosed, std::memory_order_seq_cst);
  r->LetGoIfUnheld();
}

void FdLeavesSlots(int fd, bool position_known) {
  if (fd < 0) return;
  // Its position now, before its close: unknown after a dup2 onto it, or
  // where the kernel keeps it (O_APPEND; shared with a dup, which may move
  // it still).
  const core::FdTable& fds = core::g_runtime->fds();
  const int64_t position = position_known && !fds.KernelPosition(fd)
                               ? fds.Position(fd)
                               : core::FdTable::kNoPosition;
  const uint32_t used = g_rings_used.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < used; ++i) {
    Ring& r = g_rings[i];
    if (r.state.load(std::memory_order_acquire) == Ring::kLive) {
      r.FdsGone(static_cast<unsigned>(fd), static_cast<unsigned>(fd), position);
    }
  }
}

void CloseRingOnClose(int fd, bool position_known) {
  core::ThreadContext& t = core::CurrentThread();
  if (!async::Following(t)) return;
  if (FindRing(fd) != nullptr) {
    InTracerCode tracer;
    CloseRing(fd);
    return;
  }
  FdLeavesSlots(fd, position_known);
  // An fd the tracer does not know, closed while a ring holds completions
  // it has not looked at: one may be the openat that gave the program this
  // fd, taken with no call the tracer sees (liburing's io_uring_peek_cqe).
  // Looked at now, so that the close is recorded as its file's.
  if (core::g_runtime->fds().File(fd) != core::FdTable::kUnknown) return;
  const uint32_t used = g_rings_used.load(std::memory_order_acquire);
  for (uint32_t i = 0; i < used; ++i) {
    Ring& r = g_rings[i];
    if (r.state.load(std::memory_order_acquire) != Ring::kLive || r.blind() || !r.News() ||
        !r.Hold(r.fd.load(std::memory_order_relaxed))) {
      continue;
    }
    core::CallErrno keep(t);
    r.Observe(async::ReadClock(), t);
    r.Drop();
  }
}

void CloseRingsIn(unsigned first, unsigned last) {
  if (g_rings_used.load(std::memory_order_relaxed) == 0) return;
  for (uint32_t i = 0; i < kMaxRings; ++i) {
    const int fd = g_rings[i].fd.load(std::memory_order_relaxed);
    if (fd >= 0 && static_cast<unsigned>(fd) >= first && static_cast<unsigned>(fd) <= last) {
      CloseRingOnClose(fd);
    }
  }
  // Files registered from fds in the range: their positions went with the
  // fd table's entries (cleared first).
  for (uint32_t i = 0; i < kMaxRings; ++i) {
    Ring& r = g_rings[i];
    if (r.state.load(std::memory_order_acquire) == Ring::kLive) {
      r.FdsGone(first, last, core::FdTable::kNoPosition);
    }
  }
}

}  // namespace dlprof::intercept::uring

namespace dlprof::intercept::async {

void UringFlushAtExit() {
  // (By state, not fd: a ring whose fd liburing closed is followed still.)
  for (uint32_t i = 0; i < uring::kMaxRings; ++i) {
    uring::Ring& r = uring::g_rings[i];
    if (r.state.load(std::memory_order_acquire) == uring::Ring::kLive) uring::CloseRing(&r);
  }
}

void UringForgetAfterFork() {
  // The parent's rings: their requests are the parent's to record. Their
  // memory (ours, mapped again in the child) is let go.
  for (uint32_t i = 0; i < uring::kMaxRings; ++i) {
    uring::Ring& r = uring::g_rings[i];
    if (r.state.load(std::memory_order_relaxed) == uring::Ring::kFree) continue;
    r.ForgetInChild();
    r.fd.store(-1, std::memory_order_relaxed);
    r.state.store(uring::Ring::kFree, std::memory_order_release);
  }
}

}  // namespace dlprof::intercept::async
