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
#include "lib/core/process_end.h"
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
// (bench/zstd_choice, bench/RESULTS_TSC.md, issue 33).
constexpr int kZstdLevel = 1;

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
      if (counters_) counters_->Add(b->tid, ev, take, tick_clock_.scale());
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

void TraceSink::DrainFaults(bool last, uint64_t calls_until) {
  if (!g_map_faults_on.load(std::memory_order_acquire)) return;
  MapFaults::Get().Drain(&faults_, &fault_records_lost_, last, calls_until);
  for (const ThreadFaults& tf : faults_) {
    const Event* ev = tf.events.data();
    size_t n = tf.events.size();
    while (n > 0) {
      if (encoder_.event_count() >= kMaxEventsPerBlock) FinishBlock(0);
      const size_t take = std::min<size_t>(n, kMaxEventsPerBlock - encoder_.event_count());
      encoder_.AddEvents(tf.tid, ev, take);
      if (counters_) counters_->Add(tf.tid, ev, take, tick_clock_.scale());
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
  bool lost = false;
  if (!failed_) {
    AddNewStrings();
    encoder_.Finish(&raw_);
    lost = !WriteBlock(encoder_, static_cast<uint32_t>(events), block_flags) && loss_.open;
  }
  // A block a full disk refused: its count of ring drops goes into the next.
  if (!lost) {
    events_dropped_ += dropped_in_block_;
    dropped_in_block_ = 0;
  }
  BeginBlock();
}

// Strings go in after the events are drained: every string an event refers
// to was published before the event was recorded. A burst of new paths larger
// than one block's share (a scan of a million files between two flushes, or
// every string again in a bounded trace's new segment) goes out first in
// blocks of strings alone, so that every string still comes before or with
// the events that use it and no block passes the reader's size limit. The
// share is 1 MiB: the block buffers (raw, framed, the encoder's) keep the
// size of the largest block, and a share of 16 MiB kept about 4 copies of
// every path a bounded trace had seen (tmpcache, 200,000 temporary files
// with DLPROF_KEEP=2s: 77.6 MB resident against 33.5 MB unbounded).
void TraceSink::AddNewStrings() {
  constexpr size_t kStringBytesPerBlock = 1u << 20;
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
  // Bounded, after a block a full disk refused: nothing more goes into this
  // segment (its strings went with that block) until one begins anew
  // (ResumeAfterLoss), but for the marker that ends it.
  if (loss_.open && (block_flags & kBlockFlagSegmentEnd) == 0) {
    LoseBlock(encoder, events, block_flags, loss_.error);
    return false;
  }
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
    if (WriteAll(framed_.data(), framed_.size(), (block_flags & kBlockFlagFinal) != 0)) {
      // On disk, this block and any held back before it: the positions of
      // the last events block framed (`pending`) are the trace's.
      const bool on_disk = pending_.empty();
      if (on_disk) file_bytes_ += held + framed_.size();
      // Events count as written once on disk, not when held back.
      pending_events_ += events;
      if (on_disk) {
        events_written_ += pending_events_;
        pending_events_ = 0;
      }
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
      last_write_failed_ = false;
      return true;
    }
  }
  const int err = errno;
  if (framed && keeping() && (err == ENOSPC || err == EDQUOT)) {
    // Bounded: the disk is full. The block is lost (WriteAll cut the file
    // back to its last whole block), counted and said in the counters,
    // which go on counting every event; writing resumes in a new segment
    // once there is room (rotation deletes the old ones).
    if (&encoder == &encoder_ && sidecar_ != nullptr && sidecar_->header() != nullptr) {
      sidecar_->header()->inflight_end.store(0, std::memory_order_release);
    }
    LoseBlock(encoder, events, block_flags, err);
    loss_.block_bytes = std::max<uint64_t>(loss_.block_bytes, framed_.size());
    return false;
  }
  errno = err;
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
  if (loss_.open) ResumeAfterLoss(NowNs());
  // Every call that ended before this is drained below (the faults after
  // it may wait for the next pass: MapFaults::Drain).
  const uint64_t calls_until = NowNs();
  BeginBlock();
  registry_->ForEach([&](ThreadBuffer* b) {
    DrainInto(b);
    if (encoder_.event_count() >= kMaxEventsPerBlock) FinishBlock(0);
  });
  DrainFaults((block_flags & kBlockFlagFinal) != 0, calls_until);
  Event end;
  int32_t end_tid;
  if ((block_flags & kBlockFlagFinal) && TakeParkedProcessEnd(&end, &end_tid)) {
    if (encoder_.event_count() >= kMaxEventsPerBlock) FinishBlock(0);
    encoder_.AddEvents(end_tid, &end, 1);  // the trace's last record
    if (counters_) counters_->Add(end_tid, &end, 1, tick_clock_.scale());
  }
  if (counters_) counters_->EndPass();
  FinishBlock(block_flags);
  FreeWritten();
  if (counters_) AfterBlockKeeping(block_flags);
  last_block_ns_.store(NowNs(), std::memory_order_relaxed);
}

void TraceSink::ClockPass() {
  Lock lock(this);
  // Only a clock pair (and the drop count): the rings are left for their
  // own DLPROF_FLUSH_MS, as documented.
  if (loss_.open) ResumeAfterLoss(NowNs());
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
  producer_pass_ = true;
  PassLocked(0);
  producer_pass_ = false;
  return true;
}

void TraceSink::DrainFromProducer() {
  Lock lock(this);
  producer_pass_ = true;
  PassLocked(0);
  producer_pass_ = false;
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
  const int tid = static_cast<int>(syscall(SYS_gettid));
  flusher_tid_.store(tid, std::memory_order_relaxed);
  MapFaults::Get().set_flusher_tid(tid);
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
  ReportUnwrittenLocked();
}

TraceSink::FlusherFinish TraceSink::FinishOnFlusher() {
  if (tls_holds_sink || !flusher_running()) return FlusherFinish::kNoFlusher;
  if (!final_done()) {
    final_request_.store(1, std::memory_order_release);
    Wake();
    if (!AwaitFromSignal([this] { return final_done(); })) return FlusherFinish::kStalled;
  }
  return FlusherFinish::kWritten;
}

void TraceSink::ReportUnwritten() {
  Lock lock(this);
  ReportUnwrittenLocked();
}

void TraceSink::ReportUnwrittenLocked() {
  if (!pending_.empty() && !failed_) {
    // The sidecar, which Runtime keeps when blocks are held, has the newest
    // of them: those its rings still hold (a long wait wrote over the rest;
    // dlprof-dump counts them as lost).
    if (sidecar_ != nullptr && sidecar_->header() != nullptr) {
      RawLog("cannot open trace %s: no descriptor is free; its last %llu events are not in it; "
             "its rings sidecar %s%s keeps the newest of them (a ring's worth a thread), which "
             "dlprof-dump reads with it", path_.c_str(),
             static_cast<unsigned long long>(pending_events_), path_.c_str(),
             format::kSidecarSuffix);
    } else {
      RawLog("cannot open trace %s: no descriptor is free; its last %llu events are lost",
             path_.c_str(), static_cast<unsigned long long>(pending_events_));
    }
  }
}

bool TraceSink::FinalPassFromSignal(bool rings_kept) {
  // A Lock keeps signals off its thread, so this cannot be on top of one;
  // were it so, no wait could end (the flusher would wait for this thread).
  if (tls_holds_sink) return false;
  if (final_done()) return true;
  if (!flusher_running()) {
    // (A DataLoader worker terminated by its parent's exit, in malloc as
    // SIGTERM came: 2 runs in 80 hung on a loaded machine.)
    if (rings_kept) return false;
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
