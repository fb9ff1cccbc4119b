#include "lib/core/runtime.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "lib/core/child_env.h"
#include "lib/core/clock.h"
#include "lib/core/cuda_injection.h"
#include "lib/core/fatal_signals.h"
#include "lib/core/launch_env.h"
#include "lib/core/map_faults.h"
#include "lib/core/nvtx_injection.h"
#include "lib/core/own_fd.h"
#include "lib/core/process_info.h"
#include "lib/core/rank_io_map.h"
#include "lib/core/raw_log.h"
#include "lib/core/recording_window.h"
#include "lib/core/real_symbol.h"
#include "lib/core/run_id.h"
#include "lib/core/sidecar.h"
#include "lib/core/stacks.h"
#include "lib/core/trace_sink.h"
#include "lib/core/tsc_clock.h"

namespace dlprof::core {

std::atomic<int> g_state{static_cast<int>(RuntimeState::kUninitialized)};
uint8_t g_kind_enabled[kEventKindLimit];
__thread ThreadContext tls_thread __attribute__((tls_model("initial-exec"))) = {};
Runtime* g_runtime = nullptr;

namespace {

// The runtime is never destroyed: wrappers may run during and after static
// destruction of the program.
alignas(Runtime) unsigned char g_runtime_storage[sizeof(Runtime)];
TraceSink* g_sink = nullptr;
alignas(Sidecar) unsigned char g_sidecar_storage[sizeof(Sidecar)];
Sidecar* g_sidecar = nullptr;  // the rings sidecar (sidecar.h); constructed once
pthread_key_t g_thread_key;
uint64_t g_process_start_ns = 0;
std::atomic<void (*)()> g_before_final_pass{nullptr};
std::atomic<void (*)()> g_at_exit{nullptr};

// The annotations' regions still open at exit, while the runtime still runs.
void RunAtExit() {
  if (void (*fn)() = g_at_exit.load(std::memory_order_acquire)) fn();
}

// The interposition layer's last records, while the runtime still runs.
void RunBeforeFinalPass() {
  if (void (*fn)() = g_before_final_pass.load(std::memory_order_acquire)) fn();
}

int32_t Gettid() { return static_cast<int32_t>(syscall(SYS_gettid)); }

// Keeps tracer code untraced for the scope.
class InternalScope {
 public:
  InternalScope() : saved_(tls_thread.internal) { tls_thread.internal = true; }
  ~InternalScope() { tls_thread.internal = saved_; }

