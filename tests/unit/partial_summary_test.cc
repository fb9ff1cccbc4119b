// Partial summaries merge into the summary of all their traces: whatever the
// grouping and the merge order (partial_summary.h), and Summarize() over
// trace files gives what reading every trace as one stream gives.
#include "lib/analysis/summary/partial_summary.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "lib/analysis/summarize.h"
#include "tests/helpers/trace_builder.h"
#include "tools/dump/summary_output.h"
#include "lib/analysis/meters/summary_builder.h"

namespace dlprof::dump {
using namespace dlprof::analysis;
namespace {

using testing::MakeEvent;

// Random I/O of `procs` processes: reads, writes, opens, seeks, MPI-IO
// (collective or not), nested calls, failed calls, one size or many, runs
// of calls, equal starts, seconds passing; no GPU work, no regions.
TraceSet RandomTraces(int procs, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&rng](uint64_t n) { return rng() % n; };
  TraceSet set;
  for (int p = 0; p < procs; ++p) {
    ProcessTrace t;
    t.info.pid = 100 + p;
    t.info.ppid = 1;
    t.info.rank = p % 3 == 2 ? -1 : p % 3;
    t.info.exe = "/bin/prog" + std::to_string(p % 2);
    t.opened = t.saw_final = true;
    for (uint32_t f = 1; f <= 3; ++f) t.strings[f] = "/data/" + std::to_string(f + p % 2);
    set.processes.push_back(std::move(t));
  }
  const EventKind kinds[] = {EventKind::Pread64, EventKind::Pwrite64, EventKind::Openat,
                             EventKind::Lseek, EventKind::MpiFileReadAt,
                             EventKind::MpiFileReadAtAll, EventKind::Read};
  uint64_t t = 1000;
  for (int run = 0; run < 300; ++run) {
    ProcessTrace& p = set.processes[pick(procs)];
    const EventKind kind = kinds[pick(7)];
    const uint32_t file = static_cast<uint32_t>(pick(4));
    const uint16_t flags = kind == EventKind::MpiFileReadAtAll ? kEventFlagCollective
                           : pick(10) == 0                     ? kEventFlagNested
                                                               : 0;
    const uint64_t size = pick(3) == 0 ? 4096 : pick(1 << 20);
    for (uint64_t i = 0, n = 1 + pick(3) * pick(30); i < n; ++i) {
      t += pick(3) == 0 ? 0 : pick(1u << 28);
      Event e = MakeEvent(kind, t, pick(1u << 30));
      e.file = file;
      e.offset = pick(10) == 0 ? -1 : static_cast<int64_t>(pick(4) == 0 ? pick(1 << 30) : i * size);
      e.size = size;
      e.ret = pick(8) == 0 ? -1 : static_cast<int64_t>(size - pick(2));
      e.err = e.ret < 0 ? 5 : 0;
      e.fd = 3;
      e.flags = flags;
      e.aux = size / 2;
      p.events.push_back(e);
      p.tids.push_back(p.info.pid + static_cast<int32_t>(pick(2)));
      p.ranks.push_back(p.info.rank);
    }
  }
  for (uint32_t p = 0; p < set.processes.size(); ++p) {
    for (uint32_t i = 0; i < set.processes[p].events.size(); ++i) set.merged.push_back({p, i});
  }
  std::stable_sort(set.merged.begin(), set.merged.end(), [&](const EventRef& a, const EventRef& b) {
    return set.event(a).start_ns < set.event(b).start_ns;
  });
  return set;
}

// The traces of `set` whose processes `keep` lists, as a set of their own.
TraceSet Only(const TraceSet& set, const std::vector<uint32_t>& keep) {
  TraceSet out;
  std::vector<int64_t> index(set.processes.size(), -1);
  for (uint32_t p : keep) {
    index[p] = static_cast<int64_t>(out.processes.size());
    out.processes.push_back(set.processes[p]);
  }
  for (const EventRef& r : set.merged) {
    if (index[r.process] >= 0) out.merged.push_back({static_cast<uint32_t>(index[r.process]), r.index});
  }
  return out;
}

PartialSummary PartialOf(const TraceSet& set, uint64_t base) {
  TraceSetSource source(set);
  return AnalyzePartial(source, 8, base);
}

std::string Json(PartialSummary p) { return SummaryJson(FinishSummary(std::move(p))); }

TEST(PartialSummaryTest, PerProcessPartialsMergeIntoTheWholeInAnyOrder) {
  const TraceSet set = RandomTraces(5, 7);
  const uint64_t base = set.event(set.merged.front()).start_ns;
  const std::string whole = Json(PartialOf(set, base));
  // The trace holds what the test is about.
  const Summary s = FinishSummary(PartialOf(set, base));
  ASSERT_GT(s.run.read.ops, 500u);
  ASSERT_GT(s.nested_events, 5u);  // repeats of the call around them (nested_calls.h)
  ASSERT_GT(s.per_second.size(), 10u);
  ASSERT_EQ(s.processes_stats.size(), 5u);

  for (const std::vector<uint32_t>& order :
       {std::vector<uint32_t>{0, 1, 2, 3, 4}, {4, 3, 2, 1, 0}, {2, 0, 4, 1, 3}}) {
    PartialSummary merged;
    for (uint32_t p : order) MergeInto(&merged, PartialOf(Only(set, {p}), base));
    EXPECT_EQ(Json(std::move(merged)), whole);
  }
  // (a + b) + c = a + (b + c), with groups of several processes.
  PartialSummary left = PartialOf(Only(set, {0, 1}), base);
  MergeInto(&left, PartialOf(Only(set, {2}), base));
  MergeInto(&left, PartialOf(Only(set, {3, 4}), base));
  PartialSummary right = PartialOf(Only(set, {2}), base);
  MergeInto(&right, PartialOf(Only(set, {3, 4}), base));
  PartialSummary first = PartialOf(Only(set, {0, 1}), base);
  MergeInto(&first, std::move(right));
  EXPECT_EQ(Json(std::move(left)), whole);
  EXPECT_EQ(Json(std::move(first)), whole);
}

TEST(PartialSummaryTest, SlowestCallsHaveOneOrderAcrossGroups) {
  // Four calls of one length: which are listed, and in which order, does not
  // depend on the process they came from or the merge order.
  TraceSet set = RandomTraces(2, 3);
  for (ProcessTrace& p : set.processes) {
    for (Event& e : p.events) e.dur_ns = 10;
    p.events[3].dur_ns = 500;
    p.events[5].dur_ns = 500;
  }
  const uint64_t base = set.event(set.merged.front()).start_ns;
  PartialSummary a = PartialOf(Only(set, {0}), base), b = PartialOf(Only(set, {1}), base);
  PartialSummary ab = PartialOf(Only(set, {0}), base), ba = PartialOf(Only(set, {1}), base);
  MergeInto(&ab, std::move(b));
  MergeInto(&ba, std::move(a));
  const Summary x = FinishSummary(std::move(ab)), y = FinishSummary(std::move(ba));
  ASSERT_EQ(x.slowest.size(), 8u);
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(x.slowest[i].start_ns, y.slowest[i].start_ns) << i;
    EXPECT_EQ(x.slowest[i].pid, y.slowest[i].pid) << i;
    if (i > 0) {
      EXPECT_FALSE(SlowerThan(x.slowest[i], x.slowest[i - 1])) << i;
    }
  }
  EXPECT_EQ(x.slowest[0].dur_ns, 500u);
  EXPECT_EQ(x.slowest[3].dur_ns, 500u);
  EXPECT_EQ(x.slowest[4].dur_ns, 10u);
}

