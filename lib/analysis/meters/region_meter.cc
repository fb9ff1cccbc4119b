// RegionMeter (region_meter.h): the summary's region rows measured in one
// pass over the merged stream.
#include "lib/analysis/meters/region_meter.h"

#include <algorithm>
#include <functional>
#include <tuple>

#include "dlprof/catalogue.h"
#include "lib/analysis/summary/intervals.h"
#include "lib/format/event_rules.h"
#include "lib/read/regions_in_flight.h"

namespace dlprof::analysis {
using namespace dlprof::read;
namespace {

// What the meter does with each kind code, worked out once from the rules.
struct RoleTable {
  using Role = RegionMeter::Role;
  Role of[kEventKindLimit] = {};
  RoleTable() {
    for (int code = 0; code < kEventKindLimit; ++code) {
      const EventRules& k = kEventRules.of[code];
      if (code == static_cast<int>(EventKind::AppRegion)) {
        of[code] = Role::kAppRegion;
      } else if (code == static_cast<int>(EventKind::NvtxRange)) {
        of[code] = Role::kNvtxRange;
      } else if (k.gpu_work) {
        of[code] = Role::kGpuWork;
      } else if (k.io) {
        const OpClass op = kEventKinds.info[code].op_class;
        of[code] = op == OpClass::Read    ? Role::kRead
                   : op == OpClass::Write ? Role::kWrite
                                          : Role::kOtherIo;
      }
    }
  }
};
const RoleTable kRoleTable;

}  // namespace

RegionMeter::Role RegionMeter::RoleOf(const Event& e) {
  if (e.kind >= kEventKindLimit) return Role::kNone;
  const Role r = kRoleTable.of[e.kind];
  // A nested call is part of the call around it (CountsAsIo).
  const bool io = r == Role::kRead || r == Role::kWrite || r == Role::kOtherIo;
  return io && (e.flags & kEventFlagNested) ? Role::kNone : r;
}


// The GPU busy union over every device, the window, and the open row
// intervals (in a heap by end, to close them once the stream passes them).
struct RegionMeter::Gpu {
  // One row's calls: the union built as they arrive (see StallMeter).
  struct Channel {
    bool open = false;
    uint64_t start = 0, end = 0;
    uint64_t busy_ns = 0;       // closed union length
    uint64_t in_window_ns = 0;  // of which inside the GPU window so far
    uint64_t pending_ns = 0;    // past the GPU window's end so far, waiting
    uint64_t covered_ns = 0;    // of which some GPU was busy
  };
  struct Interval {
    uint64_t start, end;
  };
  bool seen = false;
  bool any_busy = false;  // a GPU interval of nonzero length
  uint64_t first = 0, last = 0;
  bool open = false;
  Interval current{0, 0};
  std::deque<Interval> closed;  // back to the earliest open row interval
  size_t forget_at = 64;
  std::vector<Channel*> pending;  // rows whose intervals wait for the window

  // The rows with an open interval (few: the rows with calls in flight),
  // and a lower bound of their ends: nothing can close before it.
  std::vector<Channel*> open_rows;
  uint64_t earliest_end = UINT64_MAX;

  void Add(uint64_t start, uint64_t end) {
    if (!seen) {
      seen = true;
      first = start;
    }
    any_busy |= end > start;
    last = std::max(last, end);
    // This starts after every pending part: the window now holds them.
    for (Channel* c : pending) {
      c->in_window_ns += c->pending_ns;
      c->pending_ns = 0;
    }
    pending.clear();
    if (open && start <= current.end) {
      current.end = std::max(current.end, end);
      return;
    }
    if (open) closed.push_back(current);
    open = true;
    current = {start, end};
    if (closed.size() > forget_at) Forget();
  }

  // GPU busy time within [start, end).
  uint64_t Covered(uint64_t start, uint64_t end) const {
    if (!seen) return 0;
    uint64_t n = 0;
    auto it = std::partition_point(closed.begin(), closed.end(),
                                   [start](const Interval& b) { return b.end <= start; });
    for (; it != closed.end() && it->start < end; ++it) {
      n += Overlap(it->start, it->end, start, end);
    }
    if (open) n += Overlap(current.start, current.end, start, end);
    return n;
  }

  // Drops the busy intervals no open or future row interval can overlap.
  void Forget() {
    uint64_t keep_from = closed.empty() ? 0 : closed.back().end;
    for (const Channel* c : open_rows) keep_from = std::min(keep_from, c->start);
    while (!closed.empty() && closed.front().end <= keep_from) closed.pop_front();
    forget_at = std::max<size_t>(64, 2 * closed.size());
  }