 private:
  bool saved_;
};

// Buffers of ended threads waiting for the flusher to free them: from
// kRetiredWake on, a new thread that finds none free wakes the flusher;
// from kRetiredSlack on, it writes them itself rather than add one
// (AttachThread).
constexpr uint32_t kRetiredWake = 8;
constexpr uint32_t kRetiredSlack = 32;

// glibc's main thread: a forked child whose thread is another may see
// that thread return from its start routine, the child's last.
pthread_t g_initial_thread;

void OnThreadExit(void* value) {
  auto* b = static_cast<ThreadBuffer*>(value);
  if (tls_thread.buffer == b) tls_thread.buffer = nullptr;
  ThreadRegistry::Retire(b);
  Runtime::Get().OnThreadExiting();
}

uint64_t RingCapacity(uint32_t buffer_kb) {
  uint64_t slots = uint64_t{buffer_kb} * 1024 / sizeof(Event);
  uint64_t cap = 64;
  while (cap * 2 <= slots) cap *= 2;
  return cap;
}

void EnableKinds(uint32_t modules) {
  for (int code = 0; code < kEventKindLimit; ++code) {
    const EventKindInfo* info = LookupKind(code);
    if (!info) continue;
    uint32_t bit = 0;
    switch (info->category) {
      case Category::Posix: bit = kModulePosix; break;
      case Category::Stdio: bit = kModuleStdio; break;
      case Category::Mpiio: bit = kModuleMpiio; break;
      case Category::Cuda: bit = kModuleCuda; break;
      case Category::App: bit = kModuleApp; break;
      case Category::Gds: bit = kModuleGds; break;
      case Category::Aio: bit = kModuleAio; break;
      case Category::Internal: bit = kModuleAll; break;
    }
    g_kind_enabled[code] = (modules & bit) != 0;
  }
}

// Set once the final block is written (or could not be): a fatal signal
// that arrives while Finalize() runs on another thread waits for it.
std::atomic<bool> g_trace_closed{false};

// One credential change at a time; whether it stopped the flusher.
std::mutex g_credentials_mu;
bool g_flusher_stopped = false;

// When this thread began its fork (the prepare handler): the child's start.
// The child's own first moment on a CPU may come long after on a loaded
// machine, when its parent has gone on (a DataLoader's iter() forks its
// workers and returns, and the loop begins another loader's).
__thread uint64_t tls_fork_began_ns __attribute__((tls_model("initial-exec"))) = 0;

void ForkPrepareHandler() {
  OwnFdBeforeFork();
  tls_fork_began_ns = NowNs();
}

void ForkParentHandler() {
  OwnFdAfterFork();
  tls_fork_began_ns = 0;
}

void ForkChildHandler() {
  // Held by another thread of the parent's at the fork, maybe: the child's
  // only thread starts with it free.
  new (&g_credentials_mu) std::mutex();
  OwnFdAfterForkInChild();
  Runtime::Get().OnForkChild();
}

// The trace is whole (its final block written): the rings sidecar has
// nothing the trace lacks. Not so while blocks wait in memory for a free
// descriptor (a program that ends holding all it may open): the sidecar is
// then the only place their events are, and dlprof-dump reads it.
void RemoveSidecar() {
  if (g_sidecar != nullptr && g_sink != nullptr && !g_sink->failed() &&
      !g_sink->holds_unwritten()) {
    g_sidecar->Remove();
  }
}

}  // namespace

void SetBeforeFinalPass(void (*fn)()) { g_before_final_pass.store(fn, std::memory_order_release); }
void SetAtExit(void (*fn)()) { g_at_exit.store(fn, std::memory_order_release); }

Runtime& Runtime::Construct() {
  if (g_runtime == nullptr) g_runtime = new (g_runtime_storage) Runtime();
  return *g_runtime;
}

bool Runtime::InOwnProcess() const { return syscall(SYS_getpid) == pid_; }

void Runtime::Initialize() {
  int expected = static_cast<int>(RuntimeState::kUninitialized);
  if (!g_state.compare_exchange_strong(expected, static_cast<int>(RuntimeState::kInitializing))) {
    return;
  }
  InternalScope internal;
  NoteStderr();  // fd 2 now is where our messages go (raw_log.h)
  g_process_start_ns = NowNs();
  // What a traced parent handed on goes out of the program's sight first;
  // the configuration reads it with the environment as the process got it,
  // past any getenv the program defines (child_env.h). Warnings wait for
  // DLPROF_QUIET.
  TakeInheritedEnv();
  std::vector<std::string> warnings;
  config_ = ParseConfig(RuntimeEnv, [&](const std::string& w) { warnings.push_back(w); });
  SetLogQuiet(config_.quiet);
  // Said once per run, as the reason for stepping aside below: every
  // process of a job reads the same environment. Its children are told it
  // was said; a launcher's ranks are siblings, so only rank 0 (or a process
  // no launcher numbered) says it, not each of a thousand ranks.
  if (!warnings.empty() && !HasChildMarker(kConfigWarnedVar) && LaunchRank(RuntimeEnv) <= 0) {
    for (const std::string& w : warnings) RawLog("%s", w.c_str());
    AddChildMarker(kConfigWarnedVar);
  }
  auto step_aside = [](const std::string& why) {
    // Said once per run: the children are told it was (child_env.h).
    if (!HasChildMarker(kUntracedWarnedVar)) {
      RawLog("%s; the program runs untraced", why.c_str());
      AddChildMarker(kUntracedWarnedVar);
    }
    g_state.store(static_cast<int>(RuntimeState::kDisabled));
  };
  if (!config_.enabled) {
    g_state.store(static_cast<int>(RuntimeState::kDisabled));
    return;
  }
  // Children that start elsewhere must write into the same directory.
  if (config_.dir[0] != '/') {
    char cwd[PATH_MAX];
    char abs[PATH_MAX];
    if (getcwd(cwd, sizeof(cwd)) && NormalizePath(cwd, config_.dir.c_str(), abs, sizeof(abs))) {
      config_.dir = abs;
    }
  }
  {
    struct utsname u;
    ResolveProcessRunId(RuntimeEnv, uname(&u) == 0 ? u.nodename : "");
  }
  // The absolute directory and the run id go to the children that exec and
  // spawn hands them to; the program's own environment stays as it was.
  PrepareChildEnv(config_.dir.c_str(), config_.python);
  // The bootstrap's imports and Python's scans of its directory are the
  // tracer's, not the program's: never in its trace.
  filter_.Configure(config_.include, config_.exclude,
                    {config_.dir, PythonBootstrapDir(), LauncherPythonDir()});

  struct rlimit lim {};
  int fd_capacity = 65536;
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_max != RLIM_INFINITY) {
    fd_capacity = static_cast<int>(lim.rlim_max < (1u << 20) ? lim.rlim_max : (1u << 20));
    if (fd_capacity < 1024) fd_capacity = 1024;
  } else {
    fd_capacity = 1 << 20;
  }
  if (!strings_.Init(config_.max_strings) || !fds_.Init(fd_capacity)) {
    step_aside("cannot reserve memory for the tracer's tables");
    return;
  }
  registry_.Configure(RingCapacity(config_.buffer_kb));
  EnableKinds(config_.modules);
  SetUpEventClock(config_.clock);  // before the trace's header names it
  pthread_key_create(&g_thread_key, OnThreadExit);

