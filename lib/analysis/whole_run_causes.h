// The whole run's batch wait split by cause, from the counters of a bounded
// trace (DLPROF_KEEP): the four causes of docs/ANALYSIS.md, "Where the
// wait goes", as lib/analysis/meters/wait_causes.h finds them in full
// events, for a run whose events are mostly gone.
//
// Each process's counters hold, per interval, a BatchRecord
// (lib/format/counters.h, written by lib/core/batch_sampler.h):
//   - waits without a worker's batch, summed with their thread's reads and
//     pinning in them: split as wait_causes.h splits a wait matched to no
//     fetch (its reads reading, pinning hand-over, the rest preprocessing;
//     beside workers, a wait without reads hand-over and iter(loader)'s
//     rest worker start-up);
//   - waits for a worker's batch: all counted, some sampled; each sampled
//     wait [a, b) is joined to the sampled fetch [f0, f1) of the same batch
//     (same host, same flow id) and split as wait_causes.h splits it --
//       reading        the fetch's data reads within [max(a, f0), min(b, f1))
//                      (kept in eighths of the fetch, prorated within one);
//       worker start-up  [a, min(b, f0)) when the fetch was its worker's
//                      first of the pass (a worker forked for it, or a
//                      persistent one resuming);
//       preprocessing  the rest of [a, min(b, f1));
//       hand-over      [max(a, f1), b).
//     A hashed sample stands for BatchWeight(id, the higher of the two
//     levels) waits, where that level samples it on both sides (a fetch
//     kept for its lateness alone does not). Three strata:
//       sampled always  a pass's first batches (weight 1, where the
//                       workers start): split exactly (where the reader
//                       thinned the passes, below, each of weight
//                       2^pass_level);
//       longest         each interval's longest waits, kept whatever their
//                       hash, with their fetch where its worker kept it as
//                       one of its latest: split exactly; where the reader
//                       thinned them (below), the joined ones' shares split
//                       the joined ones' share of the time of all of them.
//                       Those whose fetch was not kept go with the others;
//       hashed          the weighted samples' shares split the time of all
//                       the other waits.
//     Where no hashed sample joined, their time takes the sampled-always
//     ones' shares (else the longest ones'); where no sample joined at
//     all, the time is "unsplit". Each part's standard error, summed over
//     the strata in quadrature (docs/ANALYSIS_RUNS.md, "Bounded traces",
//     has the reasoning):
//       sampled   the ratio estimator's under Poisson sampling (a batch is
//                 sampled by its hash, independently of the others, with
//                 probability 1/weight), but no less than a floor:
//                   max((H / Y)^2 sum w(w-1) (p - R y)^2, (m (H - S) / n)^2)
//                 with y a sample's wait, p its part, Y = sum w y,
//                 R = sum w p / Y, H the time of the waits the stratum is a
//                 sample of, S its n samples' own time and m = max(R, 1-R):
//                 a sample that never varied (variance 0) may have missed
//                 about one wait in n that differs, by its whole wait at
//                 most;
//       unspoken  the time U of the waits kept without their fetch (the
//                 longest, a pass's first) and split by another stratum's
//                 shares, which no sample stands for (a worker descheduled
//                 between fetches makes a wait long and its fetch not
//                 late): their share may be anything, and the same in all,
//                 so U^2 ((R - 1/2)^2 + 1/12), the estimate's mean square
//                 error over every share equally likely: whatever those
//                 waits held, their part is within two of it (max(R, 1-R) U
//                 at most; two where R is 1/3 or 2/3). No count of samples
//                 shrinks it: U/n would not cover a loaded run, whose
//                 unjoined waits grow with it as its samples do.
//     Where every wait was sampled, both are 0.
//
// A long run (a month of a DataLoader's batches) holds more samples than a
// reader should: ThinBatchSamples drops those whose hash does not sample
// them at a level of the reader's, the flusher's own rule, so that what is
// left is a sample of the same kind, of known weight; and where a pass's
// first batches alone are too many (a loop that starts a pass a step), it
// keeps those of a sample of the passes, by the pass's hash.
// Not here, unlike the full events' split: the hand-over's parts and
// cause, the head-of-line part, a hand-over held by page faults (reading
// in the full split), waits matched to another process's fetch without a
// flow (in_order=False).
#ifndef DLPROF_LIB_ANALYSIS_WHOLE_RUN_CAUSES_H_
#define DLPROF_LIB_ANALYSIS_WHOLE_RUN_CAUSES_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lib/format/counters.h"

