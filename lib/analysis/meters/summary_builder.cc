// SummaryBuilder: the summary's I/O, GPU and stall figures in one pass over a stream.
#include "lib/analysis/meters/summary_builder.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <tuple>

#include "lib/analysis/meters/kind_roles.h"
#include "lib/analysis/meters/nested_calls.h"
#include "lib/analysis/meters/process_rows.h"
#include "lib/analysis/meters/stall_meter.h"
#include "lib/analysis/meters/stream_stats.h"
#include "lib/analysis/meters/summary_timelines.h"
#include "lib/analysis/summary/intervals.h"
#include "lib/analysis/summary/summary.h"
#include "lib/format/event_rules.h"

namespace dlprof::analysis {
namespace {

// kMaxTimelineSeconds (intervals.h) bounds the per-second timeline (12
// days; 16 MiB), whatever starts a damaged or forged trace states.

using summary_kinds::KindRole;
using summary_kinds::KindRoleTable;
using summary_kinds::Role;

// A stall table keyed by the address of a process or file name, by name.
std::unordered_map<std::string, uint64_t> ByName(
    const std::unordered_map<StallMeter::Key, uint64_t>& by) {
  std::unordered_map<std::string, uint64_t> out;
  for (const auto& [key, ns] : by) {
    if (ns > 0) out[*static_cast<const std::string*>(key)] += ns;
  }
  return out;
}

// Whether two calls belong to one run: one kind and flags, one process, one
// file, one rank. The summary takes I/O calls a run at a time (a loop of
// reads is one long run), so that the counters of the run's stream stay in
// registers across its calls instead of going to memory after each.
inline bool SameRun(const StreamEvent& a, const StreamEvent& b) {
  return a.process == b.process && a.rank == b.rank && a.event->kind == b.event->kind &&
         a.event->flags == b.event->flags && a.event->file == b.event->file;
}

// The longest calls so far (the summary's `slowest`), the last of
// SlowerThan's order on top of a heap. Events are copied: a source's events
// do not outlive the batch.
class SlowestCalls {
 public:
  explicit SlowestCalls(size_t count)
      : count_(count), floor_(count > 0 ? 0 : UINT64_MAX), filling_(count > 0) {}

  size_t count() const { return count_; }
  // Whether a call this long may be one of them.
  bool Wants(uint64_t dur_ns) const { return dur_ns >= floor_ || filling_; }

  [[gnu::noinline]] void Add(const Event& e, int32_t pid, int32_t tid, uint32_t process) {
    slow_.push_back({e, pid, tid, process});
    std::push_heap(slow_.begin(), slow_.end());
    if (slow_.size() > count_) {
      std::pop_heap(slow_.begin(), slow_.end());
      slow_.pop_back();
    }
    if (slow_.size() == count_) {
      floor_ = slow_.front().e.dur_ns;
      filling_ = false;
    }
  }

  // The calls in SlowerThan's order, named.
  std::vector<SlowOp> Finish(const std::vector<ProcessTrace>& processes) {
    std::vector<SlowOp> out;
    std::sort_heap(slow_.begin(), slow_.end());  // SlowerThan's order
    for (const Slow& x : slow_) {
      const ProcessTrace& proc = processes[x.process];
      const EventKindInfo* k = LookupKind(x.e.kind);
      auto it = proc.strings.find(x.e.file);
      out.push_back({x.e.dur_ns, x.e.start_ns, x.e.offset, x.e.size, x.pid, x.tid,
                     k ? k->name : "?", it != proc.strings.end() ? it->second : ""});
    }
    return out;
  }

