// Following an io_uring instance: its requests from submission to
// completion, read from the ring's own memory without touching it.
//
// A ring is followed from its set-up (io_uring_setup, by system call or
// liburing) or, for a liburing ring the tracer first meets in a call,
// from then on; it is found by its fd, or for liburing's by its struct
// (whose fd liburing may close, io_uring_close_ring_fd). The tracer reads
// the submission queue entries the program hands the kernel just before
// the call that submits them (so a request can never complete before it
// is known), and looks at the completion ring
// at the end of every call the program makes on the ring, and at its start
// too when the call may wait (uring_calls.cc, OnRing):
//   - a completion appears (the CQ tail passed it): the request it names
//     (its user_data) is matched and taken; completed "by then";
//   - the program has reaped it (the CQ head passed it): the request is
//     recorded, on the thread that saw that, with the time it was seen.
// The completion ring's head is the program's: the tracer never moves it,
// never enters the kernel for the program's completions, never writes into
// the ring's memory.
//
// Not followed (the calls on such a ring are recorded as io_uring_enter
// calls, what the tracer can tell): a ring set up with flags the tracer
// does not know, an SQPOLL ring driven by system calls (its kernel thread
// takes the entries with no call the tracer sees: liburing's submit
// functions are seen, so its SQPOLL rings are followed), a ring entered
// through a registered ring index, and a ring inherited across fork.
#ifndef DLPROF_LIB_INTERCEPT_URING_RING_H_
#define DLPROF_LIB_INTERCEPT_URING_RING_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "lib/intercept/async_growing.h"
#include "lib/intercept/async_requests.h"
#include "lib/intercept/uring_abi.h"

namespace dlprof::intercept::uring {

// Positions in a ring count on modulo 2^32: a before b.
inline bool SeqBefore(uint32_t a, uint32_t b) { return static_cast<int32_t>(a - b) < 0; }

// A registered file: the fd it was registered from (-1 for a direct
// descriptor, which has none, and once that fd is gone) and its file id.
// The slot holds the fd's open file description: one file position, the
// fd's (the fd table's) while the fd names it; the slot's own `position`
// once the fd is gone (closed, its number free for another file).
struct FixedFile {
  std::atomic<int32_t> fd;
  std::atomic<uint32_t> file;
  std::atomic<int64_t> position;  // FdTable::kNoPosition: not known
};

class Ring {
 public:
  // kClosed: torn down, its memory still held by a thread in a call on it
  // (Hold); kLettingGo: that memory being let go, then kFree.
  enum State : uint32_t { kFree, kSettingUp, kLive, kClosing, kClosed, kLettingGo };

  // Its memory, read through the tracer's own mapping (own_maps) or the
  // program's (a liburing ring).
  bool SetUp(int fd, const Params& p);
  bool Adopt(const LiburingRing& r);
  // Whether this is liburing's ring `r`: the one adopted from it, or one
  // set up by system call whose memory reads as `r`'s (taken as `r`'s from
  // then on). A ring of the same fd that is not -- closed where the tracer
  // did not see it, the fd reused -- is torn down and `r` adopted.
  bool IsLiburings(const LiburingRing& r) const {
    return liburing_sq_head_.load(std::memory_order_relaxed) == r.sq.khead;
  }
  bool TakeAsLiburings(const LiburingRing& r);
  // Records what it holds (reaped, or not). Its memory goes with LetGo().
  void TearDown(uint64_t now, core::ThreadContext& t);

