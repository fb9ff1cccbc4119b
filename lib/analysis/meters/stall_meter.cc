// StallMeter (stall_meter.h): GPU busy and data-stall time measured in one
// pass over the merged stream.
#include "lib/analysis/meters/stall_meter.h"

#include <algorithm>
#include <functional>

#include "lib/analysis/summary/intervals.h"

namespace dlprof::analysis {
namespace {

// Splits the part of [start, end) from `first` on at `last`: what lies up to
// it, and what lies past it.
void SplitAt(uint64_t start, uint64_t end, uint64_t first, uint64_t last, uint64_t* within,
             uint64_t* beyond) {
  const uint64_t lo = std::max(start, first);
  *within = Overlap(lo, end, lo, last);
  *beyond = end > std::max(lo, last) ? end - std::max(lo, last) : 0;
}

template <typename Map>
void MoveInto(Map* from, Map* into) {
  for (const auto& [key, ns] : *from) (*into)[key] += ns;
  from->clear();
}

}  // namespace

uint64_t StallMeter::Open::Overlap(uint64_t s, uint64_t e) const {
  return open ? analysis::Overlap(start, end, s, e) : 0;
}

bool StallMeter::Busy::Add(uint64_t start, uint64_t end, uint64_t* closed_start,
                           uint64_t* closed_end) {
  if (!seen) {
    seen = true;
    first = start;
  }
  // This event starts after every pending part, so the window now holds them.
  io_in_window += io_pending;
  io_pending = 0;
  last = std::max(last, end);
  if (current.open && start <= current.end) {
    current.end = std::max(current.end, end);
    return false;
  }
  const bool closed = current.open;
  *closed_start = current.start;
  *closed_end = current.end;
  current = {true, start, end};
  return closed;
}

void StallMeter::Busy::TakeIo(uint64_t start, uint64_t end) {
  io_covered += current.Overlap(start, end);
  if (!seen) return;  // the window opens after this interval
  uint64_t within, beyond;
  SplitAt(start, end, first, last, &within, &beyond);
  io_in_window += within;
  io_pending += beyond;
}

void StallMeter::CloseBusy(Busy* b, uint64_t start, uint64_t end, bool all_devices) {
  b->busy_ns += end - start;
  b->io_covered += io_.Overlap(start, end);
  if (!all_devices) return;
  for (Call& c : in_flight_) c.covered += Overlap(c.start, c.end, start, end);
}

void StallMeter::CloseIo() {
  if (!io_.open) return;
  all_.TakeIo(io_.start, io_.end);
  for (auto& [device, b] : devices_) b.TakeIo(io_.start, io_.end);
  io_.open = false;
}

void StallMeter::Retire(Call* c) {
  c->covered += all_.current.Overlap(c->start, c->end);
  if (!all_.seen) return;
  uint64_t within, beyond;
  SplitAt(c->start, c->end, all_.first, all_.last, &within, &beyond);
  if (within > c->covered) {
    by_process_[c->process] += within - c->covered;
    if (c->file) by_file_[c->file] += within - c->covered;
  }
  if (beyond > 0) {
    pending_process_[c->process] += beyond;
    if (c->file) pending_file_[c->file] += beyond;
  }
}

void StallMeter::RetireCallsEndingBy(uint64_t t) {
  // One call in flight at a time is the common case: no heap work.
  if (in_flight_.size() == 1) {
    if (in_flight_.front().end <= t) {
      Retire(&in_flight_.front());
      in_flight_.clear();
    }
    return;
  }
  const auto later = std::greater<Call>();
  while (!in_flight_.empty() && in_flight_.front().end <= t) {
    std::pop_heap(in_flight_.begin(), in_flight_.end(), later);
    Retire(&in_flight_.back());
    in_flight_.pop_back();
  }
}

void StallMeter::PruneEndedBy(uint64_t t) {
  // Calls that ended before any GPU work add nothing.
  in_flight_.erase(std::remove_if(in_flight_.begin(), in_flight_.end(),
                                  [t](const Call& c) { return c.end <= t; }),
                   in_flight_.end());
  prune_at_ = std::max<size_t>(64, 2 * in_flight_.size());
}

void StallMeter::AddGpu(int32_t device, uint64_t start, uint64_t end) {
  if (!all_.seen) {
    PruneEndedBy(start);
    std::make_heap(in_flight_.begin(), in_flight_.end(), std::greater<Call>());
  }
  RetireCallsEndingBy(start);
  MoveInto(&pending_process_, &by_process_);
  MoveInto(&pending_file_, &by_file_);
  uint64_t s, e;
  if (all_.Add(start, end, &s, &e)) CloseBusy(&all_, s, e, true);
  Busy& b = devices_[device];
  if (b.Add(start, end, &s, &e)) CloseBusy(&b, s, e, false);
}

void StallMeter::AddIoSlow(uint64_t start, uint64_t end, Key process, Key file) {
  RetireCallsEndingBy(start);
  if (io_.open && start <= io_.end) {
    io_.end = std::max(io_.end, end);
  } else {
    CloseIo();
    io_ = {true, start, end};
  }
  in_flight_.push_back({start, end, 0, process, file});
  if (in_flight_.size() > 1) {
    std::push_heap(in_flight_.begin(), in_flight_.end(), std::greater<Call>());
  }
}

void StallMeter::Finish() {
  if (all_.seen) {
    RetireCallsEndingBy(UINT64_MAX);
  } else {
    in_flight_.clear();  // not a heap, and nothing to count without GPU work
  }
  CloseIo();
  // What is still pending lies past the last GPU event: outside the window.
  pending_process_.clear();
  pending_file_.clear();
  auto close = [this](Busy* b, bool all_devices) {
    if (b->current.open) CloseBusy(b, b->current.start, b->current.end, all_devices);
    b->current.open = false;
  };
  close(&all_, true);
  for (auto& [device, b] : devices_) {
    close(&b, false);
    devices_result_[device] = {b.first, b.last, b.busy_ns, b.io_in_window - b.io_covered};
  }
}

}  // namespace dlprof::analysis