 private:
  struct Slow {
    Event e;
    int32_t pid, tid;
    uint32_t process;
    // SlowerThan's order as far as the event tells (the name and path break
    // ties only between calls of one thread at one nanosecond).
    bool operator<(const Slow& o) const {
      if (e.dur_ns != o.e.dur_ns) return e.dur_ns > o.e.dur_ns;
      if (e.start_ns != o.e.start_ns) return e.start_ns < o.e.start_ns;
      return pid != o.pid ? pid < o.pid : tid < o.tid;
    }
  };
  std::vector<Slow> slow_;
  const size_t count_;
  uint64_t floor_;  // the shortest call on the list, once it is full
  bool filling_;    // the list is not full yet
};

// The summary's figures, one batch of events at a time, in their order.
class SummaryBuilder {
 public:
  SummaryBuilder(const std::vector<ProcessTrace>& processes, size_t slowest_count,
                 uint64_t timeline_base_ns, bool hosts_in_keys,
                 const std::vector<ProcessImage>* images)
      : processes_(processes),
        streams_(processes.size()),
        cursors_(processes.size()),
        last_(processes.size()),
        timelines_(timeline_base_ns),
        slowest_(slowest_count),
        nested_(processes) {
    const ProcessImage one_image;
    for (size_t i = 0; i < processes.size(); ++i) {
      const ProcessTrace& p = processes[i];
      const ProcessImage& image = images != nullptr ? (*images)[i] : one_image;
      if (!p.opened) {
        // Nothing was read of it: it holds no event and has no row. An
        // empty file, not a trace or a damaged header is no process the
        // summary knows of (its error is on stderr); a bounded trace's
        // segment deleted since the catalog read its header was one (the
        // process's later segments have its row).
        if (p.vanished && !image.later_image) ++s_.processes;
        process_keys_.emplace_back();
        process_stats_.push_back(nullptr);
        continue;
      }
      if (!image.later_image) ++s_.processes;
      const Summary::ProcessId id = IdOf(p, image);
      process_keys_.push_back(ProcessKey(id, image, hosts_in_keys));
      process_stats_.push_back(&s_.processes_stats[process_keys_.back()]);
      auto [named, added] = s_.process_ids.try_emplace(process_keys_.back(), id);
      if (!added) named->second.python_isolated |= id.python_isolated;  // any of its images
    }
  }

  void Add(const StreamEvent* batch, size_t n) {
    for (size_t i = 0; i < n;) {
      const Event& e = *batch[i].event;
      const KindRole& k = kRoles[e.kind];
      const bool nested = (e.flags & kEventFlagNested) != 0;
      // Nested calls held for the call around them (nested_calls.h): it
      // did not come in their nanosecond, or it is this one.
      if (nested_.holding() && nested_.PastHeld(batch[i])) AddHeld();
      if (!nested && k.may_enclose) {
        nested_.AddOuter(batch[i], k.role == Role::kIo);
        if (nested_.holding()) AddHeld();
      }
      if (k.role == Role::kMapRead) {
        AddMapRead(batch[i], k);
        ++i;
        continue;
      }
      const NestedCalls::Verdict v = nested && k.role == Role::kIo
                                         ? nested_.Judge(batch[i])
                                         : NestedCalls::Verdict::kCounts;
      if (v == NestedCalls::Verdict::kOuterToCome) {
        nested_.Hold(batch[i]);
        ++i;
        continue;
      }
      if (k.role != Role::kIo || v == NestedCalls::Verdict::kRepeats) {
        AddOther(e, k, batch[i].process);
        ++i;
        continue;
      }
      size_t end = i + 1;
      // A nested call that counts (inside MPI_Init, say) goes on its own.
      // Of a run's calls, each thread's last is the one nested calls that
      // follow may be inside: recorded where the thread changes, and at
      // the end (the first is recorded above). (No call nests in an
      // asynchronous request.) While calls are held, one call at a time: the
      // next may be past them.
      const bool alone = nested || nested_.holding();
      while (!alone && end < n && SameRun(batch[end], batch[i])) {
        if (k.may_enclose && batch[end].tid != batch[end - 1].tid) {
          nested_.AddOuter(batch[end - 1], true);
        }
        ++end;
      }
      if (k.may_enclose && end - i > 1) nested_.AddOuter(batch[end - 1], true);
      AddIo(batch + i, end - i, k);
      i = end;
    }
  }

