// A rank's loader workers measured in one pass over the rank's merged
// stream (WorkerFigures, worker_estimate.h), an observer beside the rank
// meter (rank_meter.h).
//
// A loader worker is a process that records batch fetches (`fetch_batch`
// regions: the PyTorch bootstrap's, dlprof.annotate_loader's); its reads are
// its I/O calls and its page faults on mapped files; the processes that
// sent one pass's batches (their `batch` flows) are the loader's workers.
// Events come by start, so how many workers fetch at once and how many of
// their reads are in flight is a sweep: the ends of the fetches and reads
// still open wait in a heap (at most one per worker thread) and are passed
// as the stream moves on. What is kept is bounded by the workers and the
// passes (each pass's senders), never the events.
#ifndef DLPROF_LIB_ANALYSIS_WORKER_METER_H_
#define DLPROF_LIB_ANALYSIS_WORKER_METER_H_

#include <cstdint>
#include <functional>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

#include "lib/analysis/summary/worker_estimate.h"
#include "lib/read/event_source.h"

namespace dlprof::analysis {
using namespace dlprof::read;

class WorkerMeter : public EventObserver {
 public:
  // `processes`: the group's (a source's processes(), outliving the meter);
  // `batch_region`: the region of the main process's batch waits, whose
  // process's CPU count is the rank's.
  WorkerMeter(const std::vector<ProcessTrace>& processes, std::string batch_region);

  void Add(const StreamEvent& e, bool counted) override;
  WorkerFigures Finish();

 private:
  // (kFetchCpu: a counter, the bootstrap's fetch_cpu.)
  enum class Kind : uint8_t { kOther, kFetch, kBatchWait, kFetchCpu, kBatchFlow };
  using EndHeap = std::priority_queue<uint64_t, std::vector<uint64_t>, std::greater<uint64_t>>;
  Kind KindOf(const StreamEvent& e);
  void AddFetch(uint32_t process, uint64_t start, uint64_t end);
  void AddRead(uint64_t start, uint64_t end, uint64_t bytes);
  // Passes the fetches that end by `now`, adding the time at each count.
  void PassFetches(uint64_t now);

  const std::vector<ProcessTrace>& processes_;
  std::string batch_region_;
  WorkerFigures f_;
  std::vector<uint64_t> fetching_until_;  // per process: its latest fetch's end
  std::vector<bool> worker_;
  int64_t main_ = -1;  // the first process seen waiting for a batch
  EndHeap fetch_ends_, read_ends_;
  uint64_t swept_to_ = 0;  // the fetch sweep's time
  std::unordered_map<uint64_t, Kind> names_;  // (process, string id): each name looked at once
  // By a pass's flow tag (a batch flow id's upper 40 bits: the iterator's
  // seed and pass): the processes that sent its batches.
  std::unordered_map<uint64_t, std::vector<uint32_t>> pass_senders_;
};

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_WORKER_METER_H_
