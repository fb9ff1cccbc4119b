// The batch waits of a bounded trace's whole run, on the flusher
// (DLPROF_KEEP; docs/USER_GUIDE_BOUNDED.md): what each interval's
// BatchRecord (lib/format/counters.h) keeps so that the reader can split
// the whole run's batch wait by cause, as lib/analysis/meters/wait_causes.h
// splits the kept windows' -- reading, preprocessing, hand-over, worker
// start-up -- long after the events themselves are gone.
//
// It sees what IntervalCounters sees, a drained ring at a time (one
// thread's events in time order), and keeps per thread the spans of its
// last data calls (reads, and opens, stats, closes: the full events' data
// I/O), its last pin_batch regions and its last batch flow.
// A thread's page faults on mapped data come later than its calls: the
// flusher drains them after the rings, each pass (TraceSink::PassLocked),
// so a region's reads are looked at once the pass is over (Settle), when
// every fault taken before the region ended is in. When a region ends:
//   load_batch  with a flow_finish("batch", id) inside: a wait for a
//               worker's batch; counted, and kept as a WaitSample when
//               batch `id` is sampled (counters.h, BatchSampled) or the
//               wait among the interval's longest;
//               without: summed with the thread's data reads and pin_batch
//               regions in it (counters.h, OwnWaits), apart where it read
//               nothing (the call that ends a pass, beside workers);
//   loader_iter iter(loader): summed so, too;
//   fetch_batch with a flow_start("batch", id) inside: a worker's fetch,
//               kept as a FetchSample with its thread's data reads in each
//               eighth of it, when sampled or among the interval's latest
//               (longest since it began, or its thread's previous fetch
//               ended, whichever was later);
//   optimizer_step a step of a loop without a DataLoader: the thread's
//               reading since its previous step is the step's wait
//               (counters.h, StepRecord); the first step's window, as
//               the full events' (format::FirstStepPeriod and
//               FirstWindowStart), is taken when
//               the fifth step ends (or the run does).
// The level rises when an interval's hashed samples pass six a second and
// falls when they are under two; the longest waits and latest fetches are
// two a second more: the stream stays within its budget (a wait sample ~10
// bytes, a fetch ~30) at any batch rate.
//
// Costs: a few instructions per run of read calls (a span stored); the
// rest per region or flow, which come once a batch.
#ifndef DLPROF_LIB_CORE_BATCH_SAMPLER_H_
#define DLPROF_LIB_CORE_BATCH_SAMPLER_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lib/core/live_maps.h"
#include "lib/core/region_roles.h"
#include "lib/format/counters.h"
#include "lib/format/step_rules.h"

namespace dlprof::core {

class StringTable;

class BatchSampler {
 public:
  BatchSampler(StringTable* strings, uint64_t interval_ns);

  // The thread whose events the calls below are about, until the next call.
  void SetThread(uint32_t tid);
  // The thread read a data file with a run of calls from `start_ns` to
  // `end_ns`, `ns` of it in the calls.
  void DataRead(uint64_t start_ns, uint64_t end_ns, uint64_t ns);
  // The thread took a page fault on mapped data, `start_ns` to `end_ns`.
  void MappedRead(uint64_t start_ns, uint64_t end_ns);
  // The thread made other calls on a data file (opens, stats, maps, closes):
  // reading, as a read is, in a wait, a fetch and a step loop's window, as
  // the full events' split counts them (wait_causes.h; a worker's open of
  // a sample's file descheduled 96 ms under load was its preprocessing).
  void OtherDataCalls(uint64_t start_ns, uint64_t end_ns, uint64_t ns);
  // A call on a data file's maps, [start_ns, end_ns): `live` 1 where it
  // made one (mmap: live from its end), -1 where it tore one down (munmap:
  // from its start), 0 where it moved one (mremap). For the loop's time
  // with a map live (live_maps.h), and, in a step's wait, no reading: the
  // kernel's work on the page tables, the full events' "mapping" part of
  // the preprocessing (nanoGPT's np.memmap made anew each step: its
  // munmaps 300.7 ms of "reading" while 96 KiB came from storage). A map
  // the thread made and tore down between two of its steps was the
  // batch's (nanoGPT's get_batch: a np.memmap made, sliced, dropped on
  // return): its calls' stretches from its making to its tearing down are
  // one (StretchNsIn), as the full events join its life (step_loop.h,
  // AddDataIo), its time outside calls and faults the step's copies out of
  // maps (StepRecord::map_copy_ns).
  void MapCall(uint64_t start_ns, uint64_t end_ns, int live);
  // The run ends: a loop of fewer than five steps takes its first step's
  // window from those it had.
  void FinishSteps();
  // Whether the current thread's reading is counted in stretches
  // (IntervalCounters::DataSpans): it has stepped an optimizer, or another
  // thread of the process has (its reading is then another thread's, a
  // prefetcher's, a union of its calls: OtherIo).
  bool Stepping() const { return thread_->steps > 0 || stepped_; }
  // An annotation region, by its name's string id.
  void Region(uint32_t name, uint64_t start_ns, uint64_t end_ns);
  // A flow's start or finish, by its name's string id.
  void Flow(bool finish, uint32_t name, uint64_t id, uint64_t at_ns);
  // A mark, by its name's string id: "end loader=L" (the request that
  // found a pass over) or "raised loader=L" (one that raised) is held for
  // the region around it, which ends later (lib/read/regions.h).
  void Mark(uint32_t name, uint64_t at_ns);
  // Whether the region [start_ns, end_ns) of the current thread, any name,
  // held its pending "end" or "raised" mark: no batch came out of it (the
  // whole run's batches are its batch region's less those, as the full
  // events' StepRequest). The innermost region takes it: the batch region
  // ends before any region around it.
  bool TakeNoBatchMark(uint64_t start_ns, uint64_t end_ns);
  // The regions ended so far, with the reads in them: once a pass has
  // drained the rings and then the faults.
  void Settle();