  // A thread that reads the ring's memory around a call of the program's
  // (uring_calls.cc, OnRing) holds it meanwhile: a ring closed under it --
  // by another thread, or at exit while a thread still waits in it for a
  // completion -- is torn down at once but lets its memory go when the
  // last holder leaves, never under one (the waiting thread would read an
  // unmapped ring when its call returns). Hold() is false when the ring of
  // `ring_fd` is no longer live here: the call then passes through.
  bool Hold(int ring_fd) {
    users_.fetch_add(1, std::memory_order_seq_cst);
    if (state.load(std::memory_order_seq_cst) == kLive &&
        fd.load(std::memory_order_relaxed) == ring_fd) {
      return true;
    }
    Drop();
    return false;
  }
  void Drop() {
    // (The state read first: a live ring's last holder makes no CAS.)
    if (users_.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
        state.load(std::memory_order_seq_cst) == kClosed) {
      LetGo();
    }
  }
  // Once torn down (kClosed) and held by none: its memory let go, the slot
  // free. Whoever sees both first does it; a no-op otherwise.
  void LetGoIfUnheld() {
    if (users_.load(std::memory_order_seq_cst) == 0) LetGo();
  }

  // Registers the entries at SQ positions [khead, end) that no call has
  // registered yet as submitted at `now` by the calling thread `t`; those
  // before `published` through the SQ array, those after it (liburing's,
  // not yet published: it publishes them in the call) in liburing's order
  // (position p is entry p & mask). After the call, Unsubmit() puts back
  // those the kernel did not take.
  uint32_t Submit(uint32_t end, uint32_t published, const async::Clock& now,
                  core::ThreadContext& t, uint32_t* from);
  void Unsubmit(uint32_t from, uint32_t end) {
    // (Most often the kernel took them all: nothing to put back.)
    if (SeqBefore(sqpoll() ? SqTail() : SqHead(), end)) UnsubmitSome(from, end);
  }
  // Looks at the completion ring: completions seen, reaps recorded (unless
  // another thread is looking at it right now: it sees them). News(): there
  // is something to see (a guess, without the lock: at worst a look for
  // nothing, or one that comes at the program's next call).
  void Observe(const async::Clock& now, core::ThreadContext& t);
  bool News() const {
    return cq_tail_->load(std::memory_order_relaxed) != cq_seen_.load(std::memory_order_relaxed) ||
           cq_head_->load(std::memory_order_relaxed) != cq_reaped_.load(std::memory_order_relaxed);
  }
  // Completions not looked at fill half the ring or more: a call's own
  // could overwrite them (once the program has reaped them) before a look
  // after it.
  bool Crowded() const {
    return cq_tail_->load(std::memory_order_relaxed) - cq_seen_.load(std::memory_order_relaxed) >=
           cq_entries_ / 2;
  }
  // In a forked child: the memory of our own is let go, nothing recorded.
  void ForgetInChild();

  // Its requests go past the tracer: an SQPOLL ring driven by system calls,
  // or one entered by system calls it cannot see (made with the syscall
  // instruction itself, as fio >= 3.27 does on x86-64 and arm64). Such a
  // ring is recorded once, at its close, as io_uring_ring; its
  // io_uring_enter calls through syscall() as calls.
  bool blind() const { return blind_.load(std::memory_order_relaxed); }
  void MakeBlind(const char* why);

  uint32_t SqHead() const { return sq_head_->load(std::memory_order_acquire); }
  uint32_t SqTail() const { return sq_tail_->load(std::memory_order_acquire); }
  bool sqpoll() const { return (setup_flags_ & kSetupSqpoll) != 0; }
  bool liburing() const { return !own_maps_; }

  // Registered files (IORING_REGISTER_FILES and its updates).
  void RegisterFiles(const int32_t* fds, uint32_t count);  // replaces the table
  void UpdateFiles(uint32_t offset, const int32_t* fds, uint32_t count);
  // What a files-update request (IORING_OP_FILES_UPDATE) that updated
  // `count` slots did, its fd array read again from the program.
  void UpdateFilesByRequest(uint32_t offset, uint64_t fds, uint32_t count);
  void UnregisterFiles();
  // The fds in [first, last], from which files were registered, go: their
  // slots keep the files, named by no fd, at `position` (or, where it is
  // kNoPosition, at none known) from now on.
  void FdsGone(unsigned first, unsigned last, int64_t position);

