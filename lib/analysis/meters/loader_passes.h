// Which loader, and which of its passes, a worker's sample belongs to: the
// slowest samples (docs/ANALYSIS_LOADER.md, "Inside the loader") of a rank that
// iterates several loaders (a training loader and a validation loader every
// N steps) are told apart by (loader, index), not by index alone, and their
// pass is their own loader's (a validation index slow in each of its 4
// passes was "slow in 6 passes", the training loader's same index counted).
//
// A pass is a `loader_iter` region, its loader L and pass N the mark
// `epoch loader=L pass=N` inside it (the bootstrap's and annotate_loader's).
// A worker process is forked or spawned by iter(loader): it belongs to the
// loader of the latest pass begun before it began. A sample's pass
// is then its loader's latest begun before the sample. Without marks, the
// loader is unknown (-1) and the pass the rank's count of loader_iter
// regions, as before. Memory: a record per pass and per process.
#ifndef DLPROF_LIB_ANALYSIS_LOADER_PASSES_H_
#define DLPROF_LIB_ANALYSIS_LOADER_PASSES_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "lib/analysis/meters/fetch_parts.h"
#include "lib/analysis/summary/rank_figures.h"
#include "lib/read/trace_set.h"

namespace dlprof::analysis {

class LoaderPasses {
 public:
  // A process begins when its runtime started (a forked worker's at the
  // fork, CLOCK_MONOTONIC_RAW as its events), or at its first event: a
  // worker of a loader whose first event came after another loader's
  // iter() began (two loaders iterated together) was taken for that one's.
  explicit LoaderPasses(const std::vector<ProcessTrace>& processes) {
    for (const ProcessTrace& p : processes) {
      pids_.push_back(p.info.pid);
      first_ns_.push_back(p.info.process_start_ns != 0 ? p.info.process_start_ns : UINT64_MAX);
    }
  }

  // Every counted event of `process`, in stream order.
  void SeeProcess(uint32_t process, uint64_t at) {
    if (process < first_ns_.size() && at < first_ns_[process]) first_ns_[process] = at;
  }
  // A loader_iter region, in stream order; then its mark's L and N.
  void AddPass(uint64_t start) { passes_.push_back({start, -1, 0}); }
  void MarkPass(unsigned loader, unsigned pass);

  // The rank's slowest samples (FetchParts::SlowestSamples, slowest first),
  // at most `kept`, each with its loader's pass (from 1) and the number of
  // its loader's passes in which the same index was among them at half its
  // slowest time or more; `late`'s slowest samples' passes likewise.
  std::vector<SlowSample> Slowest(const std::vector<SampleRecord>& samples, size_t kept,
                                  std::vector<LateBatch>* late) const;

 private:
  struct Pass {
    uint64_t start;
    int64_t loader;  // -1: no mark
    uint64_t pass;   // the loader's passes before it
  };
  // (loader, its pass from 1) of a sample of worker `pid` made in the rank's
  // pass `rank_pass` (FetchParts' count); without marks, (-1, rank_pass).
  std::pair<int64_t, uint64_t> Of(int32_t pid, uint64_t rank_pass) const;

  std::vector<int32_t> pids_;       // per process (a rank group's pids are its own)
  std::vector<uint64_t> first_ns_;  // per process: when it began
  std::vector<Pass> passes_;        // by start
};

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_LOADER_PASSES_H_
