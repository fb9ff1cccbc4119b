// --format perfetto: Perfetto's native trace format (protobuf TracePackets),
// written as the events stream by, for jobs too large for JSON.
//
// Tracks in Perfetto's model of machines (one per host), processes and
// threads, in job order (perfetto_tracks.h).
//
// Every call, kernel, copy and region is a slice (a BEGIN and an END
// TrackEvent) with the Chrome exporter's arguments as debug annotations;
// cuFile stream I/O goes on a track of its CUstream (kinds.h).
// Event names, categories and strings (paths, kernel configurations,
// regions) are interned, so each is written once per machine. A machine's
// slices go on a packet sequence of its own whose timestamps are deltas (a
// sequence-scoped incremental clock, defined by a ClockSnapshot on the job's
// time base, BOOTTIME for the viewer: perfetto_sequence.h); ENDs are held
// in a heap until the stream passes them, so that the sequence's times
// never go back. Counters (I/O bandwidth per process and per rank, GPU busy
// per device, the app's counters: dlprof_counter) go on a second sequence
// of the machine with absolute times. A
// CUDA API call carries a flow id (its process and correlation id) that the
// GPU work it launched terminates. Each rank's data-stall pieces, known once
// the stream has ended, go on a third sequence.
//
// Packets are gathered into chunks of up to 256 KiB, each written as one
// deflate-compressed `compressed_packets` packet (or zstd, or as they are:
// perfetto_compress.h).
#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "tools/dump/perfetto_output.h"

#include "lib/analysis/meters/timeline_counters.h"
#include "tools/dump/kinds.h"
#include "tools/dump/perfetto_compress.h"
#include "tools/dump/perfetto_fields.h"
#include "tools/dump/perfetto_pending_ends.h"
#include "tools/dump/perfetto_sequence.h"
#include "tools/dump/perfetto_tracks.h"
#include "tools/dump/perfetto_wire.h"

namespace dlprof::dump {
using namespace dlprof::analysis;
namespace {

namespace pf = perfetto_fields;

constexpr size_t kChunkBytes = 256 * 1024;
// Room for a slice's BEGIN packet less its InternedData: the packet's and
// TrackEvent's headers, four fields, 16 annotations of at most 24 bytes
// (an asynchronous request's: 15), a flow id.
constexpr size_t kMaxSliceBytes = 512;

// Workers deflating chunks: up to 4 (one keeps up with the encoding on
// most traces), none on a machine of one processor.
unsigned CompressionThreads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n > 1 ? std::min(4u, n - 1) : 0;
}
class PerfettoWriter {
 public:
  PerfettoWriter(const std::vector<ProcessTrace>& processes, OutBuffer* out,
                 const EventContext& context, PerfettoCompression compression)
      : processes_(processes),
        out_(out),
        context_(context),
        tracks_(processes, &chunk_),
        compressor_(out, CompressionThreads(), compression),
        bandwidth_([this](size_t c, uint64_t at, uint64_t v) { Sample(c, at, v * 10); }),
        gpu_busy_([this](size_t c, uint64_t at, uint64_t v) {
          Sample(tracks_.GpuCounter(c), at, v);
        }) {}

  void Begin();
  // A batch of the stream's events, valid during the call.
  void Add(const StreamEvent* batch, size_t n);
  void End(JobRankMeters* ranks);

