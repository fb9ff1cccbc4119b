// The whole run from the counters streams of a bounded trace (whole_run.h).
#include "lib/analysis/whole_run.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "dlprof/format.h"

namespace dlprof::analysis {
namespace {

constexpr const char* kStepRegion = "optimizer_step";
// iter(loader): a batch wait of its own, as the rank meter counts it.
constexpr const char* kIterRegion = "loader_iter";

// The union of `spans`' lengths (overlaps counted once).
uint64_t UnionNs(std::vector<std::pair<uint64_t, uint64_t>> spans) {
  std::sort(spans.begin(), spans.end());
  uint64_t total = 0, end = 0;
  bool any = false;
  for (const auto& [a, b] : spans) {
    if (!any || a > end) {
      total += b - a;
      end = b;
      any = true;
    } else if (b > end) {
      total += b - end;
      end = b;
    }
  }
  return total;
}

void AddRegion(const format::RegionRow& g, WholeRunRegion* sum) {
  sum->count += g.count;
  sum->ns += g.ns;
  sum->max_ns = std::max(sum->max_ns, g.max_ns);
  sum->first_start_ns = std::min(sum->first_start_ns, g.first_start_ns);
  sum->last_end_ns = std::max(sum->last_end_ns, g.last_end_ns);
}

// The step records of processes without batch waits (a loop without a
// DataLoader: its waits are the reading between steps).
struct StepSums {
  uint64_t waits = 0, wait_ns = 0;
  uint64_t loop_start_ns = UINT64_MAX;  // the first step's window's start
  void Add(const format::StepRecord& r) {
    waits += r.waits;
    wait_ns += r.wait_ns;
    if (r.loop_start_ns != 0) loop_start_ns = std::min(loop_start_ns, r.loop_start_ns);
  }
};

// The loop's length, batch waits and steps of `regions` (WholeRun's), and
// of `steps` where no batch was waited for.
void LoopFigures(const std::map<std::string, WholeRunRegion>& regions,
                 const std::string& batch_region, const StepSums& steps, WholeRunLoop* out) {
  auto batch = regions.find(batch_region);
  auto step = regions.find(kStepRegion);
  auto iter = regions.find(kIterRegion);
  if (batch != regions.end()) {
    out->batches = batch->second.count;
    out->batch_wait_ns = batch->second.ns;
    uint64_t start = batch->second.first_start_ns, end = batch->second.last_end_ns;
    if (iter != regions.end()) {
      out->batch_wait_ns += iter->second.ns;
      start = std::min(start, iter->second.first_start_ns);
      end = std::max(end, iter->second.last_end_ns);
    }
    if (step != regions.end()) end = std::max(end, step->second.last_end_ns);
    out->loop_ns = end - start;
    out->loop_start_ns = start;
    out->loop_end_ns = end;
  } else if (step != regions.end()) {
    // A loop of steps (docs/ANALYSIS.md, "Loops without a DataLoader"):
    // from the first step's window, its waits the reading before each.
    out->loop_start_ns = std::min(step->second.first_start_ns, steps.loop_start_ns);
    out->loop_end_ns = step->second.last_end_ns;
    out->loop_ns = out->loop_end_ns - out->loop_start_ns;
    out->loop_of_steps = true;
    if (steps.waits > 0) {
      out->batches = step->second.count;
      out->batch_wait_ns = steps.wait_ns;
      out->causes.reading_ns += steps.wait_ns;  // all of it reading
    }
  }
  if (step != regions.end()) out->steps = step->second.count;
}

// The middle of each batch record's interval (the interval record of the
// same start; a record without one, its start).
std::vector<uint64_t> IntervalMiddles(const format::CountersFile& c) {
  std::map<uint64_t, uint64_t> ends;
  for (const format::IntervalRecord& r : c.intervals) ends[r.start_ns] = r.end_ns;
  std::vector<uint64_t> mids;
  for (const format::BatchRecord& b : c.batches) {
    auto e = ends.find(b.start_ns);
    mids.push_back(e == ends.end() || e->second < b.start_ns
                       ? b.start_ns
                       : b.start_ns + (e->second - b.start_ns) / 2);
  }
  return mids;
}

// What one rank's processes add up to, before LoopFigures.
struct RankSums {
  std::set<std::string> processes;
  StepSums steps;
  format::IoTotals io;
  std::map<std::string, WholeRunRegion> regions;
  std::vector<size_t> batches;  // its processes' in the run's
  std::vector<format::GpuRecord> gpu;
};

// The GPU busy time of `records` inside `loop`'s window (all of it without
// one): each record's busy time in the share of its span inside the window.
void GpuFigures(const std::vector<format::GpuRecord>& records, WholeRunLoop* loop) {
  const bool window = loop->loop_end_ns > loop->loop_start_ns;
  for (const format::GpuRecord& g : records) {
    if (!loop->gpu) {
      loop->gpu = true;
      loop->gpu_first_ns = g.first_ns;
    }
    loop->gpu_first_ns = std::min(loop->gpu_first_ns, g.first_ns);
    loop->gpu_last_ns = std::max(loop->gpu_last_ns, g.last_ns);
    if (!window) {
      loop->gpu_busy_ns += g.busy_ns;
      continue;
    }
    const uint64_t from = std::max(g.first_ns, loop->loop_start_ns);
    const uint64_t to = std::min(g.last_ns, loop->loop_end_ns);
    if (to <= from) continue;
    const uint64_t span = g.last_ns - g.first_ns;
    loop->gpu_busy_ns += span == 0 ? 0
                                   : static_cast<uint64_t>(static_cast<unsigned __int128>(
                                                               g.busy_ns) * (to - from) / span);
  }
}

// Every time in `c` on the job's time base: a process on another host
// (another boot, another time namespace) counts on its own clock, as its
// events do (lib/read/clock_domains.h). Durations stay as counted.
void MapToJobClock(const read::DomainMap& m, format::CountersFile* c) {
  for (format::IntervalRecord& r : c->intervals) {
    r.start_ns = m.Map(r.start_ns);
    r.end_ns = m.Map(r.end_ns);
    for (format::RegionRow& g : r.regions) {
      g.first_start_ns = m.Map(g.first_start_ns);
      g.last_end_ns = m.Map(g.last_end_ns);
    }
  }
  for (format::KeepRecord& k : c->keeps) {
    k.at_ns = m.Map(k.at_ns);
    k.from_ns = m.Map(k.from_ns);
    k.to_ns = m.Map(k.to_ns);
  }
  for (format::BatchRecord& b : c->batches) {
    b.start_ns = m.Map(b.start_ns);
    for (std::vector<format::WaitSample>* waits : {&b.waits, &b.longest}) {
      for (format::WaitSample& w : *waits) {
        w.start_ns = m.Map(w.start_ns);
        w.end_ns = m.Map(w.end_ns);
      }
    }
    for (format::FetchSample& f : b.fetches) {
      f.start_ns = m.Map(f.start_ns);
      f.end_ns = m.Map(f.end_ns);
    }
  }
  for (format::GpuRecord& g : c->gpu) {
    g.start_ns = m.Map(g.start_ns);
    g.first_ns = m.Map(g.first_ns);
    g.last_ns = m.Map(g.last_ns);
  }
  for (format::StepRecord& r : c->steps) {
    r.start_ns = m.Map(r.start_ns);
    if (r.loop_start_ns != 0) r.loop_start_ns = m.Map(r.loop_start_ns);
  }
}

}  // namespace

const char* CounterClassName(uint8_t cls) {
  static const char* const kNames[format::kCounterClasses] = {"data", "code", "outputs", "system",
                                                              "other"};
  return cls < format::kCounterClasses ? kNames[cls] : "?";
}

WholeRun ReadWholeRun(const read::TraceCatalog& catalog, const read::ClockAlignment& clocks,
                      const std::string& batch_region) {
  WholeRun w;
  std::set<std::string> seen, processes;
  std::vector<std::pair<uint64_t, uint64_t>> kept_spans;
  std::map<std::string, WholeRunFile> files;
  std::vector<PointSource> point_sources;
  std::vector<ProcessBatches> batches;
  BatchSampleBudget budget;
  std::vector<std::vector<uint64_t>> batch_mids;  // per record of `batches`
  std::map<int32_t, RankSums> ranks;
  std::vector<format::GpuRecord> gpu;
  StepSums steps;
  for (size_t i = 0; i < catalog.traces.size(); ++i) {
    const read::CatalogEntry& t = catalog.traces[i];
    if (!t.opened || !(t.info.flags & kHeaderFlagSegment)) continue;
    const read::DomainMap* clock = clocks.identity() ? nullptr : &clocks.of(i);
    // (The catalog's first start is on the job's time base already.)
    const uint64_t last_end = clock != nullptr ? clock->Map(t.last_end_ns) : t.last_end_ns;
    if (t.first_start_ns <= last_end) kept_spans.emplace_back(t.first_start_ns, last_end);
    const std::string path = format::CountersPathOf(t.path);
    if (!seen.insert(path).second) continue;
    format::CountersFile c;
    std::string error;
    if (!format::ReadCountersFile(path, &c, &error)) {
      w.messages.push_back("warning: " + error + "; the whole run lacks this process");
      continue;
    }
    if (c.torn) {
      w.messages.push_back("note: " + path + ": the last counters record is cut short (the "
                           "process was killed); the kept events cover its end");
    }
    if (!c.damage.empty()) {
      uint64_t skipped = 0;
      for (const format::CountersFile::Damage& d : c.damage) skipped += d.bytes;
      const size_t more = c.damage.size() - 1;
      w.messages.push_back(
          "warning: " + path + ": damaged at byte " + std::to_string(c.damage.front().at) +
          (more > 0 ? " and " + std::to_string(more) + " more places" : "") + ": " +
          std::to_string(skipped) + " bytes skipped; the records after the damage were read");
    }
    if (clock != nullptr) MapToJobClock(*clock, &c);
    w.present = true;
    // The images of one process (an exec) each have counters: one process.
    const format::ProcessInfo& p = c.info;
    const std::string process =
        p.host + '\0' + p.boot_id + '\0' + std::to_string(p.pid) + '\0' + p.kernel_start;
    if (processes.insert(process).second) ++w.processes;
    // A process's rank is the last it had (an MPI_Init during its life
    // gives it one; docs/ANALYSIS_TABLES.md, "Ranks"); its loader workers have
    // their parent's.
    int32_t rank = -1;
    for (const format::IntervalRecord& r : c.intervals) {
      if (r.rank >= 0) rank = r.rank;
    }
    RankSums* rank_sums = rank >= 0 ? &ranks[rank] : nullptr;
    if (rank_sums != nullptr) rank_sums->processes.insert(process);
    if (!c.batches.empty()) {
      batch_mids.push_back(IntervalMiddles(c));
      if (rank_sums != nullptr) rank_sums->batches.push_back(batches.size());
      budget.Append(ProcessBatches{p.host + '\0' + p.boot_id, std::move(c.batches)}, &batches);
    }
    // A process that waited for no batch: its step records' waits are its
    // loop's (by interval start, for the points).
    bool waited = false;
    for (const format::IntervalRecord& r : c.intervals) {
      for (const format::RegionRow& g : r.regions) {
        auto name = c.strings.find(g.name);
        waited = waited || (name != c.strings.end() &&
                            (name->second == batch_region || name->second == kIterRegion));
      }
    }
    std::map<uint64_t, uint64_t> step_waits;
    for (const format::StepRecord& sr : waited ? std::vector<format::StepRecord>() : c.steps) {
      steps.Add(sr);
      if (rank_sums != nullptr) rank_sums->steps.Add(sr);
      step_waits[sr.start_ns] += sr.wait_ns;
    }
    std::map<uint64_t, uint64_t> gpu_busy;  // by interval start
    for (const format::GpuRecord& g : c.gpu) gpu_busy[g.start_ns] += g.busy_ns;
    gpu.insert(gpu.end(), c.gpu.begin(), c.gpu.end());
    if (rank_sums != nullptr) {
      rank_sums->gpu.insert(rank_sums->gpu.end(), c.gpu.begin(), c.gpu.end());
    }
    for (const format::KeepRecord& k : c.keeps) {
      w.kept.push_back(KeptWindow{c.info.host, c.info.pid, k.from_ns, k.to_ns, k.reason});
    }
    for (const format::IntervalRecord& r : c.intervals) {
      ++w.intervals;
      w.start_ns = std::min(w.start_ns, r.start_ns);
      w.end_ns = std::max(w.end_ns, r.end_ns);
      w.events += r.events;
      PointSource& pt = point_sources.emplace_back();
      pt.start_ns = r.start_ns;
      pt.end_ns = r.end_ns;
      pt.last = &r == &c.intervals.back();
      if (auto b = gpu_busy.find(r.start_ns); b != gpu_busy.end()) pt.gpu_busy_ns = b->second;
      if (auto sw = step_waits.find(r.start_ns); sw != step_waits.end()) {
        pt.batch_wait_ns += sw->second;
        pt.step_reading_ns += sw->second;
        pt.waited = true;
      }
      for (int k = 0; k < format::kCounterClasses; ++k) {
        w.classes[k].Add(r.classes[k]);
        w.total.Add(r.classes[k]);
        if (rank_sums != nullptr) rank_sums->io.Add(r.classes[k]);
        pt.io_calls += r.classes[k].calls();
        pt.read_bytes += r.classes[k].read_bytes;
        pt.io_ns += r.classes[k].ns();
      }
      for (const format::KindRow& k : r.kinds) {
        format::KindRow& sum = w.kinds[k.kind];
        sum.kind = k.kind;
        sum.calls += k.calls;
        sum.bytes += k.bytes;
        sum.ns += k.ns;
        sum.errors += k.errors;
      }
      for (const format::FileRow& f : r.files) {
        auto name = c.strings.find(f.file);
        const std::string p = name == c.strings.end() ? "?" : name->second;
        WholeRunFile& row = files[p];
        row.path = p;
        row.cls = f.cls;
        row.io.Add(f.io);
      }
      for (const format::RegionRow& g : r.regions) {
        auto name = c.strings.find(g.name);
        if (name == c.strings.end()) continue;
        AddRegion(g, &w.regions[name->second]);
        if (rank_sums != nullptr) AddRegion(g, &rank_sums->regions[name->second]);
        if (name->second == batch_region || name->second == kIterRegion) {
          pt.batch_wait_ns += g.ns;
          pt.waited = true;
        }
        if (name->second == batch_region) pt.batches += g.count;
        if (name->second == kStepRegion) pt.steps += g.count;
      }
    }
  }
  for (auto& [path, f] : files) w.files.push_back(std::move(f));
  std::sort(w.files.begin(), w.files.end(), [](const WholeRunFile& a, const WholeRunFile& b) {
    return a.io.ns() != b.io.ns() ? a.io.ns() > b.io.ns() : a.path < b.path;
  });
  w.kept_event_ns = UnionNs(kept_spans);
  const FetchIndex fetches(batches);
  w.causes = SplitWholeRunWait(batches, fetches);
  w.causes.thinned_one_in = uint64_t{1} << budget.level();
  LoopFigures(w.regions, batch_region, steps, &w);
  GpuFigures(gpu, &w);
  std::vector<TimedBatches> timed;
  for (size_t i = 0; i < batches.size(); ++i) timed.push_back({&batches[i], batch_mids[i]});
  const bool workers = w.causes.flow_waits > 0 || !fetches.empty();
  w.points = MakeWholeRunPoints(point_sources, timed, fetches, workers);
  for (auto& [rank, sums] : ranks) {
    WholeRunRank r;
    r.rank = rank;
    r.processes = sums.processes.size();
    r.io = sums.io;
    WaitCauseSums causes;
    for (size_t b : sums.batches) {
      for (const format::BatchRecord& record : batches[b].records) {
        causes.Add(fetches, batches[b].machine, record);
      }
    }
    r.causes = causes.Split(false);
    r.causes.thinned_one_in = w.causes.thinned_one_in;
    LoopFigures(sums.regions, batch_region, sums.steps, &r);
    GpuFigures(sums.gpu, &r);
    w.ranks.push_back(std::move(r));
  }
  // With ranks, the loop is theirs summed, as the verdict's is (docs/
  // ANALYSIS.md, "Verdict"): each rank's waits against its own window, not
  // every rank's against one window from the first rank's start to the
  // last one's end.
  if (!w.ranks.empty()) {
    w.loop_ns = 0;
    if (w.gpu) w.gpu_busy_ns = 0;
    for (const WholeRunRank& r : w.ranks) {
      w.loop_ns += r.loop_ns;
      if (w.gpu) w.gpu_busy_ns += r.gpu_busy_ns;
    }
  }
  return w;
}

}  // namespace dlprof::analysis