  pid_ = static_cast<int>(syscall(SYS_getpid));
  g_initial_thread = pthread_self();
  // How page faults on mapped files will be recorded: the header says it.
  MapFaults::Get().Decide(config_.map_faults, KindEnabled(EventKind::MajorFault));
  format::ProcessInfo info = CollectProcessInfo(/*forked=*/false, g_process_start_ns);
  g_sink = new TraceSink(&registry_, &strings_, config_);
  std::string error;
  if (!g_sink->Open(info, &error)) {
    g_sink = nullptr;
    step_aside(error);
    return;
  }
  SetUpSidecar(info.rank);
  ScanInheritedFds(*this);
  InstallFatalSignalHandlers();
  SetUpCudaInjection(config_);  // before the program can initialise CUDA
  SetUpNvtxInjection(config_);  // before the program's first NVTX call
  PutBootstrapOnPythonPath();   // a Python interpreter: before Python reads PYTHONPATH
  SetUpStacks(config_);         // DLPROF_STACKS=1: load libunwind
  static bool atfork_registered = false;
  if (!atfork_registered) {
    pthread_atfork(ForkPrepareHandler, ForkParentHandler, ForkChildHandler);
    atfork_registered = true;
  }
  if (!g_sink->StartFlusher()) {
    RawLog("cannot start the flusher thread; writing from the program's threads");
  }
  g_state.store(static_cast<int>(RuntimeState::kRunning), std::memory_order_release);
}