  std::atomic<int> fd{-1};
  std::atomic<uint32_t> state{kFree};

 private:
  bool Allocate(uint32_t requests, uint32_t cq_entries);
  void UnsubmitSome(uint32_t from, uint32_t end);
  void Reset(int ring_fd);  // the bookkeeping of a ring met just now
  // kLater: a fixed slot not known yet; its file looked up at completion.
  enum Interest { kNone, kTrack, kRecord, kLater };
  Interest Describe(const Sqe& s, int32_t tid, Event* e, uint32_t* open_flags);
  void ObserveLocked(const async::Clock& now, core::ThreadContext& t);
  // The requests in flight, recorded as never seen complete.
  void RecordInFlight(const async::Clock& now, core::ThreadContext& t);
  void LetGo();
  void Complete(async::Request* r, int32_t res, const async::Clock& now);
  void RecordReaped(async::Request* r, const async::Clock& now, core::ThreadContext& t,
                    uint16_t flags);
  // The requests in flight that post no completion if they succeed,
  // recorded and let go: how many.
  uint32_t LetGoQuietOnes(core::ThreadContext& t);
  // One of those (taken), let go with no failure of its posted: recorded
  // as succeeded, at an unknown time, and freed.
  void RecordQuietOne(async::Request* r, core::ThreadContext& t);
  // The requests in flight followed only to be matched (not recorded), let
  // go unrecorded: how many.
  uint32_t LetGoUnrecorded();
  // Whether CQ entry `pos`, just read, may have been written over meanwhile.
  bool MayBeOverwritten(uint32_t pos) const;
  // One request whose completion was lost (cq_lost_), let go: whether one was.
  bool LetGoLost(core::ThreadContext& t);
  uint32_t FixedFileOf(uint32_t slot, int32_t* fd) const;
  void SetFixed(uint32_t slot, int32_t fd, uint32_t file);
  // A read or write at slot `slot`'s file position moved it by `bytes`: the
  // position it started at, or kNoPosition. `fd`, the slot's fd when the
  // request was submitted, becomes -1 where that fd is gone.
  int64_t AdvanceFixed(uint32_t slot, int32_t* fd, int64_t bytes);

  // liburing's pointer to the SQ head in the program's mapping: which
  // struct io_uring this ring is (nullptr: none yet, set up by system call).
  std::atomic<const unsigned*> liburing_sq_head_{nullptr};
  const std::atomic<uint32_t>* sq_head_ = nullptr;
  const std::atomic<uint32_t>* sq_tail_ = nullptr;
  const uint32_t* sq_array_ = nullptr;  // nullptr: IORING_SETUP_NO_SQARRAY
  const uint8_t* sqes_ = nullptr;
  const std::atomic<uint32_t>* cq_head_ = nullptr;
  const std::atomic<uint32_t>* cq_tail_ = nullptr;
  const uint8_t* cqes_ = nullptr;
  uint32_t sq_mask_ = 0, sq_entries_ = 0, sqe_shift_ = 6;
  uint32_t cq_mask_ = 0, cq_entries_ = 0, cqe_shift_ = 4;
  uint32_t setup_flags_ = 0;
  bool own_maps_ = false;
  std::atomic<bool> blind_{false};
  uint64_t since_ns_ = 0;                 // followed from then (its set-up, or first sight)
  uint32_t sq_base_ = 0, cq_base_ = 0;    // SQ head and CQ tail then
  void* maps_[3] = {nullptr, nullptr, nullptr};
  size_t map_bytes_[3] = {0, 0, 0};

