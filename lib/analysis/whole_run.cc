// The whole run from the counters streams of a bounded trace (whole_run.h).
#include "lib/analysis/whole_run.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "dlprof/format.h"
#include "lib/analysis/whole_run_gpu.h"
#include "lib/analysis/whole_run_loops.h"
#include "lib/analysis/whole_run_saves.h"
#include "lib/format/path_class.h"
#include "lib/read/kept_stretches.h"

namespace dlprof::analysis {
namespace {

void AddRegion(const format::RegionRow& g, WholeRunRegion* sum) {
  sum->count += g.count;
  sum->no_batch += g.no_batch;
  sum->ns += g.ns;
  sum->max_ns = std::max(sum->max_ns, g.max_ns);
  sum->first_start_ns = std::min(sum->first_start_ns, g.first_start_ns);
  sum->last_end_ns = std::max(sum->last_end_ns, g.last_end_ns);
}

// What one rank's processes add up to, before LoopFigures.
struct RankSums {
  std::set<std::string> processes;
  StepSums steps;
  format::IoTotals io;
  std::map<std::string, WholeRunRegion> regions;
  WaitCauseSums causes;
  GpuSums gpu;
  StallSums stall;
  SaveSums saves;
};

// A counters file of the run, read twice: first what the points' grid
// and its process need (Outline), then its records, folded in (Fold).
struct CountersSource {
  std::string path;
  const read::DomainMap* clock = nullptr;  // none: on the job's time base already
  bool read = false;                       // by the first pass; else `error`
  std::string error;
  // The first pass's bytes: the second reads the same records. A record
  // so far, which its process writes over while it runs, is read once:
  // the first pass keeps it, and the second stops where it begins.
  uint64_t bytes = 0;
  std::optional<format::IntervalRecord> so_far;
  // The names its file rows bring (in strings so far, before it: the second
  // pass stops where they begin).
  std::vector<std::pair<uint32_t, std::string>> so_far_names;
  int32_t rank = -1;   // the last rank its records carry
  bool waited = false;  // it waited for batches (else its steps' waits are its loop's)
};

// A time of a process on another host (another boot, another time
// namespace) on the job's time base: its counters count on its own clock, as
// its events do (lib/read/clock_domains.h). Durations stay as counted.
struct JobClock {
  const read::DomainMap* map;  // none: the same already
  uint64_t operator()(uint64_t ns) const { return map != nullptr ? map->Map(ns) : ns; }
  // A record's times (both passes map what they read, each in one place).
  void Map(format::RegionRow* g) const {
    g->first_start_ns = (*this)(g->first_start_ns);
    g->last_end_ns = (*this)(g->last_end_ns);
  }
  void Map(format::StepRecord* r) const {
    r->start_ns = (*this)(r->start_ns);
    if (r->loop_start_ns != 0) r->loop_start_ns = (*this)(r->loop_start_ns);
  }
  void Map(format::GpuRecord* g) const {
    g->start_ns = (*this)(g->start_ns);
    g->first_ns = (*this)(g->first_ns);
    g->last_ns = (*this)(g->last_ns);
  }
  void Map(format::DataStallRecord* r) const {
    r->from_ns = (*this)(r->from_ns);
    r->to_ns = (*this)(r->to_ns);
  }
  void Map(format::BatchRecord* b) const {
    b->start_ns = (*this)(b->start_ns);
    for (std::vector<format::WaitSample>* waits : {&b->waits, &b->longest}) {
      for (format::WaitSample& w : *waits) {
        w.start_ns = (*this)(w.start_ns);
        w.end_ns = (*this)(w.end_ns);
      }
    }
    for (format::FetchSample& f : b->fetches) {
      f.start_ns = (*this)(f.start_ns);
      f.end_ns = (*this)(f.end_ns);
    }
  }
};

// A file's class over the processes of the job that classed it `a` and
// `b`, each by its own use (lib/format/path_class.h): data where either
// read it, else an output where either wrote it; a class by path is the
// same in every process.
uint8_t JobClassOf(uint8_t a, uint8_t b) {
  if (a == format::kPathData || b == format::kPathData) return format::kPathData;
  if (a == format::kPathOutputs || b == format::kPathOutputs) return format::kPathOutputs;
  return a == format::kPathByUse ? b : a;
}

// The first pass over a counters file: its interval records' spans, to
// `points` (mapped), its rank, the names of its regions and its GPU's window.
class Outline : public format::CountersVisitor {
 public:
  Outline(JobClock clock, const format::CountersFile& file, const std::string& batch_region,
          WholeRunPointsBuilder* points)
      : clock_(clock), file_(file), batch_region_(batch_region), points_(points) {}
  void Interval(format::IntervalRecord& r) override {
    if (r.so_far) so_far = r;  // as read: the second pass maps it
    if (pending_) points_->AddSpan(start_, end_, false);
    pending_ = true;
    start_ = clock_(r.start_ns);
    end_ = clock_(r.end_ns);
    if (r.rank >= 0) rank = r.rank;
    for (format::RegionRow& g : r.regions) {
      regions.insert(g.name);
      auto name = file_.strings.find(g.name);
      if (name == file_.strings.end() || !LoopRegion(name->second)) continue;
      clock_.Map(&g);
      AddRegion(g, &loop.regions[name->second]);
    }
  }
  void Steps(format::StepRecord& r) override {
    clock_.Map(&r);
    loop.steps.Add(r);
  }
  void Gpu(format::GpuRecord& g) override {
    clock_.Map(&g);
    loop.gpu.Add(g.first_ns, g.last_ns);
  }
  // After the last record.
  void End() {
    if (pending_) points_->AddSpan(start_, end_, true);
  }
  int32_t rank = -1;
  std::set<uint32_t> regions;  // string ids
  LoopWindow loop;             // its regions that make the loop's window, and steps
  std::optional<format::IntervalRecord> so_far;  // its record so far, if any

