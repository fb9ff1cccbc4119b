// --format perfetto: Perfetto's native trace format (protobuf TracePackets),
// written as the events stream by, for jobs too large for JSON.
//
// Tracks, as users navigate a job: a track per host, under it a track per
// rank, under that the rank's processes (its main process first, then its
// workers, by pid; processes without a rank sit under the host), and under
// each process its threads, then its GPU streams. Ordering is explicit
// (child_ordering EXPLICIT, sibling_order_rank). Names are those of the
// Chrome exporter: a process "cmd [rank R] (pid P)" (with "host: " before it
// when the job spans hosts), "thread T", "GPU D stream S".
//
// Every call, kernel, copy and region is a slice (a BEGIN and an END
// TrackEvent) with the Chrome exporter's arguments as debug annotations.
// Event names, categories and strings (paths, kernel configurations,
// regions) are interned, so each is written once. Slices go on one packet
// sequence whose timestamps are deltas (a sequence-scoped incremental clock,
// defined by a ClockSnapshot on the job's time base, BOOTTIME for the
// viewer); ENDs are held in a heap until the stream passes them, so that
// the sequence's times never go back. Counters (I/O bandwidth per process
// and per rank, GPU busy per device) go on a second sequence with absolute
// times. A CUDA API call carries a flow id (its process and correlation id)
// that the GPU work it launched terminates.
//
// Packets are gathered into chunks of up to 256 KiB, each written as one
// deflate-compressed `compressed_packets` packet, as Perfetto's own service
// does: the trace processor and UI read them transparently.
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <queue>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "tools/dump/perfetto_output.h"

#include "tools/dump/kinds.h"
#include "tools/dump/perfetto_counters.h"
#include "tools/dump/perfetto_fields.h"
#include "tools/dump/perfetto_wire.h"

namespace dlprof::dump {
namespace {

namespace pf = perfetto_fields;

constexpr uint32_t kSliceSequence = 1, kCounterSequence = 2;
constexpr size_t kChunkBytes = 256 * 1024;
// GPU stream tracks on the Chrome exporter's synthetic thread ids.
constexpr int64_t kGpuTrackBase = int64_t{1} << 40;

std::string ProcessName(const ProcessTrace& p, bool with_host) {
  std::string exe = p.info.exe;
  size_t slash = exe.rfind('/');
  if (slash != std::string::npos) exe = exe.substr(slash + 1);
  std::string cmd = p.info.cmdline;
  for (char& c : cmd) {
    if (c == '\0') c = ' ';
  }
  if (cmd.size() > 80) cmd = cmd.substr(0, 77) + "...";
  std::string name = (cmd.empty() ? exe : cmd);
  if (p.info.rank >= 0) name += " [rank " + std::to_string(p.info.rank) + "]";
  return (with_host ? p.info.host + ": " : std::string()) + name + " (pid " +
         std::to_string(p.info.pid) + ")";
}

// The debug annotation names, interned once at the start (iid = index + 1).
enum Arg : uint64_t {
  kRet = 1, kErrno, kPath, kFd, kOffset, kSize, kConfig, kDevice, kStream, kCorrelation,
  kRegion, kOffsetNs, kUncertaintyNs, kReason, kSamples, kCuptiVersion, kArgCount
};
const char* const kArgNames[] = {"ret",    "errno",  "path",        "fd",
                                 "offset", "size",   "config",      "device",
                                 "stream", "correlation", "region", "offset_ns",
                                 "uncertainty_ns", "reason", "samples", "cupti_version"};

class PerfettoWriter {
 public:
  PerfettoWriter(const std::vector<ProcessTrace>& processes, OutBuffer* out,
                 const EventContext& context)
      : processes_(processes),
        out_(out),
        context_(context),
        bandwidth_([this](size_t c, uint64_t at, uint64_t v) { Sample(c, at, v * 10); }),
        gpu_busy_([this](size_t c, uint64_t at, uint64_t v) { Sample(gpu_counters_[c], at, v); }) {}