 private:
  // An event held over to the next batch, with its own copy of the Event.
  struct Held {
    Event event;
    StreamEvent meta;
  };
  // What the writer needs of an event kind, worked out at its first event.
  struct KindInfo {
    const KindView* view;
    size_t category;  // its number (iid - 1 on each sequence)
    bool io;         // neither CUDA nor app: has a path, fd, offset, region
    bool gpu_work;   // a kernel, copy, memset or sync: on its device's stream track
    bool gpu_api;    // a CUDA API call
    bool gpu_clock;  // cupti_clock
    bool named;      // its name is the string of `file`
    bool cuda;       // category cuda: offset is no file offset
    int flow;        // a flow annotation's start (1) or finish (-1)
    bool app_counter;  // a sample of an app counter: no slice, a counter track's
  };
  void Hold(const StreamEvent& r);
  void WriteHeld();
  void WriteTogether(const StreamEvent** run, size_t n);
  void WriteSlice(const StreamEvent& r);
  char* PutArgs(char* p, SliceSequence& seq, const StreamEvent& r, const KindInfo& k);
  void EndsUntil(uint64_t t);
  // The slice sequence of a process's machine, begun.
  SliceSequence& SequenceOf(uint32_t process);
  const KindInfo& Kind(uint16_t code);
  uint64_t ProcessStringIid(SliceSequence& seq, uint32_t process, uint64_t id);
  uint64_t NameIid(SliceSequence& seq, const StreamEvent& r, const KindInfo& k);
  static char* IntArg(char* p, PerfettoArg name, int64_t v);
  static char* StringArg(char* p, PerfettoArg name, uint64_t string_iid);
  void Sample(size_t counter, uint64_t at_ns, uint64_t value);
  void WriteAppCounter(const StreamEvent& r);
  void CounterPacket(size_t counter, uint64_t at_ns, bool is_double, uint64_t value);
  void WriteStall(const JobRankMeters::RankStall& rank);
  void StallPacket(uint64_t at_ns, uint64_t track, bool begin);
  void Flush();
  void Compress();