  std::atomic<uint32_t> sq_registered_{0};  // SQ positions below it are registered
  // The thread looking at the CQ ring (one at a time), nullptr when none:
  // a thread's context, so that a teardown from a signal handler knows
  // the look it interrupted is its own thread's and does not wait for it.
  std::atomic<const core::ThreadContext*> observer_{nullptr};
  std::atomic<uint32_t> users_{0};          // threads that hold it (Hold)
  // CQ positions below them: matched, and recorded (written by the
  // observer_; News() reads them without being it).
  std::atomic<uint32_t> cq_seen_{0};
  std::atomic<uint32_t> cq_reaped_{0};
  // Completions written over before a look could see them: their requests
  // would wait in the table for ever. So many are let go when the table is
  // full (LetGoLost), of those submitted before SQ position cq_lost_sq_ (the
  // SQ head at the last loss found: each lost one was taken by then).
  std::atomic<uint32_t> cq_lost_{0};
  std::atomic<uint32_t> cq_lost_sq_{0};

  async::GrowingRequests requests_;  // grown when full (async_growing.h)
  uint32_t* cq_request_ = nullptr;  // per CQ slot: its request's index + 1 (0: none)
  // Kept for the next ring set up in this slot.
  void* memory_ = nullptr;
  size_t memory_bytes_ = 0;

  std::atomic<FixedFile*> fixed_{nullptr};
  std::atomic<uint32_t> fixed_count_{0};
  // Bit fd % 64 of each fd a slot was registered from: most closes need
  // not look at the slots.
  std::atomic<uint64_t> fixed_fd_bits_{0};
};

// The ring of `fd`, when followed (kLive).
Ring* FindRing(int fd);
// A ring for `fd` set up just now by a system call; nullptr when it cannot
// be followed (said once on stderr).
Ring* SetUpRing(int fd, const Params& p);
// A liburing ring: found by its fd, or adopted now; one whose fd liburing
// closed (io_uring_close_ring_fd) is found by its memory.
Ring* LiburingRingOf(const LiburingRing* r);
// The followed ring of liburing's `r`, if any (nothing adopted).
Ring* FindLiburingRing(const LiburingRing* r);
// The ring's fd is being closed (or io_uring_queue_exit): recorded and let go.
void CloseRing(int fd);
void CloseRing(Ring* r);
// close(fd) is about to run: if fd is a followed ring's, it is let go first;
// if the tracer does not know fd, the rings' completions are looked at first
// (an openat's, taken by the program unseen, may have given it).
// Inline: every close asks (rings_used is 0 in a process without rings).
// A file registered from fd keeps its file position from then on (the fd's
// then, known before a close: `position_known`).
extern std::atomic<uint32_t> g_rings_used;
void CloseRingOnClose(int fd, bool position_known = true);
inline void BeforeClose(int fd) {
  if (__builtin_expect(g_rings_used.load(std::memory_order_relaxed) != 0, 0)) CloseRingOnClose(fd);
}
// The other ways a ring's fd goes: dup2/dup3 onto it (after the call: the
// fd is another file's now), close_range over it. The tracer's own mapping
// of a ring would otherwise keep the ring alive in the kernel -- its
// registered files open, its requests running, its memory pinned.
inline void AfterFdReplaced(int fd) {
  if (__builtin_expect(g_rings_used.load(std::memory_order_relaxed) != 0, 0)) {
    CloseRingOnClose(fd, false);
  }
}
void CloseRingsIn(unsigned first, unsigned last);
// An fd, from which a file may have been registered, goes (closed or made
// another file's): each ring's slots of it keep their file (CloseRingOnClose).
void FdLeavesSlots(int fd, bool position_known);
// Says once on stderr why a ring is not followed.
void NoteUnfollowed(const char* why);

// What could not be followed, said once each on stderr.
enum Note : uint32_t {
  kNoteUnmatched = 1u << 0,
  kNoteLost = 1u << 1,
  kNoteFull = 1u << 2,
  kNoteRings = 1u << 3,
};
void NoteOnce(uint32_t bit, const char* what);
extern const char* const kBlindWhy;
// Why a ring took entries no call of the process was seen to submit:
// kBlindWhy, or where the process has forked a ring shared with another.
const char* BlindWhy();

}  // namespace dlprof::intercept::uring

#endif  // DLPROF_LIB_INTERCEPT_URING_RING_H_