 private:
  bool LoopRegion(const std::string& name) const {
    return name == batch_region_ || name == kIterRegion || name == kStepRegion;
  }
  JobClock clock_;
  const format::CountersFile& file_;  // its strings so far
  const std::string& batch_region_;
  WholeRunPointsBuilder* points_;
  bool pending_ = false;
  uint64_t start_ = 0, end_ = 0;
};

// The run's sums, which each file's records are folded into as read.
struct RunSums {
  RunSums(WholeRun* w, const std::string& batch_region) : w(w), batch_region(batch_region) {}
  WholeRun* w;
  const std::string& batch_region;
  std::set<std::string> processes;
  std::map<std::string, WholeRunFile> files;
  WholeRunPointsBuilder points;
  // Of the batch records only those holding samples are kept, to be
  // joined to the run's fetches at the end; their counts are added as read.
  std::vector<ProcessBatches> batches;
  BatchSampleBudget budget;
  WaitCauseSums causes;
  std::map<int32_t, RankSums> ranks;
  GpuSums gpu;
  StallSums stall;
  SaveSums saves;
  StepSums steps;
  uint64_t unsampled_saves = 0;
};

// The second pass over a counters file: each record folded into `run` as
// it is read. An interval record's point waits for the step and GPU
// records written after it; a data stall record, measured an interval
// late, counts in the point of its own stretch's middle.
class Fold : public format::CountersVisitor {
 public:
  Fold(const CountersSource& source, const format::CountersFile& file, RunSums* run)
      : source_(source), file_(file), run_(*run), clock_{source.clock},
        rank_(source.rank >= 0 ? &run->ranks[source.rank] : nullptr),
        held_(file.info.host + '\0' + file.info.boot_id, {}, source.rank) {}

