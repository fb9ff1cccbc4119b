// The one way the exporters and the analysis see events: in merged time order,
// a batch at a time, from either the trace files themselves (FileStream,
// bounded memory) or a TraceSet held in memory (the tests' reference).
#ifndef DLPROF_LIB_READ_EVENT_SOURCE_H_
#define DLPROF_LIB_READ_EVENT_SOURCE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "dlprof/format.h"
#include "lib/read/trace_set.h"

namespace dlprof::read {

struct Stack;  // tools/dump/stacks.h

// A string of a process (a file or region name) as one key: string ids are
// per process, so the meters' per-name tables key by both.
inline uint64_t ProcessStringKey(uint32_t process, uint32_t string_id) {
  return static_cast<uint64_t>(process) << 32 | string_id;
}

// One event as a source hands it out. `event` stays valid until the next
// call of EventSource::Next.
struct StreamEvent {
  const Event* event;
  int32_t tid;
  int32_t rank;      // its block's rank, else its file header's; -1 if none
  uint32_t process;  // index into EventSource::processes()
  uint32_t index;    // its position among its process's events in this order
  // The region the event ran in and its call stack, when an EventLabels
  // source is in the chain and the trace has them; valid as long as it.
  const std::string* region = nullptr;
  const Stack* stack = nullptr;

  EventRef ref() const { return {process, index}; }
};

class EventSource {
 public:
  virtual ~EventSource() = default;
  // Every input, known before the first event. A process's strings grow as
  // its blocks are read: those an event names are there when it is handed
  // out. Messages and counts are complete once Next has returned 0.
  virtual const std::vector<ProcessTrace>& processes() const = 0;
  // Up to `max` events, ordered by (start_ns, pid, tid, input, position in
  // the process); 0 at the end.
  virtual size_t Next(StreamEvent* out, size_t max) = 0;
};

// Sees every event of a stream, as the summary's context meters do (the
// regions, the call sites). `counted`: false for an event a filter leaves
// out, which still moves the clock and may still hold or describe others.
class EventObserver {
 public:
  virtual ~EventObserver() = default;
  virtual void Add(const StreamEvent& e, bool counted) = 0;
};

// Calls `fn(const StreamEvent&)` for every event of `source`.
template <typename Fn>
void ForEachEvent(EventSource& source, Fn&& fn) {
  StreamEvent batch[256];
  for (size_t n; (n = source.Next(batch, 256)) > 0;) {
    for (size_t i = 0; i < n; ++i) fn(batch[i]);
  }
}

// The merged order of a TraceSet held in memory.
class TraceSetSource : public EventSource {
 public:
  explicit TraceSetSource(const TraceSet& set) : set_(set) {}
  const std::vector<ProcessTrace>& processes() const override { return set_.processes; }
  size_t Next(StreamEvent* out, size_t max) override {
    size_t n = 0;
    for (; n < max && next_ < set_.merged.size(); ++n, ++next_) {
      const EventRef r = set_.merged[next_];
      const ProcessTrace& p = set_.processes[r.process];
      out[n] = {&p.events[r.index], p.tids[r.index], p.ranks[r.index], r.process, r.index};
    }
    return n;
  }

 private:
  const TraceSet& set_;
  size_t next_ = 0;
};

}  // namespace dlprof::read

#endif  // DLPROF_LIB_READ_EVENT_SOURCE_H_
