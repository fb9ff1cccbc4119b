// A bounded trace (DLPROF_KEEP=DURATION; docs/FORMAT.md, "Bounded traces"):
// the sink writes its blocks into a short series of segment files, each a
// complete trace of its own (header, then blocks; every string its events
// name defined again in its first block), and deletes a segment once its
// newest event is older than DURATION before the newest event drained and
// the segment after it reaches back that far (DropOldSegments). So
// the disk holds the last DURATION of the process's events (plus one
// segment), a reader always finds a set of whole trace files whatever
// instant the process died at, and nothing is ever rewritten in place. Beside them, the counters
// stream covers the whole run (interval_counters.h), and a window asked for (the DLPROF_KEEP_WHEN
// rule, `dlprof keep`) keeps its segments from deletion. A process that ended
// deletes nothing more: the live ones delete its old segments for it
// (trace_segments_run.h), so that the run, not only each process, is bounded.
//
// Every step here runs under the sink's lock, on the flusher (or on a
// producer draining a full ring): never where a traced call records.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "lib/core/clock.h"
#include "lib/core/own_fd.h"
#include "lib/core/rank_io_map.h"
#include "lib/core/raw_log.h"
#include "lib/core/trace_segments_run.h"
#include "lib/core/trace_sink.h"
#include "lib/format/counters.h"
#include "lib/format/trace_layout.h"

namespace dlprof::core {
namespace {

// stat() through the system call: the libc call is one this library
// interposes, and the tracer's own look at a file is not the program's.
bool StatPath(const std::string& path, struct stat* st) {
  return syscall(SYS_newfstatat, AT_FDCWD, path.c_str(), st, 0) == 0;
}

}  // namespace

uint64_t TraceSink::SegmentSpanNs() const {
  // A quarter of DURATION: the disk holds DURATION to DURATION and a
  // quarter of events, in five segments (each repeating a header and the
  // strings); at least a second, so that a short DURATION does not make a
  // file a pass.
  return std::max<uint64_t>(config_.keep_ms * 1000000ull / 4, 1000000000ull);
}

void TraceSink::StartKeeping(const std::vector<uint8_t>& header, uint64_t now_ns) {
  header_ = header;
  stem_ = path_.substr(0, path_.size() - std::char_traits<char>::length(format::kTraceSuffix));
  segments_.push_back(Segment{path_, now_ns, now_ns, false, UINT64_MAX});
  counters_ = std::make_unique<IntervalCounters>(
      strings_, IntervalCounters::IntervalFor(config_.keep_ms), &RankIoMap::Get());
  // Before the program can fork: its children share the map (a forked
  // child's sink keeps its parent's, of the same rank).
  RankIoMap::Get().Join(rank_.load(std::memory_order_relaxed));
  std::string error;
  if (!counters_->Open(format::CountersPathOf(path_), header, now_ns, &error)) {
    RawLog("%s; the whole run's counters are not kept", error.c_str());
  }
  run_dir_ = path_.substr(0, path_.rfind('/'));  // DLPROF_DIR/<run>/<host>
  run_dir_ = run_dir_.substr(0, run_dir_.rfind('/'));
  last_keep_look_ns_ = now_ns;
  struct stat st;
  // A request made before this process started is not for it.
  if (StatPath(run_dir_ + "/" + kKeepRequestName, &st)) {
    keep_request_seen_ns_ = uint64_t(st.st_mtim.tv_sec) * 1000000000ull + st.st_mtim.tv_nsec;
  }
}

bool TraceSink::CreateSegment(const std::string& path, struct stat* st, uint64_t room) {
  OwnFdScope scope;
  const int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, path.c_str(),
                                          O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                                          0600));
  if (fd < 0) return false;
  bool ok = syscall(SYS_fstat, fd, st) == 0 && WriteFd(fd, header_.data(), header_.size());
  // After a full disk: room for a block too, else a disk with room for a
  // header alone begins a segment a pass, each refused its first block. A
  // file system that cannot reserve (EOPNOTSUPP) is taken at its word.
  if (ok && room > 0 &&
      syscall(SYS_fallocate, fd, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(header_.size()),
              static_cast<off_t>(room)) != 0) {
    ok = errno != ENOSPC && errno != EDQUOT;
  }
  const int err = errno;
  syscall(SYS_close, fd);
  if (!ok) syscall(SYS_unlink, path.c_str());
  errno = err;
  return ok;
}

