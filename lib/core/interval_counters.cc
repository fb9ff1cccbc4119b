// Per-interval counters of the whole run, on the flusher (interval_counters.h).
#include "lib/core/interval_counters.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "lib/core/own_fd.h"
#include "lib/core/rank_io_map.h"
#include "lib/core/raw_log.h"
#include "lib/core/string_table.h"
#include "lib/format/event_rules.h"
#include "lib/format/path_class.h"

namespace dlprof::core {
namespace {

// What a kind counts as, worked out once from the catalogue: the flusher
// asks per event, and a table lookup is cheaper than the rules' branches.
enum : uint8_t {
  kSkip = 0, kIoRead, kIoWrite, kIoOther, kGpu, kRegion, kFlow, kMapRead, kGpuClock, kMark
};

struct KindUse {
  uint8_t of[kEventKindLimit];
  constexpr KindUse() : of{} {
#define DLPROF_X(code, ident, name, cat, op)                                         \
  of[code] = kEventRules.of[code].io                                                 \
                 ? (OpClass::op == OpClass::Read    ? kIoRead                         \
                    : OpClass::op == OpClass::Write ? kIoWrite                        \
                                                    : kIoOther)                       \
             : kEventRules.of[code].gpu_work ? kGpu                                  \
             : code == static_cast<int>(EventKind::CudaClockSync) ? kGpuClock        \
             : (Category::cat == Category::App && OpClass::op == OpClass::Region)    \
                 ? kRegion                                                           \
             : (OpClass::op == OpClass::FlowStart || OpClass::op == OpClass::FlowFinish) \
                 ? kFlow                                                             \
             : (Category::cat == Category::App && OpClass::op == OpClass::Mark)      \
                 ? kMark                                                             \
             : kEventRules.of[code].map_read ? kMapRead                              \
                                             : kSkip;
    DLPROF_EVENT_CATALOGUE(DLPROF_X)
#undef DLPROF_X
  }
};
constexpr KindUse kKindUse{};

}  // namespace

// The events of a drained ring come in runs: a loop's calls of one kind on
// one file, one after another. A run's figures are summed in registers and
// added to the tables once, so that an event costs a few instructions (the
// flusher's whole budget for an event is about 200: bench/callgrind_pread.sh).
// A run shares the event's first 8 bytes (kind, flags, err) and its file;
// durations in TSC ticks are summed as ticks and converted once.
void IntervalCounters::Add(uint32_t tid, const Event* ev, size_t n,
                           const format::TickScale& scale) {
  events_ += n;
  if (n > 0) {
    // A thread's events are in order: its first and last are its span.
    uint64_t oldest = ev[0].start_ns, newest = ev[n - 1].start_ns, unused = 0;
    if (ev[0].flags & kEventFlagTicks) scale.Times(oldest, 0, &oldest, &unused);
    if (ev[n - 1].flags & kEventFlagTicks) scale.Times(newest, 0, &newest, &unused);
    oldest_event_ns_ = std::min(oldest_event_ns_, oldest);
    newest_event_ns_ = std::max(newest_event_ns_, newest);
  }
  batches_.SetThread(tid);
  saves_.SetThread(tid);
  // A process of the rank has GPU work: its data stall needs our I/O.
  const bool mark_io = io_map_ != nullptr && io_map_->measuring();
  size_t i = 0;
  while (i < n) {
    const Event& e = ev[i];
    const uint8_t use = kKindUse.of[e.kind < kEventKindLimit ? e.kind : 0];
    if (use == kSkip || use == kGpuClock) {
      // CUPTI attached (its clock's first sync): GPU work may come, whose
      // data stall needs the rank's I/O marked from now on.
      if (use == kGpuClock) gpu_attached_ = true;
      ++i;
      continue;
    }
    if (use == kRegion) {
      uint64_t start = e.start_ns, dur = e.dur_ns;
      if (e.flags & kEventFlagTicks) scale.Times(e.start_ns, e.dur_ns, &start, &dur);
      RegionAcc& r = regions_[e.file];
      ++r.count;
      r.ns += dur;
      r.max_ns = std::max(r.max_ns, dur);
      r.first = std::min(r.first, start);
      r.last_end = std::max(r.last_end, start + dur);
      if (batches_.TakeNoBatchMark(start, start + dur)) ++r.no_batch;
      batches_.Region(e.file, start, start + dur);
      if (const uint32_t saved = saves_.Region(e.file, start, start + dur)) {
        InfoOf(saved).saved = true;
      }
      ++i;
      continue;
    }
    if (use == kMark) {
      uint64_t at = e.start_ns, unused = 0;
      if (e.flags & kEventFlagTicks) scale.Times(e.start_ns, 0, &at, &unused);
      batches_.Mark(e.file, at);
      ++i;
      continue;
    }
    if (use == kFlow || use == kMapRead) {
      uint64_t start = e.start_ns, dur = e.dur_ns;
      if (e.flags & kEventFlagTicks) scale.Times(e.start_ns, e.dur_ns, &start, &dur);
      if (use == kFlow) {
        batches_.Flow(e.kind == static_cast<uint16_t>(EventKind::AppFlowFinish), e.file, e.aux,
                      start);
      } else {
        // A page fault reads its file: data from now on, as a read call
        // makes it (a file the process wrote, then maps, is read data).
        InfoOf(e.file).read = true;
        if (JobFile(e.file)) batches_.MappedRead(start, start + dur);
        saves_.Read(e.file);
        if (mark_io) io_map_->Mark(start, start + dur);
      }
      ++i;
      continue;
    }
    uint64_t head;
    std::memcpy(&head, &e, sizeof(head));  // kind, flags, err
    const uint32_t file = e.file;
    // Where the run's bytes are: one field for the whole run (a run shares
    // its kind). A failed call (err set: a run of its own) moves none, and a
    // successful one returns what it moved, so no event needs a test.
    const BytesAt at = e.err != 0 ? BytesAt::kNone : kEventRules.of[e.kind].bytes_at;
    const size_t field = at == BytesAt::kAux    ? offsetof(Event, aux)
                         : at == BytesAt::kSize ? offsetof(Event, size)
                                                : offsetof(Event, ret);
    const char* base = reinterpret_cast<const char*>(ev);
    uint64_t dur = 0, bytes = 0;
    const size_t run_start = i;
    auto differs = [&](size_t k) {
      uint64_t h;
      std::memcpy(&h, base + k * sizeof(Event), sizeof(h));
      return (h ^ head) | (ev[k].file ^ file);
    };
    auto take = [&](size_t k) {
      // A duration in ticks read across CPUs may be a few ticks below 0:
      // summed as it is (an error of a few ns), not tested per event.
      uint64_t b;
      std::memcpy(&b, base + k * sizeof(Event) + field, sizeof(b));
      dur += ev[k].dur_ns;
      bytes += b;
    };
    size_t j = i + 1;  // event i starts the run
    take(i);
    // Four at a time while the run lasts: one test for four events.
    for (; j + 4 <= n; j += 4) {
      if ((differs(j) | differs(j + 1) | differs(j + 2) | differs(j + 3)) != 0) break;
      take(j);
      take(j + 1);
      take(j + 2);
      take(j + 3);
    }
    for (; j < n && differs(j) == 0; ++j) take(j);
    if (at == BytesAt::kNone) bytes = 0;
    uint64_t failed = 0;
    if (kEventKinds.info[e.kind].category == Category::Gds && at == BytesAt::kRet) {
      // cuFile's: a result below 0 with err 0 (a CUfileOpError, where errno
      // means nothing) moved nothing and failed (format::BytesMoved). Its
      // kinds only, summed again: the other kinds' runs cost no test.
      bytes = 0;
      for (size_t k = i; k < j; ++k) {
        if (ev[k].ret < 0) {
          ++failed;
        } else {
          bytes += static_cast<uint64_t>(ev[k].ret);
        }
      }
    }
    const uint64_t calls = j - i;
    i = j;
    if (use <= kIoOther && (e.flags & kEventFlagNested)) continue;  // its caller counts it
    if (mark_io && use <= kIoOther) MarkIo(ev, run_start, j, scale);
    // A job file's reads, and its other calls but syncs and opens for
    // output (stats, maps, opens to read; a save's open truncating the last
    // save is none, as the summary has it: OpensForOutput, the run's first
    // open's flags; nor, as the full events' IsCheckpointCall, one on a
    // file a save wrote, or the close ending a burst of writes on its
    // file): the run's span, for the wait it fell in
    // (batch_sampler.h).
    const bool data_call =
        (use == kIoRead ||
         (use == kIoOther && kEventKinds.info[e.kind].op_class != OpClass::Sync &&
          !OpensForOutput(e) && !InfoOf(file).saved &&
          !(kEventKinds.info[e.kind].op_class == OpClass::Close && saves_.Bursting(file)))) &&
        e.err == 0 && JobFile(file);
    if (data_call) {
      DataSpans(ev, run_start, j, use == kIoRead, dur, scale);
      if (kEventKinds.info[e.kind].op_class == OpClass::Mmap) DataMaps(ev, run_start, j, scale);
    }
    if (e.flags & kEventFlagTicks) dur = scale.Span(dur);
    if (use == kIoRead) saves_.Read(file);
    if (use == kIoOther && e.err == 0) SettleRun(ev, run_start, j, scale);
    if (use == kIoWrite && bytes > 0) WriteRun(ev, run_start, j, bytes, dur, scale);
    format::KindRow& k = kinds_[e.kind];
    k.calls += calls;
    k.ns += dur;
    k.bytes += bytes;
    k.errors += e.err != 0 ? calls : failed;
    if (use == kGpu) {
      // Each span, for the interval's GPU busy time (a union: TakeGpu).
      for (size_t g = run_start; g < j; ++g) {
        uint64_t start = ev[g].start_ns, span = ev[g].dur_ns;
        if (ev[g].flags & kEventFlagTicks) scale.Times(start, span, &start, &span);
        gpu_spans_.emplace_back(start, start + span);
      }
      gpu_attached_ = true;
      continue;
    }
    FileInfo& info = InfoOf(file);
    if (info.touched == 0) {
      touched_.push_back(TouchedFile{file, {}});
      info.touched = static_cast<uint32_t>(touched_.size());
    }
    format::IoTotals& io = touched_[info.touched - 1].io;
    if (use == kIoRead) {
      io.reads += calls;
      io.read_bytes += bytes;
      io.read_ns += dur;
    } else if (use == kIoWrite) {
      io.writes += calls;
      io.write_bytes += bytes;
      io.write_ns += dur;
    } else {
      io.other_calls += calls;
      io.other_ns += dur;
    }
  }
}

bool IntervalCounters::JobFile(uint32_t file) {
  ClassOf(file);  // its path looked up, once
  return InfoOf(file).path_class == format::kPathByUse;
}

uint8_t IntervalCounters::ClassOf(uint32_t file) {
  FileInfo& info = InfoOf(file);
  if (info.path_class == 255) {
    size_t len = 0;
    const char* text = file == 0 ? nullptr : strings_->Lookup(file, &len);
    // No path (a pipe, a socket, a descriptor opened before tracing): the
    // system's, as the analysis classes "pipe:[..]".
    info.path_class = text == nullptr ? format::kPathSystem
                                      : format::PathClassOf(std::string_view(text, len));
  }
  if (info.path_class != format::kPathByUse) return info.path_class;
  // docs/ANALYSIS.md's rules 3-5, on what the process did so far.
  if (info.read) return format::kPathData;
  if (info.written) return format::kPathOutputs;
  return format::kPathByUse;  // "other"
}

format::IntervalRecord IntervalCounters::Record(uint64_t end_ns, int32_t rank, bool take) {
  format::IntervalRecord r;
  r.start_ns = interval_start_ns_;
  r.end_ns = std::max(end_ns, interval_start_ns_);
  r.rank = rank;
  r.events = events_;
  for (format::KindRow& k : kinds_) {
    if (k.calls == 0) continue;
    r.kinds.push_back(k);
    if (take) k = format::KindRow{k.kind};
  }
  std::vector<format::FileRow> rows;
  rows.reserve(touched_.size());
  for (const TouchedFile& f : touched_) {
    FileInfo& info = file_info_[f.id];
    const FileInfo before = info;
    info.read |= f.io.reads > 0;
    info.written |= f.io.writes > 0;
    format::FileRow row;
    row.file = f.id;
    row.cls = ClassOf(f.id);
    row.io = f.io;
    r.classes[row.cls].Add(f.io);
    if (f.id != 0) rows.push_back(row);
    // The interval's events are classed by the use before it (Add): a
    // record so far leaves that as it was.
    if (take) {
      info.touched = 0;
    } else {
      info.read = before.read;
      info.written = before.written;
    }
  }
  const size_t top = std::min(rows.size(), kTopFiles);
  std::partial_sort(rows.begin(), rows.begin() + top, rows.end(),
                    [](const format::FileRow& a, const format::FileRow& b) {
                      return a.io.ns() != b.io.ns() ? a.io.ns() > b.io.ns() : a.file < b.file;
                    });
  rows.resize(top);
  r.files = std::move(rows);
  for (const auto& [name, g] : regions_) {
    r.regions.push_back(
        format::RegionRow{name, g.count, g.ns, g.max_ns, g.first, g.last_end, g.no_batch});
  }
  std::sort(r.regions.begin(), r.regions.end(),
            [](const format::RegionRow& a, const format::RegionRow& b) { return a.name < b.name; });
  if (take) {
    touched_.clear();
    regions_.clear();
    events_ = 0;
    interval_start_ns_ = r.end_ns;
  }
  return r;
}

void IntervalCounters::StringsOf(const format::IntervalRecord& r, bool files, bool regions,
                                 uint16_t type, std::vector<uint8_t>* out,
                                 std::vector<uint32_t>* fresh) {
  std::vector<std::pair<uint32_t, std::string>> strings;
  auto define = [&](uint32_t id) {
    if (id == 0) return;
    if (id >= defined_.size()) defined_.resize(id + 1);
    if (defined_[id] || std::find(fresh->begin(), fresh->end(), id) != fresh->end()) return;
    size_t len = 0;
    const char* text = strings_->Lookup(id, &len);
    if (text == nullptr) return;
    fresh->push_back(id);
    strings.emplace_back(id, std::string(text, len));
  };
  if (files) {
    for (const format::FileRow& f : r.files) define(f.file);
  }
  if (regions) {
    for (const format::RegionRow& g : r.regions) define(g.name);
  }
  if (!strings.empty()) format::AppendStringsRecord(strings, out, type);
}

bool IntervalCounters::MaybeEmit(uint64_t now_ns, int32_t rank, bool force, bool so_far) {
  if (path_.empty() || failed_) return false;
  if (io_map_ != nullptr && io_map_->Join(rank)) {
    if (gpu_attached_) io_map_->StartMeasuring(now_ns);
    io_map_->ShareWithExecChildren();
  }
  if (!force && now_ns - interval_start_ns_ < interval_ns_) {
    if (so_far) WriteSoFar(now_ns, rank);
    return false;
  }
  if (force) {
    batches_.FinishSteps();
    saves_.Finish();
  }
  so_far_record_.clear();  // the interval's record replaces it
  format::IntervalRecord r = Record(now_ns, rank, /*take=*/true);
  const format::BatchRecord batches = batches_.Take(r.start_ns);
  bool stepped = false;
  const format::StepRecord steps = batches_.TakeSteps(r.start_ns, &stepped);
  const format::GpuRecord gpu = TakeGpu(r.start_ns);
  // At the end, the stall up to the GPU's last work: the rank's other
  // processes have had their interval's time to hand theirs over.
  const uint64_t stall_to = !force ? r.start_ns : gpu_busy_.empty() ? 0 : gpu_busy_.back().second;
  format::DataStallRecord stall;
  const bool stalled = TakeStall(stall_to, now_ns, &stall);
  std::vector<uint8_t> bytes;
  std::vector<uint32_t> fresh;
  StringsOf(r, /*files=*/true, /*regions=*/true, format::kCounterStrings, &bytes, &fresh);
  format::AppendNoBatchRecord(r, &bytes);
  format::AppendIntervalRecord(r, &bytes);
  if (!batches.empty()) format::AppendBatchRecord(batches, &bytes);
  if (stepped) format::AppendStepRecord(steps, &bytes);
  if (gpu.spans > 0) format::AppendGpuRecord(gpu, &bytes);
  if (stalled) format::AppendDataStallRecord(stall, &bytes);
  const format::SavesRecord saves = saves_.Take(r.start_ns, now_ns, force);
  if (!saves.empty()) format::AppendSavesRecord(saves, &bytes);
  if (Write(bytes, nullptr)) Defined(fresh);
  if (force && !unwritten_.empty()) {
    RawLog("cannot write counters %s at the process's end: %zu bytes of its records are lost; "
           "the whole run's figures lack them", path_.c_str(), unwritten_.size());
  }
  so_far_events_ = 0;
  last_ = std::move(r);
  return true;
}

void IntervalCounters::WriteSoFar(uint64_t now_ns, int32_t rank) {
  // Nothing new since the last one (records held for want of space are
  // tried again at every pass all the same).
  if (events_ == so_far_events_ && unwritten_.empty()) return;
  format::IntervalRecord r = Record(now_ns, rank, /*take=*/false);
  r.so_far = true;
  std::vector<uint8_t> strings, record;
  std::vector<uint32_t> fresh, passing;
  // Its regions' names for good: the interval's record names every region
  // its records so far name (the regions are summed, never ranked).
  StringsOf(r, /*files=*/false, /*regions=*/true, format::kCounterStrings, &strings, &fresh);
  // Its files' names only in strings so far, written over with it: the
  // files most time went to change as an interval goes on (a cache's
  // temporary files, new every pass), and names defined for good at each
  // pass stayed when their files dropped out of the interval's record (a
  // 227-byte path each: 8.9 MB an hour, 1.6 with them written over).
  StringsOf(r, /*files=*/true, /*regions=*/false, format::kCounterStringsSoFar, &record,
            &passing);
  format::AppendIntervalRecord(r, &record);
  if (!Write(strings, &record)) return;  // the next pass tries again
  Defined(fresh);
  so_far_events_ = events_;
}

namespace {

using Spans = std::vector<std::pair<uint64_t, uint64_t>>;

// `spans` sorted and merged into disjoint spans, in place.
void MergeSpans(Spans* spans) {
  std::sort(spans->begin(), spans->end());
  size_t out = 0;
  for (const auto& [start, end] : *spans) {
    if (out > 0 && start <= (*spans)[out - 1].second) {
      (*spans)[out - 1].second = std::max((*spans)[out - 1].second, end);
    } else {
      (*spans)[out++] = {start, end};
    }
  }
  spans->resize(out);
}

// The length of the overlap of two lists of disjoint spans in order.
uint64_t OverlapNs(const Spans& a, const Spans& b) {
  uint64_t ns = 0;
  for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    const uint64_t from = std::max(a[i].first, b[j].first);
    const uint64_t to = std::min(a[i].second, b[j].second);
    if (to > from) ns += to - from;
    (a[i].second < b[j].second ? i : j)++;
  }
  return ns;
}

}  // namespace