  PartialSummary Finish();

 private:
  void AddIo(const StreamEvent* run, size_t n, const KindRole& k) {
    if (k.copies) {
      AddCopies(run, n, k);
      return;
    }
    switch (k.group) {
      case OpGroup::Read: AddIoRun<Access::kRead>(run, n, k); break;
      case OpGroup::Write: AddIoRun<Access::kWrite>(run, n, k); break;
      default: AddIoRun<Access::kNone>(run, n, k); break;
    }
  }

  // In-kernel copies (sendfile, copy_file_range): a read of their source
  // (the event's file) and a write of their destination (`aux`; equal to
  // the file when only the destination is traced: a write alone), their
  // bytes each. The call's time is the read's (not counted twice), the
  // write's offset is not recorded.
  void AddCopies(const StreamEvent* run, size_t n, const KindRole& k) {
    KindRole write = k;
    write.group = OpGroup::Write;
    for (size_t i = 0; i < n; ++i) {
      const Event& e = *run[i].event;
      const bool read = e.aux != e.file;
      if (read) AddIoRun<Access::kRead>(run + i, 1, k);
      if (e.aux == 0) continue;
      // Copied into a traced file: no reading of it where the job wrote it
      // (ClassifyFile).
      if (read) ++StreamFor(run[i].process, e.file, run[i].rank)->stats.copied_out_ops;
      Event to = e;
      to.file = static_cast<uint32_t>(e.aux);
      to.offset = -1;
      if (read) to.dur_ns = 0;
      StreamEvent half = run[i];
      half.event = &to;
      AddIoRun<Access::kWrite>(&half, 1, write, /*counted=*/read);
    }
  }

  // The held nested calls, once the call around them came or cannot come:
  // each left out if it repeats that call's I/O, else counted on its own.
  void AddHeld() {
    for (const StreamEvent& h : nested_.held()) {
      const KindRole& k = kRoles[h.event->kind];
      if (nested_.Repeats(h)) {
        AddOther(*h.event, k, h.process);
      } else {
        AddIo(&h, 1, k);
      }
    }
    nested_.ReleaseHeld();
  }

  // Each process's last stream: its events come in runs on one file, while
  // the processes of a run interleave.
  struct LastStream {
    uint64_t key = UINT64_MAX;
    Stream* stream = nullptr;
  };

  void Count(const Event& e, size_t n) {
    // Events arrive by start: the first one starts the run, and the
    // timeline unless it was given a start.
    if (s_.events == 0) {
      s_.run_start_ns = e.start_ns;
      timelines_.StartAt(e.start_ns);
    }
    s_.events += n;
  }

  // Anything but a run of I/O calls: counted, GPU work measured.
  void AddOther(const Event& e, const KindRole& k, uint32_t process) {
    if (k.role == Role::kNotEvent) return;
    Count(e, 1);
    if (k.role == Role::kProcessEnd) {  // at the process's end: no part of the run's span
      NoteProcessEnd(e, process);
      return;
    }
    const uint64_t end_ns = e.start_ns + e.dur_ns;
    s_.run_end_ns = std::max(s_.run_end_ns, end_ns);
    if (k.role == Role::kGpuWork) {
      const std::string& host = processes_[process].info.host;
      GpuDevice& d = gpus_[{host, e.fd}];
      d.host = host;
      d.device = e.fd;
      if (k.op_class == OpClass::Kernel) ++d.kernels;
      if (k.op_class == OpClass::Memcpy) {
        ++d.copies;
        d.copy_bytes += e.size;
      }
      if (k.op_class == OpClass::Memset) ++d.memsets;
      stall_.AddGpu(e.fd, e.start_ns, end_ns);
      timelines_.AddGpuBusy(e.start_ns, end_ns);
    } else if (k.role == Role::kIo) {
      // A nested call that repeats the I/O of the call around it (the pread
      // inside an MPI_File_read_at; nested_calls.h): counting it too would
      // count its bytes twice.
      ++s_.nested_events;
    }
  }

