// --format chrome: Trace Event JSON that Perfetto UI and chrome://tracing open.
//
// One process track per traced process (named with its command and rank), a
// thread track per thread, a track per GPU device and stream, a complete
// ("X") event per call with its arguments (cuFile stream I/O on a track of
// its CUstream), flow arrows from a CUDA API call
// to the GPU work it launched (same correlation id), counter tracks of read
// and write bandwidth per process (written as the stream passes them), a
// counter track per app counter (dlprof_counter) of a process, and each
// rank's data stall. Times are microseconds with the nanoseconds kept
// as three decimals.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "lib/analysis/meters/job_rank_meters.h"
#include "lib/analysis/meters/timeline_counters.h"
#include "lib/text/text.h"
#include "lib/read/trace_catalog.h"
#include "tools/dump/chrome_parts.h"
#include "tools/dump/kinds.h"
#include "tools/dump/output.h"

namespace dlprof::dump {
using namespace dlprof::read;
using namespace dlprof::analysis;
using namespace dlprof::text;
namespace {

// GPU tracks live in the process that launched the work, on synthetic
// thread ids (GpuStreamTrack, kinds.h). A rank's data stall: a synthetic
// thread of its main process, before the GPU tracks.
constexpr int64_t kStallTrack = GpuStreamTrack(0, 0) - 1;

// How one event shows on the timeline: its kind and the track it goes on.
struct Placed {
  const KindView& k;
  bool gpu_work;   // a kernel, copy, memset or sync: on its device's stream track
  bool gpu_api;    // a CUDA API call
  bool gpu_clock;  // cupti_clock
  int64_t tid;     // the track
};

Placed Place(const StreamEvent& r, const KindView& k) {
  const EventRules& rules = k.rules;
  return {k, rules.thread == ThreadOf::kStream, rules.gpu_api, rules.gpu_clock,
          TimelineThread(k, *r.event, r.tid)};
}

// The whole document, an event at a time.
class ChromeWriter {
 public:
  ChromeWriter(const std::vector<ProcessTrace>& processes, OutBuffer* out,
               const EventContext& context)
      : processes_(processes), out_(out), context_(context), known_(processes) {
    AssignTracks();
  }