format::GpuRecord IntervalCounters::TakeGpu(uint64_t start_ns) {
  format::GpuRecord g;
  g.start_ns = start_ns;
  g.spans = gpu_spans_.size();
  if (gpu_spans_.empty()) return g;
  // CUPTI's records come a buffer at a time, late and out of order across
  // streams: the interval's union, less the part an earlier interval's
  // union (the last two intervals' are kept) already counted.
  MergeSpans(&gpu_spans_);
  g.first_ns = gpu_spans_.front().first;
  g.last_ns = gpu_spans_.back().second;
  for (const auto& [start, end] : gpu_spans_) g.busy_ns += end - start;
  g.busy_ns -= OverlapNs(gpu_spans_, gpu_counted_);
  gpu_counted_.insert(gpu_counted_.end(), gpu_spans_.begin(), gpu_spans_.end());
  MergeSpans(&gpu_counted_);
  const uint64_t keep_from = start_ns > interval_ns_ ? start_ns - interval_ns_ : 0;
  gpu_counted_.erase(gpu_counted_.begin(),
                     std::find_if(gpu_counted_.begin(), gpu_counted_.end(),
                                  [&](const auto& s) { return s.second > keep_from; }));
  // The data stall's: every span from the first one's start on.
  if (io_map_ != nullptr) {
    if (stall_from_ns_ == 0) stall_from_ns_ = g.first_ns;
    gpu_busy_.insert(gpu_busy_.end(), gpu_spans_.begin(), gpu_spans_.end());
    MergeSpans(&gpu_busy_);
  }
  gpu_spans_.clear();
  return g;
}

