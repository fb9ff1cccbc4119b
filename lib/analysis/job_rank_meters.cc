// The rank meters of a whole job's stream (job_rank_meters.h).
#include "lib/analysis/job_rank_meters.h"

#include "lib/analysis/rank_groups.h"

namespace dlprof::dump {

JobRankMeters::JobRankMeters(const TraceCatalog& catalog,
                             const std::vector<ProcessTrace>& processes,
                             const std::string& batch_region)
    : meter_of_(processes.size(), -1) {
  if (processes.size() != catalog.traces.size()) return;
  bool gpu = false;
  for (const CatalogEntry& t : catalog.traces) gpu |= t.MayHoldGpu();
  const std::vector<int32_t> ranks = TraceRanks(catalog);
  if (!gpu || !AnyRank(ranks)) return;
  for (const std::vector<size_t>& group : RankGroups(catalog, ranks)) {
    // As the summary (summarize.cc): a group of one rank on one host.
    if (group.empty() || ranks[group.front()] < 0) continue;
    const std::vector<bool> main_in_group = MainProcesses(catalog, group);
    size_t first_main = group.front();
    bool any_main = false;
    for (size_t i = 0; i < group.size(); ++i) {
      meter_of_[group[i]] = static_cast<int32_t>(meters_.size());
      if (main_in_group[i] && (!any_main || catalog.traces[group[i]].info.pid <
                                                catalog.traces[first_main].info.pid)) {
        first_main = group[i];
        any_main = true;
      }
    }
    main_of_.push_back(first_main);
    meters_.push_back(std::make_unique<RankMeter>(processes, ranks[group.front()],
                                                  catalog.traces[group.front()].info.host,
                                                  batch_region));
  }
}

void JobRankMeters::Add(const StreamEvent& e, bool counted) {
  const int32_t m = e.process < meter_of_.size() ? meter_of_[e.process] : -1;
  if (m >= 0) meters_[static_cast<size_t>(m)]->Add(e, counted);
}

std::vector<JobRankMeters::RankStall> JobRankMeters::Finish() {
  std::vector<RankStall> out;
  for (size_t m = 0; m < meters_.size(); ++m) {
    if (!meters_[m]->any_counted()) continue;
    IntervalList pieces;
    RankFigures f = meters_[m]->Finish(&pieces);
    out.push_back({f.rank, f.host, main_of_[m], std::move(pieces)});
  }
  return out;
}

}  // namespace dlprof::dump
