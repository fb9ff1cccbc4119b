// The trace file of one process and the flusher thread that fills it
// (trace_sink.h).
#include "lib/core/trace_sink.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "lib/core/clock.h"
#include "lib/core/map_faults.h"
#include "lib/core/own_fd.h"
#include "lib/core/raw_log.h"
#include "lib/core/runtime.h"
#include "lib/format/event_rules.h"
#include "lib/format/trace_layout.h"

namespace dlprof::core {
namespace {

constexpr uint64_t kMaxEventsPerBlock = 256 * 1024;
constexpr uint64_t kBusyPollNs = 1000000;  // 1 ms while events arrive
// While a traced file is mapped, the kernel's fault buffers (68 KiB a
// thread, map_faults.h) are looked at this often: a thread faulting every
// 80 us (80 bytes of records a fault) fills half of one in 32 ms.
constexpr uint64_t kFaultPollNs = 5000000;
// The longest time between two blocks, so between two (monotonic_raw,
// realtime) pairs: the decoder fits the drift between hosts' clocks from
// them, also over the hours a process sits idle. An empty block costs ~90
// bytes: 65 KB per process and hour at most.
constexpr uint64_t kClockPairIntervalNs = 5000000000ull;
// zstd's fastest strategy: on the blocks the flusher writes (a few thousand
// events) level 3 cost 2 to 4 times the CPU for 1.5-3.5 % fewer bytes
// (bench/zstd_choice, bench/README.md, issue 33).
constexpr int kZstdLevel = 1;
// The blocks that wait for a descriptor (EMFILE): beyond this, tracing stops.
constexpr size_t kMaxPendingBytes = 64u << 20;

// The flusher blocks every signal for good: its Lock needs no mask change.
thread_local bool tls_flusher __attribute__((tls_model("initial-exec"))) = false;
// This thread holds a sink's lock (a handler never runs on top of it).
thread_local bool tls_holds_sink __attribute__((tls_model("initial-exec"))) = false;

void FutexWait(std::atomic<uint32_t>* word, uint32_t expected, uint64_t timeout_ns) {
  struct timespec ts;
  ts.tv_sec = static_cast<time_t>(timeout_ns / 1000000000u);
  ts.tv_nsec = static_cast<long>(timeout_ns % 1000000000u);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, &ts,
          nullptr, 0);
}

void FutexWake(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr,
          0);
}

// mkdir -p with 0700 for the parts it creates. From the leaf upwards: where
// the directory exists (every process of a job but the first on a host),
// that costs one mkdir, not one per component of the path -- on Lustre or
// GPFS each is a request to the metadata server. EEXIST from a process that
// won the race is success.
bool MakeDirs(const std::string& dir, std::string* error) {
  if (syscall(SYS_mkdir, dir.c_str(), 0700) != 0) {
    int err = errno;
    if (err == ENOENT) {
      size_t slash = dir.find_last_of('/');
      while (slash != std::string::npos && slash > 0 && dir[slash - 1] == '/') --slash;
      if (slash == std::string::npos || slash == 0) {
        *error = "cannot create " + dir + ": " + std::strerror(err);
        return false;
      }
      if (!MakeDirs(dir.substr(0, slash), error)) return false;
      if (syscall(SYS_mkdir, dir.c_str(), 0700) != 0) err = errno;
      else err = 0;
    }
    if (err != 0 && err != EEXIST) {
      *error = "cannot create " + dir + ": " + std::strerror(err);
      return false;
    }
  }
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    *error = dir + " is not a directory";
    return false;
  }
  return true;
}

}  // namespace

// The mask goes on before the lock is taken and comes off after it is given
// back: a signal between the two would find the lock held by its own thread.
TraceSink::Lock::Lock(TraceSink* sink, bool try_only) : sink_(sink) {
  if (!tls_flusher) {
    sigset_t all;
    sigfillset(&all);
    masked_ = pthread_sigmask(SIG_BLOCK, &all, &old_) == 0;
  }
  if (try_only) {
    owns_ = sink_->mu_.try_lock();
  } else {
    sink_->mu_.lock();
    owns_ = true;
  }
  if (owns_) tls_holds_sink = true;
}