void TraceSink::AfterBlockKeeping(uint32_t block_flags) {
  if (!keeping()) return;
  const uint64_t now = NowNs();
  const bool final = (block_flags & kBlockFlagFinal) != 0;
  Segment& current = segments_.back();
  const uint64_t oldest = counters_->TakeOldestEventNs();
  if (pass_lost_) {
    // The pass's events went with a block the disk refused.
    loss_.from_ns = std::min(loss_.from_ns, oldest);
    loss_.to_ns = std::max(loss_.to_ns, counters_->newest_event_ns());
    pass_lost_ = false;
  } else if (!loss_.open) {
    // (Not where the pass's only block, of no event, was refused: the
    // segment's last block is its last whole one, EmptyStaleSegment's test.)
    current.last_ns = now;
    current.first_event_ns = std::min(current.first_event_ns, oldest);
  }
  // The process ends with the disk still full: what it lost goes into the
  // counters with its last interval.
  if (final && loss_.open) CloseLoss(/*resumed=*/false);
  if (counters_->MaybeEmit(now, rank_.load(std::memory_order_relaxed), final, !producer_pass_) &&
      !final) {
    ApplyKeepRule(now);
  }
  if (failed_) return;
  // A process's end is a moment to bound the run too: the ended processes
  // it leaves behind (a loader's workers ending an epoch, while the main
  // process writes only a clock block every 5 s) go no later than then.
  if (final) {
    // Noted first: a process that ends beside this one sweeps it too.
    std::vector<std::string> paths;
    uint64_t due_ns = UINT64_MAX;  // the first moment a sweep may delete any of them
    for (const Segment& s : segments_) {
      paths.push_back(s.path);
      if (s.first_event_ns != UINT64_MAX) due_ns = std::min(due_ns, s.last_ns);
    }
    NoteEnded(paths, due_ns == UINT64_MAX ? 0 : due_ns);
    SweepEndedSegments(path_, header_, now, config_.keep_ms * 1000000ull);
    return;
  }
  if (!loss_.open && now - segments_.back().start_ns >= SegmentSpanNs()) Rotate(now);
}

bool TraceSink::Rotate(uint64_t now, bool after_loss) {
  // Blocks held back for want of a descriptor (EMFILE) belong to the
  // segment they were framed for, and a descriptor kept across a
  // credential change is that segment's: rotate once both are settled.
  if (!pending_.empty() || kept_fd_.load(std::memory_order_relaxed) >= 0) return false;
  // The next segment first: were it not made, the one being written goes
  // on growing, with no end marker (a reader of a killed process looks for
  // its rings sidecar beside a trace without one), and the rotation is
  // tried again a segment's span later. No event is lost, the bound is.
  const std::string next = SegmentPath(stem_, next_segment_);
  struct stat st;
  const uint64_t room = after_loss ? loss_.block_bytes : 0;
  bool created = CreateSegment(next, &st, room);
  if (!created && after_loss && (errno == ENOSPC || errno == EDQUOT)) {
    // The disk full: the segments past DURATION make room, first; then the
    // one being written, where all of its events are past DURATION too (the
    // only one, where it filled the disk itself: else nothing would ever be
    // freed, and the trace kept its first seconds alone).
    const uint64_t newest = std::min(now, counters_->newest_event_ns());
    DropOldSegments(newest, /*disk_full=*/true);
    created = CreateSegment(next, &st, room);
    if (!created && (errno == ENOSPC || errno == EDQUOT) && EmptyStaleSegment(newest)) {
      created = CreateSegment(next, &st, room);
      // A first segment smaller than the block refused (the disk filled
      // by others while it held a block or two) frees less than that
      // block's room: the new segment takes what fits. Without it, no
      // segment was ever made again, and the trace kept no event at all.
      if (!created && (errno == ENOSPC || errno == EDQUOT)) created = CreateSegment(next, &st, 0);
    }
  }
  if (!created && after_loss) return false;  // tried again at the next pass
  if (!created) {
    if (!told_no_segment_) {
      RawLog("cannot create trace segment %s: %s; the trace grows in %s", next.c_str(),
             std::strerror(errno), path_.c_str());
      told_no_segment_ = true;
    }
    segments_.back().start_ns = now;
    return false;
  }
  // The segment ends with a marker, so that a reader takes it for a whole
  // trace and not one of a killed process (docs/FORMAT.md).
  write_empty_ = true;
  FinishBlock(kBlockFlagSegmentEnd);
  write_empty_ = false;
  if (failed_ || last_write_failed_) {
    syscall(SYS_unlink, next.c_str());
    return false;
  }
  ++next_segment_;
  path_ = next;
  file_dev_ = st.st_dev;
  file_ino_ = st.st_ino;
  file_bytes_ = header_.size();
  // The rings sidecar goes with the segment being written: a reader of a
  // killed process looks for it beside the trace without an end marker.
  if (sidecar_ != nullptr) sidecar_->MoveWithTrace(path_);
  // The new segment's first block defines every string again: a reader of
  // this segment alone finds every path its events name.
  strings_->MarkAllUnemitted();
  segments_.push_back(Segment{path_, now, now, now < pin_until_ns_, UINT64_MAX});
  // The last DURATION before the newest event, not before now: a block
  // written after the program's last events (its loop over, the flusher's
  // next tick) would otherwise leave those events short of DURATION by the
  // block's delay (issue 51: integration.keep under load, 0.992 s of 1 s).
  DropOldSegments(std::min(now, counters_->newest_event_ns()));
  // And the run's: the ended processes' segments before now - DURATION
  // (trace_segments_run.h). Now, not this process's newest event: the
  // others' events go on while this one is idle. Not where a program's
  // thread drains its full ring: its call waits meanwhile.
  if (!producer_pass_) {
    SweepEndedSegments(path_, header_, now, config_.keep_ms * 1000000ull);
  }
  return true;
}

