// GPU busy time and data-stall time measured in one pass over events in
// order of start, in memory that does not grow with the trace.
//
// docs/ANALYSIS_TABLES.md, "GPU, idle and data-stall time", defines the
// figures: the union I of the I/O calls, the union B of kernel, copy and
// memset intervals (per device and over all devices), the GPU window
// W = [first GPU start, last GPU end], and
//   io_outstanding = |I ∩ W|,  data_stall = |I ∩ W| - |I ∩ B|.
//
// Each union is built as its events arrive: an interval stays open while the
// next start falls inside it and closes when a start passes its end. Every
// overlapping pair (x of I, y of B) is counted exactly once, when the first
// of the two closes, against the other's open interval: the other already
// started (its start is before the closed one's end) and whatever it grows
// later lies after the current event's start, beyond the closed one. The
// window's end is not known until the last GPU event: the parts of closed I
// intervals past the last GPU end seen so far wait in `pending` and join the
// window when another GPU event arrives, since it starts after them.
//
// A call's own share of the stall (for the top files and processes) follows
// the same rule against B, with the calls in flight kept in a heap by end:
// memory grows with the calls in flight, the devices and the keys.
#ifndef DLPROF_LIB_ANALYSIS_STALL_METER_H_
#define DLPROF_LIB_ANALYSIS_STALL_METER_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

namespace dlprof::analysis {

class StallMeter {
 public:
  // Where a call's stall share is counted: opaque, compared by address.
  using Key = const void*;

  // Both in order of `start` across the two (equal starts in any order).
  void AddGpu(int32_t device, uint64_t start, uint64_t end);
  void AddIo(uint64_t start, uint64_t end, Key process, Key file /* may be null */) {
    // Before any GPU work there is no window: a call only has to be known
    // if it may still be in flight when the first GPU event comes, and the
    // calls need no order yet (the heap is made then).
    if (!all_.seen) {
      // Whether the call extends the open interval or opens one (the one it
      // closes lies before any window) depends on nanoseconds between calls:
      // chosen without a branch.
      const bool extends = io_.open && start <= io_.end;
      io_.start = extends ? io_.start : start;
      io_.end = extends && io_.end > end ? io_.end : end;
      io_.open = true;
      // A call that ended by this start can add nothing to a window that
      // opens later: the one before takes its place when it has (as in a
      // thread's loop of reads), so the list holds what may be in flight.
      const bool grows = in_flight_.empty() || in_flight_.back().end > start;
      if (grows) in_flight_.emplace_back();
      Call& c = in_flight_.back();
      c.start = start;
      c.end = end;
      c.process = process;
      c.file = file;
      if (grows && in_flight_.size() > prune_at_) PruneEndedBy(start);
      return;
    }
    AddIoSlow(start, end, process, file);
  }
  // Closes everything; the figures below are valid afterwards.
  void Finish();

  struct Device {
    uint64_t first_ns = 0, last_ns = 0;  // its window
    uint64_t busy_ns = 0;
    uint64_t stall_ns = 0;  // I/O outstanding in its window while it was idle
  };
  bool any_gpu() const { return all_.seen; }
  const std::map<int32_t, Device>& devices() const { return devices_result_; }
  uint64_t gpu_first_ns() const { return all_.first; }
  uint64_t gpu_last_ns() const { return all_.last; }
  uint64_t gpu_busy_ns() const { return all_.busy_ns; }
  uint64_t io_outstanding_ns() const { return all_.io_in_window; }
  uint64_t data_stall_ns() const { return all_.io_in_window - all_.io_covered; }
  const std::unordered_map<Key, uint64_t>& stall_by_process() const { return by_process_; }
  const std::unordered_map<Key, uint64_t>& stall_by_file() const { return by_file_; }

 private:
  struct Open {  // the open interval of a union being built
    bool open = false;
    uint64_t start = 0, end = 0;
    uint64_t Overlap(uint64_t s, uint64_t e) const;
  };
  // One GPU union (a device, or all of them) and its share of I.
  struct Busy {
    Open current;
    bool seen = false;
    uint64_t first = 0, last = 0;   // window so far
    uint64_t busy_ns = 0;
    uint64_t io_in_window = 0;      // |I ∩ [first, last]| of closed I intervals
    uint64_t io_pending = 0;        // their parts past `last`, waiting
    uint64_t io_covered = 0;        // |I ∩ B|
    // Adds [start, end); returns the interval it closed, if any.
    bool Add(uint64_t start, uint64_t end, uint64_t* closed_start, uint64_t* closed_end);
    // A closed I interval.
    void TakeIo(uint64_t start, uint64_t end);
  };
  struct Call {
    uint64_t start, end;
    uint64_t covered = 0;  // by the all-devices union
    Key process, file;
    bool operator>(const Call& o) const { return end > o.end; }
  };

  void AddIoSlow(uint64_t start, uint64_t end, Key process, Key file);
  void PruneEndedBy(uint64_t t);
  void CloseBusy(Busy* b, uint64_t start, uint64_t end, bool all_devices);
  void CloseIo();
  void RetireCallsEndingBy(uint64_t t);
  void Retire(Call* c);

  Busy all_;
  std::map<int32_t, Busy> devices_;
  std::map<int32_t, Device> devices_result_;
  Open io_;
  std::vector<Call> in_flight_;  // min-heap by end once a GPU event came
  size_t prune_at_ = 64;
  std::unordered_map<Key, uint64_t> by_process_, by_file_;
  std::unordered_map<Key, uint64_t> pending_process_, pending_file_;
};

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_STALL_METER_H_
