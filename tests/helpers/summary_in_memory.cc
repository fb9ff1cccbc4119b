// The summary from a whole trace held in memory, for the tests.
#include "tests/helpers/summary_in_memory.h"

#include <string>
#include <unordered_map>
#include <utility>

#include "dlprof/catalogue.h"
#include "lib/analysis/meters/summary_builder.h"
#include "lib/analysis/summary/partial_summary.h"
#include "lib/format/event_rules.h"

namespace dlprof::analysis {

Summary Analyze(EventSource& source, size_t slowest_count) {
  return FinishSummary(AnalyzePartial(source, slowest_count));
}

Summary Analyze(const TraceSet& set, const StackIndex* stacks, const RegionAssignment* regions,
                size_t slowest_count) {
  TraceSetSource source(set);
  Summary s = Analyze(source, slowest_count);
  AddContextSections(set, stacks, regions, &s);
  return s;
}

void SetRegionRows(std::vector<RegionStats> rows, Summary* s) {
  // Only the "outside every region" row: there were no regions at all.
  if (rows.size() == 1 && rows[0].outside) rows.clear();
  s->regions = std::move(rows);
}

void AddContextSections(const TraceSet& set, const StackIndex* stacks,
                        const RegionAssignment* regions, Summary* s) {
  if (regions != nullptr && !regions->empty()) SetRegionRows(RegionBreakdown(set, *regions), s);
  if (stacks != nullptr) {
    s->sites_by_time = TopCallSites(set, *stacks, CallSiteKey::kFunction, false, 10);
    s->sites_by_bytes = TopCallSites(set, *stacks, CallSiteKey::kFunction, true, 10);
    s->sites_by_module = TopCallSites(set, *stacks, CallSiteKey::kModule, true, 10);
  }
}

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

}  // namespace dlprof::analysis
