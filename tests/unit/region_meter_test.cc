// The streaming region breakdown must give exactly the rows of the in-memory
// one (AssignRegions + RegionBreakdown) on random traces: nested and
// overlapping regions of both sources on several threads, child processes
// (and an exec'ed image sharing a pid), ties in start time, zero-length
// regions and calls, GPU work, nested calls, and calls a filter leaves out.
#include "lib/analysis/meters/region_meter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

#include "tests/helpers/stream_order.h"
#include "tests/helpers/trace_builder.h"
#include "lib/read/event_labels.h"
#include "tests/helpers/summary_in_memory.h"

namespace dlprof::analysis {
using namespace dlprof::read;
namespace {

class RandomTrace {
 public:
  explicit RandomTrace(uint64_t seed) : rng_(seed) {
    const int processes = 1 + Pick(4);
    for (int p = 0; p < processes; ++p) {
      ProcessTrace t;
      // Process 2 (when there) is an exec'ed image of process 1's pid.
      t.info.pid = p == 2 ? 101 : 100 + p;
      t.info.ppid = p == 0 ? 1 : Pick(5) == 0 ? 999 : 100 + static_cast<int>(Pick(p));
      t.opened = true;
      // Every third trace names its regions as the PyTorch bootstrap does
      // (kAuto then prefers NVTX ranges); the others mostly not.
      for (uint32_t id = 1; id <= 5; ++id) t.strings[id] = "region " + std::to_string(id);
      if (seed % 3 == 0) {
        t.strings = {{1, "load_batch"}, {2, "fetch_batch"}, {3, "loader_iter"},
                     {4, "optimizer_step"}, {5, "load_batch loader=1"}};
      }
      set_.processes.push_back(std::move(t));
      const int events = static_cast<int>(Pick(120));
      for (int i = 0; i < events; ++i) AddEvent(static_cast<uint32_t>(p));
    }
    testing::MergeInStreamOrder(&set_);
    for (size_t i = 0; i < set_.merged.size(); ++i) kept_.push_back(Pick(6) != 0);
  }

  const TraceSet& set() const { return set_; }
  TraceSet& set() { return set_; }
  bool kept(size_t i) const { return kept_[i]; }
  const std::vector<bool>& kept() const { return kept_; }

 private:
  void AddEvent(uint32_t process) {
    ProcessTrace& p = set_.processes[process];
    Event e{};
    // A coarse clock: many events share a start.
    e.start_ns = 10 * Pick(100);
    e.dur_ns = Pick(8) == 0 ? 0 : 5 * Pick(80);
    e.fd = 3;
    e.offset = -1;
    switch (Pick(10)) {
      case 0:
      case 1:
        e.kind = static_cast<uint16_t>(EventKind::AppRegion);
        e.file = static_cast<uint32_t>(1 + Pick(5));
        e.dur_ns *= 4;
        break;
      case 2:
        e.kind = static_cast<uint16_t>(EventKind::NvtxRange);
        e.file = static_cast<uint32_t>(1 + Pick(5));
        e.dur_ns *= 4;
        break;
      case 3:
        e.kind = static_cast<uint16_t>(EventKind::CudaKernel);
        e.fd = static_cast<int32_t>(Pick(2));
        break;
      case 4:
        e.kind = static_cast<uint16_t>(EventKind::Write);
        e.size = Pick(5000);
        e.ret = Pick(4) == 0 ? -1 : static_cast<int64_t>(e.size);
        break;
      case 5:
        e.kind = static_cast<uint16_t>(EventKind::Open);
        break;
      case 6:
        e.kind = static_cast<uint16_t>(EventKind::Fread);
        e.size = Pick(5000);
        e.aux = e.size / 2;
        break;
      default:
        e.kind = static_cast<uint16_t>(EventKind::Pread64);
        e.size = Pick(5000);
        e.ret = static_cast<int64_t>(e.size);
        e.flags = Pick(10) == 0 ? kEventFlagNested : 0;
        break;
    }
    p.events.push_back(e);
    p.tids.push_back(p.info.pid * 10 + static_cast<int32_t>(Pick(3)));
    p.ranks.push_back(-1);
  }
  uint64_t Pick(uint64_t n) { return rng_() % n; }

