#include "tools/dump/analysis.h"

#include <algorithm>
#include <functional>
#include <string>

#include "tools/dump/stall_meter.h"

namespace dlprof::dump {
namespace {

constexpr uint64_t kNsPerSecond = 1000000000ull;
constexpr size_t kMaxDistinctSizes = 4096;  // bounds the size and stride maps

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

bool IsIo(Category c) {
  return c == Category::Posix || c == Category::Stdio || c == Category::Mpiio;
}

// Bytes a call really moved: POSIX returns them, STDIO and MPI-IO events
// carry them in aux (docs/FORMAT.md).
uint64_t BytesMoved(const Event& e, Category c) {
  if (c == Category::Posix) return e.ret > 0 ? static_cast<uint64_t>(e.ret) : 0;
  return e.aux;
}

template <typename Map, typename Key>
void CountBounded(Map& m, const Key& k) {
  auto it = m.find(k);
  if (it != m.end()) {
    ++it->second;
  } else if (m.size() < kMaxDistinctSizes) {
    m.emplace(k, 1);
  }
}

// One process's accesses to one file: where its previous read and write
// ended (Darshan's sequential/consecutive classification), and its size and
// stride counts. Those maps are kept here only and rolled up into every
// level at the end: one hash update per event instead of one per level.
struct Cursor {
  bool has_read = false, has_write = false;
  uint64_t read_end = 0, write_end = 0;
  std::unordered_map<uint64_t, uint64_t> read_sizes, write_sizes;
  std::unordered_map<int64_t, uint64_t> read_strides, write_strides;
  IoStats* levels[4] = {};
  int level_count = 0;
};

// `sizes`/`strides`: where this access's size and stride are counted (the
// stream's maps), or null to count them in `a` itself.
void AddAccess(AccessStats& a, const Event& e, uint64_t bytes, bool has_prev, uint64_t prev_end,
               std::unordered_map<uint64_t, uint64_t>* sizes,
               std::unordered_map<int64_t, uint64_t>* strides) {
  ++a.ops;
  a.bytes += bytes;
  a.time_ns += e.dur_ns;
  ++a.histogram[SizeBin(e.size)];
  if (e.size < kSmallIoBytes) ++a.small_ops;
  if (!sizes) CountBounded(a.sizes, e.size);
  if (!has_prev || e.offset < 0) {
    ++a.first;
  } else {
    uint64_t off = static_cast<uint64_t>(e.offset);
    if (off == prev_end) ++a.consecutive;
    if (off >= prev_end) ++a.sequential;
    if (!strides) CountBounded(a.strides, static_cast<int64_t>(off - prev_end));
  }
}

template <typename Map>
void MergeBounded(Map& into, const Map& from) {
  for (const auto& [k, n] : from) {
    auto it = into.find(k);
    if (it != into.end()) {
      it->second += n;
    } else if (into.size() < kMaxDistinctSizes) {
      into.emplace(k, n);
    }
  }
}

struct Levels {
  IoStats* stats[4];
  int count;
};

void AddEvent(const Levels& levels, const Event& e, const EventKindInfo& k, Cursor* cursor) {
  const OpGroup g = GroupOf(k.op_class);
  const uint64_t bytes = BytesMoved(e, k.category);
  bool has_prev = false;
  uint64_t prev_end = 0;
  if (cursor && e.offset >= 0) {
    if (g == OpGroup::Read) {
      has_prev = cursor->has_read;
      prev_end = cursor->read_end;
      cursor->has_read = true;
      cursor->read_end = static_cast<uint64_t>(e.offset) + bytes;
    } else if (g == OpGroup::Write) {
      has_prev = cursor->has_write;
      prev_end = cursor->write_end;
      cursor->has_write = true;
      cursor->write_end = static_cast<uint64_t>(e.offset) + bytes;
    }
  }
  if (cursor && (g == OpGroup::Read || g == OpGroup::Write)) {
    const bool read = g == OpGroup::Read;
    CountBounded(read ? cursor->read_sizes : cursor->write_sizes, e.size);
    if (has_prev && e.offset >= 0) {
      CountBounded(read ? cursor->read_strides : cursor->write_strides,
                   static_cast<int64_t>(static_cast<uint64_t>(e.offset) - prev_end));
    }
  }
  const bool mpi_data = k.category == Category::Mpiio && (g == OpGroup::Read || g == OpGroup::Write);
  for (int i = 0; i < levels.count; ++i) {
    IoStats& s = *levels.stats[i];
    ++s.ops[static_cast<int>(g)];
    s.time_ns[static_cast<int>(g)] += e.dur_ns;
    s.first_ns = std::min(s.first_ns, e.start_ns);
    s.last_ns = std::max(s.last_ns, e.start_ns + e.dur_ns);
    if (e.err != 0) ++s.errors;
    if (g == OpGroup::Open) ++s.opens;
    if (g == OpGroup::Read) {
      AddAccess(s.read, e, bytes, has_prev, prev_end, cursor ? &cursor->read_sizes : nullptr,
                cursor ? &cursor->read_strides : nullptr);
      if (e.offset >= 0) s.read_extent = std::max(s.read_extent, static_cast<uint64_t>(e.offset) + bytes);
    } else if (g == OpGroup::Write) {
      AddAccess(s.write, e, bytes, has_prev, prev_end, cursor ? &cursor->write_sizes : nullptr,
                cursor ? &cursor->write_strides : nullptr);
    }
    if (mpi_data) {
      if (e.flags & kEventFlagCollective) {
        ++s.mpi_collective_ops;
        s.mpi_collective_bytes += bytes;
      } else {
        ++s.mpi_independent_ops;
        s.mpi_independent_bytes += bytes;
      }
    }
  }
}

std::string ProcessKey(const ProcessTrace& p) {
  std::string exe = p.info.exe;
  size_t slash = exe.rfind('/');
  if (slash != std::string::npos) exe = exe.substr(slash + 1);
  std::string key = "pid " + std::to_string(p.info.pid) + " (" + exe + ")";
  if (p.info.flags & kHeaderFlagForked) key += " forked";
  return key;
}

// `by` is keyed by the address of a process or file name.
std::vector<StallShare> TopShares(const std::unordered_map<StallMeter::Key, uint64_t>& by,
                                  size_t n) {
  std::vector<StallShare> v;
  for (const auto& [key, ns] : by) {
    if (ns > 0) v.push_back({*static_cast<const std::string*>(key), ns});
  }
  std::sort(v.begin(), v.end(), [](const StallShare& a, const StallShare& b) {
    return a.stall_ns != b.stall_ns ? a.stall_ns > b.stall_ns : a.what < b.what;
  });
  if (v.size() > n) v.resize(n);
  return v;
}

}  // namespace

int SizeBin(uint64_t bytes) {
  static const uint64_t kLimits[kSizeBins - 1] = {
      100, 1024, 10 * 1024, 100 * 1024, 1024 * 1024, 4u << 20, 10u << 20, 100u << 20, 1u << 30};
  for (int i = 0; i < kSizeBins - 1; ++i) {
    if (bytes < kLimits[i]) return i;
  }
  return kSizeBins - 1;
}

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
  for (const auto& [k, v] : o.sizes) sizes[k] += v;
  consecutive += o.consecutive;
  sequential += o.sequential;
  first += o.first;
  for (const auto& [k, v] : o.strides) strides[k] += v;
}