  void Interval(format::IntervalRecord& r) override {
    EndInterval();
    r.start_ns = clock_(r.start_ns);
    r.end_ns = clock_(r.end_ns);
    WholeRun& w = *run_.w;
    ++w.intervals;
    w.start_ns = std::min(w.start_ns, r.start_ns);
    w.end_ns = std::max(w.end_ns, r.end_ns);
    w.events += r.events;
    in_interval_ = true;
    point_ = PointSource();
    point_.start_ns = r.start_ns;
    point_.end_ns = r.end_ns;
    for (int k = 0; k < format::kCounterClasses; ++k) {
      w.classes[k].Add(r.classes[k]);
      w.total.Add(r.classes[k]);
      if (rank_ != nullptr) rank_->io.Add(r.classes[k]);
      point_.io_calls += r.classes[k].calls();
      point_.read_bytes += r.classes[k].read_bytes;
      point_.io_ns += r.classes[k].ns();
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
      auto name = file_.strings.find(f.file);
      const std::string p = name == file_.strings.end() ? "?" : name->second;
      WholeRunFile& row = run_.files[p];
      // Each process classes a file by its own use of it (a worker reads
      // the shard its loop only opened, or another rank wrote): read by
      // any, it is the job's data, as the full events class it by the
      // job's use; else written by any, an output.
      const bool fresh = row.path.empty();
      row.path = p;
      row.cls = fresh ? f.cls : JobClassOf(row.cls, f.cls);
      row.io.Add(f.io);
    }
    for (format::RegionRow& g : r.regions) {
      auto name = file_.strings.find(g.name);
      if (name == file_.strings.end()) continue;
      clock_.Map(&g);
      AddRegion(g, &w.regions[name->second]);
      if (rank_ != nullptr) AddRegion(g, &rank_->regions[name->second]);
      if (name->second == run_.batch_region || name->second == kIterRegion) {
        point_.batch_wait_ns += g.ns;
        point_.waited = true;
      }
      if (name->second == run_.batch_region) point_.batches += g.count - g.no_batch;
      if (name->second == kStepRegion) point_.steps += g.count;
    }
  }

  void Batches(format::BatchRecord& b) override {
    // Its point: the middle of its interval (the record before it, of the
    // same start; without one, its start).
    const uint64_t start = b.start_ns;
    const uint64_t mid = in_interval_ && point_.start_ns == clock_(start) &&
                                 point_.end_ns >= point_.start_ns
                             ? point_.start_ns + (point_.end_ns - point_.start_ns) / 2
                             : clock_(start);
    clock_.Map(&b);
    const uint32_t at = run_.points.PointAt(mid);
    run_.causes.AddCounts(b);
    if (rank_ != nullptr) rank_->causes.AddCounts(b);
    // A loader worker (it fetched batches): how it started, for the worker
    // start-up's advice (fork rather than spawn only to workers spawned).
    if (!b.fetches.empty()) {
      const uint32_t flags = file_.info.flags;
      // (An image exec'd writes a header of its own, without the flag.)
      const bool forked = (flags & kHeaderFlagForked) != 0;
      (forked ? run_.w->workers_forked : run_.w->workers_execed) = true;
    }
    // A worker whose first fetches begin two passes (the pass in the batch
    // flow's id) outlived a pass: persistent (docs/FORMAT_BOUNDED.md).
    for (const format::FetchSample& f : b.fetches) {
      if (!f.first) continue;
      const uint64_t pass = f.id >> format::kBatchIndexBits;
      if (started_pass_ && *started_pass_ != pass) run_.w->workers_persistent = true;
      started_pass_ = pass;
    }
    run_.points.causes(at).AddCounts(b);
    held_.records.push_back(std::move(b));
    held_.points.push_back(at);
    if (held_.records.size() >= kHeldRecords) Hold();
  }

  void Gpu(format::GpuRecord& g) override {
    clock_.Map(&g);
    if (in_interval_ && g.start_ns == point_.start_ns) point_.gpu_busy_ns += g.busy_ns;
    run_.gpu.Add(g);
    if (rank_ != nullptr) rank_->gpu.Add(g);
  }

  void DataStall(format::DataStallRecord& r) override {
    clock_.Map(&r);
    const uint64_t length = r.to_ns > r.from_ns ? r.to_ns - r.from_ns : 0;
    run_.points.AddStall(r.from_ns + length / 2, r.stall_ns);
    run_.stall.Add(r);
    if (rank_ != nullptr) rank_->stall.Add(r);
  }

  void Steps(format::StepRecord& r) override {
    // A process that waited for no batch: its step records' waits are its
    // loop's.
    if (source_.waited) return;
    clock_.Map(&r);
    run_.steps.Add(r);
    if (rank_ != nullptr) rank_->steps.Add(r);
    if (in_interval_ && r.start_ns == point_.start_ns) {
      point_.batch_wait_ns += r.wait_ns;
      point_.step_reading_ns += r.wait_ns;
      point_.step_preprocessing_ns += r.preprocessing_ns;
      point_.waited = true;
    }
  }