  std::mt19937_64 rng_;
  TraceSet set_;
  std::vector<bool> kept_;
};

void ExpectSameRows(const std::vector<RegionStats>& want, const std::vector<RegionStats>& got,
                    const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    const RegionStats &w = want[i], &g = got[i];
    SCOPED_TRACE(what + ", row " + std::to_string(i) + " '" + w.name + "'");
    EXPECT_EQ(g.name, w.name);
    EXPECT_EQ(g.outside, w.outside);
    EXPECT_EQ(g.instances, w.instances);
    EXPECT_EQ(g.region_ns, w.region_ns);
    EXPECT_EQ(g.io_ops, w.io_ops);
    EXPECT_EQ(g.io_ns, w.io_ns);
    EXPECT_EQ(g.read_ops, w.read_ops);
    EXPECT_EQ(g.write_ops, w.write_ops);
    EXPECT_EQ(g.read_bytes, w.read_bytes);
    EXPECT_EQ(g.write_bytes, w.write_bytes);
    EXPECT_EQ(g.io_busy_ns, w.io_busy_ns);
    EXPECT_EQ(g.stall_ns, w.stall_ns);
  }
}

TEST(RegionMeter, MatchesTheInMemoryBreakdownOnRandomTraces) {
  const RegionSource sources[] = {RegionSource::kAuto, RegionSource::kApp, RegionSource::kNvtx,
                                  RegionSource::kAll};
  for (uint64_t seed = 1; seed <= 400; ++seed) {
    RandomTrace trace(seed);
    RegionOptions options;
    options.source = sources[(seed / 3 + seed) % 4];
    options.pick = seed % 3 == 0 ? RegionPick::kInnermost : RegionPick::kOutermost;
    options.inherit_from_parent = seed % 7 != 0;
    const bool filtered = seed % 2 == 0;
    const std::string what = "seed " + std::to_string(seed);

    TraceSet& set = trace.set();
    RegionMeter meter(set.processes, options);
    TraceSetSource source(set);
    size_t i = 0;
    ForEachEvent(source, [&](const StreamEvent& e) { meter.Add(e, !filtered || trace.kept(i++)); });
    const std::vector<RegionStats> got = meter.Finish();

    // The in-memory path: regions from every event, calls from those kept.
    const RegionAssignment a = AssignRegions(set, options);
    if (filtered) testing::KeepOnly(&set, trace.kept());
    ExpectSameRows(RegionBreakdown(set, a), got, what);
    if (::testing::Test::HasFailure()) return;
  }
}

// The exporters' labels, streamed, against AssignRegions on the whole set:
// every event, every option (the source resolved, as dlprof-dump does).
TEST(EventLabels, RegionsMatchAssignRegionsOnRandomTraces) {
  const RegionSource sources[] = {RegionSource::kApp, RegionSource::kNvtx, RegionSource::kAll};
  size_t labelled = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    RandomTrace trace(seed);
    RegionOptions options;
    options.source = sources[seed % 3];
    options.pick = seed % 4 == 0 ? RegionPick::kInnermost : RegionPick::kOutermost;
    options.inherit_from_parent = seed % 5 != 0;
    const TraceSet& set = trace.set();
    const RegionAssignment a = AssignRegions(set, options);
    TraceSetSource source(set);
    EventLabels labels(&source, &options, nullptr);
    size_t seen = 0;
    ForEachEvent(labels, [&](const StreamEvent& e) {
      ASSERT_LT(seen, set.merged.size());
      // The same event, in the same order, with the same region.
      EXPECT_EQ(e.ref().process, set.merged[seen].process);
      EXPECT_EQ(e.ref().index, set.merged[seen].index);
      EXPECT_EQ(e.event->start_ns, set.event(set.merged[seen]).start_ns);
      const std::string* want = a.NameOf(e.ref());
      EXPECT_EQ(e.region == nullptr ? "(none)" : *e.region, want == nullptr ? "(none)" : *want)
          << "seed " << seed << ", event " << seen;
      labelled += want != nullptr;
      ++seen;
    });
    EXPECT_EQ(seen, set.merged.size());
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GT(labelled, 3000u);  // the traces do have regions holding events
}

// A forged nanosecond with more events than may be held is handed out in
// parts, every event once and in order; the region that comes in the last
// part labels that part only.
TEST(EventLabels, AnOverfullNanosecondIsHandedOutInParts) {
  TraceSet set;
  ProcessTrace p;
  p.info.pid = 10;
  p.strings[1] = "epoch";
  for (int i = 0; i < 10; ++i) {
    Event e = testing::MakeEvent(i == 9 ? EventKind::AppRegion : EventKind::Pread64, 100,
                                 i == 9 ? 50 : 1);
    e.file = i == 9 ? 1 : 0;
    p.events.push_back(e);
    p.tids.push_back(10);
    p.ranks.push_back(-1);
    set.merged.push_back({0, static_cast<uint32_t>(i)});
  }
  set.processes.push_back(std::move(p));
  TraceSetSource source(set);
  RegionOptions options;
  options.source = RegionSource::kApp;
  EventLabels labels(&source, &options, nullptr, /*max_held=*/4);
  std::vector<uint32_t> order;
  std::vector<bool> labelled;
  ForEachEvent(labels, [&](const StreamEvent& e) {
    order.push_back(e.index);
    labelled.push_back(e.region != nullptr);
  });
  EXPECT_EQ(order, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(labelled, (std::vector<bool>{false, false, false, false, false, false, false, false,
                                         true, true}));
}

TEST(RegionMeter, AWorkerReadInsideItsParentsEpochCountsThere) {
  TraceSet set;
  for (int pid : {10, 11}) {
    ProcessTrace p;
    p.info.pid = pid;
    p.info.ppid = pid == 10 ? 1 : 10;
    p.strings[1] = "epoch 1";
    set.processes.push_back(std::move(p));
  }
  auto add = [&set](uint32_t process, EventKind kind, uint64_t start, uint64_t dur, uint32_t file,
                    int64_t ret) {
    Event e = testing::MakeEvent(kind, start, dur);
    e.file = file;
    e.ret = ret;
    ProcessTrace& p = set.processes[process];
    p.events.push_back(e);
    p.tids.push_back(p.info.pid);
    p.ranks.push_back(-1);
    set.merged.push_back({process, static_cast<uint32_t>(p.events.size() - 1)});
  };
  // The read comes first in the stream but starts in the epoch's first
  // nanosecond: it is the epoch's.
  add(1, EventKind::Pread64, 100, 50, 0, 4096);   // [100, 150)
  add(0, EventKind::AppRegion, 100, 1000, 1, 0);  // epoch 1: [100, 1100)
  add(0, EventKind::CudaKernel, 120, 10, 0, 0);   // GPU window [120, 210),
  add(0, EventKind::CudaKernel, 200, 10, 0, 0);   // busy 20 ns of it
  add(1, EventKind::Pread64, 1100, 50, 0, 10);    // after the epoch
  RegionMeter meter(set.processes);
  TraceSetSource source(set);
  ForEachEvent(source, [&](const StreamEvent& e) { meter.Add(e); });
  const std::vector<RegionStats> rows = meter.Finish();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].name, "epoch 1");
  EXPECT_EQ(rows[0].instances, 1u);
  EXPECT_EQ(rows[0].read_ops, 1u);
  EXPECT_EQ(rows[0].read_bytes, 4096u);
  EXPECT_EQ(rows[0].io_busy_ns, 50u);
  // In the window [120, 150), of which [120, 130) busy.
  EXPECT_EQ(rows[0].stall_ns, 20u);
  EXPECT_TRUE(rows[1].outside);
  EXPECT_EQ(rows[1].read_bytes, 10u);
}

