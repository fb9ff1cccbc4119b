// Why a made batch was slow to arrive (docs/ANALYSIS.md, "Where the wait
// goes", hand-over): a batch's hand-over [max(a, f1), b) is split at the
// moments the PyTorch bootstrap records (python/dlprof/_torch.py):
//
//   fetch ends (f1)   batch_sent (worker's feeder)   batch_received (main)   wait ends (b)
//   |---- in worker ----|-------- in transit --------|------- rebuild -------|
//
// in the worker: the batch waited to be pickled and sent (the feeder thread
// needs the interpreter lock, which the worker's main thread holds while it
// makes the next batch); in transit: the pipe, and the main process not yet
// reading it; rebuild: the main process unpickling it and mapping its
// shared-memory tensors, and the loader's own machinery. A part whose
// moment is missing (an older trace, annotate_loader) is left to the next.
//
// And what held it up, measured (HandoverCause): the worker busy on its next
// batch while this one waited in it; more processes wanting the rank's CPUs
// than it has; a large batch; the pin-memory thread between the pipe and the
// loop. Memory: the sends not yet matched (at most kKeptSends) and the last
// receives of each process (kKeptReceives).
#ifndef DLPROF_LIB_ANALYSIS_HANDOVER_H_
#define DLPROF_LIB_ANALYSIS_HANDOVER_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lib/analysis/summary/rank_figures.h"
#include "lib/read/event_source.h"

namespace dlprof::analysis {
using namespace dlprof::read;

enum class HandoverCause : uint8_t {
  kNone,                // nothing measured explains it
  kWorkerBusy,          // the worker that made it was busy on its next batch
  kCpusOversubscribed,  // more processes wanted the CPUs than the rank has
  kBatchSize,           // a large batch (its tensors' bytes)
  kPinMemory,           // the pin-memory thread between the pipe and the loop
};
constexpr int kHandoverCauses = 5;
static_assert(kHandoverCauses == kHandoverCauseSlots, "rank_figures.h keeps one slot a cause");
// "", "worker_busy", "cpus_oversubscribed", "batch_size", "pin_memory".
const char* HandoverCauseName(HandoverCause c);

// One wait's hand-over in parts (adding up to it) and its cause.
struct HandoverSplit {
  uint64_t in_worker_ns = 0, in_transit_ns = 0, rebuild_ns = 0;
  HandoverCause cause = HandoverCause::kNone;
};

class Handovers {
 public:
  static constexpr size_t kKeptSends = 2048;
  static constexpr size_t kKeptReceives = 64;
  // A batch of at least this many bytes is a large one.
  static constexpr uint64_t kLargeBatchBytes = 4 << 20;

  // `cpus`: the CPUs the rank's processes may use (0: unknown), for a wait
  // whose process's own count is not known: each wait is judged by the
  // CPUs its (main) process may use.
  explicit Handovers(const std::vector<ProcessTrace>& processes, uint64_t cpus);

  // A counter event: batch_sent (a worker's, its value the flow id) or
  // batch_received (the main process's).
  void AddCounter(const StreamEvent& e);

  // Another process's fetch over [start, end), for who was busy when.
  struct Fetching {
    uint32_t process;
    uint64_t start, end;
  };
  // The hand-over [from, to) of a batch that `worker` made, its flow id
  // (`has_flow`), received by `waiting` (its thread `waiting_tid`); the
  // batch's bytes; the fetches that overlap it.
  HandoverSplit Split(uint64_t from, uint64_t to, uint32_t worker, bool has_flow, uint64_t flow,
                      uint32_t waiting, int32_t waiting_tid, uint64_t batch_bytes,
                      const std::vector<Fetching>& fetching);

 private:
  enum class Counter : uint8_t { kOther, kSent, kReceived };
  Counter CounterOf(const StreamEvent& e);
  // The time within [from, to) in which more processes wanted the CPUs
  // than there are: the waiting one and the fetching ones.
  static uint64_t Oversubscribed(uint64_t from, uint64_t to, uint64_t cpus,
                                 const std::vector<Fetching>& fetching);
  // The CPUs `process` may use (its header's count), else the rank's.
  uint64_t CpusOf(uint32_t process) const;
  // The time within [from, to) `worker` spent in fetches (its next batch).
  static uint64_t Busy(uint32_t worker, uint64_t from, uint64_t to,
                       const std::vector<Fetching>& fetching);

  const std::vector<ProcessTrace>& processes_;
  uint64_t cpus_;
  std::unordered_map<uint64_t, Counter> names_;     // (process, string) -> which counter
  std::unordered_map<uint64_t, uint64_t> sent_;     // flow id -> when sent
  std::deque<uint64_t> sent_order_;                 // flow ids, oldest first
  // Per process: its last receives (time, thread), oldest first.
  std::unordered_map<uint32_t, std::deque<std::pair<uint64_t, int32_t>>> received_;
};

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_HANDOVER_H_