  void NoteProcessEnd(const Event& e, uint32_t process) {
    auto id = s_.process_ids.find(process_keys_[process]);
    if (id == s_.process_ids.end()) return;
    const bool signal = e.kind == static_cast<uint16_t>(EventKind::Signal);
    id->second.exit_seen = !signal;
    id->second.exit_status = signal ? 0 : static_cast<int32_t>(e.ret & 0xff);  // as wait() sees it
    id->second.end_signal = signal ? static_cast<int32_t>(e.ret) : 0;
    id->second.signal_sender = signal ? static_cast<int32_t>(e.aux) : 0;
  }

  // A major fault on a mapped file: reading, but no call (its file's map
  // figures, the data stall).
  void AddMapRead(const StreamEvent& r, const KindRole& k) {
    const Event& e = *r.event;
    Count(e, 1);
    const uint64_t end = e.start_ns + e.dur_ns;
    s_.run_end_ns = std::max(s_.run_end_ns, end);
    Stream* const st = StreamFor(r.process, e.file, r.rank);
    MapReads& m = st->stats.maps;
    m.bytes += BytesMoved(e, k.bytes_at);
    // (map_readahead: bytes read ahead, no fault.)
    if (e.kind == static_cast<uint16_t>(EventKind::MapWait)) {
      // A wait for a page being read ahead: time reading, not an access.
      ++m.waits;
      m.time_ns += e.dur_ns;
      stall_.AddIo(e.start_ns, end, &process_keys_[r.process], st->file_key);
      return;
    }
    if (e.kind != static_cast<uint16_t>(EventKind::MajorFault)) return;
    ++m.faults;
    m.time_ns += e.dur_ns;
    Cursor::End& cursor = st->cursor->map;
    const uint64_t off = static_cast<uint64_t>(e.offset);
    m.first += e.offset < 0 || !cursor.known;
    m.sequential += e.offset >= 0 && cursor.known && off >= cursor.at;
    if (e.offset >= 0) cursor = {true, off + e.size};
    stall_.AddIo(e.start_ns, end, &process_keys_[r.process], st->file_key);
  }