  void Begin();
  void Add(const StreamEvent& r);
  void End();

 private:
  // One slice waiting to be written: the events of one nanosecond are
  // gathered so that the longest (the outermost) begins first.
  struct Slice {
    Event event;
    StreamEvent meta;
  };
  // A slice's END, due when the stream passes it.
  struct PendingEnd {
    uint64_t end_ns, start_ns, order, track;
    bool operator>(const PendingEnd& o) const {
      // Inner slices (later start, later begun) end first at equal times.
      return std::tie(end_ns, o.start_ns, o.order) > std::tie(o.end_ns, start_ns, order);
    }
  };
  // What the writer needs of an event kind, worked out at its first event.
  struct KindInfo {
    const KindView* view;
    uint64_t category_iid;
    bool io;         // neither CUDA nor app: has a path, fd, offset, region
    bool gpu_work;   // a kernel, copy or memset: on its device's stream track
    bool gpu_api;    // a CUDA API call
    bool gpu_clock;  // cupti_clock
    bool named;      // its name is the string of `file`
    bool bandwidth;  // a read or write counted in the bandwidth counters
    bool posix;      // bytes = ret (else aux)
  };
  struct CounterTrack {
    uint64_t parent;
    std::string name;
    int32_t sibling_rank;
    bool percent;       // values are busy ns per bin, shown as a percentage
    uint64_t uuid = 0;  // 0 until its descriptor is written
  };

  void AssignProcessTracks();
  uint64_t Descriptor(uint64_t parent, const std::string& name, int64_t sibling_rank,
                      bool ordered_children);
  uint64_t SliceTrack(const StreamEvent& r, bool gpu_work, int64_t tid);
  uint64_t LaneOf(uint64_t track, uint64_t start_ns, uint64_t end_ns);
  void WriteHeld();
  void WriteSlice(const Slice& s);
  void WriteArgs(const Slice& s, const KindInfo& k);
  void EndsUntil(uint64_t t);
  void SlicePacket(uint64_t at_ns, const ProtoWriter& event, const ProtoWriter* interned);
  const KindInfo& Kind(uint16_t code);
  uint64_t StringIid(const std::string& s);
  uint64_t ProcessStringIid(uint32_t process, uint64_t id);
  uint64_t NameIid(const StreamEvent& r, const KindInfo& k);
  void IntArg(Arg name, int64_t v);
  void StringArg(Arg name, uint64_t string_iid);
  size_t Counter(uint64_t parent, const std::string& name, int32_t sibling_rank,
                 bool percent = false);
  void Sample(size_t counter, uint64_t at_ns, uint64_t value);
  void Flush();
  void Compress();

