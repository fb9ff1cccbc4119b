// Merging partial summaries, and ranking a merged one's lists.
#include "lib/analysis/summary/partial_summary.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "lib/analysis/summary/file_classes.h"
#include "lib/analysis/summary/intervals.h"

namespace dlprof::analysis {
namespace {

// Elementwise sum of two per-second timelines that start at the same base.
void AddTimeline(std::vector<std::pair<uint64_t, uint64_t>>* into,
                 const std::vector<std::pair<uint64_t, uint64_t>>& from) {
  if (into->size() < from.size()) into->resize(from.size());
  for (size_t i = 0; i < from.size(); ++i) {
    (*into)[i].first += from[i].first;
    (*into)[i].second += from[i].second;
  }
}

template <typename Key>
void MergeLevels(std::map<Key, IoStats>* into, const std::map<Key, IoStats>& from) {
  for (const auto& [key, stats] : from) MergeIoStats(&(*into)[key], stats);
}

void MergeGpus(std::vector<GpuDevice>* into, const std::vector<GpuDevice>& from) {
  for (const GpuDevice& f : from) {
    auto it = std::find_if(into->begin(), into->end(), [&](const GpuDevice& d) {
      return d.device == f.device && d.host == f.host;
    });
    if (it == into->end()) {
      into->push_back(f);
      continue;
    }
    it->kernels += f.kernels;
    it->copies += f.copies;
    it->memsets += f.memsets;
    it->copy_bytes += f.copy_bytes;
    it->first_ns = std::min(it->first_ns, f.first_ns);
    it->last_ns = std::max(it->last_ns, f.last_ns);
    it->busy_ns += f.busy_ns;
    it->stall_ns += f.stall_ns;
  }
  std::sort(into->begin(), into->end(),
            [](const GpuDevice& a, const GpuDevice& b) {
              return std::tie(a.host, a.device) < std::tie(b.host, b.device);
            });
}

// Region rows by name, in order of first appearance; the row of calls
// outside every region stays last.
void MergeRegions(std::vector<RegionStats>* into, std::vector<RegionStats>&& from) {
  for (RegionStats& f : from) {
    auto it = std::find_if(into->begin(), into->end(), [&](const RegionStats& r) {
      return r.outside == f.outside && r.name == f.name;
    });
    if (it == into->end()) {
      const bool outside_last = !into->empty() && into->back().outside && !f.outside;
      into->insert(outside_last ? into->end() - 1 : into->end(), std::move(f));
      continue;
    }
    it->instances += f.instances;
    it->region_ns += f.region_ns;
    it->io_ops += f.io_ops;
    it->io_ns += f.io_ns;
    it->read_ops += f.read_ops;
    it->write_ops += f.write_ops;
    it->read_bytes += f.read_bytes;
    it->write_bytes += f.write_bytes;
    it->io_busy_ns += f.io_busy_ns;
    it->stall_ns += f.stall_ns;
  }
}

void MergeSites(std::unordered_map<std::string, CallSiteStats>* into,
                const std::unordered_map<std::string, CallSiteStats>& from) {
  for (const auto& [name, f] : from) {
    CallSiteStats& s = (*into)[name];
    s.site = name;
    s.ops += f.ops;
    s.bytes += f.bytes;
    s.time_ns += f.time_ns;
    s.read_bytes += f.read_bytes;
    s.write_bytes += f.write_bytes;
  }
}

void AddShares(std::unordered_map<std::string, uint64_t>* into,
               const std::unordered_map<std::string, uint64_t>& from) {
  for (const auto& [what, ns] : from) (*into)[what] += ns;
}

// The `n` largest shares, largest first (ties by name).
std::vector<StallShare> TopShares(const std::unordered_map<std::string, uint64_t>& by, size_t n) {
  std::vector<StallShare> v;
  for (const auto& [what, ns] : by) {
    if (ns > 0) v.push_back({what, ns});
  }
  std::sort(v.begin(), v.end(), [](const StallShare& a, const StallShare& b) {
    return a.stall_ns != b.stall_ns ? a.stall_ns > b.stall_ns : a.what < b.what;
  });
  if (v.size() > n) v.resize(n);
  return v;
}

}  // namespace

bool SlowerThan(const SlowOp& a, const SlowOp& b) {
  return std::tie(b.dur_ns, a.start_ns, a.pid, a.tid, a.name, a.path) <
         std::tie(a.dur_ns, b.start_ns, b.pid, b.tid, b.name, b.path);
}

void MergeInto(PartialSummary* into, PartialSummary&& from) {
  Summary& s = into->s;
  Summary& f = from.s;
  if (f.events > 0) {
    s.run_start_ns = s.events > 0 ? std::min(s.run_start_ns, f.run_start_ns) : f.run_start_ns;
  }
  s.processes += f.processes;
  s.events += f.events;
  s.nested_events += f.nested_events;
  s.input.Add(f.input);
  s.run_end_ns = std::max(s.run_end_ns, f.run_end_ns);
  MergeIoStats(&s.run, f.run);
  MergeCollectiveCalls(&into->collective, std::move(from.collective));
  MergeLevels(&s.ranks, f.ranks);
  MergeLevels(&s.processes_stats, f.processes_stats);
  for (auto& [key, id] : f.process_ids) {
    auto [it, added] = s.process_ids.try_emplace(key, id);
    if (added) continue;
    // One process read in two groups (its images): what it did adds up.
    it->second.batch_waits += id.batch_waits;
    it->second.batch_fetches += id.batch_fetches;
    it->second.optimizer_steps += id.optimizer_steps;
    it->second.gpu_records += id.gpu_records;
    it->second.python_isolated |= id.python_isolated;
    it->second.trace_unfinished |= id.trace_unfinished;
    // (Its last image's end, as the groups come in order.)
    if (id.exit_seen || id.end_signal != 0) {
      it->second.exit_seen = id.exit_seen;
      it->second.exit_status = id.exit_status;
      it->second.end_signal = id.end_signal;
      it->second.signal_sender = id.signal_sender;
    }
  }
  if (f.has_unranked_group) {  // one group of a job has it
    s.has_unranked_group = true;
    s.unranked_group = std::move(f.unranked_group);
  }
  MergeLevels(&s.files, f.files);
  AddTimeline(&s.per_second, f.per_second);
  AddFineBins(&s.fine_bin_ns, &s.fine_bins, f.fine_bin_ns, f.fine_bins);
  if (s.timeline_base_ns == 0) s.timeline_base_ns = f.timeline_base_ns;  // shared by all
  // Groups are a rank's or a trace's: their GPU work adds up (two ranks'
  // devices busy in one second: up to 2 s of busy time in it).
  AddBins(&s.gpu_busy_per_second, f.gpu_busy_per_second);

  into->slowest_count = std::min(into->slowest_count, from.slowest_count);
  for (SlowOp& op : f.slowest) s.slowest.push_back(std::move(op));
  std::sort(s.slowest.begin(), s.slowest.end(), SlowerThan);
  if (s.slowest.size() > into->slowest_count) s.slowest.resize(into->slowest_count);

  if (!f.gpus.empty()) {
    const bool first = s.gpus.empty();
    s.gpu_first_ns = first ? f.gpu_first_ns : std::min(s.gpu_first_ns, f.gpu_first_ns);
    s.gpu_last_ns = std::max(s.gpu_last_ns, f.gpu_last_ns);
    s.gpu_busy_ns += f.gpu_busy_ns;
    s.io_outstanding_ns += f.io_outstanding_ns;
    s.data_stall_ns += f.data_stall_ns;
    MergeGpus(&s.gpus, f.gpus);
  }
  AddShares(&into->stall_by_file, from.stall_by_file);
  AddShares(&into->stall_by_process, from.stall_by_process);
  MergeRegions(&s.regions, std::move(f.regions));
  if (s.clock_domains.empty()) s.clock_domains = std::move(f.clock_domains);  // one per run
  MergeRankFigures(&s.rank_figures, std::move(f.rank_figures));
  into->has_sites |= from.has_sites;
  MergeSites(&into->sites_by_function, from.sites_by_function);
  MergeSites(&into->sites_by_module, from.sites_by_module);
}

Summary FinishSummary(PartialSummary&& p) {
  Summary s = std::move(p.s);
  // The lists are as long as the slowest calls' (--top; 10 by default).
  const size_t top = p.slowest_count == SIZE_MAX ? 10 : p.slowest_count;
  if (!s.gpus.empty()) {
    // The stall is charged to data files only: the I/O of imports, of
    // multiprocessing's /tmp/pymp-* or of a JIT cache is not the data's
    // (docs/ANALYSIS.md, File classes).
    std::unordered_map<std::string, uint64_t> data_files;
    for (const auto& [path, ns] : p.stall_by_file) {
      auto f = s.files.find(path);
      if (f != s.files.end() && ClassifyFile(path, f->second) == FileClass::kData) {
        data_files.emplace(path, ns);
      }
    }
    s.stall_by_file = TopShares(data_files, top);
    s.stall_by_process = TopShares(p.stall_by_process, top);
    s.stall_files = TopShares(data_files, SIZE_MAX).size();
    s.stall_processes = TopShares(p.stall_by_process, SIZE_MAX).size();
  }
  // Only the "outside every region" row: there were no regions at all.
  if (s.regions.size() == 1 && s.regions[0].outside) s.regions.clear();
  // Before the ranks' figures are finished: the slowest loader and the
  // job's distributions are of the batch waits less waiting for other ranks.
  ApplyCollectiveWaits(std::move(p.collective), &s);
  if (!s.rank_figures.empty()) FinishRankFigures(&s.rank_figures, &s.rank_job);
  if (p.has_sites) {
    s.site_functions = p.sites_by_function.size();
    s.site_modules = p.sites_by_module.size();
    s.sites_by_time = RankCallSites(p.sites_by_function, false, top);
    s.sites_by_bytes = RankCallSites(std::move(p.sites_by_function), true, top);
    s.sites_by_module = RankCallSites(std::move(p.sites_by_module), true, top);
  }
  return s;
}

}  // namespace dlprof::analysis
