// SummaryBuilder: the summary's I/O, GPU and stall figures in one pass over a stream.
#include "lib/analysis/summary/summary.h"

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <tuple>

#include "lib/analysis/summary/intervals.h"
#include "lib/analysis/meters/nested_calls.h"
#include "lib/analysis/summary/partial_summary.h"
#include "lib/analysis/meters/process_rows.h"
#include "lib/analysis/meters/stall_meter.h"
#include "lib/analysis/meters/stream_stats.h"
#include "lib/format/event_rules.h"

namespace dlprof::analysis {
namespace {

// kMaxTimelineSeconds (intervals.h) bounds the per-second timeline (12
// days; 16 MiB), whatever starts a damaged or forged trace states.

OpGroup GroupOf(OpClass c) {
  switch (c) {
    case OpClass::Open: return OpGroup::Open;
    case OpClass::Read: return OpGroup::Read;
    case OpClass::Write: return OpGroup::Write;
    case OpClass::Seek: return OpGroup::Seek;
    case OpClass::Close:
    case OpClass::Meta:
    case OpClass::Dup: return OpGroup::Meta;
    case OpClass::Sync: return OpGroup::Sync;
    case OpClass::Mmap: return OpGroup::Mmap;
    default: return OpGroup::Other;
  }
}

// What the summary does with an event, worked out once per kind code from
// the event rules, so an event costs one table lookup, not a chain of tests.
enum class Role : uint8_t {
  kNotEvent,  // call-stack and module-map records: context, not events
  kCountOnly, // counted in the run's span and nothing else
  kGpuWork,   // a kernel, copy or memset: GPU busy time
  kIo,        // an I/O call: the statistics and the stall meter
};
struct KindRole {
  Role role = Role::kCountOnly;
  OpGroup group = OpGroup::Other;
  OpClass op_class = OpClass::Other;
  BytesAt bytes_at = BytesAt::kNone;  // where a read's or write's bytes are
  bool mpiio_data = false;    // an MPI-IO read or write: collective or not
  bool may_enclose = false;   // a traced call (POSIX, STDIO, MPI): others may nest in it
};
struct KindRoleTable {
  KindRole of[kEventKindLimit];
  KindRoleTable() {
    for (int code = 0; code < kEventKindLimit; ++code) {
      KindRole& r = of[code];
      const EventRules& rules = kEventRules.of[code];
      if (rules.context) {
        r.role = Role::kNotEvent;
        continue;
      }
      if (!rules.known) continue;
      const EventKindInfo& k = kEventKinds.info[code];
      r.op_class = k.op_class;
      r.group = GroupOf(k.op_class);
      r.may_enclose = rules.traced_call;
      if (rules.gpu_work) {
        r.role = Role::kGpuWork;
      } else if (rules.io) {
        r.role = Role::kIo;
        r.bytes_at = rules.bytes_at;
        r.mpiio_data = k.category == Category::Mpiio && rules.data;
      }
    }
  }
  // Codes past the table are unknown kinds: counted only.
  const KindRole& operator[](uint16_t code) const {
    static const KindRole kUnknown;
    return code < kEventKindLimit ? of[code] : kUnknown;
  }
};

// "pid N (exe)", after "host: " when the run spans several hosts (pids of
// different hosts collide).
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

enum class Access { kNone, kRead, kWrite };

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
        nested_(processes),
        slowest_count_(slowest_count),
        slow_floor_(slowest_count > 0 ? 0 : UINT64_MAX),
        slow_filling_(slowest_count > 0),
        timeline_base_ns_(timeline_base_ns) {
    s_.fine_bin_ns = kFineBinStartNs;
    const ProcessImage one_image;
    for (size_t i = 0; i < processes.size(); ++i) {
      const ProcessTrace& p = processes[i];
      const ProcessImage& image = images != nullptr ? (*images)[i] : one_image;
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
      if (!nested && k.may_enclose) nested_.AddOuter(batch[i], k.role == Role::kIo);
      if (k.role != Role::kIo || (nested && nested_.Repeats(batch[i]))) {
        AddOther(e, k, batch[i].process);
        ++i;
        continue;
      }
      size_t end = i + 1;
      // A nested call that counts (inside MPI_Init, say) goes on its own.
      // Of a run's calls, each thread's last is the one nested calls that
      // follow may be inside: recorded where the thread changes, and at
      // the end (the first is recorded above).
      while (!nested && end < n && SameRun(batch[end], batch[i])) {
        if (batch[end].tid != batch[end - 1].tid) nested_.AddOuter(batch[end - 1], true);
        ++end;
      }
      if (end - i > 1) nested_.AddOuter(batch[end - 1], true);
      switch (k.group) {
        case OpGroup::Read: AddIoRun<Access::kRead>(batch + i, end - i, k); break;
        case OpGroup::Write: AddIoRun<Access::kWrite>(batch + i, end - i, k); break;
        default: AddIoRun<Access::kNone>(batch + i, end - i, k); break;
      }
      i = end;
    }
  }

