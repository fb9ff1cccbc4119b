// The rank meters of a whole job's stream (job_rank_meters.h).
#include "lib/analysis/meters/job_rank_meters.h"

#include "lib/analysis/meters/rank_groups.h"

namespace dlprof::analysis {

std::unique_ptr<RankMeter> MakeRankMeter(const TraceCatalog& catalog,
                                         const std::vector<int32_t>& ranks,
                                         const std::vector<size_t>& group,
                                         const std::vector<ProcessTrace>& processes,
                                         const std::string& batch_region,
                                         uint64_t second_zero_ns) {
  if (group.empty()) return nullptr;
  const int32_t rank = ranks[group.front()];
  const std::string& host = catalog.traces[group.front()].info.host;
  if (rank < 0) {
    // Only a job without ranks, read as one group (both looked at per
    // trace: the group's size first).
    if (group.size() != catalog.traces.size() || AnyRank(ranks) || !ReadTogether(catalog)) {
      return nullptr;
    }
  } else {
    for (size_t t : group) {
      if (ranks[t] != rank || catalog.traces[t].info.host != host) return nullptr;
    }
  }
  auto meter = std::make_unique<RankMeter>(processes, rank, host, batch_region);
  meter->set_timeline_base(second_zero_ns);
  return meter;
}

JobRankMeters::JobRankMeters(const TraceCatalog& catalog,
                             const std::vector<ProcessTrace>& processes, uint64_t second_zero_ns,
                             const std::string& batch_region)
    : meter_of_(processes.size(), -1) {
  if (processes.size() != catalog.traces.size()) return;
  bool gpu = false;
  for (const CatalogEntry& t : catalog.traces) gpu |= t.MayHoldGpu();
  const std::vector<int32_t> ranks = TraceRanks(catalog);
  if (!gpu || !AnyRank(ranks)) return;
  for (const std::vector<size_t>& group : RankGroups(catalog, ranks)) {
    // A group of one rank on one host (the traces without a rank get none).
    std::unique_ptr<RankMeter> meter =
        MakeRankMeter(catalog, ranks, group, processes, batch_region, second_zero_ns);
    if (!meter) continue;
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
    meters_.push_back(std::move(meter));
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

}  // namespace dlprof::analysis
