// Which nested calls the summary leaves out: only those that repeat the I/O
// of the call around them.
//
// The tracer flags a call made while another traced call of its thread was
// in progress (kEventFlagNested): the pread of an MPI_File_read_at, the
// open of an MPI_File_open, or the open of MPI's shared-memory files inside
// MPI_Init. Counting the first two would count their bytes twice; leaving
// out the last would lose I/O that no other call stands for. So a nested
// call is left out only when the outermost call around it on its thread is
// an I/O call on the same file, or on no file in particular (fflush(NULL)
// writes what the fwrites counted) -- but a read or write inside a call on
// the file that moves no data of its own counts (MPI_File_preallocate's
// writes of the file's blocks). Inside MPI_Init, MPI_Finalize or any
// other call that is not I/O, and when no call around it is known (a
// damaged trace), it counts.
//
// A POSIX call that cuFile's compatibility mode made on one of its own
// threads for a cuFile read or write in progress repeats that I/O too.
//
// Events come by start, so the call around a nested call has come before
// it -- unless both started in one nanosecond: the clock read twice within
// one of its steps gives both one start (an AMD EPYC's TSC steps by 10 ns,
// its 100 MHz reference, and a hot cuFileRead reaches its first pread in
// about that), and one thread's events of one start come as its ring held
// them, by end: the nested call first (integration.gds, under load, counted
// such a pread's 64 KiB beside its cuFileRead's).
// So each thread keeps its last call that was not nested, and a nested I/O
// call that no call seen so far holds is held (copied) until the stream
// leaves its thread's nanosecond: a call not nested that comes in it is the
// call around it, and Repeats decides; if none comes (a damaged trace), it
// counts. Held calls are added before the next event: the figures still
// take the calls in the stream's order.
#ifndef DLPROF_LIB_ANALYSIS_NESTED_CALLS_H_
#define DLPROF_LIB_ANALYSIS_NESTED_CALLS_H_

#include <cstdint>
#include <vector>

#include "lib/format/event_rules.h"
#include "lib/read/event_source.h"
#include "lib/read/trace_set.h"

namespace dlprof::analysis {
using namespace dlprof::read;

class NestedCalls {
 public:
  // `processes` must outlive this (a source's processes()).
  explicit NestedCalls(const std::vector<ProcessTrace>& processes)
      : processes_(processes), threads_(processes.size()) {}

  // A call that is not nested; `io`: an I/O call (POSIX, STDIO, MPI-IO data
  // or file call; not MPI_Init).
  void AddOuter(const StreamEvent& e, bool io) {
    Outer& o = SlotOf(e.process, e.tid);
    o.start_ns = e.event->start_ns;
    o.end_ns = e.event->start_ns + e.event->dur_ns;
    o.file = e.event->file;
    o.io = io;
    o.data = RulesFor(e.event->kind).data;
    o.known = true;
  }

  // What to do with a nested I/O call: leave it out, count it, or hold it.
  enum class Verdict { kRepeats, kCounts, kOuterToCome };
  Verdict Judge(const StreamEvent& e) {
    if (Repeats(e)) return Verdict::kRepeats;
    return Around(e) != nullptr ? Verdict::kCounts : Verdict::kOuterToCome;
  }

  // Whether the nested I/O call `e` repeats the I/O of the call around it.
  bool Repeats(const StreamEvent& e) {
    // cuFile's compatibility-mode call on its own thread: the reader found
    // the cuFile I/O it serves (lib/read/cufile_compat.h).
    if (e.event->flags & kEventFlagServesTransfer) return true;
    const Outer* around = Around(e);
    if (around == nullptr || !around->io) return false;
    const Outer& o = *around;
    if (o.file == 0) return true;
    if (!o.data && RulesFor(e.event->kind).data) return false;  // no bytes of its own
    if (o.file == e.event->file) return true;
    // Two ids of one process may name one path (the FILE and the fd).
    const auto& strings = processes_[e.process].strings;
    auto a = strings.find(o.file), b = strings.find(e.event->file);
    return a != strings.end() && b != strings.end() && a->second == b->second;
  }

  // A nested I/O call whose call around it has not come (kOuterToCome),
  // kept until the stream leaves its thread's nanosecond. The held calls
  // are all of one thread and nanosecond (the stream keeps those together).
  void Hold(const StreamEvent& e) {
    held_events_.push_back(*e.event);  // the source's events last one batch
    held_.push_back(e);
  }
  bool holding() const { return !held_.empty(); }
  // Whether `e` is past the held calls: of another thread or nanosecond.
  bool PastHeld(const StreamEvent& e) const {
    const StreamEvent& h = held_.front();
    return e.process != h.process || e.tid != h.tid ||
           e.event->start_ns != held_events_.front().start_ns;
  }
  // The held calls, in the stream's order; valid until ReleaseHeld().
  const std::vector<StreamEvent>& held() {
    for (size_t i = 0; i < held_.size(); ++i) held_[i].event = &held_events_[i];
    return held_;
  }
  void ReleaseHeld() {
    held_.clear();
    held_events_.clear();
  }

 private:
  struct Outer {
    int32_t tid = 0;
    bool known = false, io = false;
    bool data = false;  // a read or write: it moves bytes of its own
    uint32_t file = 0;
    uint64_t start_ns = 0, end_ns = 0;
  };

  // The thread's last call not nested, if it holds the start of `e`.
  const Outer* Around(const StreamEvent& e) {
    const Outer& o = SlotOf(e.process, e.tid);
    const uint64_t start = e.event->start_ns;
    return o.known && start >= o.start_ns && start <= o.end_ns ? &o : nullptr;
  }

  // A process has few threads that do traced calls: a short list each, and
  // the last one found remembered (its calls come in runs).
  Outer& SlotOf(uint32_t process, int32_t tid) {
    if (last_ != nullptr && last_process_ == process && last_->tid == tid) return *last_;
    std::vector<Outer>& list = threads_[process];
    Outer* found = nullptr;
    for (Outer& o : list) {
      if (o.tid == tid) {
        found = &o;
        break;
      }
    }
    if (found == nullptr) {
      list.push_back(Outer{});
      list.back().tid = tid;
      found = &list.back();
    }
    last_process_ = process;
    last_ = found;
    return *found;
  }

  const std::vector<ProcessTrace>& processes_;
  std::vector<std::vector<Outer>> threads_;  // by process
  uint32_t last_process_ = 0;
  Outer* last_ = nullptr;  // into threads_[last_process_]; reset when it grows
  std::vector<StreamEvent> held_;  // their `event` set by held()
  std::vector<Event> held_events_;
};

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_NESTED_CALLS_H_