// kAuto: NVTX ranges a program has win over the loader's regions (what the
// PyTorch bootstrap records unasked); the application's own annotation
// regions win over both. Streamed, in memory, and as dlprof-dump chooses
// from the files (where the name came in an earlier block without regions).
class AutoSourceTest : public ::testing::Test {
 protected:
  // One process: load_batch [0, 100) and optimizer_step [100, 200) regions,
  // an NVTX range "forward" [0, 200), a read at 10; with `own`, an "epoch"
  // region [0, 300) too.
  TraceSet Trace(bool own) {
    TraceSet set;
    ProcessTrace p;
    p.info.pid = 10;
    p.info.ppid = 1;
    p.strings = {{1, "load_batch"}, {2, "optimizer_step"}, {3, "forward"}, {4, "epoch"}};
    set.processes.push_back(std::move(p));
    auto add = [&set](EventKind kind, uint64_t start, uint64_t dur, uint32_t file) {
      Event e = testing::MakeEvent(kind, start, dur);
      e.file = file;
      e.ret = kind == EventKind::Pread64 ? 100 : 0;
      ProcessTrace& p = set.processes[0];
      p.events.push_back(e);
      p.tids.push_back(10);
      p.ranks.push_back(-1);
    };
    if (own) add(EventKind::AppRegion, 0, 300, 4);
    add(EventKind::NvtxRange, 0, 200, 3);
    add(EventKind::AppRegion, 0, 100, 1);
    add(EventKind::Pread64, 10, 5, 0);
    add(EventKind::AppRegion, 100, 100, 2);
    testing::MergeInStreamOrder(&set);
    return set;
  }
  static std::string RegionOfTheRead(const TraceSet& set) {
    RegionMeter meter(set.processes);
    TraceSetSource source(set);
    ForEachEvent(source, [&](const StreamEvent& e) { meter.Add(e); });
    const std::vector<RegionStats> streamed = meter.Finish();
    ExpectSameRows(RegionBreakdown(set, AssignRegions(set)), streamed, "in memory");
    for (const RegionStats& r : streamed) {
      if (r.read_ops == 1) return r.outside ? "(outside)" : r.name;
    }
    return "(none)";
  }
  // The same trace as files: the names in a first block of strings alone.
  static std::string FileChoice(const TraceSet& set, const std::string& path) {
    testing::TraceBuilder b;
    b.Block();
    for (const auto& [id, text] : set.processes[0].strings) b.String(id, text);
    b.Block().Events(10, set.processes[0].events);
    b.last_block().flags = kBlockFlagRegions;
    b.Write(path);
    const RegionSource s = ChooseRegionSource({path});
    return s == RegionSource::kApp ? "app" : s == RegionSource::kNvtx ? "nvtx" : "other";
  }
  testing::ScratchDir dir_;
};