void Runtime::Finalize(bool on_flusher) {
  // A vfork child calling exit(), or the child of an unprepared fork: the
  // trace and the state are the parent's.
  if (!InOwnProcess()) return;
  int running = static_cast<int>(RuntimeState::kRunning);
  int disabled = static_cast<int>(RuntimeState::kDisabled);
  int prev = g_state.load();
  if (prev != running && !(prev == disabled && g_sink)) return;
  if (prev == running) {
    CloseWindowLeftOpen(tls_thread);
    RunAtExit();
    RunBeforeFinalPass();
  }
  prev = g_state.load();
  if (prev != running && !(prev == disabled && g_sink)) return;
  // A fatal signal must not cut the final pass short (a Pool worker exits
  // while terminate() signals it): this thread takes the signal only
  // afterwards, and our handler on another thread waits for the pass.
  sigset_t old_mask;
  BlockFatalSignals(&old_mask);
  if (!g_state.compare_exchange_strong(prev, static_cast<int>(RuntimeState::kFinalized)) ||
      !g_sink) {
    pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    return;
  }
  InternalScope internal;
  const TraceSink::FlusherFinish finish =
      on_flusher ? g_sink->FinishOnFlusher() : TraceSink::FlusherFinish::kNoFlusher;
  if (finish != TraceSink::FlusherFinish::kStalled) {
    g_sink->Close(kBlockFlagFinal);  // (after the flusher's pass: joins it, writes no more)
    RemoveSidecar();
  }
  RankIoMap::Get().Leave();
  g_trace_closed.store(true, std::memory_order_release);
  if (!config_.quiet_exit) {
    const unsigned long long lost = g_sink->events_lost();
    RawLog("trace %s: %llu events written, %llu dropped%s", g_sink->path().c_str(),
           static_cast<unsigned long long>(g_sink->events_written()),
           static_cast<unsigned long long>(g_sink->events_dropped()),
           lost > 0 ? (", " + std::to_string(lost) + " lost to a full disk").c_str() : "");
  }
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
}

void Runtime::FinalizeFromSignal() {
  if (!InOwnProcess() || !g_sink) return;
  int running = static_cast<int>(RuntimeState::kRunning);
  if (!g_state.compare_exchange_strong(running, static_cast<int>(RuntimeState::kFinalized))) {
    // Finalize() may be writing the final block on another thread: let it
    // finish (while it makes progress, within bounds) before the default
    // action ends the process.
    if (g_state.load() == static_cast<int>(RuntimeState::kFinalized)) {
      g_sink->AwaitFromSignal([] { return g_trace_closed.load(std::memory_order_acquire); });
    }
    return;
  }
  InternalScope internal;
  if (g_sink->FinalPassFromSignal(g_sidecar != nullptr && g_sidecar->active())) RemoveSidecar();
  RankIoMap::Get().Leave();
  g_trace_closed.store(true, std::memory_order_release);
}

void Runtime::FlushForExec() {
  if (g_state.load() != static_cast<int>(RuntimeState::kRunning) || !InOwnProcess()) return;
  RunBeforeFinalPass();
  InternalScope internal;
  g_sink->Pass(kBlockFlagFinal);
  g_sink->ReportUnwritten();
  RemoveSidecar();  // if exec fails, the rings go on in memory alone
}

void Runtime::OnForkChild() {
  if (g_state.load() != static_cast<int>(RuntimeState::kRunning)) return;
  InternalScope internal;
  // The process that forked us: getppid() says 1 (or a subreaper) once it
  // has ended, as daemon()'s parent does at once.
  const int parent = pid_;
  pid_ = static_cast<int>(syscall(SYS_getpid));
  // The parent's rings sidecar is the parent's: nothing of ours may go
  // into it any more (its pages are shared with the parent).
  if (g_sidecar != nullptr) g_sidecar->ForgetAfterFork();
  registry_.UseSidecar(nullptr);
  strings_.UseLog(nullptr);
  strings_.AfterFork();
  strings_.MarkAllUnemitted();
  // The parent's sink may have been mid-write in another thread at the
  // fork: its lock and compressor state are not ours to touch. Start anew,
  // with no descriptor of the parent's trace.
  if (g_sink != nullptr) g_sink->CloseKeptDescriptorInChild();
  g_sink = new TraceSink(&registry_, &strings_, config_);
  const uint64_t began = tls_fork_began_ns != 0 ? tls_fork_began_ns : NowNs();
  tls_fork_began_ns = 0;
  format::ProcessInfo info = CollectProcessInfo(/*forked=*/true, began);
  info.ppid = parent;
  std::string error;
  const bool opened = g_sink->Open(info, &error);
  if (opened) SetUpSidecar(info.rank);
  // Fresh rings, in the child's own sidecar or memory, before anything is
  // recorded here.
  if (!registry_.ResetAfterFork(tls_thread.buffer, Gettid())) {
    tls_thread.buffer = nullptr;  // unmapped: its thread's exit must not retire it
    pthread_setspecific(g_thread_key, nullptr);
  }
  strings_.ReplayIntoLog();
  // The parent's fault events are its threads' (their descriptors go); a
  // mapped file inherited gets this thread one of its own.
  MapFaults::Get().AfterFork(opened ? Gettid() : 0);
  if (!opened) {
    g_sink = nullptr;
    if (!HasChildMarker(kUntracedWarnedVar)) {
      RawLog("%s; this child runs untraced", error.c_str());
      AddChildMarker(kUntracedWarnedVar);
    }
    g_state.store(static_cast<int>(RuntimeState::kDisabled));
    return;
  }
  if (!g_sink->StartFlusher()) {
    RawLog("cannot start the flusher thread in a forked child");
  } else if (!pthread_equal(pthread_self(), g_initial_thread)) {
    g_sink->WatchLastThread();
  }
}