  PartialSummary Finish();

 private:
  // The longest calls so far, the last of SlowerThan's order on top. Events
  // are copied: a source's events do not outlive the batch.
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
  // The second of the timeline the last read or write fell in (index
  // SIZE_MAX: past the timeline's bound).
  // The part of a second and of a fine bin (intervals.h) where the last
  // call started: calls that start in it add to the same two bins.
  struct Second {
    uint64_t start = 0, end = 0;
    size_t index = 0, fine = 0;
  };
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
      if (timeline_base_ns_ == UINT64_MAX) timeline_base_ns_ = e.start_ns;
    }
    s_.events += n;
  }

  // Anything but a run of I/O calls: counted, GPU work measured.
  void AddOther(const Event& e, const KindRole& k, uint32_t process) {
    if (k.role == Role::kNotEvent) return;
    Count(e, 1);
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
      AddGpuBusy(e.start_ns, end_ns);
    } else if (k.role == Role::kIo) {
      // A nested call that repeats the I/O of the call around it (the pread
      // inside an MPI_File_read_at; nested_calls.h): counting it too would
      // count its bytes twice.
      ++s_.nested_events;
    }
  }

  // `n` calls of one run (SameRun), of kind `k`.
  template <Access kAccess>
  void AddIoRun(const StreamEvent* run, size_t n, const KindRole& k) {
    const StreamEvent& head = run[0];
    Stream* const st = StreamFor(head.process, head.event->file, head.rank);
    IoStats& s = st->stats;
    Count(*head.event, n);
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
        if (e.start_ns >= second_.end || e.start_ns < second_.start) {
          AddToTimeline<kAccess>(in_second);
          in_second = 0;
          MoveSecond(e.start_ns);
        }
        in_second += bytes;
      }
      if (k.mpiio_data) AddMpiio(e, bytes, &s);
      stall_.AddIo(e.start_ns, end, process_key, st->file_key);
      if (e.dur_ns >= slow_floor_ || slow_filling_) AddSlow(e, run[i].tid, run[i].process);
    }
    s.time_ns[g] += time;
    s.errors += errors;
    s.first_ns = first;
    s.last_ns = std::max(s.last_ns, last);
    s_.run_end_ns = std::max(s_.run_end_ns, last);
    if (kAccess != Access::kNone) {
      a.bytes += bytes_sum;
      AddSizes(size, same_size, &a, &counts);
      a.first += unclassified;
      a.consecutive += consecutive;
      a.sequential += sequential;
      cursor = {known, prev};
      AddToTimeline<kAccess>(in_second);
      if (kAccess == Access::kRead) s.read_extent = extent;
    }
  }

  // `n` reads (or writes) of `size` bytes.
  static void AddSizes(uint64_t size, uint64_t n, AccessStats* a, Counts* counts) {
    a->histogram[SizeBinOf(size)] += n;
    a->small_ops += size < kSmallIoBytes ? n : 0;
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

  // The union of GPU work over all devices, in order of start: an interval
  // stays open while the next start falls inside it; a closed one is spread
  // over the seconds it covers.
  void AddGpuBusy(uint64_t start, uint64_t end) {
    if (gpu_open_ && start <= gpu_end_) {
      gpu_end_ = std::max(gpu_end_, end);
      return;
    }
    CloseGpuBusy();
    std::tie(gpu_open_, gpu_start_, gpu_end_) = std::make_tuple(true, start, end);
  }
  void CloseGpuBusy() {
    if (gpu_open_) SpreadOverSeconds(timeline_base_ns_, gpu_start_, gpu_end_, &s_.gpu_busy_per_second);
    gpu_open_ = false;
  }

  template <Access kAccess>
  void AddToTimeline(uint64_t bytes) {
    if (second_.index == SIZE_MAX || bytes == 0) return;
    auto& at = s_.per_second[second_.index];
    (kAccess == Access::kRead ? at.first : at.second) += bytes;
    auto& fine = s_.fine_bins[second_.fine];
    (kAccess == Access::kRead ? fine.first : fine.second) += bytes;
  }

  // Makes second_ the one `start` falls in.
  [[gnu::noinline]] void MoveSecond(uint64_t start) {
    // A call before the first (a file merged out of order) goes in second 0;
    // one past the timeline's bound (a forged start) in none.
    const uint64_t base = timeline_base_ns_;
    const uint64_t sec = start < base ? 0 : (start - base) / kNsPerSecond;
    if (sec >= kMaxTimelineSeconds) {
      second_ = {0, 0, SIZE_MAX};
      return;
    }
    if (sec >= s_.per_second.size()) s_.per_second.resize(sec + 1);
    uint64_t fine = start < base ? 0 : (start - base) / s_.fine_bin_ns;
    while (fine >= kFineBins) {
      CoarsenBins(&s_.fine_bin_ns, &s_.fine_bins);
      fine /= 2;
    }
    if (fine >= s_.fine_bins.size()) s_.fine_bins.resize(fine + 1);
    const uint64_t fine_start = fine == 0 ? 0 : base + fine * s_.fine_bin_ns;
    second_ = {std::max(sec == 0 ? 0 : base + sec * kNsPerSecond, fine_start),
               std::min(base + (sec + 1) * kNsPerSecond, base + (fine + 1) * s_.fine_bin_ns),
               static_cast<size_t>(sec), static_cast<size_t>(fine)};
  }

  [[gnu::noinline]] void AddSlow(const Event& e, int32_t tid, uint32_t process) {
    slow_.push_back({e, processes_[process].info.pid, tid, process});
    std::push_heap(slow_.begin(), slow_.end());
    if (slow_.size() > slowest_count_) {
      std::pop_heap(slow_.begin(), slow_.end());
      slow_.pop_back();
    }
    if (slow_.size() == slowest_count_) {
      slow_floor_ = slow_.front().e.dur_ns;
      slow_filling_ = false;
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
  Second second_;
  std::vector<Slow> slow_;
  NestedCalls nested_;
  const size_t slowest_count_;
  uint64_t slow_floor_;  // the shortest call on the slowest list, once it is full
  bool slow_filling_;    // the list is not full yet
  uint64_t timeline_base_ns_;  // second 0 of per_second starts here
  bool gpu_open_ = false;       // the GPU busy interval AddGpuBusy grows
  uint64_t gpu_start_ = 0, gpu_end_ = 0;
};

const KindRoleTable SummaryBuilder::kRoles;

PartialSummary SummaryBuilder::Finish() {
  for (const auto& by_key : streams_) {
    for (const auto& [key, st] : by_key) RollUp(*st);
  }
  PartialSummary p;
  p.slowest_count = slowest_count_;
  std::sort_heap(slow_.begin(), slow_.end());  // SlowerThan's order
  for (const Slow& x : slow_) {
    const ProcessTrace& proc = processes_[x.process];
    const EventKindInfo* k = LookupKind(x.e.kind);
    auto it = proc.strings.find(x.e.file);
    s_.slowest.push_back({x.e.dur_ns, x.e.start_ns, x.e.offset, x.e.size, x.pid, x.tid,
                          k ? k->name : "?", it != proc.strings.end() ? it->second : ""});
  }

  // GPU busy, idle and data-stall time.
  CloseGpuBusy();
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
  s_.timeline_base_ns = timeline_base_ns_ == UINT64_MAX ? s_.run_start_ns : timeline_base_ns_;
  p.s = std::move(s_);
  return p;
}

}  // namespace

int SizeBin(uint64_t bytes) { return SizeBinOf(bytes); }

const char* SizeBinName(int bin) {
  static const char* const kNames[kSizeBins] = {"0-100",   "100-1K",   "1K-10K",  "10K-100K",
                                                "100K-1M", "1M-4M",    "4M-10M",  "10M-100M",
                                                "100M-1G", "1G+"};
  return bin >= 0 && bin < kSizeBins ? kNames[bin] : "?";
}

const char* OpGroupName(OpGroup g) {
  static const char* const kNames[kOpGroups] = {"open", "read", "write", "seek",
                                                "meta", "sync", "mmap", "other"};
  return kNames[static_cast<int>(g)];
}

void AccessStats::Merge(const AccessStats& o) {
  ops += o.ops;
  bytes += o.bytes;
  time_ns += o.time_ns;
  small_ops += o.small_ops;
  for (int i = 0; i < kSizeBins; ++i) histogram[i] += o.histogram[i];
  consecutive += o.consecutive;
  sequential += o.sequential;
  first += o.first;
  // The tables stay bounded: a key not yet there joins while there is room.
  auto merge = [](auto* into, const auto& from) {
    for (const auto& [k, v] : from) {
      auto it = into->find(k);
      if (it != into->end()) {
        it->second += v;
      } else if (into->size() < kMaxDistinctSizes) {
        into->emplace(k, v);
      }
    }
  };
  merge(&sizes, o.sizes);
  merge(&strides, o.strides);
}

uint64_t IoStats::io_time_ns() const {
  uint64_t t = 0;
  for (uint64_t x : time_ns) t += x;
  return t;
}

PartialSummary AnalyzePartial(EventSource& source, size_t slowest_count,
                              uint64_t timeline_base_ns, bool hosts_in_keys,
                              const std::vector<ProcessImage>* images) {
  SummaryBuilder builder(source.processes(), slowest_count, timeline_base_ns, hosts_in_keys,
                         images);
  StreamEvent batch[256];
  for (size_t n; (n = source.Next(batch, 256)) > 0;) builder.Add(batch, n);
  return builder.Finish();
}

Summary Analyze(EventSource& source, size_t slowest_count) {
  return FinishSummary(AnalyzePartial(source, slowest_count));
}

Summary Analyze(const TraceSet& set, const StackIndex* stacks, const RegionAssignment* regions,
                size_t slowest_count) {
  TraceSetSource source(set);
  Summary s = Analyze(source, slowest_count);
  AddContextSections(set, stacks, regions, &s);
  return s;
}

void SetRegionRows(std::vector<RegionStats> rows, Summary* s) {
  // Only the "outside every region" row: there were no regions at all.
  if (rows.size() == 1 && rows[0].outside) rows.clear();
  s->regions = std::move(rows);
}

void AddContextSections(const TraceSet& set, const StackIndex* stacks,
                        const RegionAssignment* regions, Summary* s) {
  if (regions != nullptr && !regions->empty()) SetRegionRows(RegionBreakdown(set, *regions), s);
  if (stacks != nullptr) {
    s->sites_by_time = TopCallSites(set, *stacks, CallSiteKey::kFunction, false, 10);
    s->sites_by_bytes = TopCallSites(set, *stacks, CallSiteKey::kFunction, true, 10);
    s->sites_by_module = TopCallSites(set, *stacks, CallSiteKey::kModule, true, 10);
  }
}

}  // namespace dlprof::analysis
