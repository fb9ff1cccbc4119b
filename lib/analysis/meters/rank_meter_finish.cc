// RankMeter (rank_meter.h): the figures once the stream has ended -- the
// loop's window, the data stall inside it, each batch wait's split by
// cause, what the saves took -- from what the pass kept.
#include <algorithm>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "lib/analysis/meters/out_of_order.h"
#include "lib/analysis/meters/rank_meter.h"
#include "lib/analysis/summary/intervals.h"

namespace dlprof::analysis {

void RankMeter::TakeFetchParts() {
  RankFigures& f = figures_;
  f.passes = passes_;
  const std::vector<std::string>& names = fetch_parts_.part_names();
  const std::vector<uint64_t>& ns = causes_.part_ns();
  for (size_t part = 0; part < ns.size() && part < names.size(); ++part) {
    if (ns[part] > 0) f.preprocessing_parts.emplace_back(names[part], ns[part]);
  }
  std::stable_sort(f.preprocessing_parts.begin(), f.preprocessing_parts.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  // The slowest samples, by loader and index, each in its loader's pass.
  f.late_batches = causes_.late_batches();
  f.slowest_samples =
      loader_passes_.Slowest(fetch_parts_.SlowestSamples(), kKeptSlowSamples, &f.late_batches);
}

std::vector<bool> RankMeter::PassesContinued() const {
  std::vector<bool> continued(pass_marks_.size(), false);
  std::unordered_set<uint64_t> later;  // L whose next pass (by a later mark) continues it
  for (size_t p = pass_marks_.size(); p-- > 0;) {
    const PassMark& m = pass_marks_[p];
    if (!m.marked) continue;
    continued[p] = later.count(m.loader_key) > 0;
    if (m.later) {
      later.insert(m.loader_key);
    } else {
      later.erase(m.loader_key);  // pass=0: a DataLoader begun anew
    }
  }
  return continued;
}

RankFigures RankMeter::Finish(IntervalList* stall_pieces) {
  Advance(UINT64_MAX);
  RankFigures& f = figures_;
  // The open burst starts after the last closed one's end (Union joins
  // what touches): appended as it is, unless empty.
  if (comm_.open && comm_.current.end > comm_.current.start) {
    f.communication.emplace_back(comm_.current.start, comm_.current.end);
  }
  f.gpu_busy_ns = busy_.Length();
  if (busy_.open) {
    SpreadOverSeconds(timeline_base_ns_, busy_.current.start, busy_.current.end,
                      &f.gpu_busy_per_second);
  }
  f.gpu_communication_ns = comm_.Length();
  f.gpu_compute_ns = compute_or_comm_.Length() - f.gpu_communication_ns;
  f.gpu_memory_ns = f.gpu_busy_ns - compute_or_comm_.Length();
  std::sort(f.devices.begin(), f.devices.end());
  // No batch waited for but optimizer steps: the loop is the steps.
  const bool of_steps = f.steps.empty() && step_loop_.any_step();
  if (of_steps) TakeStepLoop();
  // The loop ends with its last step: an optimizer step, a batch wait, or
  // annotate_loader's step after it.
  if (f.loop && !of_steps) f.loop_end_ns = std::max(f.loop_end_ns, loop_steps_end_);
  if (f.loop) TakeProcessLoops(of_steps);
  SetLoopUnkept();
  // A checkpoint saved right after the last step (every N steps) ends it.
  const uint64_t step_ns = f.loop && f.loop_steps() > 0 ? f.loop_ns() / f.loop_steps() : 0;
  if (f.loop) f.loop_end_ns = checkpoints_.LoopEnd(f.loop_end_ns, step_ns, loop_threads_);
  SetLoopUnkept();  // the window a save ended
  // Data stall: the stall pieces inside the GPU's window and the loop.
  const uint64_t from = f.loop ? f.loop_start_ns : 0;
  const uint64_t to = f.loop ? std::min(f.gpu_last_ns, f.loop_end_ns) : f.gpu_last_ns;
  IntervalList stall;
  for (const auto& [piece_start, e] : stall_) {
    const uint64_t s = std::max(piece_start, from);
    const uint64_t hi = std::min(e, to);
    if (hi > s) {
      stall.emplace_back(s, hi);
      f.data_stall_ns += hi - s;
      AddToSteps(s, hi, &RankStep::data_stall_ns, &f.steps);
    }
  }
  f.checkpoint =
      checkpoints_.Finish(f.loop, f.loop_start_ns, f.loop_end_ns, step_ns, loop_threads_);
  const std::vector<WaitSplit> splits = causes_.Finish();
  const std::vector<bool> continued = PassesContinued();
  for (size_t i = 0; i < f.steps.size() && !of_steps; ++i) {
    const auto [s, e] = batch_waits_[i];
    RankStep& step = f.steps[i];
    uint64_t persistent_save = 0;  // (this step's, for its loader's figure)
    uint64_t rebuilt = 0;          // (its part of rebuilt_persistent_ns)
    step.batch_wait_ns = e - s;
    const PassMark mark = step.pass < pass_marks_.size() ? pass_marks_[step.pass] : PassMark{};
    if (i < splits.size()) {
      step.reading_ns = splits[i].reading_ns;
      step.preprocessing_ns = splits[i].preprocessing_ns;
      step.handover_ns = splits[i].handover_ns;
      step.worker_startup_ns = splits[i].worker_startup_ns;
      step.head_of_line_ns = splits[i].head_of_line_ns;
      f.reading_faults_ns += splits[i].reading_faults_ns;
      f.handover_faults_ns += splits[i].handover_faults_ns;
      // The hand-over no worker's batch explains (the loader's own
      // machinery, a pass's end, pinning) is the main process's: rebuild.
      const HandoverSplit& h = splits[i].handover;
      const uint64_t worker_side = std::min(step.handover_ns, h.in_worker_ns + h.in_transit_ns);
      f.handover_in_worker_ns += std::min(h.in_worker_ns, worker_side);
      f.handover_in_transit_ns += worker_side - std::min(h.in_worker_ns, worker_side);
      f.handover_rebuild_ns += step.handover_ns - worker_side;
      // The pass's end where its workers were not persistent: torch shut
      // them down while the loop waited (its own figure, no batch's cause).
      // Persistent workers would save it -- but for the batches a pass left
      // early was still fetching, which they would finish at the start of
      // the DataLoader's next pass, where one follows (3 passes left early,
      // 300 ms of leftover each: 980 ms "saved" where the loop's clock said
      // 417).
      if (step.request == StepRequest::kEnd && mark.marked && !mark.persistent) {
        const bool paid_again = step.pass < continued.size() && continued[step.pass];
        const uint64_t leftover =
            paid_again ? std::min(step.handover_ns, splits[i].leftover_ns) : 0;
        f.pass_end_shutdown_ns += step.handover_ns;
        f.pass_end_leftover_ns += leftover;
        persistent_save += step.handover_ns - leftover;
      } else if (step.request == StepRequest::kEnd && i < step_shutdowns_.size() &&
                 step_shutdowns_[i] && !mark.later) {
        // Persistent workers shut down in the loop after their DataLoader's
        // one pass: it was made anew. (After several, a k-fold's loader a
        // fold: the loader's machinery, as any hand-over.)
        rebuilt += step.handover_ns;
      } else {
        f.handover_cause_ns[static_cast<int>(h.cause)] += step.handover_ns;
      }
    }
    f.head_of_line_ns += step.head_of_line_ns;
    f.reading_ns += step.reading_ns;
    f.preprocessing_ns += step.preprocessing_ns;
    f.handover_ns += step.handover_ns;
    f.worker_startup_ns += step.worker_startup_ns;
    if (step.pass >= f.pass_worker_startup_ns.size()) {
      f.pass_worker_startup_ns.resize(step.pass + 1);
    }
    f.pass_worker_startup_ns[step.pass] += step.worker_startup_ns;
    // A loader's later passes (by the bootstrap's marks; without them, every
    // pass after the first), and those of a DataLoader made anew each pass:
    // what persistent workers would not start again (there, in one
    // DataLoader kept across the passes).
    const bool repeated =
        marked_passes_ ? (mark.later || mark.anew) && !mark.persistent : step.pass >= 2;
    if (repeated) {
      f.startup_after_first_pass_ns += step.worker_startup_ns;
      persistent_save += step.worker_startup_ns;
    }
    const uint64_t made_anew = mark.anew ? step.worker_startup_ns : 0;
    if (mark.rebuilt) rebuilt += step.worker_startup_ns;
    f.rebuilt_persistent_ns += rebuilt;
    AddLoaderWait(&f.loader_waits, i < step_loaders_.size() ? step_loaders_[i] : -1,
                  step.batch_wait_ns, step.request == StepRequest::kBatch, std::string(),
                  persistent_save, rebuilt, made_anew);
    if (mark.later && mark.persistent) f.resumed_startup_ns += step.worker_startup_ns;
    // GPU busy lies inside the window: the window's part less the busy part.
    const uint64_t in_window = f.gpu ? Overlap(s, e, f.gpu_first_ns, f.gpu_last_ns) : 0;
    step.batch_wait_gpu_idle_ns = in_window - std::min(in_window, step_covered_[i]);
    f.batch_wait_ns += step.batch_wait_ns;
    f.batch_wait_gpu_idle_ns += step.batch_wait_gpu_idle_ns;
  }
  // The batch waits had each batch been handed over as soon as it was made
  // (in_order=False), pass by pass (out_of_order.h).
  std::vector<BatchTiming> pass;
  uint64_t saved = 0;
  for (size_t i = 0; i <= f.steps.size() && !of_steps; ++i) {
    if (i == f.steps.size() || (!pass.empty() && f.steps[i].pass != f.steps[i - 1].pass)) {
      saved += OutOfOrderSaving(pass);
      pass.clear();
      if (i == f.steps.size()) break;
    }
    if (f.steps[i].request != StepRequest::kBatch || i >= splits.size()) continue;
    const auto [s, e] = batch_waits_[i];
    pass.push_back({s, e, splits[i].fetch_start_ns, splits[i].made_ns, splits[i].maker});
  }
  f.out_of_order_wait_ns = f.batch_wait_ns - std::min(f.batch_wait_ns, saved);
  for (LoaderWait& w : f.loader_waits) {
    auto site = loader_sites_.find(w.loader);
    if (site != loader_sites_.end()) w.site = site->second;
  }
  TakeFetchParts();
  // Batch waits of several main processes may overlap: the union.
  IntervalList waits = batch_waits_;
  std::sort(waits.begin(), waits.end());
  f.waiting = UnionOf(UnionOf(waits, {}), stall);
  if (stall_pieces != nullptr) *stall_pieces = std::move(stall);
  return std::move(figures_);
}

}  // namespace dlprof::analysis