// Writes each process of `set` to a trace file of its own.
std::vector<std::string> WriteTraces(const TraceSet& set, testing::ScratchDir& dir,
                                     uint32_t header_flags) {
  std::vector<std::string> files;
  for (size_t p = 0; p < set.processes.size(); ++p) {
    const ProcessTrace& t = set.processes[p];
    format::ProcessInfo info = testing::DefaultProcess();
    info.pid = t.info.pid;
    info.rank = t.info.rank;
    info.exe = t.info.exe;
    info.flags = header_flags;
    testing::TraceBuilder b(info);
    // Blocks of up to 50 events, each thread's events in their order.
    for (size_t i = 0; i < t.events.size(); i += 50) {
      b.Block();
      if (i == 0) {
        for (const auto& [id, s] : t.strings) b.String(id, s);
      }
      for (size_t j = i; j < std::min(t.events.size(), i + 50); ++j) {
        b.Events(t.tids[j], {t.events[j]});
      }
    }
    files.push_back(b.Write(dir.File("p" + std::to_string(p) + ".dlprof")));
  }
  return files;
}

TEST(SummarizeTest, TracesReadApartGiveTheFiguresOfOneStream) {
  const TraceSet set = RandomTraces(6, 21);
  testing::ScratchDir apart_dir, together_dir;
  // Marked traces without GPU work or regions are read a trace at a time;
  // unmarked ones (an older writer's: any block may hold GPU work) together,
  // a group per rank (0, 1) and one of the traces without a rank.
  const TraceCatalog apart = CatalogTraces(WriteTraces(set, apart_dir, kHeaderFlagGpuMarked));
  const TraceCatalog together = CatalogTraces(WriteTraces(set, together_dir, 0));
  ASSERT_EQ(GroupTraces(apart).size(), 6u);
  ASSERT_EQ(GroupTraces(together).size(), 3u);
  for (unsigned threads : {0u, 1u, 3u}) {
    SummarizeOptions o;
    o.threads = threads;
    o.selection.base_ns = apart.base_ns();
    const SummarizeResult a = Summarize(apart, o);
    o.selection.base_ns = together.base_ns();
    const SummarizeResult t = Summarize(together, o);
    EXPECT_EQ(SummaryJson(a.summary), SummaryJson(t.summary)) << threads << " threads";
    EXPECT_EQ(a.events, t.events);
    EXPECT_EQ(a.summary.events, t.events);
    ASSERT_EQ(a.traces.size(), 6u);
    for (size_t i = 0; i < 6; ++i) EXPECT_EQ(a.traces[i].info.pid, 100 + static_cast<int>(i));
  }
}

