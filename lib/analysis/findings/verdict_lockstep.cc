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

}  // namespace

Lockstep FindLockstep(const Summary& s) {
  Lockstep out;
  std::vector<const RankFigures*> ranks;
  for (const RankFigures& r : s.rank_figures) {
    if (r.loop && r.loop_ns() > 0) ranks.push_back(&r);
  }
  if (ranks.size() < 2) return out;
  // Ranks in lockstep take as many steps (a loop until a deadline does
  // not: a slow rank's steps are fewer).
  Spread steps;
  for (const RankFigures* r : ranks) steps.Add(r->steps.size());
  if (steps.width() > std::max<uint64_t>(2, steps.max / 20)) return out;
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
  Spread loop, own, rest;  // the loops; what each stopped for; the rest
  uint64_t loops_ns = 0;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const RankFigures* r = ranks[i];
    uint64_t window = r->loop_ns();
    uint64_t stopped = r->batch_wait_ns + r->checkpoint.blocking_ns;
    if (after_first) {
      window = r->loop_end_ns - r->steps[first[i]].start_ns;
      for (size_t k = 0; k < first[i]; ++k) {
        stopped -= std::min(stopped, r->steps[k].batch_wait_ns);
      }
    }
    loop.Add(window);
    own.Add(stopped);
    rest.Add(window - std::min(stopped, window));
    loops_ns += r->loop_ns();
  }
  const uint64_t mean_loop_ns = loops_ns / ranks.size();
  // Ranks at their own pace: a loop as long as its rest plus its stops, so
  // the loops differ as the stops do and the rests are about equal. In
  // lockstep the loops are about equal and the rests differ instead.
  if (PerMille(own.width(), mean_loop_ns) < kLockstepMinSpreadPerMille) return out;
  if (2 * loop.width() > rest.width()) return out;
  out.found = true;
  out.ranks = ranks.size();
  out.loop_ns = mean_loop_ns;
  // Each step the slowest rank's wait (rank_figures.h's slowest loader per
  // step); the saves of the rank that saved longest (one rank saving, as
  // DDP's rank 0 does, or all at the same steps).
  for (const SlowestLoader& step : s.rank_job.slowest_loader_per_step) {
    out.wait_ns += step.batch_wait_ns;
  }
  for (const RankFigures* r : ranks) {
    // At least the longest wait of one rank (steps not kept: a summary
    // merged from partials of another version).
    out.wait_ns = std::max(out.wait_ns, r->batch_wait_ns);
    out.save_ns = std::max(out.save_ns, r->checkpoint.blocking_ns);
  }
  out.wait_ns = std::min(out.wait_ns, mean_loop_ns);
  out.save_ns = std::min(out.save_ns, mean_loop_ns);
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
