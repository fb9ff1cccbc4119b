// The verdict (verdict.h) as the "verdict" object of --summary --format json.
//
//   "verdict": {"run_ns": N, "batch_wait": {"ns", "loop_ns", "steps",
//               "per_mille"} or null, "data_stall": {"ns", "gpu_window_ns",
//               "per_mille"} or null, "roles": [{"role", "processes",
//               "io_ns", "read_bytes"}], "findings": [{"rule", "what",
//               "advice", "cost_ns"}]}
#include <cinttypes>

#include "lib/analysis/verdict.h"
#include "lib/read/escape.h"

namespace dlprof::dump {

std::string VerdictJson(const Verdict& v) {
  std::string j = Fmt("{\"run_ns\":%" PRIu64 ",\"batch_wait\":", v.run_ns);
  j += v.has_batch_wait
           ? Fmt("{\"ns\":%" PRIu64 ",\"loop_ns\":%" PRIu64 ",\"steps\":%" PRIu64
                 ",\"per_mille\":%" PRIu64 "}",
                 v.batch_wait_ns, v.loop_ns, v.steps, PerMille(v.batch_wait_ns, v.loop_ns))
           : "null";
  j += ",\"data_stall\":";
  j += v.has_gpu ? Fmt("{\"ns\":%" PRIu64 ",\"gpu_window_ns\":%" PRIu64 ",\"per_mille\":%" PRIu64
                       "}",
                       v.data_stall_ns, v.gpu_window_ns, PerMille(v.data_stall_ns, v.gpu_window_ns))
                 : "null";
  j += ",\"roles\":[";
  for (size_t i = 0; i < v.roles.size(); ++i) {
    const RoleShare& r = v.roles[i];
    j += Fmt("%s{\"role\":%s,\"processes\":%" PRIu64 ",\"io_ns\":%" PRIu64 ",\"read_bytes\":%" PRIu64
             "}",
             i ? "," : "", JsonString(r.role).c_str(), r.processes, r.io_ns, r.read_bytes);
  }
  j += "],\"findings\":[";
  for (size_t i = 0; i < v.findings.size(); ++i) {
    const Finding& f = v.findings[i];
    j += Fmt("%s{\"rule\":%s,\"what\":%s,\"advice\":%s,\"cost_ns\":%" PRIu64 "}", i ? "," : "",
             JsonString(f.rule).c_str(), JsonString(f.what).c_str(), JsonString(f.advice).c_str(), f.cost_ns);
  }
  return j + "]}";
}

}  // namespace dlprof::dump