  // The interval's record (empty() when no batch was waited for or
  // fetched), starting `start_ns`, its regions settled; the next interval
  // starts afresh.
  format::BatchRecord Take(uint64_t start_ns);
  // The interval's step waits (after Take: settled), and what they cannot
  // see (StepRecord's unseen figures); `any` false when none of it is in it.
  format::StepRecord TakeSteps(uint64_t start_ns, bool* any);

  uint8_t level() const { return level_; }

 private:
  using Role = RegionRole;
  struct Span {
    uint64_t start = 0, end = 0, ns = 0;
  };
  // Enough for a batch of a few hundred samples, each a file's open, reads
  // and close in a row (one span); a fetch with more runs than this loses
  // its first ones.
  static constexpr size_t kReadSpans = 256;
  static constexpr size_t kPinSpans = 4;
  static constexpr size_t kCheckpointSpans = 64;
  static constexpr size_t kMapLives = 64;
  // A thread's last spans of one kind, in time order.
  struct Spans {
    std::array<Span, kReadSpans> at;
    size_t next = 0, count = 0;
    void Add(const Span& s) {
      at[next] = s;
      next = (next + 1) % kReadSpans;
      count = std::min(count + 1, kReadSpans);
    }
    Span& newest() { return at[(next + kReadSpans - 1) % kReadSpans]; }
  };
  static uint64_t Overlap(uint64_t s, uint64_t e, uint64_t a, uint64_t b) {
    const uint64_t lo = std::max(s, a), hi = std::min(e, b);
    return hi > lo ? hi - lo : 0;
  }
  struct Thread {
    Spans reads;   // its calls' (those within kCallRunGapNs: one span)
    Spans faults;  // its page faults' (a run of them close together: one)
    // Its calls on data files (reads, and the opens, stats and maps a step
    // loop's reading counts), in time order, joined as a step loop's
    // reading joins them (kStepReadingJoinNs apart: one span, the time
    // between included), never across the end of its last step: a step's
    // reading however many calls it makes (a loop opening, reading and
    // closing a file a sample). Before its first step, joined freely: the
    // first window, whose start is known steps later, may begin inside a
    // span, and take the time up to the first call after its start.
    Spans joined;
    // Its reads (calls that read, not opens or closes): a step's window's
    // gaps between reads (UnjoinedNsIn); and its calls on data maps
    // (MapCall): a step's window's "mapping".
    Spans read_calls, map_calls;
    // The maps it made since its last step and has not torn down, when the
    // first of them was made (MapCall) and its calls' time by then (of
    // `calls_ns`, the time of all its data calls so far); the lives of
    // those it tore down before its next step, the batches' maps, each with
    // its calls' time in it (at most kMapLives, dropped as checkpoint_io is).
    uint32_t maps_made = 0;
    uint64_t map_made_at = 0, calls_ns = 0, calls_ns_at_map = 0;
    std::vector<Span> map_lives;
    // The end of its latest call and page fault on data after the
    // process's first step while it has not stepped itself (OtherIo).
    uint64_t other_call_last = 0, other_fault_last = 0;
    // Its data I/O drained in this pass while no thread of the process had
    // been seen to step (`ns` 1: a fault), counted at the pass's end if one
    // was: the threads' rings are drained one after another, the newest
    // thread's first, and a prefetcher's reads in the pass that holds the
    // loop's first step came before it (a loaded machine's one pass over
    // most of a short loop: all of them; Settle).
    std::vector<Span> other_held;
    std::array<Span, kPinSpans> pins;
    size_t pins_next = 0;
    // Its checkpoint I/O, no step's reading (the full events'
    // IsCheckpointCall): its save regions (torch.save's open, truncating
    // the last save, and its close), and its load regions before its next
    // step after a save (the save verified: 303.7 ms of a step loop's
    // "reading" where its clock had 18.7 ms; a load after a later step
    // reads what an earlier one saved as data, a cache's samples).
    // Those since its last step's end (Settle drops the rest), at most
    // kCheckpointSpans.
    std::vector<Span> checkpoint_io;
    bool saved_since_step = false;
    bool flow_started = false, flow_finished = false;
    bool no_batch_mark = false;  // an "end" or "raised" mark at no_batch_at
    uint64_t no_batch_at = 0;
    uint64_t started_id = 0, started_at = 0, finished_id = 0, finished_at = 0;
    uint64_t fetch_end = 0;  // its last fetch's end (0: none yet)
    // Its optimizer steps: the previous one's end (0: none yet), and the
    // first ones' ends until the first step's window is taken.
    uint64_t step_end = 0, first_step_start = 0;
    uint64_t step_ends[format::kFirstPeriodMarks] = {};
    uint64_t first_steps_shortest = UINT64_MAX;  // of those steps' regions
    size_t steps = 0;
    bool first_step_open = false;
    bool seen = false;  // had events this interval
    int idle = 0;       // intervals without (threads gone are dropped)
  };

