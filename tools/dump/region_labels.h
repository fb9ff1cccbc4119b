// Names each event's region (StreamEvent::region) as the events stream by,
// for the exporters: AssignRegions' answer without the trace in memory.
//
// A region is written when it ends, after the calls in it, but the stream
// is ordered by start, so all regions holding a call have been seen when it
// comes, except those starting in the same nanosecond. Each nanosecond's
// events are therefore held (copied) until the clock moves on, and handed
// out once its regions are in.
//
//   RegionLabels labelled(&stream, options);  // options.source: kApp or kNvtx
//   WriteJsonl(labelled, &out);
#ifndef DLPROF_TOOLS_DUMP_REGION_LABELS_H_
#define DLPROF_TOOLS_DUMP_REGION_LABELS_H_

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tools/dump/event_source.h"
#include "tools/dump/regions_in_flight.h"

namespace dlprof::dump {

class RegionLabels : public EventSource {
 public:
  // `options.source` must be resolved (not kAuto: it depends on the whole
  // trace; see TracesHoldAppRegions).
  RegionLabels(EventSource* inner, const RegionOptions& options);

  const std::vector<ProcessTrace>& processes() const override { return inner_->processes(); }
  size_t Next(StreamEvent* out, size_t max) override;

 private:
  struct Held {
    Event event;
    StreamEvent meta;  // its event pointer is set when handed out
    uint64_t position;  // in the stream
  };

  // Reads whole nanoseconds from the inner source into `ready_` (at least
  // kBatch events, or to the end), labelled. False at the end.
  bool FillReady();
  // Labels the events of `group` from `begin` on: one nanosecond's.
  void Label(std::vector<Held>* group, size_t begin);
  bool IsRegion(uint16_t kind) const;

  EventSource* inner_;
  const RegionOptions options_;
  RegionsInFlight in_flight_;
  std::unordered_set<std::string> names_;  // node-based: addresses stay put
  std::unordered_map<const std::string*, uint32_t> id_of_name_;
  std::vector<const std::string*> name_of_id_;
  StreamEvent in_[256];  // read ahead from the inner source
  size_t in_count_ = 0, in_pos_ = 0;
  bool in_done_ = false;
  uint64_t position_ = 0;
  std::vector<Held> ready_;  // labelled, being handed out
  size_t ready_pos_ = 0;
};

// Whether any of `files` holds an annotation region (not an NVTX range):
// kAuto's choice, which needs the whole trace. Decodes only the blocks whose
// header says they hold regions, and stops at the first one found.
bool TracesHoldAppRegions(const std::vector<std::string>& files);

}  // namespace dlprof::dump

#endif  // DLPROF_TOOLS_DUMP_REGION_LABELS_H_
