// The exporters. Each walks an EventSource once and writes to `out`.
#ifndef DLPROF_TOOLS_DUMP_OUTPUT_H_
#define DLPROF_TOOLS_DUMP_OUTPUT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "lib/read/event_source.h"
#include "tools/dump/kinds.h"
#include "tools/dump/out_buffer.h"
#include "lib/read/regions.h"
#include "lib/read/stacks.h"
#include "lib/read/trace_set.h"

namespace dlprof::analysis {
class JobRankMeters;  // lib/analysis/meters/job_rank_meters.h
}  // namespace dlprof::analysis

namespace dlprof::dump {
using namespace dlprof::read;

// What the exporters add to an I/O event when the trace has it: its call
// stack (DLPROF_STACKS=1) and the outermost region it ran in: from `stacks`
// and `regions` for a trace held in memory, else from the events themselves
// (StreamEvent::stack and ::region, set by an EventLabels source).
struct EventContext {
  const StackIndex* stacks = nullptr;
  const RegionAssignment* regions = nullptr;
  // Of a bounded run (DLPROF_KEEP): which stretch of it the events cover
  // (bounded_note.h), for the timelines' metadata; null: not bounded.
  const std::string* bounded = nullptr;
  // The text's times count from here: the job's second 0 (Job::second_zero_ns),
  // so that a listing cut by --from, --pid or --path lines up with the whole
  // one, and with what --from counts from. UINT64_MAX: from the first event.
  uint64_t time_zero_ns = UINT64_MAX;

  const std::string* RegionOf(const StreamEvent& e) const {
    return regions != nullptr ? regions->NameOf(e.ref()) : e.region;
  }
  const Stack* StackOf(const StreamEvent& e) const {
    return stacks != nullptr ? stacks->Of(e.ref()) : e.stack;
  }
};

// One JSON object per event (docs/FORMAT.md, "dlprof-dump --format jsonl").
void WriteJsonl(EventSource& source, OutBuffer* out, const EventContext& context = {});

// One strace-like line per event, times in seconds from context.time_zero_ns.
void WriteText(EventSource& source, OutBuffer* out, const EventContext& context = {});

// A process's pid as the listing and the timelines name it: "4711", and
// "4711#2" for the second process of its host with that pid
// (`earlier_same_pid` 1: EarlierSamePids).
std::string PidName(int32_t pid, int earlier_same_pid);

// What the timelines (Chrome JSON, Perfetto) know of each process, per trace
// of `processes`: the first image of its process (FirstImages: a process
// that exec'ed is one process, named after its first image), its process's
// rank (ProcessRanks: an image it exec'd may have gained the rank), and how
// many processes of its host had its pid before it (EarlierSamePids: a pid
// reused, or pid namespaces).
struct TimelineProcesses {
  explicit TimelineProcesses(const std::vector<ProcessTrace>& processes);
  // A process's name: its first image's command line (cut at 80
  // characters), its process's rank, its pid (PidName), its host in front
  // when `with_host`: "node2: python train.py [rank 3] (pid 4711)".
  std::string Name(size_t process, bool with_host) const;

  const std::vector<ProcessTrace>& processes;
  std::vector<size_t> first_image;
  std::vector<int32_t> rank;
  std::vector<int> earlier_same_pid;
};

// An annotated flow's event (dlprof_flow_start/finish): its name ("" if its
// string is missing), and the timelines' id of the flow: one value for a
// name and id on one host, whichever process started or finished it.
const std::string& AnnotationFlowName(const ProcessTrace& p, const Event& e);
uint64_t AnnotationFlowId(const ProcessTrace& p, const Event& e);

// Trace Event JSON for Perfetto UI and chrome://tracing. `ranks`, when
// given, observes the same stream (the EventFilter's): each rank's
// data-stall pieces are written once the stream ends.
void WriteChrome(EventSource& source, OutBuffer* out, const EventContext& context = {});
void WriteChrome(EventSource& source, OutBuffer* out, const EventContext& context,
                 analysis::JobRankMeters* ranks);

// The same for a TraceSet held in memory.
template <void (*Write)(EventSource&, OutBuffer*, const EventContext&)>
void WriteSet(const TraceSet& set, OutBuffer* out, const EventContext& context = {}) {
  TraceSetSource source(set);
  Write(source, out, context);
}

// Call stack frames as one JSON array, built once per distinct stack.
class StackJson {
 public:
  const std::string& Get(const Stack* s);

 private:
  std::unordered_map<const Stack*, std::string> cache_;
};

// The CUDA fields of a CUDA event, for the jsonl and chrome exporters:
// device, stream and correlation id (API calls: the correlation alone), or
// for cupti_clock its own fields (docs/CUDA.md).
void AppendCudaFields(const Event& e, const KindView& k, OutBuffer* out);

// An asynchronous request's fields (docs/FORMAT.md, "Asynchronous
// requests"): the thread that submitted it, when the program reaped it, its
// opcode where the kind does not say, and its flags (true, or 1 as the
// Perfetto exporter's annotations have them); for the jsonl and chrome
// exporters.
void AppendAsyncFields(const Event& e, const KindView& k, bool flags_as_1, OutBuffer* out);

// An app counter's value as a JSON number: the int64, or the double in the
// fewest digits that read back to it; a double that is no number (NaN,
// infinite) as the string "NaN", "Infinity" or "-Infinity", which JSON
// cannot hold as a number and float() reads back.
void AppendCounterValue(const Event& e, OutBuffer* out);

// Appends ,"region":"..." (I/O events only) and ,"stack":[...] for the event
// `r` when the trace has them: shared by the jsonl and chrome exporters.
void AppendEventContext(const EventContext& context, const StreamEvent& r, bool io_event,
                        StackJson* stacks, OutBuffer* out);

// Quoted copies of one process's strings, made on first use: the same few
// paths are printed over and over.
class QuotedStrings {
 public:
  using Quote = void (*)(std::string*, std::string_view);
  QuotedStrings(const ProcessTrace& p, Quote quote) : p_(&p), quote_(quote) {}

  // `id` is 64-bit because aux carries ids too; ids past 32 bits are unknown.
  const std::string& Get(uint64_t id) {
    if (last_ != nullptr && id == last_id_) return *last_;
    auto [it, added] = cache_.try_emplace(id);
    if (added) {
      auto s = id <= UINT32_MAX ? p_->strings.find(static_cast<uint32_t>(id)) : p_->strings.end();
      // An id whose string was lost with a damaged block still gets a
      // placeholder, so that consumers need no special case.
      if (s != p_->strings.end()) {
        quote_(&it->second, s->second);
      } else {
        quote_(&it->second, "<unknown string " + std::to_string(id) + ">");
      }
    }
    last_id_ = id;
    last_ = &it->second;
    return it->second;
  }

 private:
  const ProcessTrace* p_;
  Quote quote_;
  std::unordered_map<uint64_t, std::string> cache_;
  uint64_t last_id_ = 0;
  const std::string* last_ = nullptr;
};

}  // namespace dlprof::dump

#endif  // DLPROF_TOOLS_DUMP_OUTPUT_H_