void Runtime::OnUnpreparedForkChild() {
  // (pid_ stays the parent's: Finalize and exec's flush leave its trace be.)
  g_state.store(static_cast<int>(RuntimeState::kDisabled), std::memory_order_release);
  // The parent's writes of its trace, and its descriptors held low, are
  // not this process's to wait for (its opens would wait forever).
  g_own_fd_scopes.store(0, std::memory_order_relaxed);
  g_low_own_fds.store(0, std::memory_order_relaxed);
}

// Both leave errno as they found it: the call between them does not touch it
// when it succeeds, and the program's errno must read the same as untraced
// (WaitUntilGone's last tgkill failed with ESRCH: a successful setuid or
// unshare left errno 3).
void Runtime::BeforeCredentialChange() {
  ErrnoSaver keep_errno;
  g_credentials_mu.lock();
  g_flusher_stopped = false;
  const int state = g_state.load();
  if (g_sink == nullptr || (state != static_cast<int>(RuntimeState::kRunning) &&
                            state != static_cast<int>(RuntimeState::kDisabled))) {
    return;
  }
  InternalScope internal;
  g_sink->KeepDescriptor();  // while the old credentials open it
  if (g_sidecar != nullptr) g_sidecar->KeepFd();  // (new threads' rings)
  g_flusher_stopped = g_sink->StopFlusher();
}

void Runtime::AfterCredentialChange(bool changed_mounts) {
  ErrnoSaver keep_errno;
  if (g_sink != nullptr) {
    InternalScope internal;
    g_sink->ReleaseDescriptor(changed_mounts);  // where the new credentials open it too
    if (g_sidecar != nullptr && !changed_mounts) g_sidecar->ReleaseFd();
    if (g_flusher_stopped && !g_sink->StartFlusher()) {
      RawLog("cannot start the flusher thread again; writing from the program's threads");
    }
  }
  g_credentials_mu.unlock();
}

void Runtime::OnThreadExiting() {
  MapFaults::Get().OnThreadEnding();
  TraceSink* sink = g_sink;
  if (sink == nullptr || !sink->flusher_running()) return;
  if (Gettid() == pid_) sink->WatchLastThread();
  sink->NoteThreadExit();
}

void Runtime::SetRank(int32_t rank) {
  if (g_sink) g_sink->set_rank(rank);
  if (g_sidecar != nullptr && g_sidecar->active()) {
    g_sidecar->header()->rank.store(rank, std::memory_order_relaxed);
  }
}

void Runtime::SetUpSidecar(int32_t rank) {
  if (g_sidecar == nullptr) g_sidecar = new (g_sidecar_storage) Sidecar();
  if (!g_sidecar->Create(g_sink->path(), pid_, rank, registry_.ring_capacity(),
                         sizeof(ThreadBuffer), registry_.RegionBytes())) {
    return;  // the rings stay in memory: tracing works, crash recovery is lost
  }
  registry_.UseSidecar(g_sidecar);
  strings_.UseLog(g_sidecar);
  g_sink->UseSidecar(g_sidecar);
}