  void Close(Channel* c) {
    c->open = false;
    c->busy_ns += c->end - c->start;
    c->covered_ns += Covered(c->start, c->end);
    if (!seen) return;  // the window opens after this interval
    const uint64_t lo = std::max(c->start, first);
    c->in_window_ns += Overlap(lo, c->end, lo, last);
    const uint64_t beyond = c->end > std::max(lo, last) ? c->end - std::max(lo, last) : 0;
    if (beyond > 0) {
      c->pending_ns += beyond;
      pending.push_back(c);
    }
  }

  // Closes the row intervals that end before `t`: no later call can join them.
  void CloseBefore(uint64_t t) {
    if (t <= earliest_end) return;
    earliest_end = UINT64_MAX;
    for (size_t i = 0; i < open_rows.size();) {
      Channel* c = open_rows[i];
      if (c->end < t) {
        Close(c);
        open_rows[i] = open_rows.back();
        open_rows.pop_back();
        continue;
      }
      earliest_end = std::min(earliest_end, c->end);
      ++i;
    }
  }

  void CloseAll() {
    for (Channel* c : open_rows) Close(c);
    open_rows.clear();
    earliest_end = UINT64_MAX;
  }

  void AddCall(Channel* c, uint64_t start, uint64_t end) {
    if (c->open && start <= c->end) {
      c->end = std::max(c->end, end);  // earliest_end stays a lower bound
      return;
    }
    if (c->open) {
      Close(c);  // only for a stream out of order; it stays in open_rows
    } else {
      open_rows.push_back(c);
    }
    c->open = true;
    c->start = start;
    c->end = end;
    earliest_end = std::min(earliest_end, end);
  }
};

// One region source's regions in flight, outermost flags and rows.
class RegionMeter::Tracker {
 public:
  Tracker(const std::vector<ProcessTrace>& processes, bool app, bool nvtx,
          const RegionOptions& options)
      : processes_(processes), app_(app), nvtx_(nvtx), options_(options),
        in_flight_(processes, options) {}

  bool Wants(Role role) const {
    return (app_ && role == Role::kAppRegion) || (nvtx_ && role == Role::kNvtxRange);
  }
  bool any_region() const { return any_region_; }
  // kAuto's choice from the regions this tracker was given.
  const AutoRegionChoice& auto_choice() const { return auto_choice_; }

  // Regions of one nanosecond come here longest first (AssignRegions'
  // order for the outermost flag).
  void AddRegion(const Held& h) {
    const Event& e = h.event;
    const bool nvtx = e.kind == static_cast<uint16_t>(EventKind::NvtxRange);
    const uint64_t end = e.start_ns + e.dur_ns;
    const std::string region_name = RegionName(e, processes_[h.process]);
    if (IsFetchDetailRegion(region_name)) return;
    any_region_ = true;
    auto_choice_.See(e, region_name);
    const uint32_t name = names_.Id(region_name);
    // Outermost: no earlier (or longer, same start) region of its kind on
    // its thread reaches as far.
    auto [reach, first] = reach_[nvtx].try_emplace(ThreadKey(h.process, h.tid), end);
    const bool outermost = first || end > reach->second;
    if (outermost) reach->second = end;
    if (outermost || options_.pick == RegionPick::kInnermost) {
      Row& r = RowFor(name, 0, h.position);
      ++r.stats.instances;
      r.stats.region_ns += e.dur_ns;
    }
    in_flight_.Add(h.process, h.tid, {e.start_ns, end, h.position, name});
  }

  void AddCall(const Held& h, Gpu* gpu) {
    const Event& e = h.event;
    const RegionsInFlight::Region* region = in_flight_.Find(h.process, h.tid, e.start_ns);
    Row& r = region != nullptr ? RowFor(region->name, 1, h.position) : Outside();
    ++r.stats.io_ops;
    r.stats.io_ns += e.dur_ns;
    if (h.role == Role::kRead) {
      ++r.stats.read_ops;
      r.stats.read_bytes += h.bytes;
    } else if (h.role == Role::kWrite) {
      ++r.stats.write_ops;
      r.stats.write_bytes += h.bytes;
    }
    gpu->AddCall(&r.channel, e.start_ns, e.start_ns + e.dur_ns);
  }

  // Call after every row interval is closed.
  std::vector<RegionStats> Rows(const Gpu& gpu) {
    std::vector<Row*> order;
    for (Row& r : rows_) {
      if (!r.stats.outside) order.push_back(&r);
    }
    std::sort(order.begin(), order.end(), [](const Row* a, const Row* b) {
      return std::tie(a->phase, a->position) < std::tie(b->phase, b->position);
    });
    if (outside_ != nullptr) order.push_back(outside_);
    std::vector<RegionStats> out;
    for (Row* r : order) {
      RegionStats s = r->stats;
      s.io_busy_ns = r->channel.busy_ns;
      if (gpu.any_busy) s.stall_ns = r->channel.in_window_ns - r->channel.covered_ns;
      out.push_back(std::move(s));
    }
    return out;
  }

