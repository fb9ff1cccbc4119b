// The batch wait split by cause (docs/ANALYSIS.md, "Where the wait goes"):
// for each batch the loop waited for, what the loader was doing meanwhile.
//
// A batch wait [a, b) of the main process is matched to the fetch [f0, f1)
// that produced its batch: by the batch's flow (flow_start("batch", id) at
// the end of the worker's fetch_batch, flow_finish in the load_batch that
// received it), else a fetch_batch of the waiting process itself inside the
// wait. Then, with W the producing process:
//   reading        the time within [max(a, f0), min(b, f1)) that W was in
//                  I/O calls on data files (not code or system by path, not
//                  writes);
//   preprocessing  the rest of [a, min(b, f1)): W worked on the batch, or
//                  had not begun it (a worker starting, the batch's index
//                  on its way);
//   hand-over      the rest of the wait, [max(a, f1), b): the batch made
//                  and not yet received (queues, pickling, shared memory,
//                  the pin-memory thread);
//   worker start-up  out of preprocessing, the part of [a, f0) before W
//                  began its first fetch of the pass (a pass starts with
//                  each loader_iter region: non-persistent workers are
//                  forked, import the program's modules and run
//                  worker_init_fn before they fetch anything).
// A page fault of W on a mapped data file (a major_fault event) is data
// I/O as a call is: reading. Out of the hand-over, W's faults while the
// batch waited to be sent are reading too, and all of the hand-over where
// they took a third of it or more: W's main thread, blocked on a fault,
// holds the interpreter lock that the thread sending the batch needs
// (numpy indexing a map faults with the lock held; a read call releases
// it), and through the work between faults the sender waits for the
// interpreter's switch interval (bench/gil_handover.py measured it).
// A wait matched to no fetch is the waiting process's own work when it did
// data I/O in it (a loader without workers beside loaders with them: that
// I/O is reading, the rest preprocessing); else, where the waiting process
// has received no batch by flow, it takes the latest unmatched fetch of
// another process that ended by b (no flow: in_order=False); else, where
// other processes fetched, it is hand-over (the loader's machinery: the
// call that finds a pass over, or a pass left early, and shuts the workers
// down, matched to no fetch: no head-of-line time); and where none did
// (num_workers=0, or a loader that records no fetches), the group's data
// I/O in the wait, any process's, is reading, the waiting process's pinning
// of the batch (pin_batch regions: pin_memory without workers) hand-over,
// and the rest preprocessing.
//
// Memory: per process a running union of its data I/O (a few integers),
// the fetches not yet matched (at most kKeptFetches, oldest dropped) and the
// waits still open; the result is one split per step. Events must come by
// start, as the rank meter hands them on: Advance(start) before each event.
#ifndef DLPROF_LIB_ANALYSIS_WAIT_CAUSES_H_
#define DLPROF_LIB_ANALYSIS_WAIT_CAUSES_H_

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lib/analysis/meters/fetch_parts.h"
#include "lib/analysis/meters/handover.h"
#include "lib/analysis/meters/path_classes.h"
#include "lib/analysis/summary/rank_figures.h"
#include "lib/read/event_source.h"

namespace dlprof::analysis {
using namespace dlprof::read;

// One wait's split; the four add up to the wait. `head_of_line_ns`, apart:
// the part before its batch was made while a later batch of the same
// iterator already was (batches are handed over in order). Of reading, the
// part in page faults on mapped data files, and of that, the part while
// the batch, made, waited to be sent.
struct WaitSplit {
  uint64_t reading_ns = 0, preprocessing_ns = 0, handover_ns = 0, worker_startup_ns = 0;
  uint64_t head_of_line_ns = 0;
  uint64_t reading_faults_ns = 0, handover_faults_ns = 0;
  // The hand-over of a batch a worker made, in parts and with its cause
  // (handover.h); what no worker's batch explains is left to the rank meter.
  HandoverSplit handover;
  // The worker's fetch that made its batch (made 0: unknown), for what
  // in_order=False would give (out_of_order.h).
  uint64_t made_ns = 0, fetch_start_ns = 0;
  uint32_t maker = 0;
  // A wait no batch came out of (a pass's end, its workers shut down) or
  // an iter(): its part while the workers still fetched what they had
  // begun before it (a pass left early, its prefetched batches). Persistent
  // workers would wait for them too, at the next pass's start.
  uint64_t leftover_ns = 0;
};

class WaitCauses {
 public:
  // At most this many fetches wait for their batch's wait (a loader holds
  // workers x prefetch_factor batches ahead; more are leftovers).
  static constexpr size_t kKeptFetches = 512;

