// The per-rank section of the text summary (summary_ranks_text.h).
#include "tools/dump/summary_ranks_text.h"

#include <algorithm>
#include <cinttypes>
#include <map>
#include <vector>

#include "lib/analysis/findings/verdict.h"
#include "lib/text/text.h"

namespace dlprof::dump {
using namespace dlprof::text;
namespace {

void Distribution(const char* what, const RankDistribution& d, std::string* out) {
  *out += Fmt("  %-15s total %s; over ranks min %s, median %s, max %s", what,
              SecondsText(d.total_ns).c_str(), SecondsText(d.min_ns).c_str(),
              SecondsText(d.median_ns).c_str(), SecondsText(d.max_ns).c_str());
  if (!d.top.empty()) {
    *out += "; most:";
    for (size_t i = 0; i < d.top.size(); ++i) {
      *out += Fmt("%s rank %d (%s)", i ? "," : "", d.top[i].first,
                  SecondsText(d.top[i].second).c_str());
    }
  }
  *out += "\n";
}

// How many steps each rank's loader was the slowest in, most first.
std::string SlowestCounts(const RankJobFigures& job) {
  std::map<int32_t, uint64_t> by_rank;
  for (const SlowestLoader& s : job.slowest_loader_per_step) ++by_rank[s.rank];
  std::vector<std::pair<int32_t, uint64_t>> v(by_rank.begin(), by_rank.end());
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  std::string text;
  for (size_t i = 0; i < v.size() && i < 5; ++i) {
    text += Fmt("%s rank %d in %" PRIu64, i ? "," : "", v[i].first, v[i].second);
  }
  if (v.size() > 5) text += Fmt(", %zu more ranks", v.size() - 5);
  return text + Fmt(" of %zu steps", job.slowest_loader_per_step.size());
}

// A rank's batch wait's largest cause and its share ("reading 81.0 %"),
// "-" where it did not wait.
std::string CauseText(const RankFigures& r) {
  if (r.batch_wait_ns == 0) return "-";
  const uint64_t parts[] = {r.reading_ns, r.preprocessing_ns, r.handover_ns, r.worker_startup_ns};
  const WaitCause c = LargestCause(parts[0], parts[1], parts[2], parts[3]);
  return std::string(WaitCauseText(c)) + " " +
         PerMilleText(PerMille(parts[static_cast<int>(c)], r.batch_wait_ns));
}

}  // namespace

void TextRanks(const Summary& s, size_t max_rows, std::string* out) {
  if (s.rank_figures.empty()) return;
  const RankJobFigures& job = s.rank_job;
  *out += Fmt("\nPer rank (%zu ranks; batch wait: the rank's main process waiting for a batch%s)\n",
              s.rank_figures.size(), job.gpu ? "; data stall: I/O while its GPUs idled" : "");
  if (job.slowest_loader_rank >= 0) {
    const RankFigures* slow = nullptr;
    for (const RankFigures& r : s.rank_figures) {
      if (r.rank == job.slowest_loader_rank &&
          (slow == nullptr || r.batch_wait_ns > slow->batch_wait_ns)) {
        slow = &r;
      }
    }
    *out += Fmt("  slowest loader: rank %d on %s, %s of batch wait (median rank %s)\n",
                slow->rank, slow->host.c_str(), SecondsText(slow->batch_wait_ns).c_str(),
                SecondsText(job.batch_wait.median_ns).c_str());
    if (!job.slowest_loader_per_step.empty()) {
      *out += "  slowest loader per step:" + SlowestCounts(job) + "\n";
    }
  }
  if (job.batch_wait.total_ns > 0) {
    Distribution("batch wait", job.batch_wait, out);
  } else {
    *out += "  batch wait: none recorded (no load_batch regions of dlprof.annotate_loader; "
            "--batch-region names another)\n";
  }
  if (job.gpu) {  // both need GPU work
    Distribution("data stall", job.data_stall, out);
    Distribution("straggler loss", job.straggler_loss, out);
  }
  if (job.hosts.size() > 1) {
    for (const HostRanks& h : job.hosts) {
      *out += Fmt("  host %s: %" PRIu64 " ranks, batch wait %s", h.host.c_str(), h.ranks,
                  SecondsText(h.batch_wait_ns).c_str());
      if (job.gpu) {
        *out += Fmt(", data stall %s, GPU busy %s (communication %s), idle %s, straggler loss %s",
                    SecondsText(h.data_stall_ns).c_str(), SecondsText(h.gpu_busy_ns).c_str(),
                    SecondsText(h.gpu_communication_ns).c_str(), SecondsText(h.gpu_idle_ns).c_str(),
                    SecondsText(h.straggler_loss_ns).c_str());
      }
      *out +=
          Fmt("; I/O %s, read %s\n", SecondsText(h.io_ns).c_str(), ByteText(h.read_bytes).c_str());
    }
  }
  // By batch wait, longest first; ties by rank.
  std::vector<const RankFigures*> rows;
  for (const RankFigures& r : s.rank_figures) rows.push_back(&r);
  std::stable_sort(rows.begin(), rows.end(), [](const RankFigures* a, const RankFigures* b) {
    return a->batch_wait_ns > b->batch_wait_ns;
  });
  // The batch wait's largest cause, where any rank waited.
  auto cause_column = [&](const std::string& text) {
    return job.batch_wait.total_ns > 0 ? Fmt(" %-22s", text.c_str()) : std::string();
  };
  if (job.gpu) {
    *out += Fmt("  %5s %-16s %6s %13s%s %13s %13s %13s %13s %13s %13s %13s %13s %10s %13s\n",
                "rank", "host", "steps", "batch wait", cause_column("largest cause").c_str(),
                "(GPU idle)", "data stall", "GPU busy", "compute", "communic.", "memory",
                "GPU idle", "I/O time", "read", "stragglers");
  } else {
    *out += Fmt("  %5s %-16s %6s %13s%s %13s %10s\n", "rank", "host", "steps", "batch wait",
                cause_column("largest cause").c_str(), "I/O time", "read");
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    if (i == max_rows) {
      *out += Fmt("  ... %zu more ranks (--top N shows N; --details lists all)\n",
                  rows.size() - max_rows);
      break;
    }
    const RankFigures& r = *rows[i];
    if (!job.gpu) {
      *out += Fmt("  %5d %-16s %6zu %13s%s %13s %10s\n", r.rank, r.host.c_str(), r.steps.size(),
                  SecondsText(r.batch_wait_ns).c_str(), cause_column(CauseText(r)).c_str(),
                  SecondsText(r.io_ns).c_str(), ByteText(r.read_bytes).c_str());
      continue;
    }
    auto gpu = [&](uint64_t ns) { return r.gpu ? SecondsText(ns) : std::string("-"); };
    *out +=
        Fmt("  %5d %-16s %6zu %13s%s %13s %13s %13s %13s %13s %13s %13s %13s %10s %13s\n", r.rank,
            r.host.c_str(), r.steps.size(), SecondsText(r.batch_wait_ns).c_str(),
            cause_column(CauseText(r)).c_str(), gpu(r.batch_wait_gpu_idle_ns).c_str(),
            gpu(r.data_stall_ns).c_str(), gpu(r.gpu_busy_ns).c_str(), gpu(r.gpu_compute_ns).c_str(),
            gpu(r.gpu_communication_ns).c_str(), gpu(r.gpu_memory_ns).c_str(),
            gpu(r.gpu_idle_ns()).c_str(), SecondsText(r.io_ns).c_str(),
            ByteText(r.read_bytes).c_str(), gpu(r.straggler_loss_ns).c_str());
  }
}

}  // namespace dlprof::dump