  void Saves(format::SavesRecord& r) override {
    for (format::SaveSample& s : r.saves) {
      s.start_ns = clock_(s.start_ns);
      s.end_ns = clock_(s.end_ns);
    }
    saves_.Add(r);
  }

  void Keep(format::KeepRecord& k) override {
    run_.w->kept.push_back(
        KeptWindow{file_.info.host, file_.info.pid, clock_(k.from_ns), clock_(k.to_ns), k.reason});
  }

  // After the last record.
  void End() {
    EndInterval();
    Hold();
    for (const format::SaveSample& s : saves_.Checkpoints()) {
      run_.saves.Add(s);
      if (rank_ != nullptr) rank_->saves.Add(s);
    }
    for (const format::SaveSample& s : saves_.Checkpoints(/*cache=*/true)) {
      run_.saves.AddFill(s);
      if (rank_ != nullptr) rank_->saves.AddFill(s);
    }
    run_.unsampled_saves += saves_.unsampled();
  }

 private:
  // Batch records held before they go to the budget (a long-lived
  // process's go in parts, thinned as the run's are).
  static constexpr size_t kHeldRecords = 4096;

  void EndInterval() {
    if (in_interval_) run_.points.Add(point_);
    in_interval_ = false;
  }

  void Hold() {
    if (held_.records.empty()) return;
    const uint8_t level = run_.budget.level();
    ProcessBatches next(held_.machine, {}, held_.rank);
    run_.budget.Append(std::move(held_), &run_.batches);
    held_ = std::move(next);
    // Thinned further, every part may hold records without samples now.
    DropUnsampled(&run_.batches, run_.budget.level() == level ? run_.batches.size() - 1 : 0);
  }