TEST_F(AutoSourceTest, NvtxRangesWinOverTheLoadersRegions) {
  const TraceSet set = Trace(false);
  EXPECT_EQ(RegionOfTheRead(set), "forward");
  EXPECT_EQ(FileChoice(set, dir_.File("a.dlprof")), "nvtx");
}

TEST_F(AutoSourceTest, TheApplicationsOwnRegionsWinOverNvtx) {
  const TraceSet set = Trace(true);
  EXPECT_EQ(RegionOfTheRead(set), "epoch");
  EXPECT_EQ(FileChoice(set, dir_.File("a.dlprof")), "app");
}

TEST(AutoSource, TheLoadersRegionsWithoutNvtx) {
  AutoRegionChoice c;
  Event load = testing::MakeEvent(EventKind::AppRegion, 0, 10);
  c.See(load, "load_batch loader=2");
  EXPECT_FALSE(c.settled());
  EXPECT_EQ(c.choice(), RegionSource::kApp);
  EXPECT_FALSE(IsLoaderRegion("load_batches"));
  EXPECT_FALSE(IsLoaderRegion("step"));  // annotate_loader's: the application's own
  EXPECT_TRUE(IsLoaderRegion("fetch_batch"));
}

}  // namespace
}  // namespace dlprof::analysis