TraceSink::Lock::~Lock() {
  if (owns_) {
    tls_holds_sink = false;
    sink_->mu_.unlock();
  }
  if (masked_) pthread_sigmask(SIG_SETMASK, &old_, nullptr);
}

TraceSink::TraceSink(ThreadRegistry* registry, StringTable* strings, const Config& config)
    : registry_(registry), strings_(strings), config_(config), framer_(kZstdLevel) {}

bool TraceSink::Open(const format::ProcessInfo& info, std::string* error) {
  // DLPROF_DIR/<run>/<host>/ (lib/format/trace_layout.h).
  const std::string dir = format::HostDirectory(config_.dir, info.run_id, info.host);
  // Never cut short, whatever DLPROF_DIR's length.
  path_ = dir + "/" + format::TraceFileName(info.exe, info.host, info.pid, info.clock_mono_ns);
  const char* name = path_.c_str();
  auto create = [&] {
    return static_cast<int>(syscall(SYS_openat, AT_FDCWD, name,
                                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  };
  rank_.store(info.rank, std::memory_order_relaxed);
  // The header says which clock traced calls read, and the calibration's
  // error where it is the TSC.
  format::ProcessInfo with_clock = info;
  if (EventClockDecision().tsc) {
    if (tick_clock_.Start()) {
      tsc_ = true;
      encoder_.SetTickScale(tick_clock_.scale());
      scale_ns_.store(tick_clock_.scale().ns, std::memory_order_relaxed);
    } else {
      // Before any traced call read the TSC: nothing recorded needs a scale.
      FallBackToClockGettime("CLOCK_MONOTONIC_RAW stood still while the TSC ran");
      RawLog("clock_gettime(CLOCK_MONOTONIC_RAW) stands still while the TSC runs: "
             "the TSC cannot be calibrated; timing with clock_gettime");
    }
  }
  with_clock.clock = EventClockDecision().why;
  if (tsc_) {
    with_clock.clock +=
        "; calibration error " + std::to_string(tick_clock_.start_error_ns()) + " ns";
  }
  if (config_.keep_ms > 0) with_clock.flags |= kHeaderFlagSegment;
  std::vector<uint8_t> header = format::EncodeFileHeader(with_clock);
  OwnFdScope scope;
  // The directory usually exists (the host's other processes made it):
  // try the file first, and make the directories only when it is missing.
  int fd = create();
  if (fd < 0 && (errno == ENOENT || errno == ENOTDIR)) {
    // DLPROF_DIR first, so that a message names the part the user gave.
    if (!MakeDirs(config_.dir, error) || !MakeDirs(dir, error)) return false;
    fd = create();
  }
  if (fd < 0) {
    *error = "cannot create " + path_ + ": " + std::strerror(errno);
    return false;
  }
  struct stat st {};
  const bool ok = syscall(SYS_fstat, fd, &st) == 0 && WriteFd(fd, header.data(), header.size());
  const int err = errno;
  syscall(SYS_close, fd);
  if (!ok) {
    // No trace without its header: remove the file we created.
    *error = "cannot write " + path_ + ": " + std::strerror(err);
    syscall(SYS_unlink, name);
    return false;
  }
  file_bytes_ = header.size();
  file_dev_ = st.st_dev;
  file_ino_ = st.st_ino;
  opened_ns_ = NowNs();
  last_block_ns_.store(opened_ns_, std::memory_order_relaxed);
  if (config_.keep_ms > 0) StartKeeping(header, opened_ns_);
  return true;
}

int TraceSink::OpenForAppend() {
  int fd;
  do {
    fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, path_.c_str(),
                                  O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC));
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return -1;
  // Another file in its place (the trace removed and the name reused) is
  // not ours to write into.
  if (!IsTrace(fd)) {
    syscall(SYS_close, fd);
    errno = ENOENT;
    return -1;
  }
  return fd;
}

bool TraceSink::IsTrace(int fd) const {
  struct stat st;
  return syscall(SYS_fstat, fd, &st) == 0 && st.st_dev == file_dev_ && st.st_ino == file_ino_;
}

bool TraceSink::WriteFd(int fd, const uint8_t* p, size_t n) {
  while (n > 0) {
    long w = syscall(SYS_write, fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
    progress_.fetch_add(1, std::memory_order_relaxed);
  }
  return true;
}

bool TraceSink::WriteAll(const uint8_t* p, size_t n) {
  int err = 0;
  bool ok = false;
  {
    OwnFdScope scope;
    int fd = WriteDescriptor();
    if (fd < 0) {
      err = errno;
    } else {
      ok = (pending_.empty() || WriteFd(fd, pending_.data(), pending_.size())) &&
           WriteFd(fd, p, n);
      err = errno;
      if (fd != kept_fd_.load(std::memory_order_relaxed)) syscall(SYS_close, fd);
    }
  }
  if (ok && !pending_.empty()) {
    std::vector<uint8_t>().swap(pending_);
    waiting_for_fd_.store(false, std::memory_order_relaxed);
  }
  if (!ok && (err == EMFILE || err == ENFILE) && pending_.size() + n <= kMaxPendingBytes) {
    // The program holds every descriptor it may: keep the block for a later
    // write (the next pass, or the last at exit) rather than stop tracing.
    if (!told_no_fd_) {
      RawLog("cannot open trace %s: %s; its events wait in memory until a descriptor is free",
             path_.c_str(), std::strerror(err));
      told_no_fd_ = true;
    }
    pending_.insert(pending_.end(), p, p + n);
    waiting_for_fd_.store(true, std::memory_order_relaxed);
    return true;
  }
  errno = err;
  return ok;
}

void TraceSink::DrainInto(ThreadBuffer* b) {
  uint32_t state = b->state.load(std::memory_order_acquire);
  if (state != ThreadBuffer::kOwned && state != ThreadBuffer::kRetired) return;
  // A ring may hold millions of events (DLPROF_BUFFER_KB up to 1 GiB): split
  // them into blocks of at most kMaxEventsPerBlock, or the block would pass
  // the size the reader accepts (kMaxBlockRawBytes) and all of it be lost.
  progress_.fetch_add(1, std::memory_order_relaxed);
  // A thread whose faults are events: its read calls' bytes are not its
  // faults', and a fault starts after its calls (map_faults.h).
  const bool faults = g_map_faults_on.load(std::memory_order_relaxed) &&
                      MapFaults::Get().mode() == FaultMode::kEvents &&
                      MapFaults::Get().Covers(b->tid);
  uint64_t call_bytes = 0;
  call_ends_.clear();
  auto take_all = [&](const Event* ev, size_t n) {
    if (faults) {
      for (size_t i = 0; i < n; ++i) {
        const EventRules& rules = RulesFor(ev[i].kind);
        if (!rules.traced_call) continue;
        uint64_t start = ev[i].start_ns, dur = ev[i].dur_ns;
        if (ev[i].flags & kEventFlagTicks) tick_clock_.scale().Times(start, dur, &start, &dur);
        call_ends_.push_back(start + dur);
        const EventKindInfo* k = LookupKind(ev[i].kind);
        if (k->op_class == OpClass::Read && CountsAsIo(ev[i])) call_bytes += BytesMoved(ev[i]);
      }
    }
    while (n > 0) {
      if (encoder_.event_count() >= kMaxEventsPerBlock) FinishBlock(0);
      size_t take = std::min<size_t>(n, kMaxEventsPerBlock - encoder_.event_count());
      encoder_.AddEvents(b->tid, ev, take);
      if (counters_) counters_->Add(ev, take, tick_clock_.scale());
      b->drained += take;
      ev += take;
      n -= take;
    }
  };
  if (b->shared) {
    // A ring of the sidecar keeps its events' slots until the trace holds
    // them (WriteBlock releases them): were a producer to store over an
    // event drained but not yet written, a SIGKILL in between would lose
    // it -- the flusher, descheduled in the middle of a block, let a
    // thread record a ring's worth (issue 51: reliability.signals under
    // load). The producer waits for the write instead, as for a full ring.
    b->ring.Peek(b->drained, take_all);
  } else {
    b->ring.Drain(take_all);
  }
  if (faults) MapFaults::Get().NoteCalls(b->tid, call_bytes, call_ends_);
  // A ring in the sidecar is freed for another thread only once its events
  // are in the trace (FreeWritten): until then the decoder may need them,
  // under this thread's tid.
  if (state == ThreadBuffer::kRetired && !b->shared && b->ring.Readable() == 0) {
    b->state.store(ThreadBuffer::kFree, std::memory_order_release);
  }
}

void TraceSink::DrainFaults(bool last) {
  if (!g_map_faults_on.load(std::memory_order_acquire)) return;
  MapFaults::Get().Drain(&faults_, &fault_records_lost_, last);
  for (const ThreadFaults& tf : faults_) {
    const Event* ev = tf.events.data();
    size_t n = tf.events.size();
    while (n > 0) {
      if (encoder_.event_count() >= kMaxEventsPerBlock) FinishBlock(0);
      const size_t take = std::min<size_t>(n, kMaxEventsPerBlock - encoder_.event_count());
      encoder_.AddEvents(tf.tid, ev, take);
      ev += take;
      n -= take;
    }
  }
}

void TraceSink::FreeWritten() {
  registry_->ForEach([&](ThreadBuffer* b) {
    // Nothing will be written any more: slots held for the trace go back.
    if (failed_ && b->shared) b->ring.Release(b->drained);
    if (b->shared && b->state.load(std::memory_order_acquire) == ThreadBuffer::kRetired &&
        b->ring.Readable() == 0 &&
        (failed_ || b->written.load(std::memory_order_relaxed) == b->drained)) {
      b->state.store(ThreadBuffer::kFree, std::memory_order_release);
    }
  });
}

void TraceSink::BeginBlock() {
  if (tsc_) RefreshTickScale();
  ClockPair clock = ReadClockPair();
  format::BlockInfo info;
  info.clock_mono_ns = clock.mono_ns;
  info.clock_real_ns = clock.real_ns;
  info.clock_error_ns = clock.error_ns;
  info.rank = rank_.load(std::memory_order_relaxed);
  // The drops so far go into this block's header: the encoder takes the
  // count at Begin, so collect it here rather than while draining.
  registry_->ForEach([&](ThreadBuffer* b) {
    uint64_t dropped = b->dropped.load(std::memory_order_relaxed);
    dropped_in_block_ += dropped - b->dropped_reported;
    b->dropped_reported = dropped;
  });
  dropped_in_block_ += fault_records_lost_;  // the kernel's fault buffers, full
  fault_records_lost_ = 0;
  info.dropped_events = dropped_in_block_;
  encoder_.Begin(info);
}

void TraceSink::FinishBlock(uint32_t block_flags) {
  size_t events = encoder_.event_count();
  if (events == 0 && block_flags == 0 && dropped_in_block_ == 0 && !write_empty_ &&
      pending_.empty()) {
    return;
  }
  if (!failed_) {
    AddNewStrings();
    encoder_.Finish(&raw_);
    if (WriteBlock(encoder_, static_cast<uint32_t>(events), block_flags)) {
      events_written_ += events;
    }
  }
  events_dropped_ += dropped_in_block_;
  dropped_in_block_ = 0;
  BeginBlock();
}

// Strings go in after the events are drained: every string an event refers
// to was published before the event was recorded. A burst of new paths larger
// than one block's share (a scan of a million files between two flushes) goes
// out first in blocks of strings alone, so that every string still comes
// before or with the events that use it and no block passes the reader's
// size limit.
void TraceSink::AddNewStrings() {
  constexpr size_t kStringBytesPerBlock = 16u << 20;  // events take <= ~10 MiB more
  strings_only_.Begin(format::BlockInfo{});
  strings_->EmitNew([&](uint32_t id, const char* text, size_t len) {
    if (failed_) return;
    if (encoder_.string_bytes() + len <= kStringBytesPerBlock) {
      encoder_.AddString(id, text, len);
      return;
    }
    if (strings_only_.string_bytes() + len > kStringBytesPerBlock) {
      strings_only_.Finish(&raw_);
      WriteBlock(strings_only_, 0, 0);
      strings_only_.Begin(format::BlockInfo{});
    }
    strings_only_.AddString(id, text, len);
  });
  if (strings_only_.string_bytes() > 0 && !failed_) {
    strings_only_.Finish(&raw_);
    WriteBlock(strings_only_, 0, 0);
  }
}

bool TraceSink::WriteBlock(const format::BlockEncoder& encoder, uint32_t events,
                           uint32_t block_flags) {
  if (failed_) return false;
  const bool framed = framer_.Frame(raw_, events, block_flags, encoder.span(), &framed_,
                                    &encoder.cuts());
  if (framed) {
    // Events block: the sidecar says which ring positions the trace will
    // hold once this write is whole, and where its end will be; a decoder
    // that finds the trace that long takes them, else the previous ones.
    // Bytes held back for want of a descriptor (pending_) go first, and are
    // not in the file until they are written.
    const uint64_t held = pending_.size();
    format::SidecarHeader* side =
        sidecar_ != nullptr && &encoder == &encoder_ ? sidecar_->header() : nullptr;
    if (side != nullptr) {
      registry_->ForEach([](ThreadBuffer* b) { b->pending = b->drained; });
      side->inflight_end.store(file_bytes_ + held + framed_.size(), std::memory_order_release);
    }
    if (WriteAll(framed_.data(), framed_.size())) {
      // On disk, this block and any held back before it: the positions of
      // the last events block framed (`pending`) are the trace's.
      const bool on_disk = pending_.empty();
      if (on_disk) file_bytes_ += held + framed_.size();
      if (on_disk && sidecar_ != nullptr && sidecar_->header() != nullptr) {
        registry_->ForEach([](ThreadBuffer* b) {
          b->written.store(b->pending, std::memory_order_release);
        });
      }
      if (side != nullptr) side->inflight_end.store(0, std::memory_order_release);
      // The sidecar's rings get the slots of the events this block took
      // back (after `written`, so that the trace holds every event a
      // producer may store over). A block held in memory for want of a
      // descriptor frees them too: the producers must not wait for one.
      if (&encoder == &encoder_) {
        registry_->ForEach([](ThreadBuffer* b) {
          if (b->shared) b->ring.Release(b->drained);
        });
      }
      return true;
    }
  }
  failed_ = true;
  if (framed && errno == ENOENT) {
    // Its events go nowhere; the program, and the children it forks (each
    // with a trace of its own), go on traced.
    RawLog("trace %s was removed while the program ran; its events are lost", path_.c_str());
    return false;
  }
  RawLog("cannot write trace %s: %s; tracing stops here, the program continues", path_.c_str(),
         std::strerror(errno));
  g_state.store(static_cast<int>(RuntimeState::kDisabled), std::memory_order_relaxed);
  return false;
}

void TraceSink::Pass(uint32_t block_flags) {
  Lock lock(this);
  PassLocked(block_flags);
}

void TraceSink::PassLocked(uint32_t block_flags) {
  // Nothing after the final block of a termination signal: a producer whose
  // ring was full as it came may still be on its way here.
  if (final_done()) return;
  BeginBlock();
  registry_->ForEach([&](ThreadBuffer* b) {
    DrainInto(b);
    if (encoder_.event_count() >= kMaxEventsPerBlock) FinishBlock(0);
  });
  DrainFaults((block_flags & kBlockFlagFinal) != 0);
  FinishBlock(block_flags);
  FreeWritten();
  if (counters_) AfterBlockKeeping(block_flags);
  last_block_ns_.store(NowNs(), std::memory_order_relaxed);
}

void TraceSink::ClockPass() {
  Lock lock(this);
  // Only a clock pair (and the drop count): the rings are left for their
  // own DLPROF_FLUSH_MS, as documented.
  BeginBlock();
  write_empty_ = true;
  FinishBlock(0);
  write_empty_ = false;
  if (counters_) AfterBlockKeeping(0);
  last_block_ns_.store(NowNs(), std::memory_order_relaxed);
}

bool TraceSink::TryDrainFromProducer() {
  // The flusher may hold the lock for its own pass, which frees room too.
  // Looked at first without the two mask changes: producers retry this.
  if (!mu_.try_lock()) return false;
  mu_.unlock();
  Lock lock(this, /*try_only=*/true);
  if (!lock.owns()) return false;
  PassLocked(0);
  return true;
}

void TraceSink::Wake() {
  wake_seq_.fetch_add(1, std::memory_order_release);
  FutexWake(&wake_seq_);
}

bool TraceSink::ShouldPass(uint64_t now, bool* active) {
  bool half_full = false;
  bool retired = false;
  uint64_t pending = 0;
  registry_->ForEach([&](ThreadBuffer* b) {
    uint32_t state = b->state.load(std::memory_order_acquire);
    if (state != ThreadBuffer::kOwned && state != ThreadBuffer::kRetired) return;
    uint64_t n = b->ring.Readable();
    pending += n;
    if (n * 2 >= b->ring.capacity()) half_full = true;
    if (state == ThreadBuffer::kRetired) retired = true;
  });
  *active = pending > 0;
  const uint64_t last = last_block_ns_.load(std::memory_order_relaxed);
  bool faults_half = false;
  if (MapFaults::Get().Pending(&faults_half)) {
    *active = true;
    if (faults_half || now - last >= kFaultPollNs) return true;
  }
  // Blocks waiting for a descriptor (EMFILE) are tried again as often.
  bool due = (pending > 0 || waiting_for_fd_.load(std::memory_order_relaxed)) &&
             now - last >= uint64_t{config_.flush_ms} * 1000000u;
  return half_full || due || retired;
}

void TraceSink::Loop() {
  CurrentThread().internal = true;
  MapFaults::Get().set_flusher_tid(static_cast<int32_t>(syscall(SYS_gettid)));
  tls_flusher = true;
  bool active = false;
  bool last_thread_gone = false;
  while (!stop_.load(std::memory_order_acquire)) {
    uint32_t seq = wake_seq_.load(std::memory_order_acquire);
    // Idle: wake at the next DLPROF_FLUSH_MS tick or when the next clock pair
    // is due, whichever comes first.
    const uint64_t since = NowNs() - last_block_ns_.load(std::memory_order_relaxed);
    const uint64_t pair_in = since >= kClockPairIntervalNs ? kBusyPollNs
                                                           : kClockPairIntervalNs - since;
    uint64_t idle_ns = std::min(uint64_t{config_.flush_ms} * 1000000u, pair_in);
    if (counters_) idle_ns = std::min(idle_ns, kKeepLookNs);  // `dlprof keep` within a second
    if (g_map_faults_on.load(std::memory_order_relaxed) &&
        MapFaults::Get().mode() == FaultMode::kEvents) {
      idle_ns = std::min(idle_ns, kFaultPollNs);  // the kernel's buffers are small
    }
    uint64_t wait_ns = active && idle_ns > kBusyPollNs ? kBusyPollNs : idle_ns;
    uint64_t watch_ns = 0;
    if (WatchDue(NowNs(), &watch_ns) && ProgramThreadsGone()) {
      last_thread_gone = true;
      break;
    }
    if (watch_ns > 0) wait_ns = std::min(wait_ns, watch_ns);
    if (const uint64_t due = ScaleDue(); due != 0) {
      const uint64_t now = NowNs();
      wait_ns = std::min(wait_ns, due > now ? due - now : 0);
    }
    // A request made while the last pass ran has already bumped wake_seq_:
    // look before sleeping, or the wake-up it sent is lost.
    if (final_request_.load(std::memory_order_acquire) != 1) {
      FutexWait(&wake_seq_, seq, wait_ns);
    }
    if (final_request_.load(std::memory_order_acquire) == 1) {
      Pass(kBlockFlagFinal);
      final_request_.store(2, std::memory_order_release);
      break;
    }
    const uint64_t now = NowNs();
    if (counters_) LookForKeepRequest(now);
    if (ShouldPass(now, &active)) {
      Pass(0);
    } else if (now - last_block_ns_.load(std::memory_order_relaxed) >= kClockPairIntervalNs) {
      ClockPass();
    } else if (const uint64_t due = ScaleDue(); due != 0 && now >= due) {
      Lock lock(this);
      RefreshTickScale();
    }
  }
  flusher_running_.store(false, std::memory_order_release);
  if (last_thread_gone) ExitAsLastThread();
}

// What glibc does on the last thread (exit(0), atexit handlers and all),
// done here because our thread was the last. On this thread from now on:
// the program's signal mask, traced calls (an atexit handler's I/O is the
// program's), and Finalize(), which finds it is on the flusher and does
// not wait for itself.
void TraceSink::ExitAsLastThread() {
  tls_flusher = false;
  CurrentThread().internal = false;
  pthread_sigmask(SIG_SETMASK, &program_mask_, nullptr);
  exit(0);
}

void* TraceSink::FlusherMain(void* self) {
  static_cast<TraceSink*>(self)->Loop();
  return nullptr;
}

bool TraceSink::StartFlusher() {
  // The flusher must never run a signal handler of the program (or ours),
  // nor this thread one while it holds flusher_mu_.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc;
  {
    std::lock_guard<std::mutex> guard(flusher_mu_);
    program_mask_ = old;
    stop_.store(false, std::memory_order_relaxed);
    flusher_running_.store(true, std::memory_order_release);
    rc = pthread_create(&thread_, nullptr, &TraceSink::FlusherMain, this);
    if (rc != 0) {
      flusher_running_.store(false, std::memory_order_release);
    } else {
      thread_started_ = true;
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return rc == 0;
}

void TraceSink::Close(uint32_t block_flags) {
  {
    std::lock_guard<std::mutex> guard(flusher_mu_);
    if (thread_started_) {
      stop_.store(true, std::memory_order_release);
      Wake();
      // exit() on the flusher itself (ExitAsLastThread) comes here too.
      if (!pthread_equal(thread_, pthread_self())) pthread_join(thread_, nullptr);
      thread_started_ = false;
    }
  }
  if (final_request_.load(std::memory_order_acquire) != 2) Pass(block_flags);
  Lock lock(this);  // a producer whose ring was full may still be draining
  if (!pending_.empty() && !failed_) {
    RawLog("cannot open trace %s at exit: no descriptor is free; its last %zu bytes of events "
           "are lost", path_.c_str(), pending_.size());
  }
}

bool TraceSink::FinalPassFromSignal() {
  // A Lock keeps signals off its thread, so this cannot be on top of one;
  // were it so, no wait could end (the flusher would wait for this thread).
  if (tls_holds_sink) return false;
  if (final_done()) return true;
  if (!flusher_running()) {
    // Written here, once the pass another thread may be making is done.
    return AwaitFromSignal([this] {
      Lock lock(this, /*try_only=*/true);
      if (!lock.owns()) return false;
      PassLocked(kBlockFlagFinal);
      final_request_.store(2, std::memory_order_release);
      return true;
    });
  }
  final_request_.store(1, std::memory_order_release);
  Wake();
  return AwaitFromSignal([this] { return final_done(); });
}

}  // namespace dlprof::core