  void Begin() {
    out_->Append("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
    for (size_t i = 0; i < processes_.size(); ++i) {
      if (!processes_[i].opened || known_.first_image[i] != i) continue;  // one per process
      Metadata(out_, "process_name", track_[i], 0, known_.Name(i, several_hosts_), &first_);
      if (synthetic_) {
        Metadata(out_, "process_sort_index", track_[i], 0, "", &first_, track_[i]);
      }
    }
  }

  void Add(const StreamEvent& r) {
    const ProcessTrace& p = processes_[r.process];
    const int32_t track = track_[r.process];
    const Event& e = *r.event;
    const KindView& k = kinds_.Get(e.kind);
    if (IsStackRecord(e.kind)) return;
    if (k.op_class == OpClass::Counter) return WriteAppCounter(r, p);
    Placed at = Place(r, k);
    if (k.async) {
      at.tid += AsyncLane(r.process, e);
    } else if (!at.gpu_work && !k.cufile_stream) {
      at.tid = ThreadLane(r.process, at.tid, e);
    }
    NameTrack(track, at, e, p);
    WriteCall(r, p, at);
    if (at.gpu_api && e.aux != 0) {
      flows_.Call(track, e.aux, at.tid, e.start_ns);
    } else if (at.gpu_work && e.aux != 0) {
      flows_.Work(track, e.aux, at.tid, e.start_ns, out_);
    } else if (k.flow != 0) {
      WriteAnnotationFlow(r, p, at);
    }
    bandwidth_.Add(e, known_.first_image[r.process]);
  }

  void End(JobRankMeters* ranks) {
    bandwidth_.Finish();
    if (ranks != nullptr) {
      for (const JobRankMeters::RankStall& rank : ranks->Finish()) WriteStall(rank);
    }
    // A bounded run's stretch in the document's own metadata (Trace Event
    // Format's otherData; Perfetto UI lists it as the trace's metadata).
    if (context_.bounded != nullptr) {
      out_->Append("\n],\"otherData\":{\"dlprof_bounded_trace\":" +
                   text::JsonString(*context_.bounded) + "}}\n");
      return;
    }
    out_->Append("\n]}\n");
  }

 private:
  // A process's track is its pid while pids are unique and the traces come
  // from one host (the viewer shows the pid users know). Otherwise (pids of
  // different hosts collide) tracks are numbered 1, 2, ... in the order users
  // navigate a job, by host, then rank, then pid, and named with the host.
  // A track per process: the images of a process that exec'ed share one
  // (the first image's), pids that collide (hosts) get synthetic ones.
  void AssignTracks() {
    track_.resize(processes_.size());
    const std::vector<size_t>& first_image = known_.first_image;
    std::set<int32_t> pids;
    const std::string* host = nullptr;
    for (size_t i = 0; i < processes_.size(); ++i) {
      const ProcessTrace& p = processes_[i];
      track_[i] = p.info.pid;
      if (!p.opened || first_image[i] != i) continue;
      synthetic_ |= !pids.insert(p.info.pid).second;
      several_hosts_ |= host != nullptr && *host != p.info.host;
      host = &p.info.host;
    }
    synthetic_ |= several_hosts_;
    if (!synthetic_) return;
    std::vector<size_t> order(processes_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const format::ProcessInfo &x = processes_[a].info, &y = processes_[b].info;
      // Ranks first (-1, no rank, last), then by pid.
      const uint32_t rx = static_cast<uint32_t>(known_.rank[a]);
      const uint32_t ry = static_cast<uint32_t>(known_.rank[b]);
      return std::tie(x.host, rx, x.pid, a) < std::tie(y.host, ry, y.pid, b);
    });
    int32_t next = 1;
    for (size_t i : order) {
      if (first_image[i] == i) track_[i] = next++;
    }
    for (size_t i = 0; i < processes_.size(); ++i) track_[i] = track_[first_image[i]];
  }

  // A rank's data stall (docs/ANALYSIS_TABLES.md, "Ranks"): a complete event per piece, on
  // a "data stall" thread of the rank's main process (Perfetto's format has
  // a track under the rank instead).
  void WriteStall(const JobRankMeters::RankStall& rank) {
    if (rank.pieces.empty() || rank.main_process >= track_.size()) return;
    const int32_t track = track_[rank.main_process];
    Metadata(out_, "thread_name", track, kStallTrack, "data stall", &first_);
    for (const auto& [start, end] : rank.pieces) {
      out_->Append(",\n{\"ph\":\"X\",\"cat\":\"dlprof\",\"name\":\"data stall\",\"pid\":");
      out_->AppendInt(track);
      out_->Append(",\"tid\":");
      out_->AppendInt(kStallTrack);
      out_->Append(",\"ts\":");
      AppendMicros(out_, start);
      out_->Append(",\"dur\":");
      AppendMicros(out_, end - start);
      out_->Append("}");
    }
  }

  // An asynchronous request's lane on its file's track: the first whose
  // requests have all completed by its submission (events come by start),
  // so that requests in flight together lie side by side, none across
  // another (a Chrome track can only nest its slices).
  int64_t AsyncLane(uint32_t process, const Event& e) {
    std::vector<uint64_t>& ends = async_lanes_[{process, e.file}];
    size_t lane = 0;
    while (lane < ends.size() && ends[lane] > e.start_ns) ++lane;
    if (lane == ends.size()) {
      if (lane == kAsyncLanes) lane = kAsyncLanes - 1;  // (the last takes the rest)
      else ends.push_back(0);
    }
    ends[lane] = std::max(ends[lane], e.start_ns + e.dur_ns);
    return static_cast<int64_t>(lane);
  }

