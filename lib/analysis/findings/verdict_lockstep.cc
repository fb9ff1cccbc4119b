// Ranks that step together (docs/ANALYSIS.md, "Ranks that step together"):
// in synchronous data-parallel training (DDP, Horovod, DLIO's allreduce)
// each step ends in a collective that waits for the slowest rank, so one
// rank's batch wait or checkpoint save stops every rank. Summed over the
// ranks, a wait of one rank in four reads as a quarter of itself; the job
// lost all of it.
//
// No collective of the host is traced (MPI's are not I/O; NCCL's kernels
// are GPU work, where the straggler loss measures them), so the ranks tell
// it themselves: a rank that stops on its own (waits, saves) for longer
// than another would, running at its own pace, also run a longer loop. When
// the ranks' loops are about equal while what they stopped for on their
// own differs, the others waited for it.
#include <algorithm>
#include <vector>

#include "lib/analysis/findings/verdict.h"
#include "lib/analysis/summary/intervals.h"

namespace dlprof::analysis {
namespace {

// What the ranks stopped for on their own differs by at least 5 % of a
// rank's loop: under that, summed and critical-path shares hardly differ.
constexpr uint64_t kLockstepMinSpreadPerMille = 50;

struct Spread {
  uint64_t min = UINT64_MAX, max = 0;
  void Add(uint64_t v) {
    min = std::min(min, v);
    max = std::max(max, v);
  }
  uint64_t width() const { return max >= min ? max - min : 0; }
};

// The time in which at least one rank waited for a batch while every rank
// was in its loop: in lockstep every rank stops then (a rank's waits before
// the others began, or after they ended, hold no one up). Each step
// index's longest wait summed (the way before)
// counted twice the waits of ranks whose steps of one index fall at other
// times (a rank's iter(), pass end or first batches while another still
// waits for an earlier batch): 99.0 % of the loop where the slow rank's own
// clock said 93.6 %. Loops without a DataLoader keep no wait's interval
// (a step's wait is its reads, spread over its window): there, each step
// index's longest wait.
uint64_t WaitUnion(const std::vector<const RankFigures*>& ranks,
                   const std::vector<SlowestLoader>& slowest_per_step) {
  IntervalUnion waits;
  uint64_t all_in = 0, first_out = UINT64_MAX;  // every rank in its loop
  for (const RankFigures* r : ranks) {
    all_in = std::max(all_in, r->loop_start_ns);
    first_out = std::min(first_out, r->loop_end_ns);
    if (r->loop_of_steps) {
      uint64_t sum = 0;
      for (const SlowestLoader& step : slowest_per_step) sum += step.batch_wait_ns;
      return sum;
    }
    for (const RankStep& step : r->steps) {
      waits.Add(step.start_ns, step.start_ns + step.batch_wait_ns);
    }
  }
  waits.Seal();
  if (all_in < first_out) waits.Clip(all_in, first_out);
  return waits.Length();
}

}  // namespace

bool StepTogether(const std::vector<RankPace>& ranks, uint64_t mean_loop_ns) {
  if (ranks.size() < 2) return false;
  // Ranks in lockstep take as many steps (a loop until a deadline does
  // not: a slow rank's steps are fewer).
  Spread steps, loop, own, rest;  // the steps; the loops; what each stopped for; the rest
  for (const RankPace& r : ranks) {
    steps.Add(r.steps);
    loop.Add(r.window_ns);
    own.Add(r.stopped_ns);
    rest.Add(r.window_ns - std::min(r.stopped_ns, r.window_ns));
  }
  if (steps.width() > std::max<uint64_t>(2, steps.max / 20)) return false;
  // Ranks at their own pace: a loop as long as its rest plus its stops, so
  // the loops differ as the stops do and the rests are about equal. In
  // lockstep the loops are about equal and the rests differ instead.
  if (PerMille(own.width(), mean_loop_ns) < kLockstepMinSpreadPerMille) return false;
  return 2 * loop.width() <= rest.width();
}

Lockstep FindLockstep(const Summary& s) {
  Lockstep out;
  std::vector<const RankFigures*> ranks;
  for (const RankFigures& r : s.rank_figures) {
    if (r.loop && r.loop_ns() > 0) ranks.push_back(&r);
  }
  if (ranks.size() < 2) return out;
  // From the step after each rank's first batch on, where every rank has
  // two more: a rank that enters the loop late (building its model,
  // loading a checkpoint) holds the others' first step in the collective,
  // a loop longer by that alone.
  std::vector<size_t> first;  // per rank, the step the figures start at
  for (const RankFigures* r : ranks) {
    size_t k = 0;
    while (k < r->steps.size() && r->steps[k].request != StepRequest::kBatch) ++k;
    first.push_back(k + 1);
  }
  bool after_first = true;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const RankFigures* r = ranks[i];
    after_first &= first[i] + 1 < r->steps.size() && r->loops <= 1 &&
                   r->steps[first[i]].start_ns < r->loop_end_ns;
  }
  std::vector<RankPace> paces;
  uint64_t loops_ns = 0;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const RankFigures* r = ranks[i];
    RankPace pace{r->loop_ns(), r->batch_wait_ns + r->checkpoint.blocking_ns, r->steps.size()};
    if (after_first) {
      pace.window_ns = r->loop_end_ns - r->steps[first[i]].start_ns;
      for (size_t k = 0; k < first[i]; ++k) {
        pace.stopped_ns -= std::min(pace.stopped_ns, r->steps[k].batch_wait_ns);
      }
    }
    paces.push_back(pace);
    loops_ns += r->loop_ns();
  }
  const uint64_t mean_loop_ns = loops_ns / ranks.size();
  if (!StepTogether(paces, mean_loop_ns)) return out;
  out.found = true;
  out.ranks = ranks.size();
  out.loop_ns = mean_loop_ns;
  // The time in which any rank waited for a batch (WaitUnion); the saves of
  // the rank that saved longest (one rank saving, as DDP's rank 0 does, or
  // all at the same steps).
  out.wait_ns = WaitUnion(ranks, s.rank_job.slowest_loader_per_step);
  for (const RankFigures* r : ranks) {
    // At least the longest wait of one rank (steps not kept: a summary
    // merged from partials of another version).
    out.wait_ns = std::max(out.wait_ns, r->batch_wait_ns);
    out.save_ns = std::max(out.save_ns, r->checkpoint.blocking_ns);
  }
  // One rank waiting for data while another saves (DDP's rank 0) stopped
  // the loop once: the two shares never add up to more than the loop, the
  // time both held counted as the save's (the saving rank stopped on its
  // own; the waiting one would have stopped at the collective anyway).
  out.save_ns = std::min(out.save_ns, mean_loop_ns);
  out.wait_ns = std::min(out.wait_ns, mean_loop_ns - out.save_ns);
  return out;
}

uint64_t Verdict::wait_per_mille() const {
  if (!has_batch_wait) return 0;
  return lockstep.found ? PerMille(lockstep.wait_ns, lockstep.loop_ns)
                        : PerMille(batch_wait_ns, wait_loop_ns);
}

uint64_t Verdict::save_per_mille() const {
  return lockstep.found ? PerMille(lockstep.save_ns, lockstep.loop_ns)
                        : PerMille(checkpoint.blocking_ns, loop_ns);
}

}  // namespace dlprof::analysis
