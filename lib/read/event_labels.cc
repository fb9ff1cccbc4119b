// EventLabels (event_labels.h): each nanosecond's events held until their
// regions and stacks have streamed by, then handed out labelled.
#include "lib/read/event_labels.h"

#include <algorithm>
#include <unordered_map>

#include "dlprof/catalogue.h"
#include "lib/format/trace_file.h"

namespace dlprof::read {
namespace {

// Events handed out per refill: whole nanoseconds, at least this many.
constexpr size_t kBatch = 256;

}  // namespace

EventLabels::EventLabels(EventSource* inner, const RegionOptions* regions,
                         const StackTable* stacks, size_t max_held)
    : inner_(inner), max_held_(std::max<size_t>(1, max_held)), stacks_(stacks) {
  if (regions != nullptr) {
    region_options_ = *regions;
    in_flight_ = std::make_unique<RegionsInFlight>(inner->processes(), *regions);
  }
  if (stacks != nullptr) owners_.resize(inner->processes().size());
}

void EventLabels::TakeStack(const Held& h) {
  uint64_t owner;
  if (!owners_[h.meta.process].Feed(h.event, h.meta.tid, h.position, &owner)) return;
  // The owner started in the same nanosecond: it is still held (unless that
  // nanosecond was handed out in parts).
  if (owner < ready_base_) return;
  ready_[owner - ready_base_].meta.stack = stacks_->Find(h.meta.process, h.event.file);
}

void EventLabels::LabelRegions(size_t begin) {
  // Regions first: they hold the calls of their first instant.
  std::vector<const Held*> regions;
  for (size_t i = begin; i < ready_.size(); ++i) {
    if (IsRegionKind(ready_[i].event.kind, region_options_.source)) regions.push_back(&ready_[i]);
  }
  SortLongestFirst(&regions);
  for (const Held* h : regions) {
    const Event& e = h->event;
    const std::string region_name = RegionName(e, processes()[h->meta.process]);
    if (IsFetchDetailRegion(region_name)) continue;
    const uint32_t name = names_.Id(region_name);
    in_flight_->Add(h->meta.process, h->meta.tid,
                    {e.start_ns, e.start_ns + e.dur_ns, h->position, name});
  }
  for (size_t i = begin; i < ready_.size(); ++i) {
    Held& h = ready_[i];
    const RegionsInFlight::Region* r =
        in_flight_->Find(h.meta.process, h.meta.tid, h.event.start_ns);
    h.meta.region = r != nullptr ? &names_.Name(r->name) : nullptr;
  }
}

bool EventLabels::FillReady() {
  ready_.clear();
  ready_base_ = position_;
  ready_pos_ = 0;
  size_t group_begin = 0;
  for (;;) {
    if (in_pos_ == in_count_) {
      in_count_ = in_done_ ? 0 : inner_->Next(in_, kBatch);
      in_pos_ = 0;
      if (in_count_ == 0) {
        in_done_ = true;
        break;
      }
    }
    const StreamEvent& e = in_[in_pos_];
    if (ready_.size() > group_begin && e.event->start_ns != ready_[group_begin].event.start_ns) {
      // The clock moved on: the nanosecond before is complete.
      if (in_flight_) LabelRegions(group_begin);
      group_begin = ready_.size();
      if (ready_.size() >= kBatch) return true;
    }
    if (ready_.size() >= max_held_) {
      if (in_flight_) LabelRegions(group_begin);
      return true;
    }
    ready_.push_back({*e.event, e, position_++});
    if (stacks_ != nullptr) TakeStack(ready_.back());
    ++in_pos_;
  }
  if (in_flight_) LabelRegions(group_begin);
  return !ready_.empty();
}

size_t EventLabels::Next(StreamEvent* out, size_t max) {
  size_t n = 0;
  while (n < max) {
    if (ready_pos_ == ready_.size()) {
      // What was handed out stays valid until the next call.
      if (n > 0 || !FillReady()) break;
    }
    Held& h = ready_[ready_pos_++];
    out[n] = h.meta;
    out[n].event = &h.event;
    ++n;
  }
  return n;
}

namespace {

// Reads one trace's blocks that hold regions (`want_regions`) or the others,
// adding their strings to `names` and showing `choice` each region whose
// name is known by then; the others go to `unnamed`. (A string comes in the
// block of its first use or an earlier one, which may hold no region.)
void FindNames(const std::string& path, bool want_regions, AutoRegionChoice* choice,
               std::unordered_map<uint32_t, std::string>* names,
               std::vector<Event>* unnamed) {
  format::TraceReader reader;
  std::string error;
  if (!reader.Open(path, &error)) return;
  format::DecodedBlock block;
  format::BlockLocation where;
  for (;;) {
    const auto status = reader.NextLocation(&where, &error);
    if (status == format::TraceReader::Status::kEnd) break;
    if (status != format::TraceReader::Status::kBlock) continue;
    if (((where.flags & kBlockFlagRegions) != 0) != want_regions) continue;
    if (!reader.DecodeAt(where, &block, &error)) continue;
    for (format::StringEntry& s : block.strings) (*names)[s.id] = std::move(s.text);
    for (const Event& e : block.events) {
      if (!IsRegionKind(e.kind, RegionSource::kAll)) continue;
      // An NVTX range counts whatever its name.
      auto name = names->find(e.file);
      if (e.kind == static_cast<uint16_t>(EventKind::NvtxRange)) {
        choice->See(e, std::string());
      } else if (name != names->end()) {
        choice->See(e, name->second);
      } else {
        unnamed->push_back(e);
      }
      if (choice->settled()) return;
    }
  }
}

}  // namespace

RegionSource ChooseRegionSource(const std::vector<std::string>& files) {
  AutoRegionChoice choice;
  std::vector<std::unordered_map<uint32_t, std::string>> names(files.size());
  std::vector<std::vector<Event>> unnamed(files.size());
  for (size_t i = 0; i < files.size() && !choice.settled(); ++i) {
    FindNames(files[i], true, &choice, &names[i], &unnamed[i]);
  }
  // Regions whose names came in blocks without regions matter only where
  // NVTX ranges might win: then those blocks are read for their strings.
  if (choice.settled() || choice.choice() == RegionSource::kApp) return choice.choice();
  for (size_t i = 0; i < files.size() && !choice.settled(); ++i) {
    if (unnamed[i].empty()) continue;
    std::vector<Event> none;
    AutoRegionChoice ignored;
    FindNames(files[i], false, &ignored, &names[i], &none);
    for (const Event& e : unnamed[i]) {
      auto name = names[i].find(e.file);
      if (name != names[i].end()) choice.See(e, name->second);
    }
  }
  return choice.choice();
}

}  // namespace dlprof::read
