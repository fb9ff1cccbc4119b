// RankMeter (rank_meter.h): the loop's figures that Finish takes from a
// loop without a DataLoader (step_loop.h) or, in a job without ranks or a
// rank restarted, from each process's loop (process_loops.h), and its time with no event on
// disk (kept_spans.h).
#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "lib/analysis/meters/rank_meter.h"

namespace dlprof::analysis {

void RankMeter::TakeStepLoop() {
  RankFigures& f = figures_;
  StepLoop::Result r = step_loop_.Finish(f.first_ns);
  AddCacheFills(&r);
  f.loop = true;
  f.loop_of_steps = true;
  f.loop_start_ns = r.loop_start;
  f.loop_end_ns = r.loop_end;
  f.optimizer_steps = r.steps.size();
  f.steps_unjoined_ns = r.unjoined_ns;
  f.other_threads_io_ns = r.other_threads_io_ns;
  f.steps_map_live_ns = r.map_live_ns;
  // Start-up: the I/O before the first step less the loop's first window;
  // the GPU's busy time before the loop, taken (as the window is: FirstPeriod)
  // to be the GPU's busy time by the first step less a step's.
  f.startup_io_ns = steps_startup_.io_ns - std::min(steps_startup_.io_ns, r.first_window_io_ns);
  f.startup_io_ops = steps_startup_.io_ops - std::min(steps_startup_.io_ops, r.first_window_io_ops);
  f.startup_read_bytes =
      steps_startup_.read_bytes - std::min(steps_startup_.read_bytes, r.first_window_read_bytes);
  f.startup_map_ns = steps_startup_.map_ns - std::min(steps_startup_.map_ns, r.first_window_map_ns);
  f.startup_map_bytes =
      steps_startup_.map_bytes - std::min(steps_startup_.map_bytes, r.first_window_map_bytes);
  if (!step_busy_.empty()) {
    const uint64_t first = step_busy_[0];
    const uint64_t period = StepLoop::FirstPeriod(step_busy_);
    f.gpu_busy_before_loop_ns = first - std::min(first, period);
  }
  uint64_t map_ns = 0, copy_ns = 0;
  for (const StepLoop::Step& s : r.steps) {
    RankStep step;
    step.step = f.steps.size() + 1;
    step.start_ns = s.window_start;
    // The wait's reading is its time in data calls; the time between joined
    // calls is the program's own work (decoding, parsing): preprocessing,
    // as its calls making and tearing down maps are (no reading).
    step.batch_wait_ns = s.io_ns;
    step.preprocessing_ns = std::min(s.joined_ns + s.map_ns, s.io_ns);
    map_ns += std::min(s.map_ns, s.io_ns);
    copy_ns += std::min(s.map_copy_ns, s.joined_ns);
    step.reading_ns = s.io_ns - step.preprocessing_ns;
    step.batch_wait_gpu_idle_ns = s.gpu_idle_ns;
    f.steps.push_back(step);
    f.batch_wait_ns += s.io_ns;
    f.reading_ns += step.reading_ns;
    f.preprocessing_ns += step.preprocessing_ns;
    f.reading_faults_ns += s.fault_ns;
    f.batch_wait_gpu_idle_ns += s.gpu_idle_ns;
    // When it waited, for the straggler loss: the span of its reads.
    if (s.io_last > s.io_first) batch_waits_.emplace_back(s.io_first, s.io_last);
    // In a job without ranks, each process's loop is its steps' windows
    // (its threads' together), as a rank's is (TakeProcessLoops). Left out,
    // four such trainers' waits were measured against one window spanning
    // them all: four times their share.
    if (process_loops_) {
      process_loops_->AddStepWindow(static_cast<uint32_t>(s.thread >> 32), s.window_start, s.end);
    }
  }
  // Of the preprocessing of a loop that maps its data, the maps made and
  // torn down, the copies out of the batches' maps and the rest (the
  // verdict's advice: a loop mapping its data file anew each batch, or
  // slicing it a sample at a time).
  AddStepLoopParts(f.preprocessing_ns, map_ns, copy_ns, &f.preprocessing_parts);
}

void RankMeter::AddCacheFills(StepLoop::Result* r) {
  // A save region on a stepping thread whose file the loop loaded as data
  // later (checkpoint_meter.h: samples cached with torch.save in the first
  // epoch, loaded in the next) made the step's sample: its time is the
  // step's batch wait, as the program's clock around its fetch and cache
  // write says (it was counted as checkpoint saves, 29 % of such a loop).
  // Its write calls are data I/O (reading, as the step's calls are), the
  // rest (pickling) the program's own work (preprocessing: joined_ns).
  // Its calls were no data I/O of the window (outputs), so nothing is
  // counted twice. (Its GPU idle part is not measured: the GPU's busy
  // intervals of its time are gone by the end.)
  const std::vector<CheckpointMeter::CacheFill> fills = checkpoints_.CacheFills(r->loop_end);
  if (fills.empty()) return;
  std::unordered_map<uint64_t, std::vector<size_t>> by_thread;  // step indices, by start
  for (size_t i = 0; i < r->steps.size(); ++i) by_thread[r->steps[i].thread].push_back(i);
  for (const CheckpointMeter::CacheFill& fill : fills) {
    auto t = by_thread.find(fill.thread);
    if (t == by_thread.end()) continue;  // a worker's fill: inside its fetch
    // The first step of the thread that starts after the fill began: its
    // window holds the fill where it began after that window's start.
    auto at = std::upper_bound(t->second.begin(), t->second.end(), fill.start,
                               [&](uint64_t v, size_t i) { return v < r->steps[i].start; });
    if (at == t->second.end()) continue;
    StepLoop::Step& step = r->steps[*at];
    if (fill.start < step.window_start) continue;
    const uint64_t ns = std::min(fill.end, step.start) - fill.start;
    step.io_ns += ns;
    step.joined_ns += ns - std::min(ns, fill.write_ns);
    batch_waits_.emplace_back(fill.start, fill.start + ns);
  }
}

void RankMeter::TakeProcessLoops(bool of_steps) {
  // Two or more processes looped (from their batch waits, or where none
  // waited, their steps' windows: TakeStepLoop), in a job without ranks or
  // one after another in a rank: the loop is theirs summed,
  // each ending with a checkpoint saved right after its last step on its
  // own threads, each less its time with no event on disk (kept_spans.h).
  if (!process_loops_ || process_loops_->loops() < 2) return;
  RankFigures& f = figures_;
  const ProcessLoops::Result r = process_loops_->Finish(
      [&](uint32_t p, uint64_t end, uint64_t step_ns) {
        std::unordered_set<uint64_t> threads;
        for (uint64_t t : loop_threads_) {
          if (t >> 32 == p) threads.insert(t);
        }
        return checkpoints_.LoopEnd(end, step_ns, threads);
      },
      [&](uint32_t p, uint64_t start, uint64_t end) { return kept_.Kept({p}, start, end); });
  // A rank's looping processes one after another (its launcher restarted
  // it: torchrun's elastic restarts) run one loop in pieces: the pieces
  // summed, not one window with the dead time between attempts in it
  // (failure detection, rendezvous, start-up: 5.50 s a rank where each
  // process's own clock said 0.31 + 0.74 s). Side by side, they are the
  // rank's one loop, as before.
  if (f.rank >= 0 && r.overlapping) return;
  f.loops = r.loops, f.loops_ns = r.loop_ns, f.loops_startup_ns = r.startup_ns;
  f.loop_unkept_ns = r.unkept_ns;
  f.loop_start_ns = r.start_ns, f.loop_end_ns = std::max(f.loop_end_ns, r.end_ns);
  f.optimizer_steps = r.optimizer_steps;
  // A loop of steps keeps its start-up's I/O (TakeStepLoop): the I/O before
  // its first window, which ProcessLoops does not follow for such loops.
  if (of_steps) return;
  f.startup_io_ns = r.startup_io.io_ns, f.startup_io_ops = r.startup_io.io_ops;
  f.startup_read_bytes = r.startup_io.read_bytes;
  f.startup_map_ns = r.startup_io.map_ns, f.startup_map_bytes = r.startup_io.map_bytes;
}

void RankMeter::SetLoopUnkept() {
  RankFigures& f = figures_;
  if (!f.loop || f.loops > 1) return;  // several loops: each one's (TakeProcessLoops)
  std::vector<uint32_t> looping;
  for (uint64_t t : loop_threads_) looping.push_back(static_cast<uint32_t>(t >> 32));
  const uint64_t window = f.loop_end_ns - f.loop_start_ns;
  f.loop_unkept_ns =
      window - std::min(window, kept_.Kept(looping, f.loop_start_ns, f.loop_end_ns));
}

}  // namespace dlprof::analysis