namespace dlprof::analysis {

struct WholeRunCauses {
  uint64_t reading_ns = 0, preprocessing_ns = 0, handover_ns = 0, worker_startup_ns = 0;
  uint64_t unsplit_ns = 0;  // waits for a worker's batch, none of them sampled
  uint64_t own_waits = 0;   // waits split where they happened (exact)
  uint64_t flow_waits = 0;  // waits for a worker's batch ...
  uint64_t sampled = 0;     // ... of which joined to their fetch
  uint64_t thinned_one_in = 1;  // the reader kept one sample in so many (BatchSampleBudget)
  uint64_t passes_one_in = 1;   // ... and the first batches of one pass in so many
  // One standard error of each part's estimate from the sample (0 with
  // every wait sampled, more than 0 where some were not); the waits split
  // where they happened add none.
  uint64_t reading_error_ns = 0, preprocessing_error_ns = 0, handover_error_ns = 0,
           worker_startup_error_ns = 0;
  uint64_t total_ns() const {
    return reading_ns + preprocessing_ns + handover_ns + worker_startup_ns + unsplit_ns;
  }
};

// One process's batch records, with the machine its batch flows' ids are
// unique on (a flow id carries the loop's pid).
struct ProcessBatches {
  ProcessBatches() = default;
  ProcessBatches(std::string machine, std::vector<format::BatchRecord> records,
                 int32_t rank = -1)
      : machine(std::move(machine)), records(std::move(records)), rank(rank) {}
  std::string machine;  // host and boot id
  std::vector<format::BatchRecord> records;
  // Where a reader that folds the records as it reads them (whole_run.h)
  // files them: the process's rank (-1: none), and each record's point
  // (whole_run_points.h; empty where not filed).
  int32_t rank = -1;
  std::vector<uint32_t> points;
};

// Thins `r` to `level`: its hashed samples as the flusher would keep them
// at that level (or its own, where higher), its longest waits and the
// fetches its workers kept for their lateness where the hash has `level`
// low bits 0 (a longest wait then stands for 2^level of them, the time of
// those dropped kept); and the samples of a pass's first batches, which
// the flusher keeps whatever their hash, where the pass's hash has
// `pass_level` low bits 0 (each then stands for 2^pass_level).
void ThinBatchSamples(uint8_t level, uint8_t pass_level, format::BatchRecord* r);
// The samples `r` holds: waits, longest waits and fetches.
size_t BatchSamplesOf(const format::BatchRecord& r);
// Drops the records of `processes` from the `from`th on that hold no
// sample (their counts taken already: WaitCauseSums::AddCounts), with their
// points, and the processes left with none: what a long run's reader holds
// is then its samples.
void DropUnsampled(std::vector<ProcessBatches>* processes, size_t from = 0);

// A run's batch samples held within a budget as its processes are read:
// each thinned to the levels reached so far, and all a level further
// whenever they pass the budget -- the passes' first batches where they
// are most of it (a loop that starts a pass a step, as `next(iter(loader))`
// does), the hashed ones else. A month of a DataLoader's run: 2^21
// samples, a few hundred MB, where it would hold gigabytes
// (bench/month_reader.sh).
class BatchSampleBudget {
 public:
  static constexpr size_t kDefault = size_t{1} << 21;
  explicit BatchSampleBudget(size_t budget = kDefault) : budget_(budget) {}
  // Appends `p` to `processes`, within the budget.
  void Append(ProcessBatches p, std::vector<ProcessBatches>* processes);
  // The levels all are thinned to (0: none): each hashed sample left
  // stands for 2^level as many, each of a pass's first for 2^pass_level.
  uint8_t level() const { return level_; }
  uint8_t pass_level() const { return pass_level_; }

