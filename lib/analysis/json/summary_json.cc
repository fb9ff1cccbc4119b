// The summary as one JSON object.
#include "lib/analysis/json/summary_json.h"

#include <algorithm>
#include <cinttypes>
#include <set>
#include <string>
#include <vector>

#include "lib/analysis/json/rank_json.h"
#include "lib/analysis/json/rank_map_json.h"
#include "lib/analysis/summary/file_classes.h"
#include "lib/analysis/findings/summary_figures.h"
#include "lib/analysis/findings/verdict.h"
#include "lib/text/text.h"

namespace dlprof::analysis {
using namespace dlprof::text;
namespace {

std::string JsonAccess(const AccessStats& a) {
  std::string j = Fmt("{\"ops\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"time_ns\":%" PRIu64
                      ",\"small_ops\":%" PRIu64 ",\"small_time_ns\":%" PRIu64
                      ",\"empty_ops\":%" PRIu64 ",\"consecutive\":%" PRIu64
                      ",\"sequential\":%" PRIu64 ",\"random\":%" PRIu64 ",\"first\":%" PRIu64
                      ",\"histogram\":{",
                      a.ops, a.bytes, a.time_ns, a.small_ops, a.small_time_ns, a.empty_ops,
                      a.consecutive, a.sequential, a.random(), a.first);
  for (int b = 0; b < kSizeBins; ++b) {
    j += Fmt("%s\"%s\":%" PRIu64, b ? "," : "", SizeBinName(b), a.histogram[b]);
  }
  j += "},\"common_sizes\":[";
  bool first = true;
  for (const auto& [size, n] : TopCounts(a.sizes, 4)) {
    j += Fmt("%s[%" PRIu64 ",%" PRIu64 "]", first ? "" : ",", size, n);
    first = false;
  }
  j += "],\"common_strides\":[";
  first = true;
  for (const auto& [stride, n] : TopCounts(a.strides, 4)) {
    j += Fmt("%s[%" PRId64 ",%" PRIu64 "]", first ? "" : ",", stride, n);
    first = false;
  }
  return j + "]}";
}

std::string JsonLevel(const IoStats& s) {
  std::string j = "{\"ops\":{";
  for (int g = 0; g < kOpGroups; ++g) {
    j += Fmt("%s\"%s\":%" PRIu64, g ? "," : "", OpGroupName(static_cast<OpGroup>(g)), s.ops[g]);
  }
  j += "},\"time_ns\":{";
  for (int g = 0; g < kOpGroups; ++g) {
    j += Fmt("%s\"%s\":%" PRIu64, g ? "," : "", OpGroupName(static_cast<OpGroup>(g)), s.time_ns[g]);
  }
  j += "},\"read\":" + JsonAccess(s.read) + ",\"write\":" + JsonAccess(s.write);
  j += Fmt(",\"first_ns\":%" PRIu64 ",\"last_ns\":%" PRIu64 ",\"errors\":%" PRIu64
           ",\"mpi\":{\"collective_ops\":%" PRIu64 ",\"collective_bytes\":%" PRIu64
           ",\"independent_ops\":%" PRIu64 ",\"independent_bytes\":%" PRIu64
           ",\"collective_wait_ns\":%" PRIu64 "}",
           s.first_ns == UINT64_MAX ? 0 : s.first_ns, s.last_ns, s.errors, s.mpi_collective_ops,
           s.mpi_collective_bytes, s.mpi_independent_ops, s.mpi_independent_bytes,
           s.mpi_collective_wait_ns);
  // Reading through memory maps, beside the calls' figures.
  j += Fmt(",\"maps\":{\"faults\":%" PRIu64 ",\"waits\":%" PRIu64 ",\"bytes\":%" PRIu64
           ",\"time_ns\":%" PRIu64 ",\"sequential\":%" PRIu64 ",\"random\":%" PRIu64
           ",\"first\":%" PRIu64 "}}",
           s.maps.faults, s.maps.waits, s.maps.bytes, s.maps.time_ns, s.maps.sequential,
           s.maps.random(), s.maps.first);
  return j;
}

// Each listed process's row (ListedProcesses) opens with who it is: host,
// pid, ppid and rank.
std::string JsonProcesses(const Summary& s, size_t top, bool details, size_t* left_out) {
  std::string j = "{";
  bool first = true;
  for (const std::string* listed : ListedProcesses(s, top, details, left_out)) {
    const std::string& key = *listed;
    const IoStats& stats = s.processes_stats.at(key);
    auto id = s.process_ids.find(key);
    const Summary::ProcessId none;
    const Summary::ProcessId& p = id != s.process_ids.end() ? id->second : none;
    std::string level = JsonLevel(stats);
    j += (first ? "" : ",") + JsonString(key) + ":{\"host\":" + JsonString(p.host) +
         Fmt(",\"pid\":%d,\"ppid\":%d,\"rank\":%d,", p.pid, p.ppid, p.rank) +
         level.substr(1);
    first = false;
  }
  return j + "}";
}

// With rank groups, each rank's object opens with its rank figures
// (rank_json.h) before its I/O level; a rank seen on a second host is keyed
// "R host". Past `top` ranks (without --details), the `top` that waited the
// longest, without their steps and timelines, which the rank map
// (rank_map_json.h) holds for every rank; `left_out` counts the others.
std::string JsonRanks(const Summary& s, size_t top, bool details, size_t* left_out) {
  std::string j = "{";
  const uint64_t bin_s = RankTimelineBin(s.rank_figures);
  const bool all = details || s.rank_figures.size() <= top;
  std::vector<size_t> listed(s.rank_figures.size());
  for (size_t i = 0; i < listed.size(); ++i) listed[i] = i;
  if (!all) {
    listed = ListedRanks(s.rank_figures, top);
    std::sort(listed.begin(), listed.end());
    *left_out = s.rank_figures.size() - listed.size();
  }
  std::set<int32_t> seen;  // a rank's I/O goes with its first group
  std::vector<bool> again(s.rank_figures.size());
  for (size_t i = 0; i < s.rank_figures.size(); ++i) {
    again[i] = !seen.insert(s.rank_figures[i].rank).second;
  }
  for (size_t i : listed) {
    const RankFigures& r = s.rank_figures[i];
    auto io = s.ranks.find(r.rank);
    const std::string level = JsonLevel(io != s.ranks.end() && !again[i] ? io->second : IoStats());
    j += (j.size() > 1 ? "," : "") +
         JsonString(std::to_string(r.rank) + (again[i] ? " " + r.host : std::string())) + ":{" +
         RankFieldsJson(r, bin_s, all) + "," + level.substr(1);
  }
  for (const auto& [rank, stats] : s.ranks) {  // events of a rank no group has
    if (seen.count(rank) == 0) {
      j += (j.size() > 1 ? "," : "") + JsonString(std::to_string(rank)) + ":" + JsonLevel(stats);
    }
  }
  j += "}";
  if (!all) j += "," + RankMapJson(s.rank_figures);
  return j;
}

template <typename Map, typename KeyFn>
std::string JsonMap(const Map& m, KeyFn key) {
  std::string j = "{";
  bool first = true;
  for (const auto& [k, v] : m) {
    j += (first ? "" : ",") + key(k) + ":" + JsonLevel(v);
    first = false;
  }
  return j + "}";
}

// The files listed (ListedFiles), per class, never read and re-read, and
// what each cut list left out (the text's "... and N more" lines).
std::string JsonFiles(const Summary& s, size_t top, bool details, size_t processes_left_out,
                      size_t ranks_left_out) {
  std::string j;
  // The listed files (ListedFiles), each with its class.
  size_t files_left_out = 0;
  j += ",\"files\":{";
  bool first = true;
  for (const ListedFile& f : ListedFiles(s, top, details, &files_left_out)) {
    j += (first ? "" : ",") + JsonString(*f.path) + ":{\"class\":\"" +
         FileClassName(static_cast<FileClass>(f.file_class)) + "\"," +
         JsonLevel(*f.io).substr(1);
    first = false;
  }
  j += "}";
  // Per file class (file_classes.h): how many files and directories, and
  // their figures: every file's, listed or not.
  j += ",\"file_classes\":{";
  const auto classes = TotalsByClass(s);
  for (int c = 0; c < kFileClasses; ++c) {
    j += Fmt("%s\"%s\":{\"files\":%" PRIu64 ",\"directories\":%" PRIu64 ",", c ? "," : "",
             FileClassName(static_cast<FileClass>(c)), classes[c].files, classes[c].directories);
    j += JsonLevel(classes[c].io).substr(1);
  }
  j += "}";
  // Most opened first.
  const auto never = NeverReadByOpens(s);
  j += ",\"never_read\":[";
  for (size_t i = 0; i < never.size() && i < top; ++i) {
    j += (i ? "," : "") + JsonString(never[i].first);
  }
  const auto rereads = Rereads(s);
  j += "],\"rereads\":[";
  for (size_t i = 0; i < rereads.size() && i < top; ++i) {
    j += Fmt("%s[%s,%.3f]", i ? "," : "", JsonString(rereads[i].first).c_str(), rereads[i].second);
  }
  // What each cut list left out, as the text's "... and N more" lines.
  uint64_t calls = 0;
  for (uint64_t n : s.run.ops) calls += n;
  auto beyond = [](uint64_t all, uint64_t shown) { return all > shown ? all - shown : 0; };
  j += Fmt("],\"left_out\":{\"files\":%zu,\"never_read\":%" PRIu64 ",\"rereads\":%" PRIu64
           ",\"slowest\":%" PRIu64 ",\"stall_by_file\":%" PRIu64 ",\"stall_by_process\":%" PRIu64
           ",\"sites_by_time\":%" PRIu64 ",\"sites_by_bytes\":%" PRIu64
           ",\"sites_by_module\":%" PRIu64 ",\"processes_stats\":%zu,\"ranks\":%zu}",
           files_left_out, beyond(never.size(), top), beyond(rereads.size(), top),
           beyond(calls, s.slowest.size()), beyond(s.stall_files, s.stall_by_file.size()),
           beyond(s.stall_processes, s.stall_by_process.size()),
           beyond(s.site_functions, s.sites_by_time.size()),
           beyond(s.site_functions, s.sites_by_bytes.size()),
           beyond(s.site_modules, s.sites_by_module.size()), processes_left_out,
           ranks_left_out);
  return j;
}

// The slowest calls and samples, and the timelines.
std::string JsonTimelines(const Summary& s, size_t top) {
  std::string j = ",\"slowest\":[";
  bool first = true;
  for (const SlowOp& op : s.slowest) {
    j += Fmt("%s{\"dur_ns\":%" PRIu64 ",\"ts\":%" PRIu64
             ",\"name\":%s,\"path\":%s,\"offset\":%" PRId64 ",\"size\":%" PRIu64
             ",\"pid\":%d,\"tid\":%d}",
             first ? "" : ",", op.dur_ns, op.start_ns, JsonString(op.name).c_str(),
             JsonString(op.path).c_str(), op.offset, op.size, op.pid, op.tid);
    first = false;
  }
  size_t kept = 0;
  const std::vector<RankedSample> samples = SlowestSamples(s, top, &kept);
  j += "],\"slowest_samples\":[";
  for (size_t i = 0; i < samples.size(); ++i) {
    const SlowSample& x = samples[i].sample;
    j += Fmt("%s{\"index\":%" PRId64 ",\"ns\":%" PRIu64
             ",\"rank\":%d,\"worker\":%d,\"loader\":%" PRId64 ",\"epoch\":%" PRIu64
             ",\"slow_passes\":%" PRIu64 ",\"files\":[",
             i ? "," : "", x.index, x.ns, samples[i].rank, x.pid, x.loader, x.pass,
             x.slow_passes);
    for (size_t f = 0; f < x.files.size(); ++f) j += (f ? "," : "") + JsonString(x.files[f]);
    j += "]}";
  }
  j += Fmt("],\"slowest_samples_left_out\":%zu", kept - samples.size());
  j += ",\"per_second\":[";
  for (size_t i = 0; i < s.per_second.size(); ++i) {
    j += Fmt("%s[%" PRIu64 ",%" PRIu64 "]", i ? "," : "", s.per_second[i].first,
             s.per_second[i].second);
  }
  // The loop's bytes in bins fit to its length (the report's bandwidth plot).
  const LoopTimeline loop = TimelineOfLoop(s);
  j += Fmt("],\"loop_timeline\":{\"window\":\"%s\",\"start_ns\":%" PRIu64 ",\"end_ns\":%" PRIu64
           ",\"bin_ns\":%" PRIu64 ",\"read_bytes\":[",
           loop.loop ? "loop" : "run", loop.start_ns, loop.end_ns, loop.bin_ns);
  for (size_t i = 0; i < loop.bytes.size(); ++i) {
    j += Fmt("%s%" PRIu64, i ? "," : "", loop.bytes[i].first);
  }
  j += "],\"write_bytes\":[";
  for (size_t i = 0; i < loop.bytes.size(); ++i) {
    j += Fmt("%s%" PRIu64, i ? "," : "", loop.bytes[i].second);
  }
  j += "]}";
  if (!s.gpu_busy_per_second.empty()) {
    j += ",\"gpu_busy_per_second\":[";
    for (size_t i = 0; i < s.gpu_busy_per_second.size(); ++i) {
      j += Fmt("%s%" PRIu64, i ? "," : "", s.gpu_busy_per_second[i]);
    }
    j += "]";
  }
  return j;
}

// The regions, call sites and clock domains.
std::string JsonContext(const Summary& s) {
  std::string j;
  j += Fmt(",\"region_attribution\":\"%s\"",
           s.region_pick == RegionPick::kInnermost ? "innermost" : "outermost");
  j += ",\"regions\":[";
  for (size_t i = 0; i < s.regions.size(); ++i) {
    const RegionStats& r = s.regions[i];
    j += Fmt("%s{\"name\":%s,\"outside\":%s,\"instances\":%" PRIu64 ",\"region_ns\":%" PRIu64
             ",\"io_ops\":%" PRIu64 ",\"io_ns\":%" PRIu64 ",\"read_ops\":%" PRIu64
             ",\"write_ops\":%" PRIu64 ",\"read_bytes\":%" PRIu64 ",\"write_bytes\":%" PRIu64
             ",\"io_busy_ns\":%" PRIu64 ",\"stall_ns\":%" PRIu64 "}",
             i ? "," : "", JsonString(r.name).c_str(), r.outside ? "true" : "false", r.instances,
             r.region_ns, r.io_ops, r.io_ns, r.read_ops, r.write_ops, r.read_bytes, r.write_bytes,
             r.io_busy_ns, r.stall_ns);
  }
  auto site_list = [&](const std::vector<CallSiteStats>& v) {
    std::string a = "[";
    for (size_t i = 0; i < v.size(); ++i) {
      a += Fmt("%s{\"site\":%s,\"ops\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"time_ns\":%" PRIu64
               ",\"read_bytes\":%" PRIu64 ",\"write_bytes\":%" PRIu64 "}",
               i ? "," : "", JsonString(v[i].site).c_str(), v[i].ops, v[i].bytes, v[i].time_ns,
               v[i].read_bytes, v[i].write_bytes);
    }
    return a + "]";
  };
  j += "],\"call_sites\":{\"by_time\":" + site_list(s.sites_by_time) +
       ",\"by_bytes\":" + site_list(s.sites_by_bytes) +
       ",\"by_module\":" + site_list(s.sites_by_module) + "}";
  if (!s.clock_domains.empty()) {
    // Only for traces of several clock domains (hosts booted apart, time
    // namespaces): how each was put on the reference's clock.
    j += ",\"clocks\":{\"method\":" + JsonString(ClockMethod(s.clock_domains)) + ",\"domains\":[";
    for (size_t i = 0; i < s.clock_domains.size(); ++i) {
      const DomainMap& d = s.clock_domains[i];
      j += Fmt("%s{\"host\":%s,\"reference\":%s,\"method\":%s,\"traces\":%zu,"
               "\"shift_ns\":%" PRId64 ",\"drift_ppb\":%" PRId64 ",\"error_ns\":%" PRIu64
               ",\"pairs\":%zu,\"measurements\":%zu}",
               i ? "," : "", JsonString(d.host).c_str(), d.reference ? "true" : "false",
               JsonString(d.method).c_str(), d.traces, d.shift_ns, d.drift_ppb, d.error_ns, d.pairs,
               d.measurements);
    }
    j += "]}";
  }
  return j;
}

// The GPU's figures, null without GPU work.
std::string JsonGpu(const Summary& s) {
  std::string j;
  if (s.gpus.empty()) return "null";
  bool first = true;
  j += Fmt("{\"first_ns\":%" PRIu64 ",\"last_ns\":%" PRIu64 ",\"busy_ns\":%" PRIu64
           ",\"io_outstanding_ns\":%" PRIu64 ",\"data_stall_ns\":%" PRIu64 ",\"devices\":[",
           s.gpu_first_ns, s.gpu_last_ns, s.gpu_busy_ns, s.io_outstanding_ns, s.data_stall_ns);
  for (const GpuDevice& d : s.gpus) {
    j += Fmt("%s{\"host\":%s,\"device\":%d,\"busy_ns\":%" PRIu64 ",\"idle_ns\":%" PRIu64
             ",\"stall_ns\":%" PRIu64 ",\"kernels\":%" PRIu64 ",\"copies\":%" PRIu64
             ",\"copy_bytes\":%" PRIu64 ",\"memsets\":%" PRIu64 "}",
             first ? "" : ",", JsonString(d.host).c_str(), d.device, d.busy_ns, d.idle_ns(),
             d.stall_ns, d.kernels, d.copies, d.copy_bytes, d.memsets);
    first = false;
  }
  auto shares = [](const std::vector<StallShare>& v) {
    std::string a = "[";
    for (size_t i = 0; i < v.size(); ++i) {
      a += (i ? "," : "") + Fmt("[%s,%" PRIu64 "]", JsonString(v[i].what).c_str(), v[i].stall_ns);
    }
    return a + "]";
  };
  j += "],\"stall_by_file\":" + shares(s.stall_by_file) +
       ",\"stall_by_process\":" + shares(s.stall_by_process) + "}";
  return j;
}

}  // namespace

std::string SummaryJson(const Summary& s, const SummaryJsonOptions& options) {
  const size_t top = options.details ? SIZE_MAX : std::max<size_t>(options.top, 1);
  std::string j = Fmt("{\"processes\":%" PRIu64 ",\"events\":%" PRIu64 ",\"nested_events\":%" PRIu64
                      ",\"run_start_ns\":%" PRIu64 ",\"run_end_ns\":%" PRIu64 ",\"run\":",
                      s.processes, s.events, s.nested_events, s.run_start_ns, s.run_end_ns);
  j += JsonLevel(s.run);
  // What could not be decoded: the figures are of the rest.
  j += Fmt(",\"input\":{\"complete\":%s,\"inputs_without_traces\":%" PRIu64
           ",\"unreadable_traces\":%" PRIu64 ",\"damaged_blocks\":%" PRIu64
           ",\"events_lost\":%" PRIu64 ",\"uncounted_blocks\":%" PRIu64
           ",\"events_dropped\":%" PRIu64 "}",
           s.input.incomplete() ? "false" : "true", s.input.inputs_without_traces,
           s.input.unreadable_traces, s.input.damaged_blocks, s.input.events_lost,
           s.input.uncounted_blocks, s.input.events_dropped);
  j += ",\"verdict\":" + VerdictJson(ComputeVerdict(s));
  size_t ranks_left_out = 0;
  j += ",\"ranks\":" + (s.rank_figures.empty() ? JsonMap(s.ranks, [](int32_t r) {
         return "\"" + std::to_string(r) + "\"";
       }) : JsonRanks(s, top, options.details, &ranks_left_out));
  size_t processes_left_out = 0;
  j += ",\"processes_stats\":" + JsonProcesses(s, top, options.details, &processes_left_out);
  j += JsonFiles(s, top, options.details, processes_left_out, ranks_left_out);
  j += JsonTimelines(s, top);
  j += JsonContext(s);
  if (!s.rank_figures.empty()) j += RankJobJson(s.rank_job);
  j += CollectiveWaitsJson(s.collective_waits);
  j += Fmt(",\"mpi_imbalance\":%.4f,\"gpu\":", MpiImbalance(s).imbalance);
  return j + JsonGpu(s) + "}";
}

}  // namespace dlprof::analysis