void Runtime::FlushNow() {
  if (g_state.load() != static_cast<int>(RuntimeState::kRunning) || !InOwnProcess()) return;
  InternalScope internal;
  g_sink->Pass(0);
}

void Runtime::WakeFlusher() {
  TraceSink* sink = g_sink;
  if (sink != nullptr && g_state.load(std::memory_order_relaxed) ==
                             static_cast<int>(RuntimeState::kRunning)) {
    sink->Wake();
  }
}

ThreadBuffer* Runtime::AttachThread(ThreadContext& t) {
  if (t.attach_failed) return nullptr;
  InternalScope internal;
  const int32_t tid = Gettid();
  uint32_t retired = 0;
  ThreadBuffer* b = registry_.Claim(tid, &retired);
  // Ended threads' buffers wait for the flusher to write their events and
  // free them. Where it lags that far behind the thread starts, this
  // thread writes them itself (after the flusher's pass in progress, if
  // any) and takes one, rather than add a buffer: in thread churn the list
  // grew by thousands (3 threads starting short threads: 1.4-2.0 GB of
  // sidecar in 2 s on 2 cores, each buffer allocated and mapped, and a
  // fork re-created them all). Fewer, and it adds one, as before; so too
  // when its pass freed none (the trace's blocks held for want of a
  // descriptor: their rings stay until they are written).
  TraceSink* sink = g_sink;
  const bool running = sink != nullptr && !sink->final_done() &&
      g_state.load(std::memory_order_relaxed) == static_cast<int>(RuntimeState::kRunning);
  if (b == nullptr && running && retired >= kRetiredWake && retired < kRetiredSlack) {
    sink->Wake();  // it frees them within its next pass, this thread adds one meanwhile
  } else if (b == nullptr && running && retired >= kRetiredSlack) {
    if (config_.on_full == OnFull::kDrop) {
      // A producer never waits: only if no other thread is writing.
      if (sink->TryDrainFromProducer()) b = registry_.Claim(tid, nullptr);
    } else {
      sink->DrainFromProducer();
      b = registry_.Claim(tid, nullptr);
    }
  }
  if (b == nullptr) b = registry_.Add(tid);
  if (b == nullptr) {
    t.attach_failed = true;
    RawLog("cannot allocate an event buffer for thread %d; its calls go untraced", Gettid());
    return nullptr;
  }
  pthread_setspecific(g_thread_key, b);
  t.buffer = b;
  if (g_map_faults_on.load(std::memory_order_relaxed)) MapFaults::Get().OnThreadAttached(b->tid);
  return b;
}

void Runtime::OnRingFull(ThreadBuffer* b, const Event& e) {
  auto count_drop = [b] {
    b->dropped.store(b->dropped.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  };
  if (config_.on_full == OnFull::kDrop || g_sink == nullptr) {
    // The ring is past its fill mark: have the flusher drain it now, not at
    // its next tick (on the first drop and every 256th, not on each one).
    if (g_sink != nullptr && (b->dropped.load(std::memory_order_relaxed) & 255) == 0) {
      g_sink->Wake();
    }
    count_drop();
    return;
  }
  InternalScope internal;
  for (int attempt = 0;; ++attempt) {
    // Wake the flusher and give it a moment; if it is starved of CPU (a
    // busy machine), drain the rings from this thread instead of waiting.
    if (g_sink->flusher_running() && attempt < 8) {
      g_sink->Wake();
      syscall(SYS_sched_yield);
    } else if (!g_sink->TryDrainFromProducer()) {
      syscall(SYS_sched_yield);
    }
    if (b->ring.TryPush(e)) return;
    if (g_state.load(std::memory_order_relaxed) != static_cast<int>(RuntimeState::kRunning)) {
      count_drop();
      return;
    }
  }
}

// errno kept: a program starts with errno 0 (C11 7.5), and ends as it left it.
__attribute__((constructor)) static void DlprofInit() {
  ErrnoSaver keep;
  Runtime::Get().Initialize();
}
__attribute__((destructor)) static void DlprofFini() {
  ErrnoSaver keep;
  Runtime::Get().Finalize();
}

}  // namespace dlprof::core
