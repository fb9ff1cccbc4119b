// Region rows from a whole trace in memory (the reference).
#include "tests/helpers/region_breakdown.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "dlprof/catalogue.h"
#include "lib/analysis/summary/intervals.h"
#include "lib/format/event_rules.h"

namespace dlprof::analysis {
namespace {

// The row of calls outside every region, kept apart from any region's name.
const std::string kOutsideKey("\0outside", 8);

}  // namespace

std::vector<RegionStats> RegionBreakdown(const TraceSet& set, const RegionAssignment& a) {
  std::vector<RegionStats> rows;
  std::unordered_map<std::string, size_t> row_of;
  auto row = [&](const std::string& name) -> size_t {
    auto [it, added] = row_of.try_emplace(name, rows.size());
    if (added) {
      rows.emplace_back();
      rows.back().name = name;
    }
    return it->second;
  };
  const bool outermost = a.pick == RegionPick::kOutermost;
  std::vector<size_t> region_row(a.regions.size());
  for (size_t i = 0; i < a.regions.size(); ++i) {
    const RegionInstance& r = a.regions[i];
    if (outermost && !r.outermost) {
      region_row[i] = SIZE_MAX;  // a row only if I/O lands in it
      continue;
    }
    RegionStats& s = rows[row(r.name)];
    ++s.instances;
    s.region_ns += r.end_ns - r.start_ns;
    region_row[i] = row_of[r.name];
  }

  std::map<int32_t, IntervalUnion> busy_by_device;
  uint64_t gpu_first = UINT64_MAX, gpu_last = 0;
  std::vector<IntervalUnion> io(rows.size());
  for (const EventRef& r : set.merged) {
    const Event& e = set.event(r);
    if (RulesFor(e.kind).gpu_work) {
      busy_by_device[e.fd].Add(e.start_ns, e.start_ns + e.dur_ns);
      gpu_first = std::min(gpu_first, e.start_ns);
      gpu_last = std::max(gpu_last, e.start_ns + e.dur_ns);
      continue;
    }
    if (!CountsAsIo(e)) continue;
    const OpClass op = kEventKinds.info[e.kind].op_class;  // (an I/O kind: in the table)
    const int32_t ri = a.Of(r);
    size_t rr;
    if (ri < 0) {
      rr = row(kOutsideKey);
      rows[rr].name.clear();
      rows[rr].outside = true;
    } else if (region_row[static_cast<size_t>(ri)] != SIZE_MAX) {
      rr = region_row[static_cast<size_t>(ri)];
    } else {
      rr = row(a.regions[static_cast<size_t>(ri)].name);
    }
    if (io.size() < rows.size()) io.resize(rows.size());
    RegionStats& s = rows[rr];
    ++s.io_ops;
    s.io_ns += e.dur_ns;
    if (op == OpClass::Read) {
      ++s.read_ops;
      s.read_bytes += BytesMoved(e);
    } else if (op == OpClass::Write) {
      ++s.write_ops;
      s.write_bytes += BytesMoved(e);
    }
    io[rr].Add(e.start_ns, e.start_ns + e.dur_ns);
  }
  io.resize(rows.size());

  IntervalUnion busy;
  for (auto& [dev, u] : busy_by_device) busy.AddAll(u);
  busy.Seal();
  const bool gpu = !busy.empty();
  for (size_t i = 0; i < rows.size(); ++i) {
    io[i].Seal();
    rows[i].io_busy_ns = io[i].Length();
    if (gpu) {
      io[i].Clip(gpu_first, gpu_last);
      rows[i].stall_ns = io[i].Length() - io[i].CoveredBy(busy);
    }
  }
  // Calls outside every region last.
  auto outside = row_of.find(kOutsideKey);
  if (outside != row_of.end() && outside->second + 1 != rows.size()) {
    RegionStats o = rows[outside->second];
    rows.erase(rows.begin() + static_cast<std::ptrdiff_t>(outside->second));
    rows.push_back(std::move(o));
  }
  return rows;
}

}  // namespace dlprof::analysis