  // A region that ended, with its thread's calls' reads (and pin_batch
  // regions) in it, until Settle() adds its faults': a wait of the
  // thread's own (kWait, kIter), a sampled fetch (kFetch), or the window
  // before a step (kStep: its reading all taken at Settle).
  struct Ended {
    const Thread* thread = nullptr;
    Role role = Role::kUnknown;
    uint64_t start = 0, end = 0;
    uint64_t read_ns[format::kFetchParts] = {};  // a wait's: [0] only
    uint64_t pin_ns = 0;                         // a wait's
    uint64_t id = 0;     // a fetch's batch
    uint64_t late = 0;   // a fetch's end less its thread's previous fetch's
    bool first = false;  // a fetch: its process's first of the pass
  };

  // The `cap` largest by key of what is offered in an interval.
  template <typename T>
  class Largest {
   public:
    explicit Largest(size_t cap) : cap_(cap) {}
    // Whether `key` would be held now.
    bool Admits(uint64_t key) const { return held_.size() < cap_ || key > held_.front().first; }
    // Holds `x` if among the largest; returns what that lets go: `x`
    // itself, or the smallest held before.
    std::optional<T> Offer(uint64_t key, const T& x) {
      if (!Admits(key)) return x;
      held_.emplace_back(key, x);
      std::push_heap(held_.begin(), held_.end(), Greater);
      if (held_.size() <= cap_) return std::nullopt;
      std::pop_heap(held_.begin(), held_.end(), Greater);
      T out = held_.back().second;
      held_.pop_back();
      return out;
    }
    // What it holds, appended to `out`; it starts afresh.
    void Take(std::vector<T>* out) {
      for (const auto& [key, x] : held_) out->push_back(x);
      held_.clear();
    }

   private:
    static bool Greater(const std::pair<uint64_t, T>& a, const std::pair<uint64_t, T>& b) {
      return a.first > b.first;  // a min-heap: the smallest at the front
    }
    size_t cap_;
    std::vector<std::pair<uint64_t, T>> held_;
  };