  // The lane of a thread's track a slice nests in (events come in start
  // order): the thread's own, where it does, else the first of its overlap
  // lanes that has room (PerfettoTracks::LaneOf, for Perfetto's tracks).
  // (A slice that began in the same nanosecond as the open one and ends
  // later holds it: viewers order such slices longest first.)
  int64_t ThreadLane(uint32_t process, int64_t tid, const Event& e) {
    std::vector<std::vector<Span>>& lanes = thread_lanes_[{process, tid}];
    const uint64_t end = e.start_ns + e.dur_ns;
    for (size_t lane = 0;; ++lane) {
      if (lane == lanes.size()) lanes.emplace_back();
      std::vector<Span>& open = lanes[lane];
      while (!open.empty() && (open.back().end <= e.start_ns ||
                               (open.back().start == e.start_ns && open.back().end <= end))) {
        open.pop_back();
      }
      if (open.empty() || open.back().end >= end || lane + 1 == kOverlapLanes) {
        open.push_back({e.start_ns, end});
        return lane == 0 ? tid : OverlapTrack(tid, static_cast<int64_t>(lane));
      }
    }
  }

  // Tracks are named when first seen: viewers accept metadata anywhere.
  void NameTrack(int32_t pid, const Placed& at, const Event& e, const ProcessTrace& p) {
    if (!named_tracks_.emplace(pid, at.tid).second) return;
    std::string name;
    if (at.gpu_work) {
      name = "GPU " + std::to_string(e.fd) + " stream " + std::to_string(e.offset);
    } else if (at.k.cufile_stream) {
      name = CufileStreamName(at.tid);
    } else if (at.k.async) {
      auto it = p.strings.find(e.file);
      name = AsyncFileTrackName(it != p.strings.end() ? it->second : "",
                                (at.tid - kAsyncFileTrack) % kAsyncLanes);
    } else if (at.tid >= kOverlapTrack) {
      name = "thread " + std::to_string((at.tid - kOverlapTrack) / kOverlapLanes) + " (overlap " +
             std::to_string((at.tid - kOverlapTrack) % kOverlapLanes) + ")";
    } else {
      name = "thread " + std::to_string(at.tid);
    }
    Metadata(out_, "thread_name", pid, at.tid, name, &first_);
  }

  // The complete ("X") event of one call, with its arguments.
  void WriteCall(const StreamEvent& r, const ProcessTrace& p, const Placed& at) {
    const Event& e = *r.event;
    const KindView& k = at.k;
    std::string name = k.name;
    // (A region's faults are named as such; their region is an argument.)
    if (k.named && e.file != 0 && !k.region_faults) {
      auto it = p.strings.find(e.file);
      if (it != p.strings.end()) name = it->second;
    }
    out_->Append(",\n{\"ph\":\"X\",\"cat\":\"");
    out_->Append(k.category);
    out_->Append("\",\"name\":");
    std::string q;
    AppendJsonString(&q, name);
    out_->Append(q);
    out_->Append(",\"pid\":");
    out_->AppendInt(track_[r.process]);
    out_->Append(",\"tid\":");
    out_->AppendInt(at.tid);
    out_->Append(",\"ts\":");
    AppendMicros(out_, e.start_ns);
    out_->Append(",\"dur\":");
    AppendMicros(out_, e.dur_ns);
    WriteArgs(r, p, at);
    out_->Append("}}");
  }