bool TraceSink::EmptyStaleSegment(uint64_t newest) {
  const uint64_t keep_ns = config_.keep_ms * 1000000ull;
  Segment& current = segments_.back();
  // Its last whole block, not its last try: the blocks refused since did
  // not reach it (AfterBlockKeeping).
  if (current.pinned || newest < keep_ns || current.last_ns >= newest - keep_ns ||
      file_bytes_ <= header_.size() || !pending_.empty()) {
    return false;
  }
  // Cut back to its header, as a torn write is cut back to its last whole
  // block: a whole trace file still, of no block, which the rotation then
  // ends with its marker and deletes as a segment with no event.
  OwnFdScope scope;
  const int fd = OpenForAppend();
  if (fd < 0) return false;
  const bool cut = syscall(SYS_ftruncate, fd, static_cast<off_t>(header_.size())) == 0;
  syscall(SYS_close, fd);
  if (!cut) return false;
  file_bytes_ = header_.size();
  current.first_event_ns = UINT64_MAX;
  return true;
}

void TraceSink::LoseBlock(const format::BlockEncoder& encoder, uint32_t events,
                          uint32_t block_flags, int error) {
  last_write_failed_ = true;
  const uint64_t now = NowNs();
  if (!loss_.open) {
    loss_ = Loss{};
    loss_.open = true;
    loss_.error = error;
    loss_.first_fail_ns = now;
    if (losses_told_ < 3) {
      RawLog("cannot write trace %s: %s; its events are lost until there is room again (a "
             "new segment), the whole run's counters go on", path_.c_str(),
             std::strerror(error));
    }
  }
  loss_.last_fail_ns = now;
  if ((block_flags & kBlockFlagSegmentEnd) == 0) ++loss_.blocks;
  loss_.events += events;
  // Blocks held for a descriptor (EMFILE) went with the write, or wait
  // for this segment, which gets nothing more: theirs are lost too.
  if (!pending_.empty()) {
    loss_.events += pending_events_;
    pending_events_ = 0;
    std::vector<uint8_t>().swap(pending_);
    waiting_for_fd_.store(false, std::memory_order_relaxed);
  }
  if (events > 0) pass_lost_ = true;
  // Their ring positions count as written: a reader of the sidecar after a
  // kill must not look for them in the trace, and the producers must not
  // wait for a write that will not come.
  if (&encoder == &encoder_) {
    const bool side = sidecar_ != nullptr && sidecar_->header() != nullptr;
    registry_->ForEach([&](ThreadBuffer* b) {
      b->pending = b->drained;
      if (side) b->written.store(b->drained, std::memory_order_release);
      if (b->shared) b->ring.Release(b->drained);
    });
  }
}

void TraceSink::ResumeAfterLoss(uint64_t now) {
  if (!keeping() || !Rotate(now, /*after_loss=*/true)) return;
  CloseLoss(/*resumed=*/true);
}

void TraceSink::CloseLoss(bool resumed) {
  format::LostRecord r;
  r.from_ns = loss_.from_ns != UINT64_MAX ? loss_.from_ns : loss_.first_fail_ns;
  r.to_ns = std::max(r.from_ns, loss_.to_ns != 0 ? loss_.to_ns : loss_.last_fail_ns);
  r.events = loss_.events;
  r.blocks = loss_.blocks;
  r.error = static_cast<uint32_t>(loss_.error);
  events_lost_ += loss_.events;
  if (losses_told_ < 3) {
    RawLog(resumed ? "trace writing resumes in %s: %llu events in %llu blocks were lost to \"%s\" "
                     "over %.2f s (the whole run's counters have them)"
                   : "trace %s ends with the disk still full: %llu events in %llu blocks were "
                     "lost to \"%s\" over %.2f s (the whole run's counters have them)",
           path_.c_str(), static_cast<unsigned long long>(r.events),
           static_cast<unsigned long long>(r.blocks), std::strerror(loss_.error),
           static_cast<double>(loss_.last_fail_ns - loss_.first_fail_ns) / 1e9);
    ++losses_told_;
  }
  counters_->Lost(r);
  loss_ = Loss{};
}