void IntervalCounters::MarkIo(const Event* ev, size_t from, size_t to,
                              const format::TickScale& scale) {
  for (size_t k = from; k < to; ++k) {
    uint64_t start = ev[k].start_ns, dur = ev[k].dur_ns;
    if (static_cast<int64_t>(dur) <= 0) continue;  // (a few ticks below 0 across CPUs)
    if (ev[k].flags & kEventFlagTicks) scale.Times(ev[k].start_ns, ev[k].dur_ns, &start, &dur);
    io_map_->Mark(start, start + dur);
  }
}

bool IntervalCounters::TakeStall(uint64_t to_ns, uint64_t now_ns, format::DataStallRecord* r) {
  if (io_map_ == nullptr || stall_from_ns_ == 0 || to_ns <= stall_from_ns_) return false;
  // The marks are whole from the time measuring began (rank_io_map.h), and
  // kept for a lap back from now: a flusher that was held up (a hung file
  // system, a stopped job) measures what the map still has.
  const uint64_t since = io_map_->measuring_since_ns();
  const uint64_t lap_back = RankIoMap::kLapNs - (uint64_t{32} << RankIoMap::kBinShift);
  const uint64_t from =
      std::max({stall_from_ns_, since, now_ns > lap_back ? now_ns - lap_back : 0});
  const bool measured = since != 0 && from < to_ns;
  if (measured) {
    const RankIoMap::Measure m = io_map_->Read(from, to_ns, gpu_busy_);
    *r = format::DataStallRecord{from, to_ns, m.io_ns, m.stall_ns};
  }
  stall_from_ns_ = to_ns;
  gpu_busy_.erase(gpu_busy_.begin(),
                  std::find_if(gpu_busy_.begin(), gpu_busy_.end(),
                               [&](const auto& s) { return s.second > to_ns; }));
  return measured;
}

double IntervalCounters::LastRegionShare(const std::string& name) const {
  const uint64_t span = last_.end_ns - last_.start_ns;
  if (span == 0) return -1;
  for (const format::RegionRow& g : last_.regions) {
    size_t len = 0;
    const char* text = strings_->Lookup(g.name, &len);
    if (text != nullptr && std::string_view(text, len) == name) {
      return 100.0 * static_cast<double>(g.ns) / static_cast<double>(span);
    }
  }
  return -1;
}

void IntervalCounters::Defined(const std::vector<uint32_t>& ids) {
  for (uint32_t id : ids) defined_[id] = true;
}

}  // namespace dlprof::core