uint64_t IoStats::io_time_ns() const {
  uint64_t t = 0;
  for (uint64_t x : time_ns) t += x;
  return t;
}

Summary Analyze(EventSource& source, size_t slowest_count) {
  Summary s;
  const std::vector<ProcessTrace>& processes = source.processes();
  s.processes = processes.size();
  std::map<int32_t, GpuDevice> gpus;
  StallMeter stall;
  std::unordered_map<uint64_t, Cursor> cursors;
  // (process, file id) -> its entry in s.files (map nodes do not move).
  using FileEntry = std::pair<const std::string, IoStats>*;
  std::vector<std::unordered_map<uint32_t, FileEntry>> file_stats(processes.size());

  // The longest calls so far, shortest on top. Events are copied: a source's
  // events do not outlive the batch.
  struct Slow {
    Event e;
    int32_t tid;
    uint32_t process;
    bool operator>(const Slow& o) const { return e.dur_ns > o.e.dur_ns; }
  };
  std::vector<Slow> slow;

  std::vector<std::string> process_keys;
  std::vector<IoStats*> process_stats;
  for (const ProcessTrace& p : processes) {
    process_keys.push_back(ProcessKey(p));
    process_stats.push_back(&s.processes_stats[process_keys.back()]);
  }
  bool any_rank = false;
  int32_t last_rank = -1;
  IoStats* last_rank_stats = nullptr;
  uint64_t last_stream = 0;
  Cursor* last_cursor = nullptr;
  ForEachEvent(source, [&](const StreamEvent& r) {
    const Event& e = *r.event;
    if (IsStackRecord(e.kind)) return;
    const EventKindInfo* k = LookupKind(e.kind);
    // Events arrive by start: the first one starts the run.
    if (s.events++ == 0) s.run_start_ns = e.start_ns;
    s.run_end_ns = std::max(s.run_end_ns, e.start_ns + e.dur_ns);
    if (k == nullptr) return;
    if (k->category == Category::Cuda) {
      if (k->op_class != OpClass::Kernel && k->op_class != OpClass::Memcpy &&
          k->op_class != OpClass::Memset) {
        return;
      }
      GpuDevice& d = gpus[e.fd];
      d.device = e.fd;
      if (k->op_class == OpClass::Kernel) ++d.kernels;
      if (k->op_class == OpClass::Memcpy) {
        ++d.copies;
        d.copy_bytes += e.size;
      }
      if (k->op_class == OpClass::Memset) ++d.memsets;
      stall.AddGpu(e.fd, e.start_ns, e.start_ns + e.dur_ns);
      return;
    }
    // MPI_Init and MPI_Finalize are not I/O.
    if (!IsIo(k->category) || (k->category == Category::Mpiio && k->op_class == OpClass::Other)) {
      return;
    }
    // A nested call (the pread inside an MPI_File_read_at) is part of the
    // call around it; counting it too would count its bytes twice.
    if (e.flags & kEventFlagNested) {
      ++s.nested_events;
      return;
    }
    const ProcessTrace& p = processes[r.process];
    Levels levels{{&s.run, process_stats[r.process]}, 2};
    if (r.rank >= 0) {
      any_rank = true;
      if (r.rank != last_rank) {
        last_rank = r.rank;
        last_rank_stats = &s.ranks[r.rank];
      }
      levels.stats[levels.count++] = last_rank_stats;
    }
    Cursor* cursor = nullptr;
    const std::string* file_key = nullptr;
    if (e.file != 0) {
      FileEntry& cached = file_stats[r.process][e.file];
      if (cached == nullptr) {
        auto it = p.strings.find(e.file);
        std::string path = it != p.strings.end() ? it->second : "<unknown file>";
        cached = &*s.files.try_emplace(path).first;
      }
      file_key = &cached->first;
      levels.stats[levels.count++] = &cached->second;
      const uint64_t stream = (static_cast<uint64_t>(r.process) << 32) | e.file;
      if (stream != last_stream || last_cursor == nullptr) {
        last_stream = stream;
        last_cursor = &cursors[stream];
        if (last_cursor->level_count == 0) {
          for (int i = 0; i < levels.count; ++i) last_cursor->levels[i] = levels.stats[i];
          last_cursor->level_count = levels.count;
        }
      }
      cursor = last_cursor;
    }
    AddEvent(levels, e, *k, cursor);
    stall.AddIo(e.start_ns, e.start_ns + e.dur_ns, &process_keys[r.process], file_key);

    // Per-second timeline of bytes.
    if (k->op_class == OpClass::Read || k->op_class == OpClass::Write) {
      const size_t sec = static_cast<size_t>((e.start_ns - s.run_start_ns) / kNsPerSecond);
      if (sec >= s.per_second.size()) s.per_second.resize(sec + 1);
      (k->op_class == OpClass::Read ? s.per_second[sec].first : s.per_second[sec].second) +=
          BytesMoved(e, k->category);
    }
    if (slow.size() < slowest_count || (slowest_count > 0 && e.dur_ns > slow.front().e.dur_ns)) {
      slow.push_back({e, r.tid, r.process});
      std::push_heap(slow.begin(), slow.end(), std::greater<Slow>());
      if (slow.size() > slowest_count) {
        std::pop_heap(slow.begin(), slow.end(), std::greater<Slow>());
        slow.pop_back();
      }
    }
  });
  if (!any_rank) s.ranks.clear();
  for (const auto& [stream, c] : cursors) {
    for (int i = 0; i < c.level_count; ++i) {
      MergeBounded(c.levels[i]->read.sizes, c.read_sizes);
      MergeBounded(c.levels[i]->read.strides, c.read_strides);
      MergeBounded(c.levels[i]->write.sizes, c.write_sizes);
      MergeBounded(c.levels[i]->write.strides, c.write_strides);
    }
  }

  std::sort_heap(slow.begin(), slow.end(), std::greater<Slow>());  // longest first
  for (const Slow& x : slow) {
    const ProcessTrace& p = processes[x.process];
    const EventKindInfo* k = LookupKind(x.e.kind);
    auto it = p.strings.find(x.e.file);
    s.slowest.push_back({x.e.dur_ns, x.e.start_ns, x.e.offset, x.e.size, p.info.pid, x.tid,
                         k ? k->name : "?", it != p.strings.end() ? it->second : ""});
  }

  // GPU busy, idle and data-stall time.
  stall.Finish();
  if (!stall.any_gpu()) return s;
  for (auto& [dev, d] : gpus) {
    const StallMeter::Device& m = stall.devices().at(dev);
    d.first_ns = m.first_ns;
    d.last_ns = m.last_ns;
    d.busy_ns = m.busy_ns;
    d.stall_ns = m.stall_ns;
    s.gpus.push_back(d);
  }
  s.gpu_first_ns = stall.gpu_first_ns();
  s.gpu_last_ns = stall.gpu_last_ns();
  s.gpu_busy_ns = stall.gpu_busy_ns();
  s.io_outstanding_ns = stall.io_outstanding_ns();
  s.data_stall_ns = stall.data_stall_ns();
  s.stall_by_file = TopShares(stall.stall_by_file(), 10);
  s.stall_by_process = TopShares(stall.stall_by_process(), 10);
  return s;
}

Summary Analyze(const TraceSet& set, const StackIndex* stacks, const RegionAssignment* regions,
                size_t slowest_count) {
  TraceSetSource source(set);
  Summary s = Analyze(source, slowest_count);
  AddContextSections(set, stacks, regions, &s);
  return s;
}

void AddContextSections(const TraceSet& set, const StackIndex* stacks,
                        const RegionAssignment* regions, Summary* s) {
  if (regions != nullptr && !regions->empty()) {
    s->regions = RegionBreakdown(set, *regions);
    // Only the "outside every region" row: there were no regions at all.
    if (s->regions.size() == 1 && s->regions[0].outside) s->regions.clear();
  }
  if (stacks != nullptr) {
    s->sites_by_time = TopCallSites(set, *stacks, CallSiteKey::kFunction, false, 10);
    s->sites_by_bytes = TopCallSites(set, *stacks, CallSiteKey::kFunction, true, 10);
    s->sites_by_module = TopCallSites(set, *stacks, CallSiteKey::kModule, true, 10);
  }
}

}  // namespace dlprof::dump
