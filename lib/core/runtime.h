// The per-process tracer: owns configuration, tables, per-thread buffers,
// the trace file and its flusher thread, and handles the process events
// (start, fork, exec, termination signals, exit).
//
// The hot path lives inline here: Tracing() and Record() are all a wrapper
// touches per call while the runtime is running.
#ifndef DLPROF_LIB_CORE_RUNTIME_H_
#define DLPROF_LIB_CORE_RUNTIME_H_

#include <atomic>
#include <cerrno>
#include <cstdint>

#include "dlprof/format.h"
#include "lib/core/config.h"
#include "lib/core/fd_table.h"
#include "lib/core/path_filter.h"
#include "lib/core/string_table.h"
#include "lib/core/thread_registry.h"

namespace dlprof::core {

enum class RuntimeState : int { kUninitialized, kInitializing, kRunning, kDisabled, kFinalized };

// Events a signal handler's traced calls may leave while the thread it
// interrupted is recording (see `window`); more are counted as dropped.
constexpr uint32_t kDeferredEvents = 16;

// Per-thread state. `internal` marks tracer code: calls made while it is set
// go straight to the real function, so the tracer never traces itself.
struct ThreadContext {
  ThreadBuffer* buffer;
  uint32_t depth;  // traced calls in progress (nesting)
  // Where on the stack the outermost traced call in progress was made (its
  // caller's stack pointer), and where the open window was opened. Code
  // inside either runs deeper, or on a signal stack; a traced call made
  // anywhere else means a jump (siglongjmp from a signal handler) left them
  // for good (wrapper.h, LeftByJump). Read only while `depth`, or `window`,
  // is set.
  uintptr_t call_frame;
  uintptr_t window_frame;
  // `internal`, and `window`: set while the thread fills and publishes an
  // event (wrapper.h, OpenWindow/CloseWindow). A signal handler's traced
  // call in that window must not take the ring slot being filled: its event
  // waits in `deferred` (`deferred_count` claimed with an atomic add) and
  // the window's owner records it before the window closes. The two share
  // one word, `busy`: a traced call tests both with one load and sets or
  // clears both with one store.
  union {
    struct {
      bool internal;
      bool window;
    };
    uint16_t busy;
  };
  bool attach_failed;
  // &errno, once looked up (the PLT call to __errno_location was 5 of a
  // traced call's instructions); a thread's errno never moves.
  int* errno_at;
  uint32_t deferred_count;
  // How many of them are in the ring: where recording them goes on when a
  // jump out of a handler (siglongjmp) cut it short (recording_window.h).
  uint32_t deferred_recorded;
  Event deferred[kDeferredEvents];
  Event spare;  // where an event is built when the ring has no free slot
};

// errno as the real call left it, kept for the describer and put back
// when the wrapper returns (ErrnoSaver, through the thread's cached &errno).
class CallErrno {
 public:
  explicit CallErrno(ThreadContext& t)
      : at_(__builtin_expect(t.errno_at != nullptr, 1) ? t.errno_at : (t.errno_at = &errno)),
        saved_(*at_) {}
  ~CallErrno() { *at_ = saved_; }
  int value() const { return saved_; }
  CallErrno(const CallErrno&) = delete;
  CallErrno& operator=(const CallErrno&) = delete;

 private:
  int* const at_;
  const int saved_;
};

// `busy` with both set (little-endian: `internal` is the low byte).
constexpr uint16_t kBusyInWindow = 0x0101;

extern std::atomic<int> g_state;
extern uint8_t g_kind_enabled[kEventKindLimit];
// __thread, not thread_local: a C++ thread_local defined in another file is
// reached through a wrapper function that a traced call would test for on
// every call; ThreadContext is plain data, zero-initialised.
extern __thread ThreadContext tls_thread __attribute__((tls_model("initial-exec")));
class Runtime;
extern Runtime* g_runtime;  // set before the state first becomes kRunning

inline ThreadContext& CurrentThread() { return tls_thread; }

inline bool Tracing(const ThreadContext& t) {
  return g_state.load(std::memory_order_relaxed) == static_cast<int>(RuntimeState::kRunning) &&
         !t.internal;
}
inline bool KindEnabled(EventKind kind) { return g_kind_enabled[static_cast<uint16_t>(kind)]; }

// Everything below the hot path.
class Runtime {
 public:
  // Never destroyed: wrappers run during and after the program's static
  // destruction. Built on first use, which may come before our constructor.
  static Runtime& Get() {
    return __builtin_expect(g_runtime != nullptr, 1) ? *g_runtime : Construct();
  }

