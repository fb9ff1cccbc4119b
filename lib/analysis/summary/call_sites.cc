// The call-site rows' order.
#include "lib/analysis/summary/call_sites.h"

#include <algorithm>
#include <utility>

namespace dlprof::analysis {

std::vector<CallSiteStats> RankCallSites(std::unordered_map<std::string, CallSiteStats> sites,
                                         bool by_bytes, size_t limit) {
  std::vector<CallSiteStats> out;
  out.reserve(sites.size());
  for (auto& [name, st] : sites) out.push_back(std::move(st));
  std::sort(out.begin(), out.end(), [by_bytes](const CallSiteStats& a, const CallSiteStats& b) {
    const uint64_t x = by_bytes ? a.bytes : a.time_ns, y = by_bytes ? b.bytes : b.time_ns;
    return x > y || (x == y && a.site < b.site);
  });
  if (limit > 0 && out.size() > limit) out.resize(limit);
  return out;
}

}  // namespace dlprof::analysis