  // `fetches` (optional): what each fetch did inside (fetch_parts.h); the
  // waits take the records of the fetches they received.
  explicit WaitCauses(const std::vector<ProcessTrace>& processes, FetchParts* fetches = nullptr);

  // Before each event, with its start: settles the fetches and waits that
  // ended before `now`.
  void Advance(uint64_t now) {
    if (!ends_pending_.empty() || !waits_.empty()) Settle(now);
  }
  // An I/O call that counts (CountsAsIo); kept, and true, when on a data
  // file and not an output's (`write`: a write or a sync). A `map` call
  // (mmap, munmap, mremap) is true there but not kept: no reading, so the
  // preprocessing's (the process's own work on its page tables).
  bool AddIo(const StreamEvent& e, bool write, bool map = false);
  // A major fault on a mapped file (a map_read kind); kept, and true, when
  // the file is a data file.
  bool AddFault(const StreamEvent& e);
  // A fetch_batch region of `process`.
  void AddFetch(uint32_t process, uint64_t start, uint64_t end);
  // A pin_batch region of `process` (it pinned a batch it made itself).
  void AddPin(uint32_t process, uint64_t start, uint64_t end);
  // A loader_iter region: a pass over a loader begins, and each worker's
  // next fetch is its first of the pass.
  void AddPass() { ++pass_; }
  // A flow start or finish (kinds of class FlowStart/FlowFinish).
  void AddFlow(const StreamEvent& e, bool finish);
  // A counter event (the bootstrap's batch_sent and batch_received).
  void AddCounter(const StreamEvent& e) { handovers_.AddCounter(e); }
  // Step `step`'s batch wait in `process` (`iter`: iter(loader), the
  // loader_iter region), and a later region that the rank meter joined to
  // it (nested, overlapping): its new end.
  void AddWait(uint32_t process, int32_t tid, size_t step, uint64_t start, uint64_t end,
               bool iter = false);
  void ExtendWait(size_t step, uint64_t end);
  // Settles every wait; the split of each step (by index).
  std::vector<WaitSplit> Finish();
  // After Finish: the preprocessing of the fetches the loop waited for, by
  // part (index: FetchParts::part_names()), and the late batches with the
  // most head-of-line time (most first, at most kKeptLateBatches).
  const std::vector<uint64_t>& part_ns() const { return part_ns_; }
  std::vector<LateBatch> late_batches() const;

