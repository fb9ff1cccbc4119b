// The summary of a catalog of traces, a group at a time, merged in order.
#include "lib/analysis/summarize.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include "lib/analysis/meters/call_site_meter.h"
#include "lib/analysis/meters/collective_meter.h"
#include "lib/analysis/meters/job_rank_meters.h"
#include "lib/analysis/summary/partial_summary.h"
#include "lib/analysis/meters/process_rows.h"
#include "lib/analysis/meters/rank_groups.h"
#include "lib/analysis/meters/region_meter.h"
#include "lib/analysis/meters/summary_builder.h"
#include "lib/analysis/meters/worker_meter.h"
#include "lib/read/job.h"

namespace dlprof::analysis {
using namespace dlprof::read;
SummarizeOptions JobSummarizeOptions(const Job& job, const EventSelection& selection) {
  SummarizeOptions o;
  o.selection = job.Select(selection);
  o.clocks = &job.clocks();
  o.hosts_in_keys = SeveralHosts(job.catalog());
  return o;
}

std::vector<std::vector<size_t>> GroupTraces(const TraceCatalog& catalog) {
  const bool together = ReadTogether(catalog);
  if (together) {
    const std::vector<int32_t> ranks = TraceRanks(catalog);
    if (AnyRank(ranks)) return RankGroups(catalog, ranks);
  }
  std::vector<std::vector<size_t>> groups;
  for (size_t i = 0; i < catalog.traces.size(); ++i) {
    if (groups.empty() || !together) groups.emplace_back();
    groups.back().push_back(i);
  }
  return groups;
}

JobTraceFacts TraceFactsOf(const TraceCatalog& catalog) {
  JobTraceFacts facts{TraceRanks(catalog), ProcessImages(catalog), {}};
  std::vector<const format::ProcessInfo*> infos;
  for (const CatalogEntry& t : catalog.traces) infos.push_back(t.opened ? &t.info : nullptr);
  facts.process_ranks = ProcessRanks(facts.ranks, FirstImages(infos));
  return facts;
}

namespace {

struct GroupResult {
  PartialSummary partial;
  std::vector<ProcessTrace> traces;
  uint64_t events = 0;
};

// The partial summary of the traces `group` lists, as one time-ordered
// stream; their blocks decode on `decode_threads` threads beside the caller.
// `facts` are the catalog's. What decoding found goes to `traces` (one per
// listed trace, in order; without strings) and the events kept to `events`.
PartialSummary SummarizeGroup(const TraceCatalog& catalog, const JobTraceFacts& facts,
                              const std::vector<size_t>& group, const SummarizeOptions& o,
                              unsigned decode_threads, std::vector<ProcessTrace>* traces,
                              uint64_t* events) {
  std::unique_ptr<FileStream> stream = OpenStream(catalog, o.clocks, group, decode_threads);
  const uint32_t flags = stream->block_flags();
  const uint64_t second_zero = o.selection.window_start_ns();  // of the timelines
  // The region and call-site meters, where the group's blocks hold regions
  // and stacks.
  std::unique_ptr<RegionMeter> regions;
  std::unique_ptr<CallSiteMeter> sites;
  std::vector<EventObserver*> observers;
  if (flags & kBlockFlagRegions) {
    RegionOptions region_options;
    region_options.pick = o.region_pick;
    regions = std::make_unique<RegionMeter>(stream->processes(), region_options);
    observers.push_back(regions.get());
  }
  std::unique_ptr<RankMeter> rank =
      MakeRankMeter(catalog, facts.ranks, group, stream->processes(), o.batch_region, second_zero);
  std::unique_ptr<WorkerMeter> workers;
  if (rank) {
    observers.push_back(rank.get());
    workers = std::make_unique<WorkerMeter>(stream->processes(), o.batch_region);
    observers.push_back(workers.get());
  }
  if (flags & kBlockFlagStacks) {
    sites = std::make_unique<CallSiteMeter>(stream->processes());
    observers.push_back(sites.get());
  }
  CollectiveMeter collective(stream->processes(), CollectiveCallsPerProcess(catalog.traces.size()));
  observers.push_back(&collective);
  EventFilter source(stream.get(), o.selection, std::move(observers));
  std::vector<ProcessImage> images;
  for (size_t i : group) images.push_back(facts.images[i]);
  PartialSummary p = AnalyzePartial(source, o.slowest_count, second_zero,
                                    o.hosts_in_keys, &images);
  if (regions) p.s.regions = regions->Finish();
  std::vector<std::string> keys;  // each trace's process row
  for (size_t i = 0; i < group.size(); ++i) {
    keys.push_back(
        ProcessKey(IdOf(stream->processes()[i], images[i]), images[i], o.hosts_in_keys));
  }
  for (size_t i = 0; i < group.size(); ++i) {
    const ProcessTrace& t = stream->processes()[i];
    auto it = p.s.process_ids.find(keys[i]);
    if (t.opened && !t.saw_final && it != p.s.process_ids.end()) {
      it->second.trace_unfinished = true;
    }
  }
  // A process that --pid, --rank or --host leaves out is no row of the
  // summary (it was one of zeros, and counted among the processes). Kept or
  // not as a whole, all its images alike (by its process's rank); a trace
  // that did not open is no process (SummaryBuilder), but for a bounded
  // trace's segment deleted since its header was read (the catalog's; one
  // deleted before that names no process).
  std::vector<size_t> left_out;
  for (size_t i = 0; i < group.size(); ++i) {
    const ProcessTrace& t = stream->processes()[i];
    if (!t.opened && !(t.vanished && catalog.traces[group[i]].opened)) continue;
    const format::ProcessInfo& info = t.opened ? t.info : catalog.traces[group[i]].info;
    if (o.selection.KeepsProcess(info, facts.process_ranks[group[i]])) continue;
    left_out.push_back(i);
    ProcessTrace named;
    named.info = info;
    const std::string key = ProcessKey(IdOf(named, images[i]), images[i], o.hosts_in_keys);
    p.s.processes_stats.erase(key);
    p.s.process_ids.erase(key);
    if (!images[i].later_image && p.s.processes > 0) --p.s.processes;
  }
  // A rank that a filter (--rank, --pid, --host, --from/--to) left nothing of
  // is not listed.
  if (rank) {
    // What each process did, for its role: into its row's identity.
    for (size_t i = 0; i < group.size(); ++i) {
      const RankMeter::Activity& did = rank->activity()[i];
      auto it = p.s.process_ids.find(keys[i]);
      if (it == p.s.process_ids.end()) continue;
      it->second.batch_waits += did.batch_waits;
      it->second.batch_fetches += did.batch_fetches;
      it->second.optimizer_steps += did.optimizer_steps;
      it->second.gpu_records += did.gpu_records;
    }
  }
  if (rank && rank->any_counted()) {
    RankFigures figures = rank->Finish();
    figures.workers = workers->Finish();
    if (figures.rank >= 0) {
      p.s.rank_figures.push_back(std::move(figures));
    } else {
      // Only the loop's figures are the job's: what spans ranks needs none.
      figures.waiting.clear();
      figures.communication.clear();
      p.s.unranked_group = std::move(figures);
      p.s.has_unranked_group = true;
    }
  }
  if (sites) {
    p.has_sites = true;
    p.sites_by_function = sites->Sites(CallSiteKey::kFunction);
    p.sites_by_module = sites->Sites(CallSiteKey::kModule);
  }
  p.collective = collective.Finish(keys);
  if (o.clocks != nullptr && !o.clocks->identity()) p.s.clock_domains = o.clocks->domains;
  p.s.region_pick = o.region_pick;
  *events = source.passed();
  *traces = stream->processes();
  for (ProcessTrace& t : *traces) t.strings.clear();
  // What the tracer dropped of a process left out is not the summary's
  // loss (decoding's is: the input's, whatever the selection).
  for (size_t i : left_out) (*traces)[i].dropped_events = 0;
  return p;
}

// Every group's partial, merged in group order.
PartialSummary SummarizeGroups(const TraceCatalog& catalog, const JobTraceFacts& facts,
                               const SummarizeOptions& options,
                               std::vector<ProcessTrace>* traces, uint64_t* events) {
  const std::vector<std::vector<size_t>> groups = GroupTraces(catalog);
  traces->assign(catalog.traces.size(), ProcessTrace());
  *events = 0;
  PartialSummary total;
  total.slowest_count = options.slowest_count;
  total.s.run_start_ns = 0;
  total.s.region_pick = options.region_pick;  // no merge changes it

  // Partials merge in group order: a finished group waits in `done` until
  // those before it have merged.
  std::mutex mu;
  std::vector<std::unique_ptr<GroupResult>> done(groups.size());
  size_t next_merge = 0;
  auto finish = [&](size_t g, GroupResult r) {
    std::lock_guard<std::mutex> lock(mu);
    done[g] = std::make_unique<GroupResult>(std::move(r));
    for (; next_merge < groups.size() && done[next_merge]; ++next_merge) {
      GroupResult& d = *done[next_merge];
      MergeInto(&total, std::move(d.partial));
      *events += d.events;
      for (size_t i = 0; i < d.traces.size(); ++i) {
        (*traces)[groups[next_merge][i]] = std::move(d.traces[i]);
      }
      done[next_merge].reset();
    }
  };
  auto run = [&](size_t g, unsigned decode_threads) {
    GroupResult r;
    r.partial =
        SummarizeGroup(catalog, facts, groups[g], options, decode_threads, &r.traces, &r.events);
    finish(g, std::move(r));
  };

  if (groups.size() == 1) {
    // One stream: its blocks decode on the worker threads.
    run(0, options.threads);
  } else if (!groups.empty()) {
    // Many: each thread takes the next group and decodes it itself.
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t g; (g = next.fetch_add(1)) < groups.size();) {
        run(g, 0);
      }
    };
    std::vector<std::thread> helpers;
    const size_t extra = std::min<size_t>(options.threads, groups.size() - 1);
    for (size_t i = 0; i < extra; ++i) helpers.emplace_back(work);
    work();
    for (std::thread& t : helpers) t.join();
  }
  return total;
}

}  // namespace

SummarizeResult Summarize(const TraceCatalog& catalog, const SummarizeOptions& options) {
  SummarizeResult result;
  JobTraceFacts own;
  if (options.facts == nullptr) own = TraceFactsOf(catalog);
  const JobTraceFacts& facts = options.facts != nullptr ? *options.facts : own;
  PartialSummary p =
      options.group != nullptr
          ? SummarizeGroup(catalog, facts, *options.group, options, options.threads,
                           &result.traces, &result.events)
          : SummarizeGroups(catalog, facts, options, &result.traces, &result.events);
  // What was lost of these traces (the caller adds the inputs that named
  // none: Job::input_errors).
  p.s.input = InputLossOf({}, result.traces);
  p.s.batch_region = options.batch_region;
  if (options.partial) {
    result.partial = std::move(p);
  } else {
    result.summary = FinishSummary(std::move(p));
  }
  return result;
}

}  // namespace dlprof::analysis