  const std::vector<ProcessTrace>& processes_;
  OutBuffer* const out_;
  const EventContext& context_;
  KindTable kinds_;
  ProtoWriter chunk_;     // packets not yet compressed
  PerfettoTracks tracks_;
  ProtoWriter interned_;  // InternedData the packet being built introduces
  ChunkCompressor compressor_;
  // Per machine: its slice sequence (interning, incremental clock).
  std::vector<SliceSequence> sequences_;
  std::unordered_map<std::string, size_t> categories_;  // name -> number
  // Caches of iids on the process's machine's sequence.
  std::unordered_map<uint64_t, uint64_t> name_cache_;  // (process, kind, file) -> iid
  uint64_t last_name_key_ = UINT64_MAX, last_name_iid_ = 0;
  std::unordered_map<uint64_t, uint64_t> string_cache_;  // (process, string id) -> iid
  uint64_t last_string_key_ = UINT64_MAX, last_string_iid_ = 0;
  std::vector<int32_t> kind_slot_ = std::vector<int32_t>(65536, -1);  // code -> kind_info_
  std::vector<KindInfo> kind_info_;
  // The slices: those held over and the ENDs to come.
  std::vector<Held> held_;
  std::vector<const StreamEvent*> together_;
  PendingEnds ends_;
  uint64_t order_ = 0;
  BinnedSums bandwidth_;
  BusyTime gpu_busy_;
};

void PerfettoWriter::Sample(size_t counter, uint64_t at_ns, uint64_t value) {
  if (tracks_.CounterPercent(counter)) {
    // A GPU busy 20 us in 100 ms is busy 0.02 %: a fraction, not an integer.
    const double percent = static_cast<double>(value) * 100.0 / kCounterBinNs;
    uint64_t bits;
    std::memcpy(&bits, &percent, sizeof(bits));
    CounterPacket(counter, at_ns, true, bits);
  } else {
    CounterPacket(counter, at_ns, false, value);
  }
}

// An app counter's sample (dlprof_counter): on its process's counter track
// of its name, the int64 or the double it holds, instead of a slice.
void PerfettoWriter::WriteAppCounter(const StreamEvent& r) {
  const Event& e = *r.event;
  static const std::string kUnnamed = "counter";  // its string never came
  const ProcessTrace& p = processes_[r.process];
  auto name = p.strings.find(e.file);
  const size_t counter =
      tracks_.AppCounter(r.process, name != p.strings.end() ? name->second : kUnnamed);
  CounterPacket(counter, e.start_ns, CounterIsDouble(e), e.aux);
}

// A counter's sample, with absolute times on the machine's counter
// sequence: `value` an int64, or the bits of a double.
void PerfettoWriter::CounterPacket(size_t counter, uint64_t at_ns, bool is_double,
                                   uint64_t value) {
  const uint64_t track = tracks_.CounterTrack(counter);
  const uint32_t machine = tracks_.MachineOfTrack(track);
  size_t packet = chunk_.BeginNested(pf::kTracePacket);
  chunk_.Varint(pf::kPacketTimestamp, at_ns);
  chunk_.Varint(pf::kPacketSequenceId, CounterSequenceId(machine));
  if (machine != 0) chunk_.Varint(pf::kPacketMachineId, machine);
  size_t event = chunk_.BeginNested(pf::kPacketTrackEvent);
  chunk_.Varint(pf::kEventType, pf::kTypeCounter);
  chunk_.Varint(pf::kEventTrackUuid, track);
  if (is_double) {
    chunk_.Fixed64(pf::kEventDoubleCounterValue, value);
  } else {
    chunk_.Int(pf::kEventCounterValue, static_cast<int64_t>(value));
  }
  chunk_.EndNested(event);
  chunk_.EndNested(packet);
  Flush();
}

void PerfettoWriter::Begin() {
  tracks_.DescribeProcesses();
  sequences_.resize(tracks_.machines());
  for (size_t m = 0; m < sequences_.size(); ++m) sequences_[m].machine = static_cast<uint32_t>(m);
  // Machine 0's sequence starts first, as a single host's always did.
  if (!sequences_.empty()) sequences_[0].Begin(&chunk_);
  Flush();
}

SliceSequence& PerfettoWriter::SequenceOf(uint32_t process) {
  SliceSequence& seq = sequences_[tracks_.machine_of(process)];
  if (!seq.begun) seq.Begin(&chunk_);
  return seq;
}

// The events of one nanosecond are written together, so that the longest
// (the outermost) begins first. Most nanoseconds have one event, written
// straight from the batch; the last nanosecond of a batch may go on in the
// next one, so its events are held (copied) until it ends.
void PerfettoWriter::Add(const StreamEvent* batch, size_t n) {
  size_t i = 0;
  if (!held_.empty()) {
    const uint64_t t = held_.front().event.start_ns;
    for (; i < n && batch[i].event->start_ns == t && held_.size() < 4096; ++i) Hold(batch[i]);
    if (i == n) return;
    WriteHeld();
  }
  while (i < n) {
    const uint64_t t = batch[i].event->start_ns;
    size_t end = i + 1;
    while (end < n && batch[end].event->start_ns == t) ++end;
    if (end == n) {
      for (; i < n; ++i) Hold(batch[i]);
    } else if (end == i + 1) {
      if (!IsStackRecord(batch[i].event->kind)) WriteSlice(batch[i]);
    } else {
      together_.clear();
      for (size_t k = i; k < end; ++k) together_.push_back(&batch[k]);
      WriteTogether(together_.data(), together_.size());
    }
    i = end;
  }
}

void PerfettoWriter::Hold(const StreamEvent& r) {
  held_.push_back({*r.event, r});
}

void PerfettoWriter::WriteHeld() {
  together_.clear();
  for (Held& h : held_) {
    h.meta.event = &h.event;  // the copy, where it now lies
    together_.push_back(&h.meta);
  }
  WriteTogether(together_.data(), together_.size());
  held_.clear();
}

// Events of one nanosecond: the longer slice holds the shorter, so it
// begins first; stack records are no slices.
void PerfettoWriter::WriteTogether(const StreamEvent** run, size_t n) {
  std::stable_sort(run, run + n, [](const StreamEvent* a, const StreamEvent* b) {
    return a->event->dur_ns > b->event->dur_ns;
  });
  for (size_t i = 0; i < n; ++i) {
    if (!IsStackRecord(run[i]->event->kind)) WriteSlice(*run[i]);
  }
}

const PerfettoWriter::KindInfo& PerfettoWriter::Kind(uint16_t code) {
  int32_t& slot = kind_slot_[code];
  if (slot >= 0) return kind_info_[static_cast<size_t>(slot)];
  const KindView& k = kinds_.Get(code);
  KindInfo info{};
  info.view = &k;
  info.category = categories_.try_emplace(k.category, categories_.size()).first->second;
  const bool cuda = k.gpu;
  info.io = !k.named;
  info.gpu_work = k.rules.thread == ThreadOf::kStream;
  info.gpu_api = k.rules.gpu_api;
  info.gpu_clock = k.rules.gpu_clock;
  info.named = !info.io;
  info.cuda = cuda;
  info.flow = k.rules.flow;
  info.app_counter = k.op_class == OpClass::Counter;
  slot = static_cast<int32_t>(kind_info_.size());
  kind_info_.push_back(info);
  return kind_info_.back();
}

uint64_t PerfettoWriter::ProcessStringIid(SliceSequence& seq, uint32_t process, uint64_t id) {
  const uint64_t key = (uint64_t{process} << 32) | (id & 0xffffffff);
  // Most calls in a row name the same file.
  if (id <= UINT32_MAX && key == last_string_key_) return last_string_iid_;
  auto cached = id <= UINT32_MAX ? string_cache_.find(key) : string_cache_.end();
  if (cached != string_cache_.end()) {
    last_string_key_ = key;
    last_string_iid_ = cached->second;
    return cached->second;
  }
  static const std::string kEmpty;
  const ProcessTrace& p = processes_[process];
  auto it = id <= UINT32_MAX ? p.strings.find(static_cast<uint32_t>(id)) : p.strings.end();
  const uint64_t iid = seq.StringIid(&interned_, it != p.strings.end() ? it->second : kEmpty);
  // A string not yet read is not cached: a later block may bring it.
  if (it != p.strings.end()) string_cache_.emplace(key, iid);
  return iid;
}

uint64_t PerfettoWriter::NameIid(SliceSequence& seq, const StreamEvent& r,
                                 const KindInfo& info) {
  const Event& e = *r.event;
  const KindView& k = *info.view;
  const bool named = info.named && e.file != 0 && !k.region_faults;
  // Cached by (process, kind, file); the few processes past 2^16 of a job
  // are looked up each time.
  const bool cacheable = r.process < (1u << 16);
  const uint64_t key =
      (uint64_t{r.process} << 48) | (uint64_t{e.kind} << 32) | (named ? e.file : 0);
  if (cacheable && key == last_name_key_) return last_name_iid_;
  auto cached = cacheable ? name_cache_.find(key) : name_cache_.end();
  if (cached != name_cache_.end()) {
    last_name_key_ = key;
    last_name_iid_ = cached->second;
    return cached->second;
  }
  const std::string* name = &k.name;
  bool found = true;
  if (named) {
    auto s = processes_[r.process].strings.find(e.file);
    found = s != processes_[r.process].strings.end();
    if (found) name = &s->second;
  }
  const uint64_t iid = seq.NameIid(&interned_, *name);
  // A string not yet read is not cached: a later block may bring it.
  if (cacheable && found) name_cache_.emplace(key, iid);
  return iid;
}

// A debug annotation: its interned name and its value (under 128 bytes).
inline char* PerfettoWriter::IntArg(char* p, PerfettoArg name, int64_t v) {
  char* body = ProtoWriter::PutBegin(p, pf::kEventAnnotations);
  p = ProtoWriter::PutField(body, pf::kAnnotationNameIid, name);
  p = ProtoWriter::PutField(p, pf::kAnnotationInt, static_cast<uint64_t>(v));
  ProtoWriter::EndShort(body, p);
  return p;
}

inline char* PerfettoWriter::StringArg(char* p, PerfettoArg name, uint64_t iid) {
  char* body = ProtoWriter::PutBegin(p, pf::kEventAnnotations);
  p = ProtoWriter::PutField(body, pf::kAnnotationNameIid, name);
  p = ProtoWriter::PutField(p, pf::kAnnotationStringIid, iid);
  ProtoWriter::EndShort(body, p);
  return p;
}

// The Chrome exporter's arguments of a call, as debug annotations (at most
// 16 of at most 24 bytes each); writes only to interned_ besides `p`.
char* PerfettoWriter::PutArgs(char* p, SliceSequence& seq, const StreamEvent& r,
                              const KindInfo& info) {
  const Event& e = *r.event;
  const KindView& k = *info.view;
  const uint32_t process = r.process;
  if (k.config) {
    // Kernels and copies: ret is the string id of their configuration.
    p = StringArg(p, kConfig,
                  e.ret > 0 ? ProcessStringIid(seq, process, static_cast<uint64_t>(e.ret))
                            : seq.StringIid(&interned_, ""));
  } else {
    p = IntArg(p, kRet, e.ret);
  }
  if (e.err) p = IntArg(p, kErrno, e.err);
  if (info.io) {
    if (e.file != 0) p = StringArg(p, kPath, ProcessStringIid(seq, process, e.file));
    if (k.rules.copy && e.aux != 0) {  // a copy's destination (jsonl's dest_path)
      p = StringArg(p, kDestPath, ProcessStringIid(seq, process, e.aux));
    }
    if (e.fd >= 0) p = IntArg(p, kFd, e.fd);
  } else if (info.gpu_clock) {
    p = IntArg(p, kOffsetNs, e.offset);
    p = IntArg(p, kUncertaintyNs, static_cast<int64_t>(e.dur_ns));
    p = StringArg(p, kReason, seq.StringIid(&interned_, ClockSyncReason(e.fd)));
    p = IntArg(p, kSamples, static_cast<int64_t>(e.size));
    p = IntArg(p, kCuptiVersion, static_cast<int64_t>(e.aux));
  } else if (k.gpu) {
    if (k.rules.thread == ThreadOf::kStream) {
      p = IntArg(p, kDevice, e.fd);
      p = IntArg(p, kStream, e.offset);
    }
    p = IntArg(p, kCorrelation, static_cast<int64_t>(e.aux));
  } else if (info.flow != 0) {
    p = IntArg(p, kFlow, static_cast<int64_t>(e.aux));
  }
  if (e.offset >= 0 && !info.cuda) p = IntArg(p, kOffset, e.offset);
  if (e.size > 0 && !info.gpu_clock) p = IntArg(p, kSize, static_cast<int64_t>(e.size));
  // STDIO, MPI-IO: ret is no byte count (fread: items), the bytes are aux.
  if (info.view->bytes_in_aux) p = IntArg(p, kBytes, static_cast<int64_t>(e.aux));
  if (k.async) {  // on its file's track: whose it was, when it was reaped
    const AsyncAux a = UnpackAsyncAux(e.aux);
    p = IntArg(p, kSubmitTid, a.submit_tid);
    p = IntArg(p, kReapedBy, r.tid);
    p = IntArg(p, kReaped, static_cast<int64_t>(e.start_ns + e.dur_ns +
                                                uint64_t{a.reaped_after_us} * 1000));
    if (k.opcode) p = IntArg(p, kOpcode, a.opcode);
    for (auto [flag, arg] : {std::pair{kEventFlagFixedFile, kFixedFile},
                             {kEventFlagFixedBuffer, kFixedBuffer},
                             {kEventFlagLinked, kLinked}, {kEventFlagUnreaped, kUnreaped}}) {
      if (e.flags & flag) p = IntArg(p, arg, 1);
    }
  }
  if (info.io) {
    if (const std::string* region = context_.RegionOf(r)) {
      auto [it, added] = seq.regions.try_emplace(region, 0);
      if (added) it->second = seq.StringIid(&interned_, *region);
      p = StringArg(p, kRegion, it->second);
    }
  }
  return p;
}

void PerfettoWriter::WriteSlice(const StreamEvent& r) {
  const Event& e = *r.event;
  interned_.Clear();
  const KindInfo& k = Kind(e.kind);
  if (k.app_counter) return WriteAppCounter(r);
  const bool gpu_work = k.gpu_work, gpu_api = k.gpu_api;
  const int64_t tid = TimelineThread(*k.view, e, r.tid);
  // (A damaged duration past the end of time ends there.)
  const uint64_t end_ns = e.start_ns + std::min(e.dur_ns, UINT64_MAX - e.start_ns);
  EndsUntil(e.start_ns);
  const uint64_t track = tracks_.LaneOf(tracks_.SliceTrack(r.process, tid), e.start_ns, end_ns);
  SliceSequence& seq = SequenceOf(r.process);
  const uint64_t name_iid = NameIid(seq, r, k);
  const uint64_t category_iid = seq.CategoryIid(&interned_, k.category, k.view->category);
  seq.StartClock(&chunk_, e.start_ns);
  // The packet is written in one go through a pointer (perfetto_wire.h),
  // the TrackEvent straight into the chunk; the InternedData it introduces
  // (names, strings) follows it in the packet.
  char* p = chunk_.Room(kMaxSliceBytes);
  char* packet = ProtoWriter::PutBegin(p, pf::kTracePacket);
  const size_t packet_at = chunk_.Offset(packet);
  p = seq.PutSlicePacket(packet, e.start_ns);
  char* event = ProtoWriter::PutBegin(p, pf::kPacketTrackEvent);
  p = ProtoWriter::PutField(event, pf::kEventType, pf::kTypeSliceBegin);
  p = ProtoWriter::PutField(p, pf::kEventTrackUuid, track);
  p = ProtoWriter::PutField(p, pf::kEventNameIid, name_iid);
  p = ProtoWriter::PutField(p, pf::kEventCategoryIids, category_iid);
  p = PutArgs(p, seq, r, k);
  if ((gpu_api || gpu_work) && e.aux != 0) {
    // Correlation ids are per process: the process makes the flow id unique.
    const uint64_t flow = ((uint64_t{r.process} + 1) * 0x9e3779b97f4a7c15ull) ^ e.aux;
    p = ProtoWriter::PutFixed64(p, gpu_api ? pf::kEventFlowIds : pf::kEventTerminatingFlowIds,
                                flow);
  } else if (k.flow != 0) {
    p = ProtoWriter::PutFixed64(p, k.flow > 0 ? pf::kEventFlowIds : pf::kEventTerminatingFlowIds,
                                AnnotationFlowId(processes_[r.process], e));
  }
  const size_t event_at = chunk_.Offset(event);
  chunk_.Commit(p);
  chunk_.EndNested(event_at);
  if (interned_.size() > 0) chunk_.Message(pf::kPacketInternedData, interned_.data());
  chunk_.EndNested(packet_at);
  Flush();
  ends_.push({end_ns, e.start_ns, order_++, track});

  // Counters: bandwidth per process and per rank, GPU busy per device.
  if (BandwidthBytes io; BandwidthOf(e, &io)) {
    bandwidth_.Add(tracks_.process_counter(r.process) + io.write, e.start_ns, io.bytes);
    if (tracks_.rank_counter(r.process) >= 0) {
      bandwidth_.Add(static_cast<size_t>(tracks_.rank_counter(r.process)) + io.write, e.start_ns,
                     io.bytes);
    }
  }
  if (gpu_work) {
    gpu_busy_.Add(tracks_.GpuBusyIndex(r.process, e.fd), e.start_ns, end_ns);
  }
}

// The ENDs the stream has passed, in time order.
void PerfettoWriter::EndsUntil(uint64_t t) {
  while (!ends_.empty() && ends_.top().end_ns <= t) {
    const PendingEnd end = ends_.top();
    ends_.pop();
    SliceSequence& seq = sequences_[tracks_.MachineOfTrack(end.track)];
    seq.StartClock(&chunk_, end.end_ns);
    // Under 128 bytes: both lengths are known to take one byte.
    char* packet = ProtoWriter::PutBegin(chunk_.Room(64), pf::kTracePacket);
    char* event =
        ProtoWriter::PutBegin(seq.PutSlicePacket(packet, end.end_ns), pf::kPacketTrackEvent);
    char* p = ProtoWriter::PutField(event, pf::kEventType, pf::kTypeSliceEnd);
    p = ProtoWriter::PutField(p, pf::kEventTrackUuid, end.track);
    ProtoWriter::EndShort(event, p);
    ProtoWriter::EndShort(packet, p);
    chunk_.Commit(p);
    Flush();
  }
}

// A rank's data stall (docs/ANALYSIS_TABLES.md, "Ranks"): a slice per piece of time in which
// its I/O was outstanding and its GPUs idle, on a sequence of its own with
// absolute times (the pieces are known only once the stream has ended).
void PerfettoWriter::WriteStall(const JobRankMeters::RankStall& rank) {
  if (rank.pieces.empty()) return;
  const uint64_t track = tracks_.StallTrack(rank.host, rank.rank);
  if (track == 0) return;
  for (const auto& [start, end] : rank.pieces) {
    StallPacket(start, track, true);
    StallPacket(end, track, false);
  }
}

void PerfettoWriter::StallPacket(uint64_t at_ns, uint64_t track, bool begin) {
  size_t packet = chunk_.BeginNested(pf::kTracePacket);
  chunk_.Varint(pf::kPacketTimestamp, at_ns);
  const uint32_t machine = tracks_.MachineOfTrack(track);
  chunk_.Varint(pf::kPacketSequenceId, StallSequenceId(machine));
  if (machine != 0) chunk_.Varint(pf::kPacketMachineId, machine);
  size_t event = chunk_.BeginNested(pf::kPacketTrackEvent);
  chunk_.Varint(pf::kEventType, begin ? pf::kTypeSliceBegin : pf::kTypeSliceEnd);
  chunk_.Varint(pf::kEventTrackUuid, track);
  if (begin) chunk_.Bytes(pf::kEventName, "data stall");
  chunk_.EndNested(event);
  chunk_.EndNested(packet);
  Flush();
}

void PerfettoWriter::Flush() {
  if (chunk_.size() >= kChunkBytes) Compress();
}

void PerfettoWriter::Compress() {
  if (chunk_.size() == 0) return;
  compressor_.Add(chunk_.data());
  chunk_.Clear();
}

void PerfettoWriter::End(JobRankMeters* ranks) {
  WriteHeld();
  EndsUntil(UINT64_MAX);
  bandwidth_.Finish();
  gpu_busy_.Finish();
  if (ranks != nullptr) {
    for (const JobRankMeters::RankStall& rank : ranks->Finish()) WriteStall(rank);
  }
  Compress();
  compressor_.Finish();
}

}  // namespace

void WritePerfetto(EventSource& source, OutBuffer* out, const EventContext& context,
                   PerfettoCompression compression, JobRankMeters* ranks) {
  PerfettoWriter writer(source.processes(), out, context, compression);
  writer.Begin();
  StreamEvent batch[256];
  for (size_t n; (n = source.Next(batch, 256)) > 0;) writer.Add(batch, n);
  writer.End(ranks);
}

}  // namespace dlprof::dump
