// --format jsonl. The loop below runs once per event and dominates the
// tool's run time, so everything that is the same for many events (process
// ids, host, category and name, quoted paths) is formatted once up front.
#include <cmath>

#include "lib/text/text.h"
#include "tools/dump/kinds.h"
#include "tools/dump/output.h"

namespace dlprof::dump {
using namespace dlprof::text;
namespace {

struct ProcessView {
  std::string ids;   // ,"pid":P,"ppid":Q,"tid":
  std::string host;  // ,"host":"..."
  QuotedStrings paths;
};

ProcessView MakeView(const ProcessTrace& p) {
  ProcessView v{",\"pid\":" + std::to_string(p.info.pid) + ",\"ppid\":" +
                    std::to_string(p.info.ppid) + ",\"tid\":",
                ",\"host\":", QuotedStrings(p, AppendJsonString)};
  AppendJsonString(&v.host, p.info.host);
  return v;
}

// POSIX, STDIO and MPI-IO calls.
void WriteIoFields(const Event& e, const KindView& k, QuotedStrings& paths, OutBuffer* out) {
  out->Append(k.json);
  if (e.file != 0) {
    out->Append(",\"path\":");
    out->Append(paths.Get(e.file));
  }
  if (k.rename && e.aux != 0) {
    out->Append(",\"path2\":");
    out->Append(paths.Get(e.aux));
  }
  if (k.rules.copy && e.aux != 0) {
    // A copy's destination: without it a copy reads like a read of its
    // source. Where only the destination was traced (aux == file), path and
    // fd name the destination too, and dest_fd says so.
    out->Append(",\"dest_path\":");
    out->Append(paths.Get(e.aux));
    if (e.aux == e.file && e.fd >= 0) {
      out->Append(",\"dest_fd\":");
      out->AppendInt(e.fd);
    }
  }
  if (e.fd >= 0) {
    out->Append(k.category == "mpiio" ? ",\"comm_size\":" : ",\"fd\":");
    out->AppendInt(e.fd);
  }
  if (k.dup && e.ret >= 0) {
    out->Append(",\"newfd\":");
    out->AppendInt(e.ret);
  }
  if (e.offset >= 0) {
    out->Append(",\"offset\":");
    out->AppendInt(e.offset);
  }
  if (k.read_write || e.size > 0) {
    out->Append(",\"size\":");
    out->AppendInt(e.size);
  }
  if (k.moves_bytes) {
    out->Append(",\"bytes\":");
    out->AppendInt(e.ret > 0 ? e.ret : 0);
  } else if (k.bytes_in_aux) {
    out->Append(",\"bytes\":");
    out->AppendInt(e.aux);
  }
  if (e.flags & kEventFlagCollective) out->Append(",\"collective\":true");
  if (k.async) AppendAsyncFields(e, k, false, out);
  if (k.aux_key != nullptr && e.aux != 0) {  // a cuFile buffer, ..., a signal's sender
    out->Append(",\"");
    out->Append(k.aux_key);
    out->Append("\":");
    out->AppendInt(e.aux);
  }
}

// CUDA and app events: the name is the string the event carries (a kernel,
// "memcpy HtoD", a region); `kind` says what sort of event it is.
void WriteNamedFields(const Event& e, const KindView& k, QuotedStrings& names, OutBuffer* out) {
  out->Append(k.json_cat);
  out->Append(",\"name\":");
  out->Append(e.file != 0 ? names.Get(e.file) : std::string("\"") + k.name + "\"");
  if (k.gpu) {
    AppendCudaFields(e, k, out);
    if (k.rules.bytes_at == BytesAt::kSize) {  // copies and memsets
      out->Append(",\"bytes\":");
      out->AppendInt(e.size);
    }
    if (k.config && e.ret > 0) {
      out->Append(",\"config\":");
      out->Append(names.Get(static_cast<uint64_t>(e.ret)));
    }
  } else if (k.region_faults) {
    // The region's thread (lib/api/regions.h): its major faults, its
    // time off and on the CPU, whether each fault is also an event.
    out->Append(",\"major_faults\":");
    out->AppendInt(e.size);
    out->Append(",\"off_cpu_ns\":");
    out->AppendInt(e.ret);
    out->Append(",\"on_cpu_ns\":");
    out->AppendInt(e.aux);
    out->Append(e.fd == 1 ? ",\"fault_events\":true" : ",\"fault_events\":false");
  } else if (k.op_class == OpClass::Counter) {
    out->Append(",\"value\":");
    AppendCounterValue(e, out);
  } else if (k.op_class == OpClass::Region) {
    out->Append(",\"depth\":");
    out->AppendInt(e.aux);
  } else if (k.flow != 0) {
    out->Append(",\"flow\":");
    out->AppendInt(e.aux);
  }
}

}  // namespace

void AppendCounterValue(const Event& e, OutBuffer* out) {
  if (!CounterIsDouble(e)) return out->AppendInt(static_cast<int64_t>(e.aux));
  const double v = CounterDouble(e);
  if (std::isfinite(v)) return out->AppendDouble(v);
  out->Append(std::isnan(v) ? "\"NaN\"" : v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
}

void AppendAsyncFields(const Event& e, const KindView& k, bool flags_as_1, OutBuffer* out) {
  const AsyncAux a = UnpackAsyncAux(e.aux);
  out->Append(",\"submit_tid\":");
  out->AppendInt(a.submit_tid);
  out->Append(",\"reaped\":");
  out->AppendInt(e.start_ns + e.dur_ns + uint64_t{a.reaped_after_us} * 1000);
  if (k.opcode) {
    out->Append(",\"opcode\":");
    out->AppendInt(a.opcode);
  }
  static constexpr std::pair<uint16_t, const char*> kFlags[] = {
      {kEventFlagFixedFile, ",\"fixed_file\":"},
      {kEventFlagFixedBuffer, ",\"fixed_buffer\":"},
      {kEventFlagLinked, ",\"linked\":"},
      {kEventFlagUnreaped, ",\"unreaped\":"}};
  for (const auto& [flag, key] : kFlags) {
    if (e.flags & flag) {
      out->Append(key);
      out->Append(flags_as_1 ? "1" : "true");
    }
  }
}

const std::string& StackJson::Get(const Stack* s) {
  auto [it, added] = cache_.try_emplace(s);
  if (added) {
    it->second = "[";
    for (size_t i = 0; i < s->frames.size(); ++i) {
      if (i) it->second += ',';
      AppendJsonString(&it->second, s->frames[i].Format());
    }
    it->second += ']';
  }
  return it->second;
}

void AppendCudaFields(const Event& e, const KindView& k, OutBuffer* out) {
  if (k.rules.gpu_clock) {
    // cupti_clock (docs/CUDA.md): fd is the reason, offset the clock offset.
    out->Append(",\"offset_ns\":");
    out->AppendInt(e.offset);
    out->Append(",\"uncertainty_ns\":");
    out->AppendInt(e.dur_ns);
    out->Append(",\"reason\":\"");
    out->Append(ClockSyncReason(e.fd));
    out->Append("\",\"samples\":");
    out->AppendInt(e.size);
    out->Append(",\"cupti_version\":");
    out->AppendInt(e.aux);
    return;
  }
  if (k.rules.thread == ThreadOf::kStream) {  // (API calls run on the host)
    out->Append(",\"device\":");
    out->AppendInt(e.fd);
    out->Append(",\"stream\":");
    out->AppendInt(e.offset);
  }
  out->Append(",\"correlation\":");
  out->AppendInt(e.aux);
}

void AppendEventContext(const EventContext& context, const StreamEvent& r, bool io_event,
                        StackJson* stacks, OutBuffer* out) {
  if (io_event) {
    if (const std::string* region = context.RegionOf(r)) {
      std::string q;
      AppendJsonString(&q, *region);
      out->Append(",\"region\":");
      out->Append(q);
    }
  }
  if (const Stack* st = context.StackOf(r)) {
    out->Append(",\"stack\":");
    out->Append(stacks->Get(st));
  }
}

void WriteJsonl(EventSource& source, OutBuffer* out, const EventContext& context) {
  StackJson stack_json;
  KindTable kinds;
  std::vector<ProcessView> views;
  views.reserve(source.processes().size());
  for (const auto& p : source.processes()) views.push_back(MakeView(p));

  ForEachEvent(source, [&](const StreamEvent& r) {
    ProcessView& v = views[r.process];
    const Event& e = *r.event;
    const KindView& k = kinds.Get(e.kind);
    if (IsStackRecord(e.kind)) return;  // shown as the `stack` of its event
    out->Append("{\"ts\":");
    out->AppendInt(e.start_ns);
    out->Append(",\"dur\":");
    out->AppendInt(e.dur_ns);
    out->Append(v.ids);
    // CUPTI delivers API records on its own thread; the caller's tid is in offset.
    out->AppendInt(k.rules.thread == ThreadOf::kCaller ? e.offset : int64_t{r.tid});
    out->Append(",\"rank\":");
    out->AppendInt(r.rank);
    out->Append(v.host);
    if (k.named) {
      WriteNamedFields(e, k, v.paths, out);
    } else {
      WriteIoFields(e, k, v.paths, out);
    }
    if (!k.gpu) {
      out->Append(",\"ret\":");
      out->AppendInt(e.ret);
      out->Append(",\"errno\":");
      out->AppendInt(e.err);
    } else if (k.op_class == OpClass::Sync || k.op_class == OpClass::Api) {
      out->Append(",\"ret\":");  // the CUDA result code
      out->AppendInt(e.ret);
    }
    // A kind from a newer writer: keep its kind-specific word visible.
    if (!k.known && e.aux != 0) {
      out->Append(",\"aux\":");
      out->AppendInt(e.aux);
    }
    if (e.flags & kEventFlagNested) out->Append(",\"nested\":true");
    AppendEventContext(context, r, !k.named, &stack_json, out);
    out->Append("}\n");
  });
}

}  // namespace dlprof::dump