  void Initialize();
  // Writes everything and closes the trace; later calls pass through.
  // `on_flusher`: the final pass on the flusher thread (TraceSink::
  // FinishOnFlusher: the _exit family, which a signal handler may call).
  void Finalize(bool on_flusher = false);
  // For exec: writes everything (the image is about to be replaced).
  void FlushForExec();
  // pthread_atfork child handler: a new trace, fresh buffers and flusher.
  void OnForkChild();
  // In the child of a fork that ran no pthread_atfork handler (_Fork, or a
  // fork by system call): it may call only async-signal-safe functions
  // until it execs (no lock of the parent's threads, malloc's too, is known
  // free), so no trace of its own is started there. It steps aside: the
  // parent's rings, shared through the sidecar, are not its to write. An
  // image it execs is traced as any child's.
  void OnUnpreparedForkChild();

  const Config& config() const { return config_; }
  FdTable& fds() { return fds_; }
  StringTable& strings() { return strings_; }
  const PathFilter& filter() const { return filter_; }
  // True in the process that initialised the runtime, false in a vfork child
  // sharing its memory (which must not touch the parent's state).
  bool InOwnProcess() const;
  // A program thread is leaving (pthread_exit, or its thread-exit
  // destructor): when the process's first thread leaves, the flusher starts
  // watching for the last one, to end the process as glibc would have.
  void OnThreadExiting();
  // Around a set-id call of the program's (setuid, setresgid, setgroups,
  // ...; lib/intercept/credentials.cc), or an unshare or setns the kernel
  // allows a process of one thread only (namespaces.cc), in its own
  // process: the call runs on the program's threads alone and the trace
  // stays writable under the new credentials or mount namespace
  // (trace_sink_credentials.cc). One call at a time. changed_mounts: it
  // made or entered a mount namespace (the trace's and the rings sidecar's
  // descriptors are kept for the process's life).
  void BeforeCredentialChange();
  void AfterCredentialChange(bool changed_mounts = false);

  // Slow paths of Record().
  ThreadBuffer* AttachThread(ThreadContext& t);
  void OnRingFull(ThreadBuffer* b, const Event& e);

  // A signal whose default action ends the process, left at that default
  // by the program: finish the trace before the default action runs
  // (fatal_signals.h).
  void FinalizeFromSignal();

  // The rings sidecar beside the trace just opened (lib/core/sidecar.h).
  void SetUpSidecar(int32_t rank);

  // MPI told us the rank: later blocks carry it.
  void SetRank(int32_t rank);
  // Writes everything recorded so far (before MPI shuts down, for one).
  void FlushNow();
  // Fault tracking just turned on (a traced file mapped): the flusher
  // looks at the kernel's small buffers from now on (map_faults.h), not
  // at its next tick, up to DLPROF_FLUSH_MS away.
  void WakeFlusher();

 private:
  static Runtime& Construct();
  friend class RuntimeInternals;
  Config config_;
  FdTable fds_;
  StringTable strings_;
  PathFilter filter_;
  ThreadRegistry registry_;
  int pid_ = 0;
};

// What the interposition layer leaves for the end of a trace (the
// asynchronous I/O trackers: requests completed and not reaped, or still in
// flight, lib/intercept/async_requests.h). Called by Finalize() and before
// an exec, once the program is done, on the thread that ends the trace,
// while events can still be recorded. Set once.
void SetBeforeFinalPass(void (*fn)());

// What the annotations leave for the end of a trace at exit (the regions
// still open on the thread that ends it, lib/api/annotations.cc): called by
// Finalize() alone, before SetBeforeFinalPass's, while events can still be
// recorded; not before an exec (which may fail, and the program go on to
// end them). Set once.
void SetAtExit(void (*fn)());

// Where the calling thread builds its next event: the ring's next slot, or
// nullptr when there is no buffer yet or the ring is full (the event is then
// built in the thread's spare and recorded the slow way).
inline Event* ReserveSlot(ThreadContext& t) {
  return __builtin_expect(t.buffer != nullptr, 1) ? t.buffer->ring.Reserve() : nullptr;
}

// Records one event for the calling thread.
inline void Record(ThreadContext& t, const Event& e);

// Publishes the event built in the slot ReserveSlot() gave, or in t.spare
// when it gave none.
__attribute__((always_inline)) inline void CommitEvent(ThreadContext& t, Event* slot) {
  if (__builtin_expect(slot != nullptr, 1)) {
    t.buffer->ring.Commit();
  } else {
    Record(t, t.spare);
  }
}

inline void Record(ThreadContext& t, const Event& e) {
  ThreadBuffer* b = t.buffer;
  if (__builtin_expect(b == nullptr, 0)) {
    b = Runtime::Get().AttachThread(t);
    if (b == nullptr) return;
  }
  if (__builtin_expect(!b->ring.TryPush(e), 0)) Runtime::Get().OnRingFull(b, e);
}

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_RUNTIME_H_
