// The whole run of a bounded trace as JSON (whole_run_json.h).
#include "lib/analysis/json/whole_run_json.h"

#include <cinttypes>

#include "dlprof/catalogue.h"
#include "lib/analysis/findings/verdict.h"
#include "lib/analysis/findings/whole_run_verdict.h"
#include "lib/text/text.h"

namespace dlprof::analysis {
namespace {

using text::AppendJsonString;
using text::Fmt;

void Num(std::string* o, const char* key, uint64_t v, bool comma = true) {
  *o += Fmt("\"%s\":%" PRIu64 "%s", key, v, comma ? "," : "");
}

void Io(std::string* o, const format::IoTotals& io) {
  *o += "{";
  Num(o, "calls", io.calls());
  Num(o, "reads", io.reads);
  Num(o, "read_bytes", io.read_bytes);
  Num(o, "read_ns", io.read_ns);
  Num(o, "writes", io.writes);
  Num(o, "write_bytes", io.write_bytes);
  Num(o, "write_ns", io.write_ns);
  Num(o, "other_calls", io.other_calls);
  Num(o, "other_ns", io.other_ns, false);
  *o += "}";
}

// The loop's figures (WholeRunLoop), each followed by a comma; its GPU
// busy time null without GPU records, its data stall without data stall
// records.
void LoopNums(std::string* o, const WholeRunLoop& l) {
  Num(o, "loop_ns", l.loop_ns);
  Num(o, "batch_wait_ns", l.batch_wait_ns);
  Num(o, "batches", l.batches);
  Num(o, "steps", l.steps);
  *o += l.gpu ? Fmt("\"gpu_busy_ns\":%" PRIu64 ",", l.gpu_busy_ns) : "\"gpu_busy_ns\":null,";
  *o += l.data_stall ? Fmt("\"data_stall_ns\":%" PRIu64 ",", l.data_stall_ns)
                     : "\"data_stall_ns\":null,";
}

// The batch wait's causes, keyed as the verdict's wait split is, with the
// largest as "cause" (null without waits).
void Causes(std::string* o, const WholeRunCauses& c) {
  *o += "{\"cause\":";
  if (c.total_ns() > c.unsplit_ns) {
    *o += Fmt("\"%s\",", WaitCauseName(LargestCause(c.reading_ns, c.preprocessing_ns,
                                                     c.handover_ns, c.worker_startup_ns)));
  } else {
    *o += "null,";
  }
  Num(o, "reading_ns", c.reading_ns);
  Num(o, "preprocessing_ns", c.preprocessing_ns);
  Num(o, "handover_ns", c.handover_ns);
  Num(o, "worker_startup_ns", c.worker_startup_ns);
  Num(o, "unsplit_ns", c.unsplit_ns);
  Num(o, "reading_error_ns", c.reading_error_ns);
  Num(o, "preprocessing_error_ns", c.preprocessing_error_ns);
  Num(o, "handover_error_ns", c.handover_error_ns);
  Num(o, "worker_startup_error_ns", c.worker_startup_error_ns);
  Num(o, "own_waits", c.own_waits);
  Num(o, "flow_waits", c.flow_waits);
  Num(o, "sampled_waits", c.sampled);
  Num(o, "thinned_one_in", c.thinned_one_in);
  Num(o, "passes_one_in", c.passes_one_in, false);
  *o += "}";
}

// The whole run's verdict (whole_run_verdict.h): "bound", the loop summed
// over the ranks ("loop_ns", "steps", "optimizer_steps"), "batch_wait"
// ({"ns", "loop_ns", "steps", "per_mille", "preprocessing_parts" (a loop
// of steps that maps its data: [{"name", "ns"}], as the summary's verdict),
// "cause"} or null, and
// "batch_wait_missing": why it is null where a loop of steps' wait is not
// measured, else null), "lockstep" ({"ranks", "loop_ns", "wait_ns",
// "wait_per_mille"}: the ranks step together, their longest wait against a
// rank's mean loop; or null), "data_stall"
// and "gpu_busy" (each {"ns", "loop_per_mille"} or null), "checkpoint"
// and "findings", keyed as the summary's verdict's.
void WholeRunVerdictJson(std::string* o, const WholeRun& w) {
  const Verdict v = WholeRunVerdict(w);
  *o += Fmt("{\"bound\":\"%s\",", BoundName(v.bound));
  Num(o, "loop_ns", v.loop_ns);
  Num(o, "steps", v.loop_steps);
  *o += Fmt("\"optimizer_steps\":%s,\"batch_wait\":", v.optimizer_steps ? "true" : "false");
  if (v.has_batch_wait) {
    *o += "{";
    Num(o, "ns", v.batch_wait_ns);
    Num(o, "loop_ns", v.wait_loop_ns);
    Num(o, "steps", v.steps);
    Num(o, "per_mille", PerMille(v.batch_wait_ns, v.wait_loop_ns));
    *o += "\"preprocessing_parts\":[";
    for (const auto& [name, ns] : v.preprocessing_parts) {
      *o += Fmt("%s{\"name\":%s,\"ns\":%" PRIu64 "}", o->back() == '[' ? "" : ",",
                JsonString(name).c_str(), ns);
    }
    *o += "],";
    *o += v.split ? Fmt("\"cause\":\"%s\"}", WaitCauseName(v.cause)) : "\"cause\":null}";
  } else {
    *o += "null";
  }
  *o += ",\"batch_wait_missing\":" +
        (v.wait_unmeasured ? JsonString(v.batch_wait_missing) : std::string("null"));
  const Lockstep& l = v.lockstep;
  *o += ",\"lockstep\":";
  *o += l.found ? Fmt("{\"ranks\":%zu,\"loop_ns\":%" PRIu64 ",\"wait_ns\":%" PRIu64
                      ",\"wait_per_mille\":%" PRIu64 "}",
                      l.ranks, l.loop_ns, l.wait_ns, PerMille(l.wait_ns, l.loop_ns))
                : "null";
  *o += ",\"data_stall\":";
  if (v.has_data_stall) {
    *o += "{";
    Num(o, "ns", v.data_stall_ns);
    Num(o, "loop_per_mille", PerMille(v.data_stall_ns, v.loop_ns), false);
    *o += "}";
  } else {
    *o += "null";
  }
  *o += ",\"gpu_busy\":";
  if (v.has_gpu) {
    *o += "{";
    Num(o, "ns", v.gpu_busy_ns);
    Num(o, "loop_per_mille", PerMille(v.gpu_busy_ns, v.loop_ns), false);
    *o += "}";
  } else {
    *o += "null";
  }
  *o += ",\"checkpoint\":" + CheckpointJson(v);
  *o += ",\"findings\":" + VerdictFindingsJson(v.findings) + "}";
}

}  // namespace

std::string WholeRunJson(const WholeRun& w) {
  std::string o = "{";
  Num(&o, "processes", w.processes);
  Num(&o, "intervals", w.intervals);
  Num(&o, "start_ns", w.start_ns == UINT64_MAX ? 0 : w.start_ns);
  Num(&o, "end_ns", w.end_ns);
  Num(&o, "events", w.events);
  LoopNums(&o, w);
  Num(&o, "kept_event_ns", w.kept_event_ns);
  o += "\"causes\":";
  Causes(&o, w.causes);
  o += ",\"verdict\":";
  WholeRunVerdictJson(&o, w);
  o += ",\"io\":";
  Io(&o, w.total);
  o += ",\"classes\":{";
  for (uint8_t c = 0; c < format::kCounterClasses; ++c) {
    o += Fmt("%s\"%s\":", c == 0 ? "" : ",", CounterClassName(c));
    Io(&o, w.classes[c]);
  }
  o += "},\"kinds\":[";
  bool first = true;
  for (const auto& [code, k] : w.kinds) {
    const EventKindInfo* info = LookupKind(code);
    o += first ? "{" : ",{";
    first = false;
    o += "\"name\":";
    AppendJsonString(&o, info != nullptr && info->name != nullptr ? info->name
                                                                  : Fmt("kind_%u", code));
    o += ",";
    Num(&o, "calls", k.calls);
    Num(&o, "bytes", k.bytes);
    Num(&o, "ns", k.ns);
    Num(&o, "errors", k.errors, false);
    o += "}";
  }
  o += "],\"files\":[";
  first = true;
  for (const WholeRunFile& f : w.files) {
    o += first ? "{\"path\":" : ",{\"path\":";
    first = false;
    AppendJsonString(&o, f.path);
    o += Fmt(",\"class\":\"%s\",\"io\":", CounterClassName(f.cls));
    Io(&o, f.io);
    o += "}";
  }
  o += "],\"regions\":{";
  first = true;
  for (const auto& [name, g] : w.regions) {
    if (!first) o += ",";
    first = false;
    AppendJsonString(&o, name);
    o += ":{";
    Num(&o, "count", g.count);
    Num(&o, "ns", g.ns);
    Num(&o, "max_ns", g.max_ns);
    Num(&o, "first_start_ns", g.first_start_ns);
    Num(&o, "last_end_ns", g.last_end_ns, false);
    o += "}";
  }
  o += "},\"kept\":[";
  first = true;
  for (const KeptWindow& k : w.kept) {
    o += first ? "{" : ",{";
    first = false;
    o += "\"host\":";
    AppendJsonString(&o, k.host);
    o += Fmt(",\"pid\":%d,", k.pid);
    Num(&o, "from_ns", k.from_ns);
    Num(&o, "to_ns", k.to_ns);
    o += "\"reason\":";
    AppendJsonString(&o, k.reason);
    o += "}";
  }
  o += "],\"ranks\":[";
  first = true;
  for (const WholeRunRank& r : w.ranks) {
    o += first ? "{" : ",{";
    first = false;
    o += Fmt("\"rank\":%d,", r.rank);
    Num(&o, "processes", r.processes);
    LoopNums(&o, r);
    o += "\"io\":";
    Io(&o, r.io);
    o += ",\"causes\":";
    Causes(&o, r.causes);
    o += "}";
  }
  o += "],";
  Num(&o, "point_ns", w.points.point_ns);
  o += w.points.worst < 0 ? std::string("\"worst_point\":null,")
                          : Fmt("\"worst_point\":%" PRId64 ",", w.points.worst);
  o += "\"points\":[";
  first = true;
  for (const WholeRunPoint& p : w.points.points) {
    o += first ? "{" : ",{";
    first = false;
    Num(&o, "start_ns", p.start_ns);
    Num(&o, "end_ns", p.end_ns);
    Num(&o, "io_calls", p.io_calls);
    Num(&o, "read_bytes", p.read_bytes);
    Num(&o, "io_ns", p.io_ns);
    Num(&o, "batches", p.batches);
    Num(&o, "batch_wait_ns", p.batch_wait_ns);
    Num(&o, "waiting_ns", p.waiting_ns);
    Num(&o, "steps", p.steps);
    Num(&o, "gpu_busy_ns", p.gpu_busy_ns);
    Num(&o, "data_stall_ns", p.data_stall_ns);
    o += "\"causes\":";
    Causes(&o, p.causes);
    o += "}";
  }
  o += "],\"messages\":[";
  first = true;
  for (const std::string& m : w.messages) {
    if (!first) o += ",";
    first = false;
    AppendJsonString(&o, m);
  }
  o += "]}";
  return o;
}

std::string WithWholeRun(const std::string& summary_json, const WholeRun& w) {
  if (summary_json.empty() || summary_json[0] != '{') return summary_json;
  if (!w.present && w.messages.empty()) return summary_json;
  const bool empty = summary_json.size() >= 2 && summary_json[1] == '}';
  std::string whole;
  if (w.present) {
    whole = WholeRunJson(w);
  } else {
    // A bounded trace without counters (whole_run_notes.h): no figures,
    // but what a reader must know of the ones below.
    whole = "{\"present\":false,\"messages\":[";
    for (size_t i = 0; i < w.messages.size(); ++i) {
      if (i > 0) whole += ",";
      AppendJsonString(&whole, w.messages[i]);
    }
    whole += "]}";
  }
  return "{\"whole_run\":" + whole + (empty ? "" : ",") + summary_json.substr(1);
}

}  // namespace dlprof::analysis
