// Rank groups (rank_groups.h): traces by (rank, host), workers with their
// parent.
#include "lib/analysis/meters/rank_groups.h"

#include <map>
#include <string>
#include <tuple>
#include <utility>

namespace dlprof::analysis {
namespace {

// The trace of a process's parent: same host, pid = its ppid, started no
// later than it (pids are reused; the latest such start wins); -1 if none.
class Parents {
 public:
  explicit Parents(const TraceCatalog& c) : catalog_(c) {
    for (size_t i = 0; i < c.traces.size(); ++i) {
      if (c.traces[i].opened) by_pid_.emplace(Key{c.traces[i].info.host, c.traces[i].info.pid}, i);
    }
  }
  int64_t Of(size_t child) const {
    const format::ProcessInfo& p = catalog_.traces[child].info;
    if (!catalog_.traces[child].opened || p.ppid <= 0) return -1;
    int64_t best = -1;
    auto range = by_pid_.equal_range(Key{p.host, p.ppid});
    for (auto it = range.first; it != range.second; ++it) {
      const format::ProcessInfo& q = catalog_.traces[it->second].info;
      if (it->second == child || q.process_start_ns > p.process_start_ns) continue;
      if (best < 0 ||
          q.process_start_ns > catalog_.traces[static_cast<size_t>(best)].info.process_start_ns) {
        best = static_cast<int64_t>(it->second);
      }
    }
    return best;
  }

 private:
  using Key = std::pair<std::string, int32_t>;
  const TraceCatalog& catalog_;
  std::multimap<Key, size_t> by_pid_;
};

}  // namespace

std::vector<int32_t> TraceRanks(const TraceCatalog& catalog) {
  const Parents parents(catalog);
  std::vector<int32_t> ranks(catalog.traces.size(), -1);
  for (size_t i = 0; i < catalog.traces.size(); ++i) {
    // Up the ancestry to the first rank; bounded, in case a forged header
    // makes a cycle.
    int64_t t = static_cast<int64_t>(i);
    for (size_t depth = 0; t >= 0 && depth <= catalog.traces.size(); ++depth) {
      const CatalogEntry& e = catalog.traces[static_cast<size_t>(t)];
      if (e.opened && e.info.rank >= 0) {
        ranks[i] = e.info.rank;
        break;
      }
      t = parents.Of(static_cast<size_t>(t));
    }
  }
  return ranks;
}

bool AnyRank(const std::vector<int32_t>& ranks) {
  for (int32_t r : ranks) {
    if (r >= 0) return true;
  }
  return false;
}

std::vector<std::vector<size_t>> RankGroups(const TraceCatalog& catalog,
                                            const std::vector<int32_t>& ranks) {
  std::map<std::pair<int32_t, std::string>, std::vector<size_t>> by_rank;
  std::vector<size_t> unranked;
  for (size_t i = 0; i < catalog.traces.size(); ++i) {
    if (ranks[i] >= 0) {
      by_rank[{ranks[i], catalog.traces[i].info.host}].push_back(i);
    } else {
      unranked.push_back(i);
    }
  }
  std::vector<std::vector<size_t>> groups;
  for (auto& [key, traces] : by_rank) groups.push_back(std::move(traces));
  if (!unranked.empty()) groups.push_back(std::move(unranked));
  return groups;
}

std::vector<bool> MainProcesses(const TraceCatalog& catalog, const std::vector<size_t>& group) {
  const Parents parents(catalog);
  std::vector<bool> in_group(catalog.traces.size(), false);
  for (size_t t : group) in_group[t] = true;
  std::vector<bool> main;
  for (size_t t : group) {
    const int64_t p = parents.Of(t);
    main.push_back(p < 0 || !in_group[static_cast<size_t>(p)]);
  }
  return main;
}

bool ReadTogether(const TraceCatalog& catalog) {
  bool together = false;
  for (const CatalogEntry& t : catalog.traces) {
    together |= t.MayHoldGpu() || (t.block_flags & kBlockFlagRegions) != 0;
  }
  return together;
}

}  // namespace dlprof::analysis
