// The summary's call-site rows: I/O by the innermost frame of its call
// stack, or by the module that made it, and their order. The streaming
// CallSiteMeter (lib/analysis/meters/call_site_meter.h) measures them.
#ifndef DLPROF_LIB_ANALYSIS_CALL_SITES_H_
#define DLPROF_LIB_ANALYSIS_CALL_SITES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace dlprof::analysis {

// Aggregates of I/O by call site, for the summary.
struct CallSiteStats {
  std::string site;   // ResolvedFrame::Site() of the innermost frame, or the module
  uint64_t ops = 0;
  uint64_t bytes = 0;   // bytes really moved
  uint64_t time_ns = 0;
  uint64_t read_bytes = 0, write_bytes = 0;
};

enum class CallSiteKey {
  kFunction,  // "func (module)" of the innermost frame
  kModule,    // "module" of the innermost frame: which library did the I/O
};

// The rows of `sites` in that order, at most `limit` (0: all).
std::vector<CallSiteStats> RankCallSites(std::unordered_map<std::string, CallSiteStats> sites,
                                         bool by_bytes, size_t limit);

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_CALL_SITES_H_
