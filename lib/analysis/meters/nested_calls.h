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
// writes what the fwrites counted). Inside MPI_Init, MPI_Finalize or any
// other call that is not I/O, and when no call around it is known (a
// damaged trace), it counts.
//
// A POSIX call that cuFile's compatibility mode made on one of its own
// threads for a cuFile read or write in progress repeats that I/O too.
//
// Events come by start, so the call around a nested call has come before
// it: each thread keeps its last call that was not nested.
#ifndef DLPROF_LIB_ANALYSIS_NESTED_CALLS_H_
#define DLPROF_LIB_ANALYSIS_NESTED_CALLS_H_

#include <cstdint>
#include <vector>

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
    o.known = true;
  }

  // Whether the nested I/O call `e` repeats the I/O of the call around it.
  bool Repeats(const StreamEvent& e) {
    // cuFile's compatibility-mode call on its own thread: the reader found
    // the cuFile I/O it serves (lib/read/cufile_compat.h).
    if (e.event->flags & kEventFlagServesTransfer) return true;
    const Outer& o = SlotOf(e.process, e.tid);
    const uint64_t start = e.event->start_ns;
    if (!o.known || start < o.start_ns || start > o.end_ns || !o.io) return false;
    if (o.file == 0 || o.file == e.event->file) return true;
    // Two ids of one process may name one path (the FILE and the fd).
    const auto& strings = processes_[e.process].strings;
    auto a = strings.find(o.file), b = strings.find(e.event->file);
    return a != strings.end() && b != strings.end() && a->second == b->second;
  }

 private:
  struct Outer {
    int32_t tid = 0;
    bool known = false, io = false;
    uint32_t file = 0;
    uint64_t start_ns = 0, end_ns = 0;
  };

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
};

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_NESTED_CALLS_H_