 private:
  // A running union of one process's data I/O (starts in order).
  struct Busy {
    bool open = false;
    uint64_t start = 0, end = 0, closed_ns = 0;
    void Add(uint64_t s, uint64_t e) {
      if (open && s <= end) {
        end = e > end ? e : end;
        return;
      }
      if (open) closed_ns += end - start;
      open = true;
      start = s;
      end = e;
    }
    // Time inside the union before t: exact for any t at or after the
    // latest start added.
    uint64_t Before(uint64_t t) const;
  };
  struct Fetch {
    uint32_t process = 0;
    uint64_t start = 0, end = 0;
    uint64_t io_start = 0, io_end = 0;  // the process's Busy::Before at start, end
    uint64_t pass_first = 0;  // the start of its process's first fetch of the pass
    uint64_t faults_start = 0, faults_end = 0;  // the process's faults_ Before at start, end
    bool end_known = false, has_flow = false, used = false;
    uint64_t flow = 0;
  };
  struct Wait {
    uint32_t process = 0;
    int32_t tid = 0;
    size_t step = 0;
    uint64_t start = 0, end = 0;
    uint64_t fetch = UINT64_MAX;  // sequence number of the fetch matched by flow
    // Busy::Before(start) of the waiting process and of every process
    // that had fetched by then: a fetch that began earlier is measured
    // from the wait's start.
    std::vector<std::pair<uint32_t, uint64_t>> io_at_start;
    uint64_t group_io_at_start = 0;  // the group's Busy::Before(start)
    uint64_t pinned_at_start = 0;    // the waiting process's pinned_ Before(start)
    // faults_ Before(start) of the processes of io_at_start, in its order.
    std::vector<uint64_t> faults_at_start;
    bool iter = false;
  };

  Fetch* FetchAt(uint64_t seq);
  Fetch* OwnFetch(const Wait& w);    // of the waiting process, inside the wait
  Fetch* OtherFetch(const Wait& w);  // unmatched, of another process, ended by the wait's end
  // How long into the wait fetches of other processes begun before it went
  // on (a pass left early: the workers finishing the batches it had them
  // fetch; at most the kept fetches).
  uint64_t LeftoverFetching(const Wait& w) const;
  void SettleWait(const Wait& w);
  // A batch made by a worker and received: its fetch's record and its
  // head-of-line time (the wait's part before f's end while a later batch of
  // the same iterator, by flow, was made).
  void Received(const Wait& w, const Fetch& f, WaitSplit* out);
  // What held a late batch's fetch up, where not its slowest sample.
  void HeldBy(const FetchRecord& r, LateBatch* late) const;
  // faults_ Before(w.start) of `process`, as taken when the wait began.
  uint64_t FaultsAtStart(const Wait& w, uint32_t process) const;
  // Moves out of the hand-over the faults of the batch's producer `f`
  // while the batch waited to be sent.
  void HeldByFaults(const Wait& w, const Fetch& f, WaitSplit* out) const;
  void Settle(uint64_t now);  // Advance with something to settle
  bool IsBatchFlow(const StreamEvent& e);

  const std::vector<ProcessTrace>& processes_;
  FetchParts* fetch_parts_;
  Handovers handovers_;
  PathClasses paths_;
  std::vector<Busy> busy_;            // per process
  std::vector<Busy> pinned_;          // per process: its pin_batch regions
  std::vector<Busy> faults_;          // per process: its faults on mapped data files
  Busy group_;                        // every process's
  std::vector<uint64_t> last_fetch_;  // per process: its latest fetch's sequence number
  uint64_t pass_ = 0;                 // loader_iter regions so far
  // Per process: the pass of its latest fetch and the start of its first
  // fetch in that pass.
  std::vector<uint64_t> fetch_pass_, pass_first_;
  // Per process: whether a wait of it has received a batch by flow.
  std::vector<bool> by_flow_;
  std::vector<uint32_t> fetchers_;    // processes that fetched, in order of first fetch
  std::deque<Fetch> fetches_;         // by start; fetches_[i] has sequence first_seq_ + i
  uint64_t first_seq_ = 0;
  std::vector<uint64_t> ends_pending_;  // fetches whose end is still ahead
  std::unordered_map<uint64_t, uint64_t> flows_;  // flow id -> fetch sequence number
  std::vector<Wait> waits_;
  std::vector<WaitSplit> splits_;  // by step
  std::vector<size_t> iter_steps_;  // the steps of iter(loader) calls
  std::vector<uint64_t> part_ns_;   // by part
  std::vector<LateBatch> late_;     // a heap, the least head-of-line on top
  // (process, string id) -> whether the flow is a batch's: each looked at once.
  std::unordered_map<uint64_t, bool> batch_flows_;
};

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_WAIT_CAUSES_H_