  const std::vector<ProcessTrace>& processes_;
  OutBuffer* const out_;
  const EventContext& context_;
  KindTable kinds_;
  ProtoWriter chunk_;     // packets not yet compressed
  ProtoWriter event_;     // the TrackEvent being built
  ProtoWriter end_event_;
  ProtoWriter interned_;  // InternedData the packet being built introduces
  std::string compressed_;
  bool several_hosts_ = false;
  uint64_t next_uuid_ = 1;
  std::vector<uint64_t> process_track_;   // per process: its track's uuid
  std::vector<int64_t> rank_counter_;     // per process: its rank's read counter, or -1
  std::vector<int64_t> process_counter_;  // per process: its read counter (write: + 1)
  std::map<std::pair<uint32_t, int64_t>, uint64_t> slice_tracks_;
  // A slice track's lanes: the track itself, then one more for each slice
  // that overlaps another without nesting in it (a timeline can only nest).
  struct SliceLane {
    uint64_t uuid;
    std::vector<uint64_t> open_ends;  // of its open slices, outermost first
  };
  struct Lanes {
    uint64_t parent;
    std::string name;
    int64_t sibling_rank;
    std::vector<SliceLane> lanes;
  };
  std::unordered_map<uint64_t, Lanes> lanes_;  // by the track's uuid
  std::vector<uint64_t> host_track_;      // per process: its host's track
  // Interning (iids count from 1 per kind of entry).
  std::unordered_map<std::string, uint64_t> strings_, names_, categories_;
  std::unordered_map<uint64_t, uint64_t> name_cache_;  // (process, kind, file) -> iid
  std::unordered_map<uint64_t, uint64_t> string_cache_;  // (process, string id) -> iid
  std::unordered_map<const std::string*, uint64_t> region_cache_;
  std::vector<int32_t> kind_slot_ = std::vector<int32_t>(65536, -1);  // code -> kind_info_
  std::vector<KindInfo> kind_info_;
  // The slice sequence: time of its last packet, its held slices and ENDs.
  bool started_ = false;
  uint64_t last_ns_ = 0;
  std::vector<Slice> held_;
  std::priority_queue<PendingEnd, std::vector<PendingEnd>, std::greater<PendingEnd>> ends_;
  uint64_t order_ = 0;
  // Counters.
  std::vector<CounterTrack> counters_;
  std::map<std::tuple<std::string, int32_t>, size_t> gpu_counter_of_;  // (host, device)
  std::vector<size_t> gpu_counters_;  // BusyTime index -> counter
  BinnedSums bandwidth_;
  BusyTime gpu_busy_;
};

uint64_t PerfettoWriter::Descriptor(uint64_t parent, const std::string& name,
                                    int64_t sibling_rank, bool ordered_children) {
  const uint64_t uuid = next_uuid_++;
  size_t packet = chunk_.BeginNested(pf::kTracePacket);
  size_t track = chunk_.BeginNested(pf::kTrackDescriptor);
  chunk_.Varint(pf::kTrackUuid, uuid);
  if (parent != 0) chunk_.Varint(pf::kTrackParentUuid, parent);
  chunk_.Bytes(pf::kTrackName, name);
  if (ordered_children) chunk_.Varint(pf::kTrackChildOrdering, pf::kChildOrderingExplicit);
  chunk_.Int(pf::kTrackSiblingOrderRank, sibling_rank);
  chunk_.EndNested(track);
  chunk_.EndNested(packet);
  return uuid;
}

// Hosts, ranks and processes, in the order users navigate a job: hosts by
// name, ranks by number, then a rank's processes by pid; processes without
// a rank after the ranks, by pid.
void PerfettoWriter::AssignProcessTracks() {
  const std::string* host = nullptr;
  std::vector<size_t> order;
  for (size_t i = 0; i < processes_.size(); ++i) {
    const ProcessTrace& p = processes_[i];
    if (!p.opened) continue;
    several_hosts_ |= host != nullptr && *host != p.info.host;
    host = &p.info.host;
    order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const format::ProcessInfo &x = processes_[a].info, &y = processes_[b].info;
    const uint32_t rx = static_cast<uint32_t>(x.rank), ry = static_cast<uint32_t>(y.rank);
    return std::tie(x.host, rx, x.pid, a) < std::tie(y.host, ry, y.pid, b);
  });
  process_track_.assign(processes_.size(), 0);
  host_track_.assign(processes_.size(), 0);
  rank_counter_.assign(processes_.size(), -1);
  process_counter_.assign(processes_.size(), -1);
  uint64_t host_uuid = 0, rank_uuid = 0;
  int64_t rank_read = -1;
  int32_t hosts = 0, in_host = 0, in_rank = 0;
  for (size_t n = 0; n < order.size(); ++n) {
    const format::ProcessInfo& info = processes_[order[n]].info;
    const format::ProcessInfo* prev = n ? &processes_[order[n - 1]].info : nullptr;
    if (prev == nullptr || prev->host != info.host) {
      host_uuid = Descriptor(0, info.host.empty() ? "host" : info.host, hosts++, true);
      in_host = 0;
      prev = nullptr;
    }
    uint64_t parent = host_uuid;
    if (info.rank >= 0) {
      if (prev == nullptr || prev->rank != info.rank) {
        rank_uuid = Descriptor(host_uuid, "rank " + std::to_string(info.rank), in_host++, true);
        in_rank = 0;
        rank_read = static_cast<int64_t>(Counter(rank_uuid, "read (B/s)", 1 << 30));
        Counter(rank_uuid, "write (B/s)", (1 << 30) + 1);
      }
      parent = rank_uuid;
      rank_counter_[order[n]] = rank_read;
    }
    const int32_t rank = info.rank >= 0 ? in_rank++ : in_host++;
    process_track_[order[n]] =
        Descriptor(parent, ProcessName(processes_[order[n]], several_hosts_), rank, true);
    host_track_[order[n]] = host_uuid;
    process_counter_[order[n]] = static_cast<int64_t>(
        Counter(process_track_[order[n]], "read (B/s)", 1 << 30));
    Counter(process_track_[order[n]], "write (B/s)", (1 << 30) + 1);
  }
}

// A counter track, described when its first sample is written.
size_t PerfettoWriter::Counter(uint64_t parent, const std::string& name, int32_t sibling_rank,
                               bool percent) {
  counters_.push_back({parent, name, sibling_rank, percent});
  return counters_.size() - 1;
}

void PerfettoWriter::Sample(size_t counter, uint64_t at_ns, uint64_t value) {
  CounterTrack& c = counters_[counter];
  if (c.uuid == 0) {
    c.uuid = next_uuid_++;
    size_t packet = chunk_.BeginNested(pf::kTracePacket);
    size_t track = chunk_.BeginNested(pf::kTrackDescriptor);
    chunk_.Varint(pf::kTrackUuid, c.uuid);
    chunk_.Varint(pf::kTrackParentUuid, c.parent);
    chunk_.Bytes(pf::kTrackName, c.name);
    chunk_.Int(pf::kTrackSiblingOrderRank, c.sibling_rank);
    chunk_.EndNested(chunk_.BeginNested(pf::kTrackCounter));
    chunk_.EndNested(track);
    chunk_.EndNested(packet);
  }
  size_t packet = chunk_.BeginNested(pf::kTracePacket);
  chunk_.Varint(pf::kPacketTimestamp, at_ns);
  chunk_.Varint(pf::kPacketSequenceId, kCounterSequence);
  size_t event = chunk_.BeginNested(pf::kPacketTrackEvent);
  chunk_.Varint(pf::kEventType, pf::kTypeCounter);
  chunk_.Varint(pf::kEventTrackUuid, c.uuid);
  if (c.percent) {
    // A GPU busy 20 us in 100 ms is busy 0.02 %: a fraction, not an integer.
    const double percent = static_cast<double>(value) * 100.0 / kCounterBinNs;
    uint64_t bits;
    std::memcpy(&bits, &percent, sizeof(bits));
    chunk_.Fixed64(pf::kEventDoubleCounterValue, bits);
  } else {
    chunk_.Int(pf::kEventCounterValue, static_cast<int64_t>(value));
  }
  chunk_.EndNested(event);
  chunk_.EndNested(packet);
  Flush();
}

void PerfettoWriter::Begin() {
  // The slice sequence starts clean: its defaults (the incremental clock)
  // and the annotation names it uses.
  size_t packet = chunk_.BeginNested(pf::kTracePacket);
  chunk_.Varint(pf::kPacketSequenceId, kSliceSequence);
  chunk_.Varint(pf::kPacketSequenceFlags, pf::kSeqIncrementalStateCleared);
  size_t defaults = chunk_.BeginNested(pf::kPacketDefaults);
  chunk_.Varint(pf::kDefaultsClockId, pf::kDeltaClock);
  chunk_.EndNested(defaults);
  size_t interned = chunk_.BeginNested(pf::kPacketInternedData);
  for (uint64_t a = kRet; a < kArgCount; ++a) {
    size_t entry = chunk_.BeginNested(pf::kInternedAnnotationNames);
    chunk_.Varint(pf::kInternedIid, a);
    chunk_.Bytes(pf::kInternedName, kArgNames[a - 1]);
    chunk_.EndNested(entry);
  }
  chunk_.EndNested(interned);
  chunk_.EndNested(packet);
  AssignProcessTracks();
  Flush();
}

void PerfettoWriter::Add(const StreamEvent& r) {
  const Event& e = *r.event;
  if (IsStackRecord(e.kind)) return;
  if (!held_.empty() && (held_.front().event.start_ns != e.start_ns || held_.size() >= 4096)) {
    WriteHeld();
  }
  held_.push_back({e, r});
  held_.back().meta.event = nullptr;  // the copy above is what lasts
}

void PerfettoWriter::WriteHeld() {
  // At one nanosecond, the longer slice holds the shorter: it begins first.
  std::stable_sort(held_.begin(), held_.end(), [](const Slice& a, const Slice& b) {
    return a.event.dur_ns > b.event.dur_ns;
  });
  for (const Slice& s : held_) WriteSlice(s);
  held_.clear();
}

uint64_t PerfettoWriter::SliceTrack(const StreamEvent& r, bool gpu_work, int64_t tid) {
  auto [it, added] = slice_tracks_.try_emplace({r.process, tid}, 0);
  if (!added) return it->second;
  std::string name;
  int64_t rank;
  if (gpu_work) {
    const int64_t device = (tid - kGpuTrackBase) >> 24, stream = tid & 0xffffff;
    name = "GPU " + std::to_string(device) + " stream " + std::to_string(stream);
    rank = (int64_t{1} << 29) + (device << 12) + (stream & 0xfff);  // after the threads
  } else {
    name = "thread " + std::to_string(tid);
    rank = tid;
  }
  it->second = Descriptor(process_track_[r.process], name, rank, false);
  lanes_[it->second] = Lanes{process_track_[r.process], name, rank, {SliceLane{it->second, {}}}};
  return it->second;
}

// The first lane of `track` the slice nests in: its open slices that end
// by `start_ns` are over (their ENDs are written), and the innermost one
// left must hold the slice.
uint64_t PerfettoWriter::LaneOf(uint64_t track, uint64_t start_ns, uint64_t end_ns) {
  Lanes& set = lanes_[track];
  for (auto& lane : set.lanes) {
    while (!lane.open_ends.empty() && lane.open_ends.back() <= start_ns) lane.open_ends.pop_back();
    if (lane.open_ends.empty() || lane.open_ends.back() >= end_ns) {
      lane.open_ends.push_back(end_ns);
      return lane.uuid;
    }
  }
  const std::string name =
      set.name + " (overlap " + std::to_string(set.lanes.size()) + ")";
  const uint64_t uuid = Descriptor(set.parent, name, set.sibling_rank, false);
  set.lanes.push_back({uuid, {end_ns}});
  return uuid;
}

uint64_t PerfettoWriter::StringIid(const std::string& s) {
  auto [it, added] = strings_.try_emplace(s, strings_.size() + 1);
  if (added) {
    size_t entry = interned_.BeginNested(pf::kInternedStrings);
    interned_.Varint(pf::kInternedIid, it->second);
    interned_.Bytes(pf::kInternedName, s);
    interned_.EndNested(entry);
  }
  return it->second;
}

const PerfettoWriter::KindInfo& PerfettoWriter::Kind(uint16_t code) {
  int32_t& slot = kind_slot_[code];
  if (slot >= 0) return kind_info_[static_cast<size_t>(slot)];
  const KindView& k = kinds_.Get(code);
  KindInfo info{};
  info.view = &k;
  auto [cat, added] = categories_.try_emplace(k.category, categories_.size() + 1);
  if (added) {
    size_t entry = interned_.BeginNested(pf::kInternedCategories);
    interned_.Varint(pf::kInternedIid, cat->second);
    interned_.Bytes(pf::kInternedName, k.category);
    interned_.EndNested(entry);
  }
  info.category_iid = cat->second;
  const bool cuda = k.category == "cuda";
  info.io = !cuda && k.category != "app";
  // Where the Chrome exporter places it (chrome_output.cc, Place).
  info.gpu_work = cuda && k.op_class != OpClass::Api && k.op_class != OpClass::Other;
  info.gpu_api = k.gpu && k.op_class == OpClass::Api;
  info.gpu_clock = k.gpu && k.op_class == OpClass::Other;
  info.named = !info.io;
  info.bandwidth = (k.op_class == OpClass::Read || k.op_class == OpClass::Write) && !cuda;
  info.posix = k.category == "posix";
  slot = static_cast<int32_t>(kind_info_.size());
  kind_info_.push_back(info);
  return kind_info_.back();
}

uint64_t PerfettoWriter::ProcessStringIid(uint32_t process, uint64_t id) {
  const uint64_t key = (uint64_t{process} << 32) | (id & 0xffffffff);
  auto cached = id <= UINT32_MAX ? string_cache_.find(key) : string_cache_.end();
  if (cached != string_cache_.end()) return cached->second;
  static const std::string kEmpty;
  const ProcessTrace& p = processes_[process];
  auto it = id <= UINT32_MAX ? p.strings.find(static_cast<uint32_t>(id)) : p.strings.end();
  const uint64_t iid = StringIid(it != p.strings.end() ? it->second : kEmpty);
  // A string not yet read is not cached: a later block may bring it.
  if (it != p.strings.end()) string_cache_.emplace(key, iid);
  return iid;
}

uint64_t PerfettoWriter::NameIid(const StreamEvent& r, const KindInfo& info) {
  const Event& e = *r.event;
  const KindView& k = *info.view;
  const bool named = info.named && e.file != 0;
  const uint64_t key = (uint64_t{r.process} << 48) ^ (uint64_t{e.kind} << 32) ^ (named ? e.file : 0);
  auto cached = name_cache_.find(key);
  if (cached != name_cache_.end()) return cached->second;
  const std::string* name = &k.name;
  if (named) {
    auto s = processes_[r.process].strings.find(e.file);
    if (s != processes_[r.process].strings.end()) name = &s->second;
  }
  auto [it, added] = names_.try_emplace(*name, names_.size() + 1);
  if (added) {
    size_t entry = interned_.BeginNested(pf::kInternedEventNames);
    interned_.Varint(pf::kInternedIid, it->second);
    interned_.Bytes(pf::kInternedName, *name);
    interned_.EndNested(entry);
  }
  name_cache_.emplace(key, it->second);
  return it->second;
}

void PerfettoWriter::IntArg(Arg name, int64_t v) {
  size_t a = event_.BeginNested(pf::kEventAnnotations);
  event_.Varint(pf::kAnnotationNameIid, name);
  event_.Int(pf::kAnnotationInt, v);
  event_.EndNested(a);
}

void PerfettoWriter::StringArg(Arg name, uint64_t iid) {
  size_t a = event_.BeginNested(pf::kEventAnnotations);
  event_.Varint(pf::kAnnotationNameIid, name);
  event_.Varint(pf::kAnnotationStringIid, iid);
  event_.EndNested(a);
}

// The Chrome exporter's arguments of a call, as debug annotations.
void PerfettoWriter::WriteArgs(const Slice& s, const KindInfo& info) {
  const Event& e = s.event;
  const KindView& k = *info.view;
  const uint32_t process = s.meta.process;
  if (k.config) {
    // Kernels and copies: ret is the string id of their configuration.
    StringArg(kConfig, e.ret > 0 ? ProcessStringIid(process, static_cast<uint64_t>(e.ret))
                                 : StringIid(""));
  } else {
    IntArg(kRet, e.ret);
  }
  if (e.err) IntArg(kErrno, e.err);
  if (info.io) {
    if (e.file != 0) StringArg(kPath, ProcessStringIid(process, e.file));
    if (e.fd >= 0) IntArg(kFd, e.fd);
  } else if (info.gpu_clock) {
    IntArg(kOffsetNs, e.offset);
    IntArg(kUncertaintyNs, static_cast<int64_t>(e.dur_ns));
    StringArg(kReason, StringIid(ClockSyncReason(e.fd)));
    IntArg(kSamples, static_cast<int64_t>(e.size));
    IntArg(kCuptiVersion, static_cast<int64_t>(e.aux));
  } else if (k.gpu) {
    if (k.op_class != OpClass::Api) {
      IntArg(kDevice, e.fd);
      IntArg(kStream, e.offset);
    }
    IntArg(kCorrelation, static_cast<int64_t>(e.aux));
  }
  if (e.offset >= 0 && k.category != "cuda") IntArg(kOffset, e.offset);
  if (e.size > 0 && !info.gpu_clock) IntArg(kSize, static_cast<int64_t>(e.size));
  if (info.io) {
    if (const std::string* region = context_.RegionOf(s.meta)) {
      auto [it, added] = region_cache_.try_emplace(region, 0);
      if (added) it->second = StringIid(*region);
      StringArg(kRegion, it->second);
    }
  }
}

void PerfettoWriter::WriteSlice(const Slice& s) {
  const Event& e = s.event;
  StreamEvent r = s.meta;
  r.event = &e;
  event_.Clear();
  interned_.Clear();
  const KindInfo& k = Kind(e.kind);
  const bool gpu_work = k.gpu_work, gpu_api = k.gpu_api;
  const int64_t tid = gpu_work ? kGpuTrackBase + (int64_t{e.fd} << 24) + (e.offset & 0xffffff)
                      : gpu_api && e.offset > 0 ? e.offset
                                                : int64_t{r.tid};
  EndsUntil(e.start_ns);
  const uint64_t track = LaneOf(SliceTrack(r, gpu_work, tid), e.start_ns, e.start_ns + e.dur_ns);
  event_.Varint(pf::kEventType, pf::kTypeSliceBegin);
  event_.Varint(pf::kEventTrackUuid, track);
  event_.Varint(pf::kEventNameIid, NameIid(r, k));
  event_.Varint(pf::kEventCategoryIids, k.category_iid);
  WriteArgs(s, k);
  if ((gpu_api || gpu_work) && e.aux != 0) {
    // Correlation ids are per process: the process makes the flow id unique.
    const uint64_t flow = ((uint64_t{r.process} + 1) * 0x9e3779b97f4a7c15ull) ^ e.aux;
    event_.Fixed64(gpu_api ? pf::kEventFlowIds : pf::kEventTerminatingFlowIds, flow);
  }
  SlicePacket(e.start_ns, event_, &interned_);
  ends_.push({e.start_ns + e.dur_ns, e.start_ns, order_++, track});

  // Counters: the Chrome exporter's bandwidth, per process and per rank.
  if (k.bandwidth && !(e.flags & kEventFlagNested)) {
    const uint64_t bytes = k.posix ? (e.ret > 0 ? static_cast<uint64_t>(e.ret) : 0) : e.aux;
    const size_t write = k.view->op_class == OpClass::Write ? 1 : 0;
    bandwidth_.Add(static_cast<size_t>(process_counter_[r.process]) + write, e.start_ns, bytes);
    if (rank_counter_[r.process] >= 0) {
      bandwidth_.Add(static_cast<size_t>(rank_counter_[r.process]) + write, e.start_ns, bytes);
    }
  }
  if (gpu_work) {
    const ProcessTrace& p = processes_[r.process];
    auto [dev, fresh] = gpu_counter_of_.try_emplace({p.info.host, e.fd}, gpu_counters_.size());
    if (fresh) {
      gpu_counters_.push_back(Counter(host_track_[r.process],
                                      "GPU " + std::to_string(e.fd) + " busy (%)",
                                      (1 << 30) + 2 + e.fd, true));
    }
    gpu_busy_.Add(dev->second, e.start_ns, e.start_ns + e.dur_ns);
  }
}

// Writes the packet of a TrackEvent (with the InternedData it introduces)
// at `at_ns` on the slice sequence, its time a delta from the last packet's.
void PerfettoWriter::SlicePacket(uint64_t at_ns, const ProtoWriter& event,
                                 const ProtoWriter* interned) {
  if (!started_) {
    // The incremental clock starts at the first slice, on the job's time base.
    started_ = true;
    last_ns_ = at_ns;
    size_t packet = chunk_.BeginNested(pf::kTracePacket);
    chunk_.Varint(pf::kPacketSequenceId, kSliceSequence);
    size_t snapshot = chunk_.BeginNested(pf::kPacketClockSnapshot);
    size_t delta = chunk_.BeginNested(pf::kSnapshotClocks);
    chunk_.Varint(pf::kClockId, pf::kDeltaClock);
    chunk_.Varint(pf::kClockTimestamp, at_ns);
    chunk_.Varint(pf::kClockIncremental, 1);
    chunk_.EndNested(delta);
    size_t boottime = chunk_.BeginNested(pf::kSnapshotClocks);
    chunk_.Varint(pf::kClockId, pf::kClockBoottime);
    chunk_.Varint(pf::kClockTimestamp, at_ns);
    chunk_.EndNested(boottime);
    chunk_.EndNested(snapshot);
    chunk_.EndNested(packet);
  }
  size_t packet = chunk_.BeginNested(pf::kTracePacket);
  chunk_.Varint(pf::kPacketTimestamp, at_ns - last_ns_);
  last_ns_ = at_ns;
  chunk_.Varint(pf::kPacketSequenceId, kSliceSequence);
  chunk_.Varint(pf::kPacketSequenceFlags, pf::kSeqNeedsIncrementalState);
  if (interned != nullptr && interned->size() > 0) {
    chunk_.Message(pf::kPacketInternedData, interned->data());
  }
  chunk_.Message(pf::kPacketTrackEvent, event.data());
  chunk_.EndNested(packet);
  Flush();
}

// The ENDs the stream has passed, in time order.
void PerfettoWriter::EndsUntil(uint64_t t) {
  while (!ends_.empty() && ends_.top().end_ns <= t) {
    const PendingEnd end = ends_.top();
    ends_.pop();
    end_event_.Clear();
    end_event_.Varint(pf::kEventType, pf::kTypeSliceEnd);
    end_event_.Varint(pf::kEventTrackUuid, end.track);
    SlicePacket(end.end_ns, end_event_, nullptr);
  }
}

void PerfettoWriter::Flush() {
  if (chunk_.size() >= kChunkBytes) Compress();
}

// The gathered packets as one compressed_packets packet; where zlib fails
// (it does not on memory it was given), the packets go out as they are.
void PerfettoWriter::Compress() {
  if (chunk_.size() == 0) return;
  uLongf size = compressBound(static_cast<uLong>(chunk_.size()));
  compressed_.resize(size);
  if (compress2(reinterpret_cast<Bytef*>(compressed_.data()), &size,
                reinterpret_cast<const Bytef*>(chunk_.data().data()),
                static_cast<uLong>(chunk_.size()), Z_BEST_SPEED) != Z_OK) {
    out_->Append(chunk_.data());
    chunk_.Clear();
    return;
  }
  ProtoWriter header;
  const uint64_t field_bytes = 2 + VarintSize(size) + size;  // tag 50 takes two bytes
  header.Tag(pf::kTracePacket, ProtoWriter::kLengthDelimited);
  header.RawVarint(field_bytes);
  header.Tag(pf::kPacketCompressed, ProtoWriter::kLengthDelimited);
  header.RawVarint(size);
  out_->Append(header.data());
  out_->Append(std::string_view(compressed_.data(), size));
  chunk_.Clear();
}

void PerfettoWriter::End() {
  WriteHeld();
  EndsUntil(UINT64_MAX);
  bandwidth_.Finish();
  gpu_busy_.Finish();
  Compress();
}

}  // namespace

void WritePerfetto(EventSource& source, OutBuffer* out, const EventContext& context) {
  PerfettoWriter writer(source.processes(), out, context);
  writer.Begin();
  ForEachEvent(source, [&writer](const StreamEvent& r) { writer.Add(r); });
  writer.End();
}

}  // namespace dlprof::dump