 private:
  struct Row {
    RegionStats stats;
    Gpu::Channel channel;
    // Row order: rows of outermost regions by their first instance (phase
    // 0), then rows that only calls opened (phase 1), by that call.
    int phase = 1;
    uint64_t position = 0;
  };

  Row& RowFor(uint32_t name, int phase, uint64_t position) {
    if (name >= row_of_name_.size()) row_of_name_.resize(name + 1, nullptr);
    Row*& r = row_of_name_[name];
    if (r == nullptr) {
      r = &rows_.emplace_back();
      r->stats.name = names_.Name(name);
      r->phase = phase;
      r->position = position;
    } else if (std::tie(phase, position) < std::tie(r->phase, r->position)) {
      r->phase = phase;
      r->position = position;
    }
    return *r;
  }

  Row& Outside() {
    if (outside_ == nullptr) {
      outside_ = &rows_.emplace_back();
      outside_->stats.outside = true;
    }
    return *outside_;
  }

  const std::vector<ProcessTrace>& processes_;
  const bool app_, nvtx_;
  const RegionOptions options_;
  bool any_region_ = false;
  AutoRegionChoice auto_choice_;
  RegionsInFlight in_flight_;
  std::unordered_map<uint64_t, uint64_t> reach_[2];  // [nvtx] thread -> furthest end
  NameTable names_;
  std::vector<Row*> row_of_name_;  // by name id; null until a row is made
  std::deque<Row> rows_;  // addresses stay put: the GPU's lists point at them
  Row* outside_ = nullptr;
};

RegionMeter::RegionMeter(const std::vector<ProcessTrace>& processes, const RegionOptions& options)
    : gpu_(std::make_unique<Gpu>()) {
  const bool app = options.source != RegionSource::kNvtx;
  const bool nvtx = options.source != RegionSource::kApp;
  if (options.source == RegionSource::kAuto) {
    // Annotation regions or NVTX ranges (AutoRegionChoice): not known
    // until the end, so both are followed.
    trackers_.push_back(std::make_unique<Tracker>(processes, true, false, options));
    trackers_.push_back(std::make_unique<Tracker>(processes, false, true, options));
  } else {
    trackers_.push_back(std::make_unique<Tracker>(processes, app, nvtx, options));
  }
}

RegionMeter::~RegionMeter() = default;

void RegionMeter::Add(const StreamEvent& e, bool counted) {
  const Role role = RoleOf(*e.event);
  if (e.event->start_ns != now_ && !held_.empty()) Flush();
  now_ = e.event->start_ns;
  // Events that neither hold nor count (marks, counters, API calls) only
  // move the clock.
  if (role != Role::kNone) {
    const uint64_t bytes =
        role == Role::kRead || role == Role::kWrite ? BytesMoved(*e.event) : 0;
    held_.push_back({*e.event, e.tid, e.process, position_, counted, role, bytes});
  }
  ++position_;
}

void RegionMeter::Flush() {
  gpu_->CloseBefore(now_);
  // Once the application's own annotation regions appear, kAuto's choice is
  // made: NVTX ranges need no more following. (It stays alive: the GPU's
  // lists still point at its rows.)
  if (trackers_.size() == 2 && trackers_.front()->auto_choice().settled()) {
    retired_ = std::move(trackers_.back());
    trackers_.pop_back();
  }
  // Regions first: they hold the calls of their first instant.
  regions_.clear();
  for (const Held& h : held_) {
    if (h.role == Role::kAppRegion || h.role == Role::kNvtxRange) regions_.push_back(&h);
  }
  if (regions_.size() > 1) SortLongestFirst(&regions_);
  for (const Held* h : regions_) {
    for (const auto& t : trackers_) {
      if (t->Wants(h->role)) t->AddRegion(*h);
    }
  }
  for (const Held& h : held_) {
    if (!h.counted) continue;
    if (h.role == Role::kGpuWork) {
      gpu_->Add(h.event.start_ns, h.event.start_ns + h.event.dur_ns);
    } else if (h.role == Role::kRead || h.role == Role::kWrite || h.role == Role::kOtherIo) {
      for (const auto& t : trackers_) t->AddCall(h, gpu_.get());
    }
  }
  held_.clear();
}

std::vector<RegionStats> RegionMeter::Finish() {
  if (!held_.empty()) Flush();
  gpu_->CloseAll();
  // The parts still pending lie past the last GPU event: outside the window.
  Tracker* chosen = trackers_.front().get();
  if (trackers_.size() == 2 && !chosen->auto_choice().settled() &&
      trackers_.back()->any_region()) {
    chosen = trackers_.back().get();
  }
  return chosen->Rows(*gpu_);
}

}  // namespace dlprof::analysis
