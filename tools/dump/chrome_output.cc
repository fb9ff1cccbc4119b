// --format chrome: Trace Event JSON that Perfetto UI and chrome://tracing open.
//
// One process track per traced process (named with its command and rank), a
// thread track per thread, a track per GPU device and stream, a complete
// ("X") event per call with its arguments, flow arrows from a CUDA API call
// to the GPU work it launched (same correlation id), and counter tracks of
// read and write bandwidth per process. Times are microseconds with the
// nanoseconds kept as three decimals.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "lib/read/escape.h"
#include "tools/dump/kinds.h"
#include "tools/dump/output.h"

namespace dlprof::dump {
namespace {

// GPU tracks live in the process that launched the work, on synthetic
// thread ids that cannot collide with real tids (which are < 2^22 on Linux).
constexpr int64_t kGpuTrackBase = int64_t{1} << 40;
int64_t GpuTrack(int32_t device, int64_t stream) {
  return kGpuTrackBase + (int64_t{device} << 24) + (stream & 0xffffff);
}

void AppendMicros(OutBuffer* out, uint64_t ns) {
  out->AppendInt(ns / 1000);
  out->Append('.');
  out->AppendPadded(ns % 1000, 3);
}

std::string ProcessName(const ProcessTrace& p) {
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
  return name + " (pid " + std::to_string(p.info.pid) + ")";
}

void Metadata(OutBuffer* out, const char* what, int32_t pid, int64_t tid, const std::string& name,
              bool* first) {
  out->Append(*first ? "\n" : ",\n");
  *first = false;
  out->Append("{\"ph\":\"M\",\"name\":\"");
  out->Append(what);
  out->Append("\",\"pid\":");
  out->AppendInt(pid);
  out->Append(",\"tid\":");
  out->AppendInt(tid);
  out->Append(",\"args\":{\"name\":");
  std::string q;
  AppendJsonString(&q, name);
  out->Append(q);
  out->Append("}}");
}

}  // namespace

void WriteChrome(EventSource& source, OutBuffer* out, const EventContext& context) {
  const std::vector<ProcessTrace>& processes = source.processes();
  StackJson stack_json;
  KindTable kinds;
  bool first = true;
  out->Append("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
  for (const ProcessTrace& p : processes) {
    if (p.opened) Metadata(out, "process_name", p.info.pid, 0, ProcessName(p), &first);
  }
  // Tracks are named when first seen: viewers accept metadata anywhere.
  std::set<std::pair<int32_t, int64_t>> named_tracks;
  // Flow arrows join a CUDA API call to the GPU work it launched (same
  // correlation id). Most recorded calls launch nothing (cudaGetDevice,
  // cudaGetLastError, ...: about 19 in 20 in a PyTorch loop), so a call's flow
  // start is held back until work with its correlation arrives and is then
  // written together with the flow end; viewers do not need time order. A
  // launch starts before its work, and the work follows within a few hundred
  // calls, so each process keeps only its latest kPendingCalls calls.
  struct PendingCall {
    int64_t tid;
    uint64_t start_ns;
    bool started;  // its flow start is written
  };
  constexpr size_t kPendingCalls = size_t{1} << 16;
  std::map<int32_t, std::map<uint64_t, PendingCall>> pending_calls;  // pid -> correlation

  // Bandwidth counters: bytes per 100 ms per process.
  constexpr uint64_t kBinNs = 100 * 1000 * 1000;
  std::map<std::pair<int32_t, uint64_t>, std::pair<uint64_t, uint64_t>> bandwidth;

  ForEachEvent(source, [&](const StreamEvent& r) {
    const ProcessTrace& p = processes[r.process];
    const Event& e = *r.event;
    const KindView& k = kinds.Get(e.kind);
    if (IsStackRecord(e.kind)) return;
    const bool gpu_work = k.category == "cuda" && k.op_class != OpClass::Api &&
                          k.op_class != OpClass::Other;
    const bool gpu_api = k.gpu && k.op_class == OpClass::Api;
    const bool gpu_clock = k.gpu && k.op_class == OpClass::Other;  // cupti_clock
    // CUDA API records are delivered on CUPTI's thread; they belong on the
    // track of the thread that made the call (their `offset`).
    const int64_t tid = gpu_work                  ? GpuTrack(e.fd, e.offset)
                        : gpu_api && e.offset > 0 ? e.offset
                                                  : int64_t{r.tid};
    if (named_tracks.emplace(p.info.pid, tid).second) {
      Metadata(out, "thread_name", p.info.pid, tid,
               gpu_work ? "GPU " + std::to_string(e.fd) + " stream " + std::to_string(e.offset)
                        : "thread " + std::to_string(tid),
               &first);
    }
    std::string name = k.name;
    if ((k.category == "cuda" || k.category == "app") && e.file != 0) {
      auto it = p.strings.find(e.file);
      if (it != p.strings.end()) name = it->second;
    }
    out->Append(",\n{\"ph\":\"X\",\"cat\":\"");
    out->Append(k.category);
    out->Append("\",\"name\":");
    std::string q;
    AppendJsonString(&q, name);
    out->Append(q);
    out->Append(",\"pid\":");
    out->AppendInt(p.info.pid);
    out->Append(",\"tid\":");
    out->AppendInt(tid);
    out->Append(",\"ts\":");
    AppendMicros(out, e.start_ns);
    out->Append(",\"dur\":");
    AppendMicros(out, e.dur_ns);
    if (k.config) {
      // Kernels and copies: ret is the string id of their configuration.
      out->Append(",\"args\":{\"config\":");
      auto it = e.ret > 0 ? p.strings.find(static_cast<uint32_t>(e.ret)) : p.strings.end();
      std::string config;
      AppendJsonString(&config, it != p.strings.end() ? it->second : "");
      out->Append(config);
    } else {
      out->Append(",\"args\":{\"ret\":");
      out->AppendInt(e.ret);
    }
    if (e.err) {
      out->Append(",\"errno\":");
      out->AppendInt(e.err);
    }
    if (k.category != "cuda" && k.category != "app") {
      if (e.file != 0) {
        auto it = p.strings.find(e.file);
        std::string path;
        AppendJsonString(&path, it != p.strings.end() ? it->second : "");
        out->Append(",\"path\":");
        out->Append(path);
      }
      if (e.fd >= 0) {
        out->Append(",\"fd\":");
        out->AppendInt(e.fd);
      }
    } else if (k.gpu) {
      AppendCudaFields(e, k, out);
    }
    if (e.offset >= 0 && k.category != "cuda") {
      out->Append(",\"offset\":");
      out->AppendInt(e.offset);
    }
    if (e.size > 0 && !gpu_clock) {
      out->Append(",\"size\":");
      out->AppendInt(e.size);
    }
    AppendEventContext(context, r, k.category != "cuda" && k.category != "app",
                       &stack_json, out);
    out->Append("}}");

    // Flow from the CUDA API call to the work it launched.
    if (gpu_api && e.aux != 0) {
      auto& calls = pending_calls[p.info.pid];
      calls[e.aux] = PendingCall{tid, e.start_ns, false};
      if (calls.size() > kPendingCalls) calls.erase(calls.begin());
    } else if (gpu_work && e.aux != 0) {
      auto calls = pending_calls.find(p.info.pid);
      if (calls != pending_calls.end()) {
        auto call = calls->second.find(e.aux);
        if (call != calls->second.end()) {
          auto flow = [&](const char* ph, int64_t at_tid, uint64_t at_ns) {
            out->Append(",\n{\"ph\":\"");
            out->Append(ph);
            // Correlation ids are per process: the pid makes them unique.
            out->Append("\",\"cat\":\"launch\",\"name\":\"launch\",\"id\":\"");
            out->AppendInt(p.info.pid);
            out->Append(':');
            out->AppendInt(e.aux);
            out->Append("\",\"pid\":");
            out->AppendInt(p.info.pid);
            out->Append(",\"tid\":");
            out->AppendInt(at_tid);
            out->Append(",\"ts\":");
            AppendMicros(out, at_ns);
            if (ph[0] == 'f') out->Append(",\"bp\":\"e\"");
            out->Append("}");
          };
          if (!call->second.started) flow("s", call->second.tid, call->second.start_ns);
          call->second.started = true;
          flow("f", tid, e.start_ns);
        }
      }
    }
    if ((k.op_class == OpClass::Read || k.op_class == OpClass::Write) && k.category != "cuda" &&
        !(e.flags & kEventFlagNested)) {
      uint64_t bytes = k.category == "posix" ? (e.ret > 0 ? static_cast<uint64_t>(e.ret) : 0) : e.aux;
      auto& bin = bandwidth[{p.info.pid, e.start_ns / kBinNs}];
      (k.op_class == OpClass::Read ? bin.first : bin.second) += bytes;
    }
  });

  // Counter samples in MiB/s; a zero closes each busy stretch.
  std::pair<int32_t, uint64_t> prev{-1, 0};
  for (const auto& [key, bytes] : bandwidth) {
    const auto& [pid, bin] = key;
    auto sample = [&, pid = pid](uint64_t at_bin, uint64_t r, uint64_t w) {
      out->Append(",\n{\"ph\":\"C\",\"name\":\"I/O bandwidth (MiB/s)\",\"pid\":");
      out->AppendInt(pid);
      out->Append(",\"ts\":");
      AppendMicros(out, at_bin * kBinNs);
      out->Append(",\"args\":{\"read\":");
      out->AppendInt(r * 10 / (1024 * 1024));
      out->Append(",\"write\":");
      out->AppendInt(w * 10 / (1024 * 1024));
      out->Append("}}");
    };
    if (prev.first == pid && prev.second + 1 < bin) sample(prev.second + 1, 0, 0);
    sample(bin, bytes.first, bytes.second);
    prev = {pid, bin};
  }
  out->Append("\n]}\n");
}

}  // namespace dlprof::dump