  // An app counter's sample (dlprof_counter, dlprof_counter_double): a
  // counter ("C") event of its process named after the counter, with the
  // value; a double that is no number (NaN, infinite) has nothing to draw.
  void WriteAppCounter(const StreamEvent& r, const ProcessTrace& p) {
    const Event& e = *r.event;
    if (CounterIsDouble(e) && !std::isfinite(CounterDouble(e))) return;
    auto it = p.strings.find(e.file);
    std::string name;
    AppendJsonString(&name, it != p.strings.end() ? it->second : "counter");
    out_->Append(",\n{\"ph\":\"C\",\"cat\":\"app\",\"name\":");
    out_->Append(name);
    out_->Append(",\"pid\":");
    out_->AppendInt(track_[r.process]);
    out_->Append(",\"ts\":");
    AppendMicros(out_, e.start_ns);
    out_->Append(",\"args\":{\"value\":");
    AppendCounterValue(e, out_);
    out_->Append("}}");
  }

  // A flow annotation's end of its arrow, bound to the slice enclosing it
  // (the worker's fetch, the loop's batch wait): "s" where it starts, "f"
  // where it finishes.
  void WriteAnnotationFlow(const StreamEvent& r, const ProcessTrace& p, const Placed& at) {
    const Event& e = *r.event;
    std::string name;
    AppendJsonString(&name, AnnotationFlowName(p, e));
    FlowEvent(out_, at.k.flow > 0 ? 's' : 'f', "flow", name,
              "flow:" + std::to_string(AnnotationFlowId(p, e)), track_[r.process], at.tid,
              e.start_ns);
  }

  // The call's "args": its result, and its file, CUDA fields or size.
  void WriteArgs(const StreamEvent& r, const ProcessTrace& p, const Placed& at) {
    const Event& e = *r.event;
    const KindView& k = at.k;
    if (k.config) {
      // Kernels and copies: ret is the string id of their configuration.
      out_->Append(",\"args\":{\"config\":");
      auto it = e.ret > 0 ? p.strings.find(static_cast<uint32_t>(e.ret)) : p.strings.end();
      std::string config;
      AppendJsonString(&config, it != p.strings.end() ? it->second : "");
      out_->Append(config);
    } else {
      out_->Append(",\"args\":{\"ret\":");
      out_->AppendInt(e.ret);
    }
    if (e.err) {
      out_->Append(",\"errno\":");
      out_->AppendInt(e.err);
    }
    if (!k.named) {  // an I/O call
      if (e.file != 0) {
        auto it = p.strings.find(e.file);
        std::string path;
        AppendJsonString(&path, it != p.strings.end() ? it->second : "");
        out_->Append(",\"path\":");
        out_->Append(path);
      }
      if (k.rules.copy && e.aux != 0) {  // a copy's destination (jsonl's dest_path)
        auto to = p.strings.find(static_cast<uint32_t>(e.aux));
        std::string dest;
        AppendJsonString(&dest, to != p.strings.end() ? to->second : "");
        out_->Append(",\"dest_path\":");
        out_->Append(dest);
      }
      if (e.fd >= 0) {
        out_->Append(",\"fd\":");
        out_->AppendInt(e.fd);
      }
    } else if (k.gpu) {
      AppendCudaFields(e, k, out_);
    } else if (k.flow != 0) {
      out_->Append(",\"flow\":");
      out_->AppendInt(e.aux);
    } else if (k.region_faults) {
      auto it = p.strings.find(e.file);
      std::string region;
      AppendJsonString(&region, it != p.strings.end() ? it->second : "");
      out_->Append(",\"of\":");
      out_->Append(region);
      out_->Append(",\"on_cpu_ns\":");
      out_->AppendInt(e.aux);
    }
    if (e.offset >= 0 && !k.gpu) {
      out_->Append(",\"offset\":");
      out_->AppendInt(e.offset);
    }
    if (e.size > 0 && !at.gpu_clock) {
      out_->Append(",\"size\":");
      out_->AppendInt(e.size);
    }
    if (k.bytes_in_aux) {  // STDIO, MPI-IO: ret is no byte count (fread: items)
      out_->Append(",\"bytes\":");
      out_->AppendInt(e.aux);
    }
    if (k.async) {  // on its file's track: whose it was
      AppendAsyncFields(e, k, true, out_);
      out_->Append(",\"reaped_by\":");
      out_->AppendInt(r.tid);
    }
    AppendEventContext(context_, r, !k.named, &stack_json_,
                       out_);
  }

