// The per-rank figures as JSON (rank_json.h).
#include "lib/analysis/json/rank_json.h"

#include <algorithm>
#include <cinttypes>

#include "lib/text/text.h"

namespace dlprof::analysis {
using namespace dlprof::text;
namespace {

std::string DistributionJson(const RankDistribution& d) {
  std::string j = Fmt("{\"total_ns\":%" PRIu64 ",\"min_ns\":%" PRIu64 ",\"median_ns\":%" PRIu64
                      ",\"max_ns\":%" PRIu64 ",\"top\":[",
                      d.total_ns, d.min_ns, d.median_ns, d.max_ns);
  for (size_t i = 0; i < d.top.size(); ++i) {
    j += Fmt("%s{\"rank\":%d,\"ns\":%" PRIu64 "}", i ? "," : "", d.top[i].first, d.top[i].second);
  }
  return j + "]}";
}

// `series` summed `bin_s` seconds a bin, as a JSON array.
std::string Binned(const std::vector<uint64_t>& series, uint64_t bin_s) {
  std::string j = "[";
  for (size_t i = 0; i < series.size(); i += bin_s) {
    uint64_t sum = 0;
    for (size_t k = i; k < series.size() && k < i + bin_s; ++k) sum += series[k];
    j += Fmt("%s%" PRIu64, i ? "," : "", sum);
  }
  return j + "]";
}

}  // namespace

uint64_t RankTimelineBin(const std::vector<RankFigures>& ranks) {
  size_t longest = 0;
  for (const RankFigures& r : ranks) {
    longest = std::max({longest, r.read_per_second.size(), r.gpu_busy_per_second.size()});
  }
  return std::max<uint64_t>(1, (longest + kRankTimelineBins - 1) / kRankTimelineBins);
}

std::string RankFieldsJson(const RankFigures& r, uint64_t bin_s, bool series) {
  std::string j = Fmt("\"rank\":%d,\"host\":%s,\"processes\":%" PRIu64 ",\"devices\":[", r.rank,
                      JsonString(r.host).c_str(), r.processes);
  for (size_t i = 0; i < r.devices.size(); ++i) j += Fmt("%s%d", i ? "," : "", r.devices[i]);
  j += Fmt(
      "],\"batch_wait_ns\":%" PRIu64 ",\"reading_ns\":%" PRIu64 ",\"preprocessing_ns\":%" PRIu64
      ",\"handover_ns\":%" PRIu64 ",\"worker_startup_ns\":%" PRIu64 ",\"head_of_line_ns\":%" PRIu64
      ",\"batch_wait_gpu_idle_ns\":%" PRIu64 ",\"data_stall_ns\":%" PRIu64
      ",\"gpu_busy_ns\":%" PRIu64 ",\"gpu_compute_ns\":%" PRIu64
      ",\"gpu_communication_ns\":%" PRIu64 ",\"gpu_memory_ns\":%" PRIu64 ",\"gpu_idle_ns\":%" PRIu64
      ",\"gpu_first_ns\":%" PRIu64 ",\"gpu_last_ns\":%" PRIu64 ",\"io_ns\":%" PRIu64
      ",\"io_ops\":%" PRIu64 ",\"read_bytes\":%" PRIu64 ",\"straggler_loss_ns\":%" PRIu64
      ",\"loop_ns\":%" PRIu64 ",\"startup_ns\":%" PRIu64 ",\"optimizer_steps\":%" PRIu64,
      r.batch_wait_ns, r.reading_ns, r.preprocessing_ns, r.handover_ns, r.worker_startup_ns,
      r.head_of_line_ns, r.batch_wait_gpu_idle_ns, r.data_stall_ns, r.gpu_busy_ns, r.gpu_compute_ns,
      r.gpu_communication_ns, r.gpu_memory_ns, r.gpu_idle_ns(), r.gpu_first_ns, r.gpu_last_ns,
      r.io_ns, r.io_ops, r.read_bytes, r.straggler_loss_ns, r.loop_ns(), r.startup_ns(),
      r.optimizer_steps);
  j += Fmt(",\"collective_wait_ns\":%" PRIu64 ",\"collective_wait_loop_ns\":%" PRIu64
           ",\"collective_late_ns\":%" PRIu64,
           r.collective_wait_ns, r.collective_wait_loop_ns, r.collective_late_ns);
  const CheckpointFigures& c = r.checkpoint;
  j += Fmt(",\"checkpoint\":{\"saves\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"ns\":%" PRIu64
           ",\"blocking_ns\":%" PRIu64 ",\"background_ns\":%" PRIu64 ",\"write_ns\":%" PRIu64
           ",\"restore_ns\":%" PRIu64 ",\"restore_bytes\":%" PRIu64 "}",
           c.saves, c.bytes, c.ns, c.blocking_ns, c.background_ns, c.write_ns, c.restore_ns,
           c.restore_bytes);
  if (!series) return j;
  j += ",\"steps\":[";
  for (size_t i = 0; i < r.steps.size(); ++i) {
    const RankStep& s = r.steps[i];
    j += Fmt("%s{\"step\":%" PRIu64 ",\"request\":\"%s\",\"start_ns\":%" PRIu64
             ",\"batch_wait_ns\":%" PRIu64 ",\"reading_ns\":%" PRIu64
             ",\"preprocessing_ns\":%" PRIu64 ",\"handover_ns\":%" PRIu64
             ",\"worker_startup_ns\":%" PRIu64 ",\"pass\":%" PRIu64 ",\"head_of_line_ns\":%" PRIu64
             ",\"batch_wait_gpu_idle_ns\":%" PRIu64 ",\"data_stall_ns\":%" PRIu64
             ",\"straggler_loss_ns\":%" PRIu64 ",\"collective_wait_ns\":%" PRIu64 "}",
             i ? "," : "", s.step, StepRequestName(s.request), s.start_ns, s.batch_wait_ns,
             s.reading_ns, s.preprocessing_ns, s.handover_ns, s.worker_startup_ns, s.pass,
             s.head_of_line_ns, s.batch_wait_gpu_idle_ns, s.data_stall_ns, s.straggler_loss_ns,
             s.collective_wait_ns);
  }
  return j + Fmt("],\"timeline\":{\"bin_s\":%" PRIu64 ",\"read_bytes\":", bin_s) +
         Binned(r.read_per_second, bin_s) + ",\"gpu_busy_ns\":" +
         Binned(r.gpu_busy_per_second, bin_s) + "}";
}

std::string CollectiveWaitsJson(const CollectiveWaitFigures& c) {
  std::string j = Fmt(",\"collective_waits\":{\"calls\":%" PRIu64 ",\"matched\":%" PRIu64
                      ",\"wait_ns\":%" PRIu64 ",\"loop_wait_ns\":%" PRIu64
                      ",\"startup_wait_ns\":%" PRIu64 ",\"not_kept\":%" PRIu64
                      ",\"kept_per_process\":%" PRIu64 ",\"late_ranks\":[",
                      c.calls, c.matched, c.wait_ns, c.loop_wait_ns, c.startup_wait_ns,
                      c.not_kept, c.kept_per_process);
  for (size_t i = 0; i < c.late_ranks.size(); ++i) {
    j += Fmt("%s{\"rank\":%d,\"ns\":%" PRIu64 "}", i ? "," : "", c.late_ranks[i].first,
             c.late_ranks[i].second);
  }
  return j + "]}";
}

std::string RankJobJson(const RankJobFigures& job) {
  std::string j = ",\"rank_distribution\":{\"batch_wait_ns\":" + DistributionJson(job.batch_wait) +
                  ",\"data_stall_ns\":" + DistributionJson(job.data_stall) +
                  ",\"straggler_loss_ns\":" + DistributionJson(job.straggler_loss) + "}";
  j += ",\"rank_hosts\":[";
  for (size_t i = 0; i < job.hosts.size(); ++i) {
    const HostRanks& h = job.hosts[i];
    j += Fmt("%s{\"host\":%s,\"ranks\":%" PRIu64 ",\"batch_wait_ns\":%" PRIu64
             ",\"data_stall_ns\":%" PRIu64 ",\"straggler_loss_ns\":%" PRIu64
             ",\"gpu_busy_ns\":%" PRIu64 ",\"gpu_compute_ns\":%" PRIu64
             ",\"gpu_communication_ns\":%" PRIu64 ",\"gpu_memory_ns\":%" PRIu64
             ",\"gpu_idle_ns\":%" PRIu64 ",\"io_ns\":%" PRIu64 ",\"read_bytes\":%" PRIu64 "}",
             i ? "," : "", JsonString(h.host).c_str(), h.ranks, h.batch_wait_ns, h.data_stall_ns,
             h.straggler_loss_ns, h.gpu_busy_ns, h.gpu_compute_ns, h.gpu_communication_ns,
             h.gpu_memory_ns, h.gpu_idle_ns, h.io_ns, h.read_bytes);
  }
  j += "]";
  j += Fmt(",\"slowest_loader_rank\":%d,\"slowest_loader_per_step\":[", job.slowest_loader_rank);
  for (size_t i = 0; i < job.slowest_loader_per_step.size(); ++i) {
    const SlowestLoader& s = job.slowest_loader_per_step[i];
    j += Fmt("%s{\"step\":%" PRIu64 ",\"rank\":%d,\"host\":%s,\"batch_wait_ns\":%" PRIu64
             ",\"median_batch_wait_ns\":%" PRIu64 "}",
             i ? "," : "", s.step, s.rank, JsonString(s.host).c_str(), s.batch_wait_ns,
             s.median_batch_wait_ns);
  }
  return j + "]";
}

}  // namespace dlprof::analysis