  // `n` calls of one run (SameRun), of kind `k`.
  // (`counted`: the calls are counted already, as events and among the
  // slowest: the write half of copies.)
  template <Access kAccess>
  void AddIoRun(const StreamEvent* run, size_t n, const KindRole& k, bool counted = false) {
    const StreamEvent& head = run[0];
    Stream* const st = StreamFor(head.process, head.event->file, head.rank);
    IoStats& s = st->stats;
    if (!counted) Count(*head.event, n);
    const int g = static_cast<int>(k.group);
    s.ops[g] += n;
    // Only calls on a named file at a known offset are classified.
    const bool named = head.event->file != 0;
    const StallMeter::Key process_key = &process_keys_[head.process];
    uint64_t time = 0, errors = 0, first = s.first_ns, last = 0;
    // Reads or writes: their figures, Darshan's classification against where
    // the previous one ended (`prev`).
    AccessStats& a = kAccess == Access::kWrite ? s.write : s.read;
    Counts& counts = kAccess == Access::kWrite ? st->write : st->read;
    Cursor::End& cursor = kAccess == Access::kWrite ? st->cursor->write : st->cursor->read;
    bool known = cursor.known;
    uint64_t prev = cursor.at;
    uint64_t bytes_sum = 0, unclassified = 0, consecutive = 0, sequential = 0;
    uint64_t small = 0, small_ns = 0, empty = 0;
    uint64_t extent = s.read_extent, in_second = 0;
    // A stretch of calls of one size (a loop's reads often are) goes into
    // the size figures at once.
    uint64_t size = head.event->size, same_size = 0;
    for (size_t i = 0; i < n; ++i) {
      const Event& e = *run[i].event;
      const uint64_t end = e.start_ns + e.dur_ns;
      time += e.dur_ns;
      first = std::min(first, e.start_ns);
      last = std::max(last, end);
      errors += e.err != 0;
      if (kAccess == Access::kNone && k.group == OpGroup::Open) {
        s.opens += e.err == 0;  // a failed open (a cache probe, say) opened nothing
      }
      const uint64_t bytes = BytesMoved(e, k.bytes_at);
      if (kAccess != Access::kNone) {
        bytes_sum += bytes;
        if (e.size != size) {
          AddSizes(size, same_size, &a, &counts);
          size = e.size;
          same_size = 0;
        }
        ++same_size;
        // Small by the bytes asked, of the calls that moved any (an end of
        // file's probe moved none: AccessStats::small_ops).
        const bool moved = bytes > 0, small_one = moved && e.size < kSmallIoBytes;
        empty += !moved;
        small += small_one;
        small_ns += small_one ? e.dur_ns : 0;
        const uint64_t off = static_cast<uint64_t>(e.offset);
        const bool classify = named && e.offset >= 0;
        if (!classify || !known) {
          ++unclassified;
        } else {
          consecutive += off == prev;
          sequential += off >= prev;
          counts.strides.Add(static_cast<int64_t>(off - prev));
        }
        known |= classify;
        prev = classify ? off + bytes : prev;
        if (kAccess == Access::kRead && e.offset >= 0) extent = std::max(extent, off + bytes);
        // Per-second timeline of bytes. Starts only grow (but for a file
        // merged out of order), so the second is worked out again only past
        // its ends.
        if (timelines_.Moved(e.start_ns)) {
          timelines_.Add<kAccess>(in_second);
          in_second = 0;
          timelines_.MoveTo(e.start_ns);
        }
        in_second += bytes;
      }
      if (k.mpiio_data) AddMpiio(e, bytes, &s);
      stall_.AddIo(e.start_ns, end, process_key, st->file_key);
      if (!counted && slowest_.Wants(e.dur_ns)) {
        slowest_.Add(e, processes_[run[i].process].info.pid, run[i].tid, run[i].process);
      }
    }
    s.time_ns[g] += time;
    s.errors += errors;
    s.first_ns = first;
    s.last_ns = std::max(s.last_ns, last);
    s_.run_end_ns = std::max(s_.run_end_ns, last);
    if (kAccess != Access::kNone) {
      a.bytes += bytes_sum;
      a.small_ops += small, a.small_time_ns += small_ns, a.empty_ops += empty;
      AddSizes(size, same_size, &a, &counts);
      a.first += unclassified;
      a.consecutive += consecutive;
      a.sequential += sequential;
      cursor = {known, prev};
      timelines_.Add<kAccess>(in_second);
      if (kAccess == Access::kRead) s.read_extent = extent;
    }
  }

  // `n` reads (or writes) of `size` bytes.
  static void AddSizes(uint64_t size, uint64_t n, AccessStats* a, Counts* counts) {
    a->histogram[SizeBinOf(size)] += n;
    counts->sizes.Add(size, n);
  }

  static void AddMpiio(const Event& e, uint64_t bytes, IoStats* s) {
    if (e.flags & kEventFlagCollective) {
      ++s->mpi_collective_ops;
      s->mpi_collective_bytes += bytes;
    } else {
      ++s->mpi_independent_ops;
      s->mpi_independent_bytes += bytes;
    }
  }

  Stream* StreamFor(uint32_t process, uint32_t file, int32_t rank) {
    const uint64_t key = static_cast<uint64_t>(file) << 32 | static_cast<uint32_t>(rank);
    LastStream& cached = last_[process];
    if (key != cached.key) {
      std::unique_ptr<Stream>& slot = streams_[process][key];
      if (!slot) slot = NewStream(process, file, rank);
      cached = {key, slot.get()};
    }
    return cached.stream;
  }

