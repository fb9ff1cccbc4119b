// I/O by call site from a whole trace in memory (the reference).
#include "lib/analysis/summary/call_sites.h"

#include <algorithm>
#include <utility>

#include "dlprof/catalogue.h"
#include "lib/format/event_rules.h"

namespace dlprof::analysis {

std::vector<CallSiteStats> TopCallSites(const TraceSet& set, const StackIndex& stacks,
                                        CallSiteKey key, bool by_bytes, size_t limit) {
  std::unordered_map<std::string, CallSiteStats> sites;
  for (const EventRef& r : set.merged) {
    const Event& e = set.event(r);
    // I/O reads and writes not nested in another traced call.
    if (!CountsAsIo(e) || !RulesFor(e.kind).data) continue;
    const EventKindInfo* k = LookupKind(e.kind);
    const Stack* s = stacks.Of(r);
    if (!s || s->frames.empty()) continue;
    const ResolvedFrame& top = s->frames.front();
    std::string name = key == CallSiteKey::kFunction ? top.Site() : top.ModuleName();
    CallSiteStats& st = sites[name];
    st.site = name;
    const uint64_t bytes = BytesMoved(e);
    ++st.ops;
    st.bytes += bytes;
    st.time_ns += e.dur_ns;
    (k->op_class == OpClass::Read ? st.read_bytes : st.write_bytes) += bytes;
  }
  return RankCallSites(std::move(sites), by_bytes, limit);
}

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
