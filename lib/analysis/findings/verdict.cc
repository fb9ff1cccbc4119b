// The verdict's figures (verdict.h; docs/ANALYSIS.md, "Verdict"): the loop
// measured over the ranks (MeasureLoop), the names of its bound and basis,
// and the verdict put together from them. The rules that judge the figures,
// and their thresholds, are in verdict_rules.cc.
#include "lib/analysis/findings/verdict.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "lib/analysis/summary/rank_figures.h"
#include "lib/text/text.h"

namespace dlprof::analysis {
using namespace dlprof::text;
namespace {

// A finding worth under 1 % of the loop is not shown (docs/ANALYSIS.md,
// "Verdict").
constexpr uint64_t kShownFindingPerMille = 10;
// A step loop's unseen wait that could reach the data bound's share
// (verdict_rules.cc, kBatchWaitPerMille: 10 %) leaves its wait unmeasured.
constexpr uint64_t kUnmeasuredPerMille = 100;

// The loaders that waited longest, in order of their number; the others
// counted (Verdict::kListedLoaders).
void KeepLongestLoaderWaits(Verdict* v) {
  std::vector<LoaderWait>& w = v->loader_waits;
  if (w.size() <= Verdict::kListedLoaders) return;
  std::stable_sort(w.begin(), w.end(),
                   [](const LoaderWait& a, const LoaderWait& b) { return a.ns > b.ns; });
  for (size_t i = Verdict::kListedLoaders; i < w.size(); ++i) {
    ++v->loaders_left_out;
    v->loaders_left_out_ns += w[i].ns;
  }
  w.resize(Verdict::kListedLoaders);
  std::stable_sort(w.begin(), w.end(),
                   [](const LoaderWait& a, const LoaderWait& b) { return a.loader < b.loader; });
}

void MeasureLoop(const Summary& s, Verdict* v) {
  const std::vector<const RankFigures*> groups = LoopGroups(s);
  bool any_loop = false;
  for (const RankFigures* r : groups) any_loop |= r->loop;
  for (const RankFigures* r : groups) {
    const uint64_t window = r->gpu ? r->gpu_last_ns - r->gpu_first_ns : 0;
    if (any_loop && r->loop) {
      v->loop_ns += r->loop_ns();
      v->loop_steps += r->loop_steps();
      v->optimizer_steps |= r->optimizer_steps > 0;
      v->startup_ns += r->startup_ns();
      v->startup_io_ns += r->startup_io_ns;
      v->startup_io_ops += r->startup_io_ops;
      v->startup_read_bytes += r->startup_read_bytes;
      v->startup_map_ns += r->startup_map_ns, v->startup_map_bytes += r->startup_map_bytes;
    } else if (!any_loop) {
      v->loop_ns += window;
    }
    const CheckpointFigures& c = r->checkpoint;
    v->has_checkpoint |= c.saves > 0;
    v->checkpoint.Add(c);
    if (r->loop && r->loop_of_steps) {
      v->steps_unjoined_ns += r->steps_unjoined_ns;
      v->other_threads_io_ns += r->other_threads_io_ns;
      v->steps_map_live_ns += r->steps_map_live_ns;
    }
    if (!r->steps.empty()) {
      v->has_batch_wait = true;
      v->split = true;
      v->reading_ns += r->reading_ns;
      v->reading_faults_ns += r->reading_faults_ns, v->handover_faults_ns += r->handover_faults_ns;
      v->preprocessing_ns += r->preprocessing_ns;
      v->handover_ns += r->handover_ns;
      v->worker_startup_ns += r->worker_startup_ns;
      v->head_of_line_ns += r->head_of_line_ns;
      v->out_of_order_wait_ns += r->out_of_order_wait_ns;
      v->handover_in_worker_ns += r->handover_in_worker_ns;
      v->handover_in_transit_ns += r->handover_in_transit_ns;
      v->handover_rebuild_ns += r->handover_rebuild_ns;
      for (size_t c = 0; c < kHandoverCauseSlots; ++c) {
        v->handover_cause_ns[c] += r->handover_cause_ns[c];
      }
      v->late_batches.insert(v->late_batches.end(), r->late_batches.begin(), r->late_batches.end());
      AddPreprocessingParts(r->preprocessing_parts, &v->preprocessing_parts);
      const WorkerFigures& w = r->workers;
      if (w.fetches > 0 && w.cpu_fetches == w.fetches) {
        v->fetch_work_ns += w.fetch_ns - std::min(w.fetch_io_ns, w.fetch_ns);
        v->fetch_cpu_ns += w.fetch_cpu_ns;
      }
      v->startup_after_first_pass_ns += r->startup_after_first_pass_ns;
      v->pass_end_shutdown_ns += r->pass_end_shutdown_ns;
      v->pass_end_leftover_ns += r->pass_end_leftover_ns;
      v->rebuilt_persistent_ns += r->rebuilt_persistent_ns;
      for (const LoaderWait& w : r->loader_waits) {
        AddLoaderWait(&v->loader_waits, w.loader, w.ns, w.batches, w.site, w.persistent_save_ns,
                      w.rebuilt_ns, w.made_anew_ns);
      }
      if (v->pass_worker_startup_ns.size() < r->pass_worker_startup_ns.size()) {
        v->pass_worker_startup_ns.resize(r->pass_worker_startup_ns.size());
      }
      for (size_t pass = 0; pass < r->pass_worker_startup_ns.size(); ++pass) {
        v->pass_worker_startup_ns[pass] += r->pass_worker_startup_ns[pass];
      }
      v->batch_wait_ns += r->batch_wait_ns;
      v->wait_loop_ns += r->loop_ns();
      v->steps += r->batches();
      v->raised += r->raised();
    }
    if (r->gpu) {
      v->has_gpu = true;
      v->data_stall_ns += r->data_stall_ns;
      v->gpu_window_ns += window;
      const uint64_t busy = r->gpu_busy_ns - std::min(r->gpu_busy_ns, r->gpu_busy_before_loop_ns);
      v->gpu_busy_ns += r->loop ? std::min(busy, r->loop_ns()) : r->gpu_busy_ns;
    }
  }
  for (size_t c = 1; c < kHandoverCauseSlots; ++c) {
    if (v->handover_cause_ns[c] > v->handover_cause_ns[static_cast<size_t>(v->handover_cause)]) {
      v->handover_cause = static_cast<HandoverCause>(c);
    }
  }
  if (v->handover_cause_ns[static_cast<size_t>(v->handover_cause)] == 0) {
    v->handover_cause = HandoverCause::kNone;
  }
  std::stable_sort(
      v->late_batches.begin(), v->late_batches.end(),
      [](const LateBatch& a, const LateBatch& b) { return a.head_of_line_ns > b.head_of_line_ns; });
  if (v->late_batches.size() > kKeptLateBatches) v->late_batches.resize(kKeptLateBatches);
  KeepLongestLoaderWaits(v);
  bool dataloader = false;
  for (const RankFigures* r : groups) dataloader |= r->loop && !r->loop_of_steps;
  v->loop_basis = dataloader  ? LoopBasis::kDataLoader
                  : any_loop  ? LoopBasis::kSteps
                  : v->has_gpu ? LoopBasis::kGpu
                               : LoopBasis::kRun;
  if (v->loop_basis == LoopBasis::kRun) v->loop_ns = v->run_ns;
  if (!groups.empty()) return;
  // No group measured (a summary built without the rank meter): the batch
  // region's summed length against the run.
  for (const RegionStats& r : s.regions) {
    if (!r.outside && r.name == s.batch_region && r.instances > 0) {
      v->has_batch_wait = true;
      v->batch_wait_ns = r.region_ns;
      v->wait_loop_ns = v->run_ns;
      v->steps = r.instances;
    }
  }
  if (!s.gpus.empty()) {
    v->has_gpu = true;
    v->data_stall_ns = s.data_stall_ns;
    v->gpu_window_ns = s.gpu_last_ns - s.gpu_first_ns;
    v->gpu_busy_ns = s.gpu_busy_ns;
  }
  v->loop_basis = v->has_gpu && !v->has_batch_wait ? LoopBasis::kGpu : LoopBasis::kRun;
  v->loop_ns = v->loop_basis == LoopBasis::kGpu ? v->gpu_window_ns : v->run_ns;
}

std::string WhyNoBatchWait(const Summary& s) {
  for (const auto& [key, p] : s.process_ids) {
    if (p.python_isolated) {
      return "Python ran with -I, -E or -S (" + key +
             "), which keep dlprof's PyTorch bootstrap out: run it without them, or annotate "
             "the loader (dlprof.annotate_loader)";
    }
  }
  return "no DataLoader iteration seen (no torch.utils.data, DLPROF_PYTHON=0, or another "
         "loader: annotate it with dlprof.annotate_loader)";
}

}  // namespace

// A loop of steps whose measured wait is under the data bound's share while
// what it cannot see could reach it (docs/ANALYSIS.md, "Loops without a
// DataLoader"): other threads read data files for at least that share of
// the loop and longer than the loop's own reading (a prefetcher: the loop
// waits in a queue's get(), no I/O), or the steps' reads lie spread over at
// least that share beyond the wait (work between reads further apart than
// the join: a sort after each read), or a data file's map is live in a
// stepping process for at least that share (copies out of its pages in
// memory take no call and no fault: a np.memmap's get_batch at 33 % of the
// loop by its clock, a wait of 0). Why, or "" where the wait stands.
std::string StepUnmeasured(const Verdict& v) {
  if (v.loop_basis != LoopBasis::kSteps || !v.has_batch_wait || v.loop_ns == 0) return "";
  const uint64_t share = kUnmeasuredPerMille;
  if (v.wait_per_mille() >= share) return "";
  if (PerMille(v.other_threads_io_ns, v.loop_ns) >= share &&
      v.other_threads_io_ns > v.batch_wait_ns) {
    return Fmt("data read on another thread (a prefetcher): threads that never stepped read "
               "data files for %s of the %s loop (calls less than 1 ms apart joined, as a "
               "step's), the stepping thread %s; the loop's wait "
               "for them (a queue's get()) is no I/O: annotate it "
               "(dlprof.region(\"%s\") around the get(), or dlprof.annotate_loader)",
               DurationText(v.other_threads_io_ns).c_str(), DurationText(v.loop_ns).c_str(),
               DurationText(v.batch_wait_ns).c_str(), v.batch_region.c_str());
  }
  if (PerMille(v.steps_unjoined_ns, v.loop_ns) >= share) {
    return Fmt("the fetch's own work is not measured: each step's data reads lie spread out, "
               "%s between them beyond the %s counted (CPU work between reads more than 1 ms "
               "apart); mark the fetch (dlprof.region(\"%s\") around it, or "
               "dlprof.annotate_loader)",
               DurationText(v.steps_unjoined_ns).c_str(), DurationText(v.batch_wait_ns).c_str(),
               v.batch_region.c_str());
  }
  if (PerMille(v.steps_map_live_ns, v.loop_ns) >= share) {
    return Fmt("data read through a memory map: a data file's map was live for %s of the %s "
               "loop, and copies out of its pages already in memory take no call and no page "
               "fault (the wait measured %s); mark the fetch (dlprof.region(\"%s\") around "
               "it, or dlprof.annotate_loader)",
               DurationText(v.steps_map_live_ns).c_str(), DurationText(v.loop_ns).c_str(),
               DurationText(v.batch_wait_ns).c_str(), v.batch_region.c_str());
  }
  return "";
}

void MarkStepUnmeasured(Verdict* v) {
  const std::string unmeasured = StepUnmeasured(*v);
  if (unmeasured.empty()) return;
  v->has_batch_wait = false, v->wait_unmeasured = true;
  v->batch_wait_missing = unmeasured;
  v->bound = Bound::kUnknown;
}

// The loop's figures per rank: the ranks', or the job's one group.
std::vector<const RankFigures*> LoopGroups(const Summary& s) {
  std::vector<const RankFigures*> out;
  for (const RankFigures& r : s.rank_figures) out.push_back(&r);
  if (out.empty() && s.has_unranked_group) out.push_back(&s.unranked_group);
  return out;
}

const char* BoundName(Bound b) {
  switch (b) {
    case Bound::kData: return "data";
    case Bound::kCheckpoint: return "checkpoint";
    case Bound::kHost: return "host";
    case Bound::kNeither: return "neither";
    case Bound::kUnknown: break;
  }
  return "unknown";
}

const char* LoopBasisName(LoopBasis b) {
  switch (b) {
    case LoopBasis::kDataLoader: return "dataloader";
    case LoopBasis::kSteps: return "steps";
    case LoopBasis::kGpu: return "gpu";
    case LoopBasis::kRun: break;
  }
  return "run";
}

void KeepFindings(std::vector<Finding> f, Verdict* v) {
  f.erase(std::remove_if(f.begin(), f.end(),
                         [&](const Finding& x) {
                           return v->loop_ns > 0 &&
                                  PerMille(x.cost_ns, v->loop_ns) < kShownFindingPerMille;
                         }),
          f.end());
  // Waiting for data, the batch wait's finding leads and those that explain
  // its cause follow it (docs/ANALYSIS.md, "Where the wait goes").
  const bool by_cause = v->bound == Bound::kData && v->split;
  auto group = [&](const Finding& x) {
    return !by_cause ? 0 : x.rule == "batch_wait" ? 0 : ExplainsCause(x.rule, v->cause) ? 1 : 2;
  };
  std::stable_sort(f.begin(), f.end(), [&](const Finding& a, const Finding& b) {
    return group(a) != group(b) ? group(a) < group(b) : a.cost_ns > b.cost_ns;
  });
  if (f.size() > kMaxFindings) f.resize(kMaxFindings);
  v->findings = std::move(f);
}

Verdict ComputeVerdict(const Summary& s) {
  Verdict v;
  v.batch_region = s.batch_region;
  v.run_ns = s.run_end_ns > s.run_start_ns ? s.run_end_ns - s.run_start_ns : 0;
  MeasureLoop(s, &v);
  v.lockstep = FindLockstep(s);
  if (!v.has_batch_wait) v.batch_wait_missing = WhyNoBatchWait(s);
  v.cause = LargestCause(v.reading_ns, v.preprocessing_ns, v.handover_ns, v.worker_startup_ns);
  v.bound = BoundOf(v);
  MarkStepUnmeasured(&v);
  v.roles = RoleShares(s);
  FindBadEnds(s, &v);
  // A worker exec'd where its first image was no fork (spawn's fork and
  // exec untraced in between) or it ran a second one.
  for (const auto& [key, role] : ProcessRoles(s)) {
    auto p = s.process_ids.find(key);
    if (role != "loader workers" || p == s.process_ids.end()) continue;
    if (!p->second.forked || p->second.execed) {
      v.worker_start = Verdict::WorkerStart::kExeced;
      break;
    }
    v.worker_start = Verdict::WorkerStart::kForked;
  }
  // The findings, most costly first; those worth under 1 % of the loop are
  // not among them.
  std::vector<Finding> f;
  AllFindings(s, v, &f);
  KeepFindings(std::move(f), &v);
  return v;
}

}  // namespace dlprof::analysis