  const CountersSource& source_;
  const format::CountersFile& file_;  // its strings so far
  RunSums& run_;
  JobClock clock_;
  RankSums* rank_;
  bool in_interval_ = false;
  std::optional<uint64_t> started_pass_;  // a pass whose first fetches it made
  PointSource point_;  // the last interval record's, until the next
  ProcessBatches held_;
  ProcessSaves saves_;
};

// The warnings and notes of what was torn or damaged in `c`.
void FileMessages(const format::CountersFile& c, std::vector<std::string>* messages) {
  if (c.torn) {
    messages->push_back("note: " + c.path + ": the last counters record is cut short (the "
                        "process was killed); the kept events cover its end");
  }
  if (!c.damage.empty()) {
    uint64_t skipped = 0;
    for (const format::CountersFile::Damage& d : c.damage) skipped += d.bytes;
    const size_t more = c.damage.size() - 1;
    messages->push_back(
        "warning: " + c.path + ": damaged at byte " + std::to_string(c.damage.front().at) +
        (more > 0 ? " and " + std::to_string(more) + " more places" : "") + ": " +
        std::to_string(skipped) + " bytes skipped; the records after the damage were read");
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
  w.batch_region = batch_region;
  std::set<std::string> seen;
  std::vector<std::pair<uint64_t, uint64_t>> kept_spans;
  std::vector<CountersSource> sources;
  for (size_t i = 0; i < catalog.traces.size(); ++i) {
    const read::CatalogEntry& t = catalog.traces[i];
    if (!t.opened || !(t.info.flags & kHeaderFlagSegment)) continue;
    const read::DomainMap* clock = clocks.identity() ? nullptr : &clocks.of(i);
    std::string path = format::CountersPathOf(t.path);
    if (!seen.insert(path).second) continue;
    CountersSource& source = sources.emplace_back();
    source.path = std::move(path);
    source.clock = clock;
  }
  RunSums run(&w, batch_region);
  // The first pass: the points' grid, each process's rank, and the loops'
  // and GPUs' windows (the GPU busy time and data stall inside them are
  // summed as read).
  LoopWindow whole_window;
  std::map<int32_t, LoopWindow> rank_windows;
  std::vector<LoopWindow> waiting_windows;  // of each process that waited for batches
  std::vector<LoopWindow> stepping_windows;  // of each that waited for none and stepped
  // The same of each rank's processes (a rank restarted is a process each attempt).
  std::map<int32_t, std::vector<LoopWindow>> rank_waiting, rank_stepping;
  for (CountersSource& source : sources) {
    format::CountersFile c;
    Outline outline(JobClock{source.clock}, c, batch_region, &run.points);
    if (!format::VisitCountersFile(source.path, &outline, &c, &source.error)) continue;
    outline.End();
    source.read = true;
    source.bytes = c.so_far ? c.so_far_at : c.bytes;
    source.so_far = std::move(outline.so_far);
    if (source.so_far) {
      for (const format::FileRow& f : source.so_far->files) {
        auto name = c.strings.find(f.file);
        if (name != c.strings.end()) source.so_far_names.emplace_back(*name);
      }
    }
    source.rank = outline.rank;
    for (uint32_t id : outline.regions) {
      auto name = c.strings.find(id);
      source.waited = source.waited || (name != c.strings.end() && (name->second == batch_region ||
                                                                    name->second == kIterRegion));
    }
    whole_window.Add(outline.loop, source.waited);
    if (source.waited) {
      waiting_windows.push_back(outline.loop);
      if (source.rank >= 0) rank_waiting[source.rank].push_back(outline.loop);
    } else if (outline.loop.regions.count(kStepRegion) > 0) {
      stepping_windows.push_back(outline.loop);
      if (source.rank >= 0) rank_stepping[source.rank].push_back(outline.loop);
    }
    if (source.rank >= 0) rank_windows[source.rank].Add(outline.loop, source.waited);
  }
  run.points.Lay();
  auto set_window = [&](const LoopWindow& window, auto* sums) {
    WholeRunLoop loop;
    LoopFigures(window.regions, batch_region, window.steps, &loop);
    sums->gpu.SetWindow(loop);
    sums->stall.SetWindow(loop, window.gpu);
    sums->saves.SetWindow(loop);
  };
  set_window(whole_window, &run);
  for (const auto& [rank, window] : rank_windows) set_window(window, &run.ranks[rank]);
  // The second: each file's records folded in as read.
  size_t so_far = 0;  // files whose last interval was in progress
  for (const CountersSource& source : sources) {
    format::CountersFile c;
    Fold fold(source, c, &run);
    std::string error = source.error;
    if (!source.read || !format::VisitCountersFile(source.path, &fold, &c, &error, source.bytes)) {
      w.messages.push_back("warning: " + error + "; the whole run lacks this process");
      continue;
    }
    if (source.so_far) {
      format::IntervalRecord r = *source.so_far;
      c.strings.insert(source.so_far_names.begin(), source.so_far_names.end());
      fold.Interval(r);
      ++so_far;
    }
    fold.End();
    FileMessages(c, &w.messages);
    w.present = true;
    // The images of one process (an exec) each have counters: one process.
    const format::ProcessInfo& p = c.info;
    const std::string process =
        p.host + '\0' + p.boot_id + '\0' + std::to_string(p.pid) + '\0' + p.kernel_start;
    if (run.processes.insert(process).second) ++w.processes;
    if (source.rank >= 0) run.ranks[source.rank].processes.insert(process);
  }
  if (so_far > 0) {
    w.messages.push_back("note: the last interval of " + std::to_string(so_far) +
                         (so_far == 1 ? " process" : " processes") +
                         " is counted up to its tracer's last pass (killed, or running as read)");
  }
  for (auto& [path, f] : run.files) w.files.push_back(std::move(f));
  std::sort(w.files.begin(), w.files.end(), [](const WholeRunFile& a, const WholeRunFile& b) {
    return a.io.ns() != b.io.ns() ? a.io.ns() > b.io.ns() : a.path < b.path;
  });
  // A process's segments that follow one another are one stretch: the
  // moments between one's last event and the next one's first are kept too
  // (the segments' spans alone summed to 2.92 s of a 3.22 s window).
  for (const read::KeptStretch& k : read::FindKeptStretches(catalog, clocks).stretches) {
    kept_spans.emplace_back(k.from_ns, k.to_ns);
  }
  w.kept_event_ns = UnionNs(kept_spans);
  // The samples held, joined to the run's fetches.
  const FetchIndex fetches(run.batches);
  for (const ProcessBatches& b : run.batches) {
    for (size_t k = 0; k < b.records.size(); ++k) {
      run.causes.AddSamples(fetches, b.machine, b.records[k]);
      if (b.rank >= 0) run.ranks[b.rank].causes.AddSamples(fetches, b.machine, b.records[k]);
      run.points.causes(b.points[k]).AddSamples(fetches, b.machine, b.records[k]);
    }
  }
  w.causes = run.causes.Split(false);
  w.causes.thinned_one_in = uint64_t{1} << run.budget.level();
  w.causes.passes_one_in = uint64_t{1} << run.budget.pass_level();
  LoopFigures(w.regions, batch_region, run.steps, &w);
  run.gpu.Put(&w);
  run.stall.Put(&w);
  run.saves.Put(&w);
  if (run.unsampled_saves > 0) {
    w.messages.push_back("note: " + std::to_string(run.unsampled_saves) +
                         " checkpoint saves beyond " + std::to_string(format::kMaxSaveSamples) +
                         " in an interval of a process are not in the whole run's figures");
  }
  const bool workers = w.causes.flow_waits > 0 || !fetches.empty();
  w.points = run.points.Finish(workers);
  for (auto& [rank, sums] : run.ranks) {
    if (sums.processes.empty()) continue;  // (its file gone between the passes)
    WholeRunRank r;
    r.rank = rank;
    r.processes = sums.processes.size();
    r.io = sums.io;
    r.causes = sums.causes.Split(false);
    r.causes.thinned_one_in = w.causes.thinned_one_in;
    r.causes.passes_one_in = w.causes.passes_one_in;
    LoopFigures(sums.regions, batch_region, sums.steps, &r);
    // A rank whose processes looped one after another (torchrun's elastic
    // restarts: a process each attempt): its loop is theirs summed, not one
    // window spanning the time between attempts, as the rank meter sums
    // them (process_loops.h); side by side, the rank's one window.
    const std::vector<LoopWindow>& attempts =
        (r.loop_of_steps ? rank_stepping : rank_waiting)[rank];
    if (attempts.size() >= 2) {
      const SummedLoops summed = SumLoops(attempts, batch_region);
      if (!summed.overlapping) r.loop_ns = summed.loop_ns;
    }
    sums.gpu.Put(&r);
    sums.stall.Put(&r);
    sums.saves.Put(&r);
    w.ranks.push_back(std::move(r));
  }
  // With ranks, the loop is theirs summed, as the verdict's is (docs/
  // ANALYSIS.md, "Verdict"): each rank's waits against its own window, not
  // every rank's against one window from the first rank's start to the
  // last one's end.
  // Without ranks, each process that waited for batches ran a loop of its
  // own (two trainers forked or spawned), as the rank meter counts them
  // (process_loops.h): their windows summed, not one from the first one's
  // start to the last one's end. Where none waited, each process that
  // stepped did (nanoGPT-style trainers, torch.multiprocessing's): four
  // such processes' waits against one window read four times their share.
  const std::vector<LoopWindow>& loops = w.loop_of_steps ? stepping_windows : waiting_windows;
  if (w.ranks.empty() && loops.size() >= 2) w.loop_ns = SumLoops(loops, batch_region).loop_ns;
  if (!w.ranks.empty()) {
    w.loop_ns = 0;
    if (w.gpu) w.gpu_busy_ns = 0;
    // (Data stall records of processes with no rank alone: none.)
    w.data_stall = false;
    w.data_stall_ns = 0;
    w.has_checkpoint = false;
    w.checkpoint = CheckpointFigures();
    for (const WholeRunRank& r : w.ranks) {
      w.loop_ns += r.loop_ns;
      w.has_checkpoint = w.has_checkpoint || r.has_checkpoint;
      w.checkpoint.Add(r.checkpoint);
      if (w.gpu) w.gpu_busy_ns += r.gpu_busy_ns;
      w.data_stall = w.data_stall || r.data_stall;
      w.data_stall_ns += r.data_stall_ns;
    }
  }
  return w;
}

}  // namespace dlprof::analysis