  // Where a stream's figures go: worked out with the stream, once.
  std::unique_ptr<Stream> NewStream(uint32_t process, uint32_t file, int32_t rank) {
    auto st = std::make_unique<Stream>();
    st->cursor = &cursors_[process][file];
    st->levels[st->level_count++] = &s_.run;
    st->levels[st->level_count++] = process_stats_[process];
    if (rank >= 0) st->levels[st->level_count++] = &s_.ranks[rank];
    if (file != 0) {
      const ProcessTrace& p = processes_[process];
      auto it = p.strings.find(file);
      auto& entry =
          *s_.files.try_emplace(it != p.strings.end() ? it->second : "<unknown file>").first;
      st->levels[st->level_count++] = &entry.second;
      st->file_key = &entry.first;
    }
    return st;
  }

  static const KindRoleTable kRoles;
  const std::vector<ProcessTrace>& processes_;
  Summary s_;
  std::map<std::pair<std::string, int32_t>, GpuDevice> gpus_;  // by (host, device)
  StallMeter stall_;
  // Per process: (file id, rank) -> its stream.
  std::vector<std::unordered_map<uint64_t, std::unique_ptr<Stream>>> streams_;
  // Per process: file id -> its cursor (map nodes do not move).
  std::vector<std::unordered_map<uint32_t, Cursor>> cursors_;
  std::vector<LastStream> last_;
  std::vector<std::string> process_keys_;
  std::vector<IoStats*> process_stats_;
  Timelines timelines_;
  SlowestCalls slowest_;
  NestedCalls nested_;
};

const KindRoleTable SummaryBuilder::kRoles;

PartialSummary SummaryBuilder::Finish() {
  if (nested_.holding()) AddHeld();  // the stream ended in their nanosecond
  for (const auto& by_key : streams_) {
    for (const auto& [key, st] : by_key) RollUp(*st);
  }
  PartialSummary p;
  p.slowest_count = slowest_.count();
  s_.slowest = slowest_.Finish(processes_);

  // GPU busy, idle and data-stall time.
  timelines_.Finish(&s_);
  stall_.Finish();
  if (stall_.any_gpu()) {
    for (auto& [key, d] : gpus_) {
      // (Rank-less multi-host groups: a device id's hosts share its meter.)
      const StallMeter::Device& m = stall_.devices().at(key.second);
      d.first_ns = m.first_ns;
      d.last_ns = m.last_ns;
      d.busy_ns = m.busy_ns;
      d.stall_ns = m.stall_ns;
      s_.gpus.push_back(d);
    }
    s_.gpu_first_ns = stall_.gpu_first_ns();
    s_.gpu_last_ns = stall_.gpu_last_ns();
    s_.gpu_busy_ns = stall_.gpu_busy_ns();
    s_.io_outstanding_ns = stall_.io_outstanding_ns();
    s_.data_stall_ns = stall_.data_stall_ns();
    p.stall_by_file = ByName(stall_.stall_by_file());
    p.stall_by_process = ByName(stall_.stall_by_process());
  }
  s_.timeline_base_ns = timelines_.base_ns(s_.run_start_ns);
  p.s = std::move(s_);
  return p;
}

}  // namespace

PartialSummary AnalyzePartial(EventSource& source, size_t slowest_count,
                              uint64_t timeline_base_ns, bool hosts_in_keys,
                              const std::vector<ProcessImage>* images) {
  SummaryBuilder builder(source.processes(), slowest_count, timeline_base_ns, hosts_in_keys,
                         images);
  StreamEvent batch[256];
  for (size_t n; (n = source.Next(batch, 256)) > 0;) builder.Add(batch, n);
  return builder.Finish();
}

}  // namespace dlprof::analysis
