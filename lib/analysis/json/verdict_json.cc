// The verdict (verdict.h) as the "verdict" object of --summary --format json.
//
//   "verdict": {"run_ns": N, "bound": "data" | "checkpoint" | "host" | "neither" | "unknown",
//               "loop": {"ns", "steps", "startup_ns", "basis" ("dataloader",
//               "steps", "gpu", "run"), "optimizer_steps", "startup_io_ns",
//               "startup_io_ops", "startup_read_bytes", "startup_restore_ns",
//               "startup_restore_bytes"},
//               "batch_wait": {"ns", "loop_ns", "steps", "per_mille",
//               "reading_ns", "preprocessing_ns", "handover_ns",
//               "worker_startup_ns", "cause", "worker_startup_passes":
//               [{"pass", "ns"}] (the passes with start-up),
//               "persistent_workers_save_ns", "pass_end_shutdown_ns" (of
//               handover_ns, the waits while non-persistent workers were shut
//               down at the passes' ends), "pass_end_leftover_ns" (of those,
//               the workers finishing a pass left early's batches: no
//               saving), "head_of_line_ns", "handover_parts":
//               {"in_worker_ns", "in_transit_ns", "rebuild_ns"}, "handover_cause"
//               ("worker_busy", "cpus_oversubscribed", "batch_size",
//               "pin_memory", or null),
//               "preprocessing_parts": [{"name", "ns"}], "loaders":
//               [{"loader" (L; -1 unknown), "site", "ns", "steps", "per_mille",
//               "persistent_workers_save_ns" (of ns: what the advice says)}] (the 8 that
//               waited longest), "loaders_left_out", "loaders_left_out_ns"} or null (the
//               split, cause, passes and parts only where measured),
//               "batch_wait_missing": why (only when batch_wait is null),
//               "checkpoint": {"ns", "writes", "bytes", "blocking_ns",
//               "background_ns", "per_mille" (blocking_ns of the loop),
//               "write_ns", "write_bytes_per_s"} or null (no save in the loop),
//               "data_stall": {"ns", "gpu_window_ns", "per_mille",
//               "loop_per_mille"} or null, "gpu_busy": {"ns", "loop_per_mille"}
//               or null, "roles": [{"role", "processes", "at_once", "io_ns",
//               "read_bytes"}], "ended": [{"host", "pid", "rank", "exe",
//               "status", "signal" (0: none), "sender" (pid; 0: none),
//               "recorded" (false: no end record, the trace cut short), "how"}]
//               (the processes that ended badly, the first 8), "ended_count",
//               "findings": [{"rule", "what", "advice",
//               "cost_ns"}]}; few_workers adds "workers" (today's, per rank),
//               "estimate": [{"workers", "batch_wait_ns"}], "model" (its
//               inputs: "fetch_ns", "io_ns", "cpu_ns", "idle_ns", "compute_ns", "cpus",
//               "busy_per_mille", "read_levels" and "ps_per_byte" [lowest,
//               highest], "read_slowdown_per_mille", "storage_saturated", "startup_ns",
//               "resumed_startup_ns")
//               and "limit" ("storage" or "cpu") when more workers would not
//               help; head_of_line adds "samples" (indices, -1 unknown),
//               "files", "parts" (of the fetches that held late batches up:
//               "collate") and "estimate": {"in_order": false, "batch_wait_ns"}.
#include <cinttypes>

#include "lib/analysis/findings/verdict.h"
#include "lib/text/text.h"

