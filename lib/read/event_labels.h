// Names each event's region and call stack (StreamEvent::region, ::stack)
// as the events stream by, for the exporters: what AssignRegions and
// BuildStackIndex give, without the trace in memory.
//
// A region is written when it ends, after the calls in it, and a stack right
// after its event with the same start; the stream is ordered by start. So
// when the clock moves past a nanosecond, every region holding its events
// and every stack of its events has been seen. Each nanosecond's events are
// held (copied) until then, and handed out labelled.
//
//   StackTable stacks = BuildStackTable(stream.processes());  // a first pass
//   EventLabels labelled(&stream, &region_options, &stacks);   // either may be null
//   WriteJsonl(labelled, &out);
#ifndef DLPROF_LIB_READ_EVENT_LABELS_H_
#define DLPROF_LIB_READ_EVENT_LABELS_H_

#include <memory>
#include <string>
#include <vector>

#include "lib/read/event_source.h"
#include "lib/read/regions_in_flight.h"
#include "lib/read/stacks.h"

namespace dlprof::read {

class EventLabels : public EventSource {
 public:
  // `regions`: label regions, by these options, whose source must be
  // resolved (not kAuto: that depends on the whole trace, see
  // ChooseRegionSource). `stacks`: label stacks; must outlive this.
  // `max_held`: the most events of one nanosecond held at once (only a
  // damaged or forged trace has more; see kMaxHeldEvents).
  EventLabels(EventSource* inner, const RegionOptions* regions, const StackTable* stacks,
              size_t max_held = kMaxHeldEvents);

  // A nanosecond holding more events than this is handed out in parts:
  // memory stays bounded, and a region or stack coming after a part misses
  // that part's events.
  static constexpr size_t kMaxHeldEvents = size_t{1} << 20;

  const std::vector<ProcessTrace>& processes() const override { return inner_->processes(); }
  size_t Next(StreamEvent* out, size_t max) override;

 private:
  struct Held {
    Event event;
    StreamEvent meta;   // its event pointer is set when handed out
    uint64_t position;  // in the stream
  };

  // Reads whole nanoseconds from the inner source into `ready_` (at least a
  // batch, or to the end), labelled. False at the end.
  bool FillReady();
  void TakeStack(const Held& h);
  // Labels the regions of ready_'s events from `begin` on: one nanosecond's.
  void LabelRegions(size_t begin);

  EventSource* inner_;
  const size_t max_held_;
  RegionOptions region_options_;
  std::unique_ptr<RegionsInFlight> in_flight_;  // null: no region labels
  const StackTable* stacks_;                    // null: no stack labels
  std::vector<StackOwners> owners_;             // per process
  NameTable names_;
  StreamEvent in_[256];  // read ahead from the inner source
  size_t in_count_ = 0, in_pos_ = 0;
  bool in_done_ = false;
  uint64_t position_ = 0;
  std::vector<Held> ready_;  // labelled (up to the last whole nanosecond)
  uint64_t ready_base_ = 0;  // position of ready_[0]
  size_t ready_pos_ = 0;
};

// kAuto's choice for `files` (AutoRegionChoice), which needs the whole
// trace. Decodes only the blocks whose header says they hold regions, and
// stops at the first of the application's own annotation regions.
RegionSource ChooseRegionSource(const std::vector<std::string>& files);

}  // namespace dlprof::read

#endif  // DLPROF_LIB_READ_EVENT_LABELS_H_