 private:
  static constexpr uint8_t kMaxPassLevel = 32;
  void Hold(format::BatchRecord* r);
  size_t budget_;
  size_t held_ = 0, held_first_ = 0;  // samples held; of a pass's first batches
  uint8_t level_ = 0, pass_level_ = 0;
};

// The sampled fetches of a run, by machine and batch flow id: what a
// sampled wait is joined to. Points into `processes`, which must outlive it.
// A sorted array of 24 bytes a fetch (a tree keyed by the machine's name
// took 90: a day of a DataLoader's run, its workers forked each pass, held
// 2.6 million; bench/month_reader.sh).
class FetchIndex {
 public:
  struct Fetch {
    const format::FetchSample* sample;  // nullptr: none
    uint8_t level;                      // its record's sampling level
  };
  explicit FetchIndex(const std::vector<ProcessBatches>& processes);
  // The first fetch of `id` on `machine` the processes hold.
  Fetch Find(const std::string& machine, uint64_t id) const;
  bool empty() const { return fetches_.empty(); }

 private:
  struct Entry {
    uint64_t id;
    const format::FetchSample* sample;
    uint32_t machine;  // its index in machines_
    uint8_t level;
    bool operator<(const Entry& o) const {
      return machine != o.machine ? machine < o.machine : id < o.id;
    }
  };
  static_assert(sizeof(Entry) == 24, "a fetch indexed: 24 bytes");
  std::map<std::string, uint32_t> machines_;
  std::vector<Entry> fetches_;  // by (machine, id), stably: the first held first
};

// The waits of some of a run's batch records -- the whole run's, a rank's,
// an interval's -- joined to their fetches and summed: Add the records,
// then Split. A reader that cannot hold every record until the fetches are
// all indexed adds each one's counts as it reads it and its samples at the
// end: AddCounts then AddSamples is Add, whatever thinning came between
// (its dropped samples' counts are taken already).
class WaitCauseSums {
 public:
  void Add(const FetchIndex& fetches, const std::string& machine, const format::BatchRecord& r) {
    AddCounts(r);
    AddSamples(fetches, machine, r);
  }
  // The waits split where they happened, the waits for a worker's batch
  // counted, and the time of the longest.
  void AddCounts(const format::BatchRecord& r);
  // The sampled waits, joined to their fetches.
  void AddSamples(const FetchIndex& fetches, const std::string& machine,
                  const format::BatchRecord& r);
  // `workers`: the loop had loader workers elsewhere in the run, though
  // none of these records shows one (its waits of its own without reads
  // are then the loader's machinery).
  WholeRunCauses Split(bool workers) const;

 private:
  // The parts a sample is split into; preprocessing is what the others
  // leave of its wait.
  enum { kReading, kPreprocessing, kHandover, kStartup, kParts };
  // One stratum's joined samples, weighted: sums of their waits and parts
  // (a weight up to 2^23 times a wait of hours: 128 bits) and, for the
  // standard errors, of w(w-1) y^2 and per part of w(w-1) p^2 and
  // w(w-1) p y (an error's estimate, so in long double: the squares pass
  // 128 bits).
  struct Stratum {
    uint64_t samples = 0;
    unsigned __int128 seen = 0;  // the samples' own waits, unweighted
    unsigned __int128 wait = 0, parts[kParts] = {};
    long double yy = 0, pp[kParts] = {}, py[kParts] = {};
    // Adds a wait `w` joined to its fetch `f`, standing for `weight` waits.
    void Add(const format::WaitSample& w, const format::FetchSample& f, uint64_t weight);
    // Adds its shares of `total` ns to split[], and the squares of their
    // standard errors to variance[]: `unspoken` ns of `total` are waits
    // none of its samples stands for (whole_run_causes.h).
    void Split(uint64_t total, uint64_t unspoken, uint64_t split[kParts],
               long double variance[kParts]) const;
  };
  Stratum always_, longest_, hashed_;
  uint64_t longest_ns_ = 0;  // the time of every longest wait, joined or not
  unsigned __int128 longest_unjoined_ = 0;  // the kept ones' not joined, weighted
  uint64_t first_ns_ = 0;  // the time of every wait for a pass's first batches (not longest)
  unsigned __int128 first_unjoined_ = 0;  // the kept ones' not joined, weighted
  uint64_t flow_waits_ = 0, flow_ns_ = 0;
  bool fetched_ = false;  // some record held a fetch
  format::OwnWaits read_, idle_, iter_;
};

// The split of every record of `processes`.
WholeRunCauses SplitWholeRunWait(const std::vector<ProcessBatches>& processes);

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_WHOLE_RUN_CAUSES_H_