namespace dlprof::analysis {
using namespace dlprof::text;

std::string VerdictFindingsJson(const std::vector<Finding>& findings) {
  std::string j = "[";
  for (size_t i = 0; i < findings.size(); ++i) {
    const Finding& f = findings[i];
    j += Fmt("%s{\"rule\":%s,\"what\":%s,\"advice\":%s,\"cost_ns\":%" PRIu64, i ? "," : "",
             JsonString(f.rule).c_str(), JsonString(f.what).c_str(), JsonString(f.advice).c_str(),
             f.cost_ns);
    if (!f.estimate.empty()) {
      j += Fmt(",\"workers\":%" PRIu64 ",\"estimate\":[", f.workers);
      for (size_t e = 0; e < f.estimate.size(); ++e) {
        j += Fmt("%s{\"workers\":%" PRIu64 ",\"batch_wait_ns\":%" PRIu64 "}", e ? "," : "",
                 f.estimate[e].workers, f.estimate[e].batch_wait_ns);
      }
      const WorkerModel& m = f.model;
      j += Fmt("],\"model\":{\"fetch_ns\":%" PRIu64 ",\"io_ns\":%" PRIu64 ",\"cpu_ns\":%" PRIu64
               ",\"idle_ns\":%" PRIu64 ",\"compute_ns\":%" PRIu64 ",\"cpus\":%" PRIu64
               ",\"busy_per_mille\":%" PRIu64 ",\"read_levels\":[%" PRIu64 ",%" PRIu64
               "],\"ps_per_byte\":[%" PRIu64 ",%" PRIu64 "],\"read_slowdown_per_mille\":%" PRIu64
               ",\"storage_saturated\":%s"
               ",\"startup_ns\":%" PRIu64 ",\"resumed_startup_ns\":%" PRIu64 "}",
               m.fetch_ns, m.io_ns, m.cpu_ns, m.idle_ns, m.compute_ns, m.cpus, m.busy_per_mille,
               m.low_level, m.high_level, m.low_ps_per_byte, m.high_ps_per_byte,
               m.slowdown_per_mille, m.storage_saturated ? "true" : "false", m.startup_ns,
               m.resumed_startup_ns);
    }
    if (!f.limit.empty()) j += ",\"limit\":" + JsonString(f.limit);
    if (f.has_in_order_estimate) {
      j += ",\"samples\":[";
      for (size_t s = 0; s < f.samples.size(); ++s) {
        j += Fmt("%s%" PRId64, s ? "," : "", f.samples[s]);
      }
      j += "],\"files\":[";
      for (size_t s = 0; s < f.files.size(); ++s) j += (s ? "," : "") + JsonString(f.files[s]);
      j += "],\"parts\":[";
      for (size_t s = 0; s < f.parts.size(); ++s) j += (s ? "," : "") + JsonString(f.parts[s]);
      j += Fmt("],\"estimate\":{\"in_order\":false,\"batch_wait_ns\":%" PRIu64 "}",
               f.in_order_wait_ns);
    }
    j += "}";
  }
  return j + "]";
}

std::string CheckpointJson(const Verdict& v) {
  const CheckpointFigures& c = v.checkpoint;
  if (!v.has_checkpoint) return "null";
  return Fmt("{\"ns\":%" PRIu64 ",\"writes\":%" PRIu64 ",\"bytes\":%" PRIu64
             ",\"blocking_ns\":%" PRIu64 ",\"background_ns\":%" PRIu64 ",\"per_mille\":%" PRIu64
             ",\"write_ns\":%" PRIu64 ",\"write_bytes_per_s\":%" PRIu64 "}",
             c.ns, c.saves, c.bytes, c.blocking_ns, c.background_ns,
             PerMille(c.blocking_ns, v.loop_ns), c.write_ns, BytesPerSecond(c.bytes, c.write_ns));
}

std::string VerdictJson(const Verdict& v) {
  std::string j = Fmt("{\"run_ns\":%" PRIu64 ",\"bound\":%s", v.run_ns,
                      JsonString(BoundName(v.bound)).c_str());
  const CheckpointFigures& c = v.checkpoint;
  j += Fmt(",\"loop\":{\"ns\":%" PRIu64 ",\"steps\":%" PRIu64 ",\"startup_ns\":%" PRIu64
           ",\"basis\":%s,\"optimizer_steps\":%s,\"startup_io_ns\":%" PRIu64
           ",\"startup_io_ops\":%" PRIu64 ",\"startup_read_bytes\":%" PRIu64
           ",\"startup_restore_ns\":%" PRIu64 ",\"startup_restore_bytes\":%" PRIu64
           ",\"startup_map_ns\":%" PRIu64 ",\"startup_map_bytes\":%" PRIu64 "}",
           v.loop_ns, v.loop_steps, v.startup_ns, JsonString(LoopBasisName(v.loop_basis)).c_str(),
           v.optimizer_steps ? "true" : "false", v.startup_io_ns, v.startup_io_ops,
           v.startup_read_bytes, c.restore_ns, c.restore_bytes, v.startup_map_ns,
           v.startup_map_bytes);
  j += ",\"batch_wait\":";
  j += v.has_batch_wait ? Fmt("{\"ns\":%" PRIu64 ",\"loop_ns\":%" PRIu64 ",\"steps\":%" PRIu64
                              ",\"raised\":%" PRIu64 ",\"per_mille\":%" PRIu64 "}",
                              v.batch_wait_ns, v.wait_loop_ns, v.steps, v.raised,
                              PerMille(v.batch_wait_ns, v.wait_loop_ns))
                        : "null";
  if (v.has_batch_wait && v.split) {
    j.pop_back();
    // Of reading, page faults on mapped data files, and those that held up
    // a hand-over.
    j += Fmt(",\"reading_faults_ns\":%" PRIu64 ",\"handover_faults_ns\":%" PRIu64,
             v.reading_faults_ns, v.handover_faults_ns);
    j += Fmt(",\"reading_ns\":%" PRIu64 ",\"preprocessing_ns\":%" PRIu64
             ",\"handover_ns\":%" PRIu64 ",\"worker_startup_ns\":%" PRIu64 ",\"cause\":%s",
             v.reading_ns, v.preprocessing_ns, v.handover_ns, v.worker_startup_ns,
             JsonString(WaitCauseName(v.cause)).c_str());
    j += ",\"worker_startup_passes\":[";
    for (size_t pass = 0; pass < v.pass_worker_startup_ns.size(); ++pass) {
      if (v.pass_worker_startup_ns[pass] == 0) continue;
      if (j.back() != '[') j += ",";
      j += Fmt("{\"pass\":%zu,\"ns\":%" PRIu64 "}", pass, v.pass_worker_startup_ns[pass]);
    }
    const char* cause = HandoverCauseName(v.handover_cause);
    j += Fmt("],\"persistent_workers_save_ns\":%" PRIu64 ",\"pass_end_shutdown_ns\":%" PRIu64
             ",\"pass_end_leftover_ns\":%" PRIu64
             ",\"rebuilt_persistent_ns\":%" PRIu64 ",\"head_of_line_ns\":%" PRIu64
             ",\"handover_parts\":{\"in_worker_ns\":%" PRIu64 ",\"in_transit_ns\":%" PRIu64
             ",\"rebuild_ns\":%" PRIu64 "},\"handover_cause\":%s,\"preprocessing_parts\":[",
             v.persistent_workers_save_ns(), v.pass_end_shutdown_ns, v.pass_end_leftover_ns,
             v.rebuilt_persistent_ns,
             v.head_of_line_ns,
             v.handover_in_worker_ns, v.handover_in_transit_ns, v.handover_rebuild_ns,
             *cause ? JsonString(cause).c_str() : "null");
    for (size_t i = 0; i < v.preprocessing_parts.size(); ++i) {
      j += Fmt("%s{\"name\":%s,\"ns\":%" PRIu64 "}", i ? "," : "",
               JsonString(v.preprocessing_parts[i].first).c_str(), v.preprocessing_parts[i].second);
    }
    j += "],\"loaders\":[";
    for (size_t i = 0; i < v.loader_waits.size(); ++i) {
      const LoaderWait& w = v.loader_waits[i];
      j += Fmt("%s{\"loader\":%" PRId64 ",\"site\":%s,\"ns\":%" PRIu64 ",\"steps\":%" PRIu64
               ",\"per_mille\":%" PRIu64 ",\"persistent_workers_save_ns\":%" PRIu64
               ",\"made_anew_ns\":%" PRIu64 "}",
               i ? "," : "", w.loader, w.site.empty() ? "null" : JsonString(w.site).c_str(), w.ns,
               w.batches, PerMille(w.ns, v.wait_loop_ns), w.persistent_save_ns, w.made_anew_ns);
    }
    j += Fmt("],\"loaders_left_out\":%" PRIu64 ",\"loaders_left_out_ns\":%" PRIu64 "}",
             v.loaders_left_out, v.loaders_left_out_ns);
  }
  if (!v.has_batch_wait) j += ",\"batch_wait_missing\":" + JsonString(v.batch_wait_missing);
  j += ",\"checkpoint\":" + CheckpointJson(v);
  const Lockstep& l = v.lockstep;
  j += ",\"lockstep\":";
  j += l.found ? Fmt("{\"ranks\":%zu,\"loop_ns\":%" PRIu64 ",\"wait_ns\":%" PRIu64
                     ",\"wait_per_mille\":%" PRIu64 ",\"save_ns\":%" PRIu64
                     ",\"save_per_mille\":%" PRIu64 "}",
                     l.ranks, l.loop_ns, l.wait_ns, PerMille(l.wait_ns, l.loop_ns), l.save_ns,
                     PerMille(l.save_ns, l.loop_ns))
               : "null";
  j += ",\"data_stall\":";
  j += v.has_gpu ? Fmt("{\"ns\":%" PRIu64 ",\"gpu_window_ns\":%" PRIu64 ",\"per_mille\":%" PRIu64
                       ",\"loop_per_mille\":%" PRIu64 "}",
                       v.data_stall_ns, v.gpu_window_ns, PerMille(v.data_stall_ns, v.gpu_window_ns),
                       PerMille(v.data_stall_ns, v.loop_ns))
                 : "null";
  j += ",\"gpu_busy\":";
  j += v.has_gpu ? Fmt("{\"ns\":%" PRIu64 ",\"loop_per_mille\":%" PRIu64 "}", v.gpu_busy_ns,
                       PerMille(v.gpu_busy_ns, v.loop_ns))
                 : "null";
  j += ",\"roles\":[";
  for (size_t i = 0; i < v.roles.size(); ++i) {
    const RoleShare& r = v.roles[i];
    j += Fmt("%s{\"role\":%s,\"processes\":%" PRIu64 ",\"at_once\":%" PRIu64
             ",\"io_ns\":%" PRIu64 ",\"read_bytes\":%" PRIu64 "}",
             i ? "," : "", JsonString(r.role).c_str(), r.processes, r.at_once, r.io_ns,
             r.read_bytes);
  }
  j += "],\"ended\":[";
  for (size_t i = 0; i < v.bad_ends.size(); ++i) {
    const BadEnd& e = v.bad_ends[i];
    j += Fmt("%s{\"host\":%s,\"pid\":%d,\"rank\":%d,\"exe\":%s,\"status\":%d,"
             "\"signal\":%d,\"sender\":%d,\"recorded\":%s,\"how\":%s}",
             i ? "," : "", JsonString(e.host).c_str(), e.pid, e.rank, JsonString(e.exe).c_str(),
             e.status, e.signal, e.sender, e.recorded ? "true" : "false",
             JsonString(BadEndHow(e)).c_str());
  }
  j += Fmt("],\"ended_count\":%" PRIu64, v.bad_end_count);
  j += ",\"findings\":" + VerdictFindingsJson(v.findings);
  return j + "}";
}

}  // namespace dlprof::analysis