  const std::vector<ProcessTrace>& processes_;
  OutBuffer* const out_;
  const EventContext& context_;
  std::vector<int32_t> track_;  // per process: its Chrome "pid"
  const TimelineProcesses known_;  // per process: its first image (exec: one track), rank
  bool synthetic_ = false, several_hosts_ = false;
  StackJson stack_json_;
  KindTable kinds_;
  bool first_ = true;
  std::set<std::pair<int32_t, int64_t>> named_tracks_;
  std::map<std::pair<uint32_t, uint32_t>, std::vector<uint64_t>> async_lanes_;  // lane ends
  // (process, thread) -> per lane, its slices still open, innermost last.
  struct Span {
    uint64_t start, end;
  };
  std::map<std::pair<uint32_t, int64_t>, std::vector<std::vector<Span>>> thread_lanes_;
  LaunchFlows flows_;
  Bandwidth bandwidth_{out_, track_};
};

}  // namespace

const std::string& AnnotationFlowName(const ProcessTrace& p, const Event& e) {
  static const std::string kDamaged;  // its string never came
  auto it = p.strings.find(e.file);
  return it != p.strings.end() ? it->second : kDamaged;
}

uint64_t AnnotationFlowId(const ProcessTrace& p, const Event& e) {
  // FNV-1a over host and name, then the id mixed in (splitmix64's
  // finalizer): distinct flows get distinct ids but for a 2^-64 chance.
  uint64_t h = 14695981039346656037ull;
  auto add = [&h](std::string_view s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;  // a separator: ("ab","c") != ("a","bc")
  };
  add(p.info.host);
  add(AnnotationFlowName(p, e));
  h ^= e.aux;
  h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
  h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
  return h ^ (h >> 31);
}

TimelineProcesses::TimelineProcesses(const std::vector<ProcessTrace>& processes)
    : processes(processes) {
  std::vector<const format::ProcessInfo*> infos;
  std::vector<int32_t> ranks;
  for (const ProcessTrace& p : processes) {
    infos.push_back(p.opened ? &p.info : nullptr);
    ranks.push_back(p.opened ? p.info.rank : -1);
  }
  first_image = FirstImages(infos);
  rank = ProcessRanks(ranks, first_image);
  earlier_same_pid = EarlierSamePids(infos, first_image);
}

std::string TimelineProcesses::Name(size_t process, bool with_host) const {
  const ProcessTrace& p = processes[first_image[process]];
  std::string exe = p.info.exe;
  size_t slash = exe.rfind('/');
  if (slash != std::string::npos) exe = exe.substr(slash + 1);
  std::string cmd = p.info.cmdline;
  for (char& c : cmd) {
    if (c == '\0') c = ' ';
  }
  if (cmd.size() > 80) cmd = cmd.substr(0, 77) + "...";
  std::string name = (cmd.empty() ? exe : cmd);
  if (rank[process] >= 0) name += " [rank " + std::to_string(rank[process]) + "]";
  return (with_host ? p.info.host + ": " : std::string()) + name + " (pid " +
         PidName(p.info.pid, earlier_same_pid[process]) + ")";
}

void WriteChrome(EventSource& source, OutBuffer* out, const EventContext& context) {
  WriteChrome(source, out, context, nullptr);
}

void WriteChrome(EventSource& source, OutBuffer* out, const EventContext& context,
                 JobRankMeters* ranks) {
  ChromeWriter writer(source.processes(), out, context);
  writer.Begin();
  ForEachEvent(source, [&writer](const StreamEvent& r) { writer.Add(r); });
  writer.End(ranks);
}

}  // namespace dlprof::dump