void TraceSink::DropOldSegments(uint64_t newest, bool disk_full) {
  const uint64_t keep_ns = config_.keep_ms * 1000000ull;
  if (newest < keep_ns) return;
  const uint64_t horizon = newest - keep_ns;
  // Never the segment being written. One goes when its newest block is past
  // the horizon (no event of the last DURATION left in it) and the next
  // segment that holds events reaches back to the horizon: so the events
  // kept cover all of the DURATION, though the next segment's first event
  // came a while after this one's last block (the program descheduled at
  // that moment). A segment with no event (a process idle for a span: only
  // the clock's blocks) goes at once: kept, an idle process added one a
  // span, forever. With the disk full, one goes once its newest block is
  // past the horizon, whatever follows it: the events after it are lost
  // (and said so), and a segment begun just before the disk filled up, of
  // no event, would otherwise hold the one before it, and the disk, forever.
  std::vector<Segment> kept;
  uint64_t next_events_ns = UINT64_MAX;  // the first event of the segments after i
  std::vector<uint64_t> next_events(segments_.size(), UINT64_MAX);
  for (size_t i = segments_.size(); i-- > 0;) {
    next_events[i] = next_events_ns;
    next_events_ns = std::min(next_events_ns, segments_[i].first_event_ns);
  }
  for (size_t i = 0; i + 1 < segments_.size(); ++i) {
    const Segment& s = segments_[i];
    const bool empty = s.first_event_ns == UINT64_MAX;
    if (s.pinned ||
        (!empty && (s.last_ns >= horizon || (!disk_full && next_events[i] > horizon)))) {
      kept.push_back(s);
      continue;
    }
    syscall(SYS_unlink, s.path.c_str());
  }
  kept.push_back(segments_.back());
  segments_ = std::move(kept);
}

void TraceSink::KeepWindow(uint64_t now, const std::string& reason) {
  if (!keeping()) return;
  const uint64_t keep_ns = config_.keep_ms * 1000000ull;
  // One window at a time: a rule that keeps firing extends nothing until
  // its window is over, and a process keeps at most kMaxKeptWindows.
  if (now < pin_until_ns_ || kept_windows_ >= kMaxKeptWindows) return;
  ++kept_windows_;
  pin_until_ns_ = now + keep_ns;
  const uint64_t from = now > keep_ns ? now - keep_ns : 0;
  // The segments with events in the window, and the one before the first
  // of them where that one begins after `from`: the events kept reach back
  // to the window's start, as the last DURATION's do (a program stalled at
  // that moment left a gap there; integration.keep under load).
  for (size_t i = 0; i < segments_.size(); ++i) {
    Segment& s = segments_[i];
    const Segment* next = i + 1 < segments_.size() ? &segments_[i + 1] : nullptr;
    if (s.last_ns >= from || (next != nullptr && next->last_ns >= from &&
                              next->first_event_ns > from && s.last_ns < from)) {
      s.pinned = true;
    }
  }
  // The segment being written, whenever its last block was: the events
  // after this moment go into it (an idle process's last block may be
  // older than `from`, and the segment was then dropped at its rotation).
  segments_.back().pinned = true;
  counters_->Keep(format::KeepRecord{now, from, now + keep_ns, reason});
  KeepRunWindow(from, now + keep_ns);  // the ended processes' events in it stay too
}

void TraceSink::ApplyKeepRule(uint64_t now) {
  if (config_.keep_when_batch_wait < 0) return;
  const double share = counters_->LastRegionShare(kBatchRegionName);
  if (share > config_.keep_when_batch_wait) {
    char reason[96];
    snprintf(reason, sizeof(reason), "batch_wait %.1f%% > %g%% over the last interval", share,
             config_.keep_when_batch_wait);
    KeepWindow(now, reason);
  }
}

void TraceSink::LookForKeepRequest(uint64_t now) {
  // `dlprof keep RUN_DIR` touches RUN_DIR/dlprof.keep: every process of the
  // run looks at its time about every half second (one stat, flusher only).
  if (!keeping() || now - last_keep_look_ns_ < kKeepLookNs) return;
  last_keep_look_ns_ = now;
  struct stat st;
  if (!StatPath(run_dir_ + "/" + kKeepRequestName, &st)) return;
  const uint64_t mtime = uint64_t(st.st_mtim.tv_sec) * 1000000000ull + st.st_mtim.tv_nsec;
  if (mtime == keep_request_seen_ns_) return;
  keep_request_seen_ns_ = mtime;
  Lock lock(this);
  KeepWindow(NowNs(), "dlprof keep");
}

}  // namespace dlprof::core