TEST(SummarizeTest, GpuWorkOrRegionsPutEveryTraceInOneGroup) {
  testing::ScratchDir dir;
  auto trace = [&](const std::string& name, Event e) {
    format::ProcessInfo info = testing::DefaultProcess();
    info.flags = kHeaderFlagGpuMarked;
    testing::TraceBuilder b(info);
    b.Block().Events(1, {e});
    return b.Write(dir.File(name));
  };
  const std::string io = trace("io.dlprof", MakeEvent(EventKind::Pread64, 100, 10));
  const std::string io2 = trace("io2.dlprof", MakeEvent(EventKind::Pread64, 200, 10));
  const std::string gpu = trace("gpu.dlprof", MakeEvent(EventKind::CudaKernel, 150, 10));
  const std::string region = trace("region.dlprof", MakeEvent(EventKind::AppRegion, 150, 10));
  const TraceCatalog plain = CatalogTraces({io, io2});
  EXPECT_EQ(GroupTraces(plain).size(), 2u);
  EXPECT_EQ(plain.first_start_ns, 100u);
  const TraceCatalog with_gpu = CatalogTraces({io, gpu, io2});
  EXPECT_TRUE(with_gpu.traces[1].block_flags & kBlockFlagGpu);
  EXPECT_FALSE(with_gpu.traces[0].block_flags & kBlockFlagGpu);
  EXPECT_EQ(GroupTraces(with_gpu).size(), 1u);
  EXPECT_EQ(GroupTraces(CatalogTraces({io, region, io2})).size(), 1u);
}

}  // namespace
}  // namespace dlprof::dump