  void SettleOwnWait(const Ended& w);
  // A step's window: its reading, mapping and copies out of the batch's
  // maps to the interval's StepRecord.
  void SettleStep(const Ended& w);
  void SettleFetch(const Ended& f);
  void Step(Thread& t, uint64_t start_ns, uint64_t end_ns);
  void FirstStepWindow(Thread& t);
  void StepWindow(Thread& t, uint64_t from, uint64_t to);
  // The reading of `t` in [a, b) as a step loop counts it: its calls' and
  // faults' spans, those less than 1 ms apart one stretch with the time
  // between (lib/analysis/meters/step_loop.h, the full events' rule);
  // `preprocessing`, of that, the time between calls (lib/analysis/meters/
  // step_loop.cc, AddToGap's joined_ns: the program's own work, decoding
  // between a file's reads), but next to a page fault, which is reading
  // (the copy out of the map). A stretch of calls keeps no call's place
  // within it, only its calls' summed time: one that a fault overlaps
  // counts all its time between calls reading.
  struct Stretch {
    uint64_t ns = 0, preprocessing = 0;
  };
  static Stretch StretchNsIn(const Thread& t, uint64_t a, uint64_t b);
  // The gaps of kStepReadingJoinNs or more between the reads and page
  // faults of `t` in [a, b): work between them (a sort after each read)
  // that no wait counts (lib/analysis/meters/step_loop.cc, AddToGap's
  // unjoined_ns).
  static uint64_t UnjoinedNsIn(const Thread& t, uint64_t a, uint64_t b);
  // The time of the calls on data maps of `t` in [a, b).
  static uint64_t MapNsIn(const Thread& t, uint64_t a, uint64_t b);
  // Data I/O [start, end) of the current thread, a call or (`fault`) a page
  // fault: counted in the interval's other_threads_io_ns where some thread
  // of the process has stepped and this one has not (a prefetcher), each
  // kind a union joined as a step's reading (its calls come in order, its
  // faults after them, each in order).
  void OtherIo(uint64_t start, uint64_t end, bool fault);
  // Counts it, from the process's first step on (the full events' loop).
  void CountOtherIo(Thread& t, uint64_t start, uint64_t end, bool fault);
  // At most this much of a thread's data I/O held in a pass (OtherIo).
  static constexpr size_t kOtherHeld = 4096;
  // A call's span to the thread's spans (DataRead's and OtherDataCalls').
  void CallSpan(const Span& s);
  // Adds a call's span to the thread's `joined`: the newest span grows
  // where the call is within kStepReadingJoinNs of it and in the same
  // window (calls come in time order, with the steps that end between
  // them), as StretchNsIn joins. (Its bounds, and its calls' summed
  // time: the rest of it is between calls.)
  static void JoinCall(Thread* t, const Span& s) {
    Span& last = t->joined.newest();
    if (t->joined.count > 0 && last.start >= t->step_end &&
        s.start < last.end + format::kStepReadingJoinNs) {
      last.end = std::max(last.end, s.end);
      last.ns += s.ns;
    } else {
      t->joined.Add(s);
    }
  }
  // Adds the read time of `spans` within each of `parts` equal parts of
  // [a, b) to out[0, parts): each span's time, prorated by overlap.
  static void AddReadsIn(const Spans& spans, uint64_t a, uint64_t b, int parts, uint64_t* out);
  // Whether batch `id` is sampled: raises the level (and drops the hashed
  // samples it no longer keeps) when the interval has too many.
  bool Sampled(uint64_t id);
  // A wait or fetch of a batch not sampled always: the longest or latest
  // are held apart, and what they let go kept where its hash is sampled.
  void OfferWait(const format::WaitSample& w);
  void OfferFetch(uint64_t late, const format::FetchSample& f);

  RegionRoles roles_;
  const size_t cap_;  // hashed samples an interval beyond the always-kept ones
  Largest<format::WaitSample> longest_waits_;    // by length
  Largest<format::FetchSample> latest_fetches_;  // by lateness
  std::unordered_map<uint32_t, std::unique_ptr<Thread>> threads_;
  Thread* thread_ = nullptr;
  std::vector<Ended> ended_;  // regions not settled yet
  format::BatchRecord record_;
  format::StepRecord steps_;
  // The interval's steps' unjoined time, each its own: a sample of at most
  // kUnjoinedSample (a process whose counters are not written keeps
  // settling steps, and no interval takes them).
  static constexpr size_t kUnjoinedSample = 4096;
  std::vector<uint64_t> step_unjoined_;
  uint64_t unjoined_steps_ = 0;  // offered to it this interval
  LiveMaps maps_;
  bool stepped_ = false;  // some thread of the process has stepped
  uint64_t first_step_ns_ = 0;  // when the first of those steps began
  size_t sampled_ = 0;  // hashed samples this interval beyond the always-kept ones
  uint8_t level_ = 0;
  bool fetched_ = false;  // this process fetched a worker's batch before ...
  uint64_t pass_ = 0;     // ... of this pass (its flow id's upper bits)
};

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_BATCH_SAMPLER_H_
