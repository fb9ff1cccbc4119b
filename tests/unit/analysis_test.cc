#include "lib/analysis/summary/summary.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

#include "lib/analysis/summary/intervals.h"
#include "lib/analysis/findings/summary_figures.h"
#include "tools/dump/summary_output.h"
#include "tests/helpers/summary_in_memory.h"

namespace dlprof::dump {
using namespace dlprof::analysis;
namespace {

// Builds a TraceSet in memory: processes with events at known times.
class SetBuilder {
 public:
  size_t Process(int pid, int rank = -1) {
    ProcessTrace p;
    p.info.pid = pid;
    p.info.ppid = 1;
    p.info.rank = rank;
    p.info.exe = "/bin/prog" + std::to_string(pid);
    p.opened = true;
    p.saw_final = true;
    set_.processes.push_back(std::move(p));
    return set_.processes.size() - 1;
  }
  void String(size_t proc, uint32_t id, const std::string& s) { set_.processes[proc].strings[id] = s; }
  // Events added from now on have this rank.
  void SetRank(size_t proc, int rank) { set_.processes[proc].info.rank = rank; }
  void Add(size_t proc, EventKind kind, uint64_t start, uint64_t dur, uint32_t file = 0,
           int64_t offset = -1, uint64_t size = 0, int64_t ret = 0, int32_t fd = 3,
           uint16_t flags = 0, uint64_t aux = 0) {
    Event e{};
    e.kind = static_cast<uint16_t>(kind);
    e.start_ns = start;
    e.dur_ns = dur;
    e.file = file;
    e.offset = offset;
    e.size = size;
    e.ret = ret;
    e.fd = fd;
    e.flags = flags;
    e.aux = aux;
    ProcessTrace& p = set_.processes[proc];
    p.events.push_back(e);
    p.tids.push_back(p.info.pid);
    p.ranks.push_back(p.info.rank);
  }
  void SetErrOfLast(size_t proc, int32_t err) { set_.processes[proc].events.back().err = err; }
  void Read(size_t proc, uint64_t start, uint64_t dur, uint32_t file, int64_t off, uint64_t n) {
    Add(proc, EventKind::Pread64, start, dur, file, off, n, static_cast<int64_t>(n));
  }
  void Kernel(size_t proc, int device, uint64_t start, uint64_t end) {
    Add(proc, EventKind::CudaKernel, start, end - start, 0, 7, 0, 0, device);
  }
  const TraceSet& Build() {
    set_.merged.clear();
    for (uint32_t p = 0; p < set_.processes.size(); ++p) {
      for (uint32_t i = 0; i < set_.processes[p].events.size(); ++i) set_.merged.push_back({p, i});
    }
    std::sort(set_.merged.begin(), set_.merged.end(), [&](const EventRef& a, const EventRef& b) {
      return set_.event(a).start_ns < set_.event(b).start_ns;
    });
    return set_;
  }

 private:
  TraceSet set_;
};

TEST(IntervalUnionTest, MergesAndMeasures) {
  IntervalUnion u;
  u.Add(10, 20);
  u.Add(15, 30);
  u.Add(40, 50);
  u.Add(5, 5);  // empty
  u.Seal();
  EXPECT_EQ(u.Length(), 30u);
  EXPECT_EQ(u.Covered(0, 100), 30u);
  EXPECT_EQ(u.Covered(25, 45), 10u);
  EXPECT_EQ(u.Covered(30, 40), 0u);
  IntervalUnion v;
  v.Add(0, 12);
  v.Add(45, 100);
  v.Seal();
  EXPECT_EQ(u.CoveredBy(v), 2u + 5u);
}

// GPU kernels on device 0 at [100,200) and [300,400); a worker reads
// /data/a during [150,350), another process reads /data/b during [50,120)
// and [380,500). Window [100,400), idle [200,300): the stall is the 100 ns of
// /data/a's read that fall in the idle gap; /data/b's reads overlap busy time
// or lie outside the window.
TEST(AnalysisTest, DataStallOnConstructedTrace) {
  SetBuilder b;
  size_t trainer = b.Process(100);
  size_t worker1 = b.Process(101);
  size_t worker2 = b.Process(102);
  b.String(worker1, 1, "/data/a");
  b.String(worker2, 1, "/data/b");
  b.Kernel(trainer, 0, 100, 200);
  b.Kernel(trainer, 0, 300, 400);
  b.Read(worker1, 150, 200, 1, 0, 4096);
  b.Read(worker2, 50, 70, 1, 0, 4096);
  b.Read(worker2, 380, 120, 1, 4096, 4096);
  Summary s = Analyze(b.Build());
  ASSERT_EQ(s.gpus.size(), 1u);
  EXPECT_EQ(s.gpus[0].busy_ns, 200u);
  EXPECT_EQ(s.gpus[0].idle_ns(), 100u);
  EXPECT_EQ(s.gpus[0].kernels, 2u);
  EXPECT_EQ(s.io_outstanding_ns, 240u);
  EXPECT_EQ(s.data_stall_ns, 100u);
  EXPECT_EQ(s.gpus[0].stall_ns, 100u);
  ASSERT_EQ(s.stall_by_file.size(), 1u);
  EXPECT_EQ(s.stall_by_file[0].what, "/data/a");
  EXPECT_EQ(s.stall_by_file[0].stall_ns, 100u);
  ASSERT_EQ(s.stall_by_process.size(), 1u);
  EXPECT_EQ(s.stall_by_process[0].what, "pid 101 (prog101)");
}

// The stall is charged to data files only (issue 31): a worker's import
// and multiprocessing's scratch file, read in the same idle gap as the data
// file, count in the stall but are no rows of stall_by_file.
TEST(AnalysisTest, StallChargedToDataFilesOnly) {
  SetBuilder b;
  size_t trainer = b.Process(100);
  size_t worker = b.Process(101);
  b.String(worker, 1, "/data/a");
  b.String(worker, 2, "/env/lib/python3.11/site-packages/torch/nn/functional.py");
  b.String(worker, 3, "/tmp/pymp-3k1x_9q/listener-abc");
  b.Kernel(trainer, 0, 100, 200);
  b.Kernel(trainer, 0, 300, 400);
  b.Read(worker, 200, 20, 1, 0, 4096);
  b.Read(worker, 220, 30, 2, 0, 4096);
  b.Read(worker, 250, 40, 3, 0, 4096);
  Summary s = Analyze(b.Build());
  EXPECT_EQ(s.data_stall_ns, 90u);
  ASSERT_EQ(s.stall_by_file.size(), 1u);
  EXPECT_EQ(s.stall_by_file[0].what, "/data/a");
  EXPECT_EQ(s.stall_by_file[0].stall_ns, 20u);
  EXPECT_EQ(s.stall_files, 1u);
  ASSERT_EQ(s.stall_by_process.size(), 1u);
  EXPECT_EQ(s.stall_by_process[0].stall_ns, 90u);
}

// The fine timeline (issue 31): bins of 1 ms from second 0, doubled when a
// call falls past 8,192 of them; the loop's timeline (here the run's: no
// loop) is binned from them to at most 240 bins.
TEST(AnalysisTest, FineTimelineDoublesItsBinsAndFitsTheWindow) {
  SetBuilder b;
  size_t p = b.Process(1);
  b.String(p, 1, "/data/a");
  const uint64_t base = 1000000000, ms = 1000000;
  b.Read(p, base, 10, 1, 0, 100);
  b.Read(p, base + 3 * ms / 2, 10, 1, 0, 200);
  b.Read(p, base + 3002 * ms, 10, 1, 0, 400);
  Summary before = Analyze(b.Build());
  EXPECT_EQ(before.timeline_base_ns, base);
  EXPECT_EQ(before.fine_bin_ns, ms);
  ASSERT_EQ(before.fine_bins.size(), 3003u);
  EXPECT_EQ(before.fine_bins[0].first, 100u);
  EXPECT_EQ(before.fine_bins[1].first, 200u);
  EXPECT_EQ(before.fine_bins[3002].first, 400u);
  b.Read(p, base + 9000 * ms, 10, 1, 0, 800);  // past 8,192 ms: bins of 2 ms
  Summary s = Analyze(b.Build());
  EXPECT_EQ(s.fine_bin_ns, 2 * ms);
  ASSERT_EQ(s.fine_bins.size(), 4501u);
  EXPECT_EQ(s.fine_bins[0].first, 300u);
  EXPECT_EQ(s.fine_bins[1501].first, 400u);
  EXPECT_EQ(s.fine_bins[4500].first, 800u);
  EXPECT_EQ(s.per_second[0].first, 300u);
  const LoopTimeline t = TimelineOfLoop(s);
  EXPECT_FALSE(t.loop);
  EXPECT_EQ(t.start_ns, base);
  EXPECT_EQ(t.bin_ns, 19 * 2 * ms);  // 4,501 fine bins in at most 240
  ASSERT_EQ(t.bytes.size(), 237u);
  EXPECT_EQ(t.bytes[0].first, 300u);
  EXPECT_EQ(t.bytes[79].first, 400u);
  EXPECT_EQ(t.bytes[236].first, 800u);
  // Partials of other widths merge at the coarser one.
  uint64_t width = ms;
  ByteBins into = {{1, 0}, {2, 0}, {3, 0}, {4, 0}};
  AddFineBins(&width, &into, 2 * ms, {{10, 1}, {20, 2}});
  EXPECT_EQ(width, 2 * ms);
  EXPECT_EQ(into, (ByteBins{{13, 1}, {27, 2}}));
}

// Two devices: the job stalls only when no device is busy.
TEST(AnalysisTest, StallNeedsEveryDeviceIdle) {
  SetBuilder b;
  size_t gpu = b.Process(1);
  size_t io = b.Process(2);
  b.String(io, 1, "/x");
  b.Kernel(gpu, 0, 0, 100);
  b.Kernel(gpu, 1, 50, 150);
  b.Kernel(gpu, 1, 200, 300);
  b.Read(io, 0, 300, 1, 0, 10);
  Summary s = Analyze(b.Build());
  ASSERT_EQ(s.gpus.size(), 2u);
  EXPECT_EQ(s.gpu_busy_ns, 250u);
  EXPECT_EQ(s.data_stall_ns, 50u);        // [150,200)
  EXPECT_EQ(s.gpus[0].stall_ns, 0u);      // device 0's window [0,100) is all busy
  EXPECT_EQ(s.gpus[1].stall_ns, 50u);     // device 1 idle [150,200) in its window [50,300)
}

// GPU busy per second of the timeline (second 0 at the first event): the
// union over devices, split at the seconds' edges.
TEST(AnalysisTest, GpuBusyPerSecond) {
  constexpr uint64_t kSec = 1000000000;
  SetBuilder b;
  size_t gpu = b.Process(1);
  size_t io = b.Process(2);
  b.String(io, 1, "/x");
  b.Read(io, 0, 10, 1, 0, 10);                      // second 0 starts here
  b.Kernel(gpu, 0, kSec / 2, kSec + kSec / 4);       // 0.5 s in second 0, 0.25 s in 1
  b.Kernel(gpu, 1, kSec, kSec + kSec / 2);           // overlaps: 0.25 s more in 1
  b.Kernel(gpu, 0, 3 * kSec + 100, 3 * kSec + 300);  // 200 ns in second 3
  Summary s = Analyze(b.Build());
  EXPECT_EQ(s.gpu_busy_per_second,
            (std::vector<uint64_t>{kSec / 2, kSec / 2, 0, 200}));
  // No GPU: no series.
  SetBuilder quiet;
  size_t p = quiet.Process(3);
  quiet.String(p, 1, "/x");
  quiet.Read(p, 0, 10, 1, 0, 10);
  EXPECT_TRUE(Analyze(quiet.Build()).gpu_busy_per_second.empty());
}

TEST(AnalysisTest, NoGpuMeansNoGpuSection) {
  SetBuilder b;
  size_t p = b.Process(5);
  b.String(p, 1, "/f");
  b.Read(p, 0, 10, 1, 0, 10);
  Summary s = Analyze(b.Build());
  EXPECT_TRUE(s.gpus.empty());
  EXPECT_EQ(s.data_stall_ns, 0u);
}

// A file opened and never read is listed; one whose open failed was never
// opened (ENOENT probes for cache files are common).
TEST(AnalysisTest, OnlySuccessfulOpensCountAsOpened) {
  SetBuilder b;
  size_t p = b.Process(5);
  b.String(p, 1, "/read");
  b.String(p, 2, "/unread");
  b.String(p, 3, "/missing");
  b.Add(p, EventKind::Open, 0, 5, 1, -1, 0, 3);
  b.Read(p, 10, 5, 1, 0, 100);
  b.Add(p, EventKind::Open, 20, 5, 2, -1, 0, 4);
  b.Add(p, EventKind::Open, 30, 5, 3, -1, 0, -1);
  b.SetErrOfLast(p, 2);  // ENOENT
  // Not listed: a directory an import opened, multiprocessing's scratch
  // directory (issue 36: "our own files in the answers").
  b.String(p, 4, "/env/lib/python3.11/site-packages/torch");
  b.String(p, 5, "/tmp/pymp-x1y2z3");
  b.Add(p, EventKind::Open, 40, 5, 4, -1, 0, 5);
  b.Add(p, EventKind::Open, 50, 5, 5, -1, 0, 6);
  Summary s = Analyze(b.Build());
  EXPECT_EQ(s.files.at("/read").opens, 1u);
  EXPECT_EQ(s.files.at("/unread").opens, 1u);
  EXPECT_EQ(s.files.at("/missing").opens, 0u);
  EXPECT_EQ(s.files.at("/missing").ops[static_cast<int>(OpGroup::Open)], 1u);  // still a call
  EXPECT_EQ(s.files.at("/missing").errors, 1u);
  EXPECT_EQ(NeverReadFiles(s), std::vector<std::string>{"/unread"});
}

// Darshan's classification: consecutive starts where the previous access of
// the same process to the same file ended, sequential at or after it.
TEST(AnalysisTest, SequentialConsecutiveRandom) {
  SetBuilder b;
  size_t p = b.Process(7);
  b.String(p, 1, "/f");
  b.Read(p, 0, 1, 1, 0, 100);     // first: not classified
  b.Read(p, 10, 1, 1, 100, 100);  // consecutive (and sequential)
  b.Read(p, 20, 1, 1, 300, 100);  // sequential, stride 100
  b.Read(p, 30, 1, 1, 50, 10);    // random
  Summary s = Analyze(b.Build());
  const AccessStats& r = s.files.at("/f").read;
  EXPECT_EQ(r.ops, 4u);
  EXPECT_EQ(r.first, 1u);
  EXPECT_EQ(r.consecutive, 1u);
  EXPECT_EQ(r.sequential, 2u);
  EXPECT_EQ(r.random(), 1u);
  EXPECT_EQ(r.bytes, 310u);
  EXPECT_EQ(r.strides.at(0), 1u);
  EXPECT_EQ(r.strides.at(100), 1u);
  EXPECT_EQ(r.histogram[0], 1u);  // 10 bytes
  EXPECT_EQ(r.histogram[1], 3u);  // 100 bytes: 100-1K bin
  EXPECT_EQ(r.small_ops, 4u);
}

// A read that moved nothing (Python's 1-byte probe for the end of a file it
// read whole) is no small read, whatever it asked: counted apart
// (empty_ops), out of small_ops and small_time_ns.
TEST(AnalysisTest, EndOfFileProbesAreNoSmallReads) {
  SetBuilder b;
  size_t p = b.Process(7);
  b.String(p, 1, "/f");
  b.Add(p, EventKind::Read, 0, 50, 1, -1, 262145, 262144);  // the whole file
  b.Add(p, EventKind::Read, 100, 3, 1, -1, 1, 0);           // its end
  b.Add(p, EventKind::Read, 200, 7, 1, -1, 4096, 4096);     // a small read
  b.Add(p, EventKind::Read, 300, 2, 1, -1, 4096, 0);        // its end
  Summary s = Analyze(b.Build());
  const AccessStats& r = s.files.at("/f").read;
  EXPECT_EQ(r.ops, 4u);
  EXPECT_EQ(r.empty_ops, 2u);
  EXPECT_EQ(r.small_ops, 1u);
  EXPECT_EQ(r.small_time_ns, 7u);
}

// Like Darshan's common-value counters, each stream counts its first 64
// distinct strides (and sizes) and no new ones after that, while those it
// holds go on counting: here 64 strides, then 300 new ones, then the 64
// again and one of them five times more.
TEST(AnalysisTest, CommonStridesCountTheFirst64Distinct) {
  SetBuilder b;
  size_t p = b.Process(7);
  b.String(p, 1, "/f");
  int64_t end = 0;
  uint64_t t = 0;
  auto read_after_gap = [&](int64_t gap, uint64_t size) {
    b.Read(p, t += 10, 1, 1, end + gap, size);
    end += gap + static_cast<int64_t>(size);
  };
  read_after_gap(0, 10);  // first: no stride
  std::vector<int64_t> held;
  for (int64_t k = 1; k <= 64; ++k) held.push_back(k * 4096);
  for (int64_t gap : held) read_after_gap(gap, 10);
  for (int64_t k = 0; k < 300; ++k) read_after_gap(1000000 + k * 512, 10);
  for (int64_t gap : held) read_after_gap(gap, 10);
  for (int i = 0; i < 5; ++i) read_after_gap(held[6], 10);
  Summary s = Analyze(b.Build());
  const AccessStats& r = s.files.at("/f").read;
  EXPECT_EQ(r.ops, 1u + 64 + 300 + 64 + 5);
  ASSERT_EQ(r.strides.size(), 64u);
  for (int64_t gap : held) EXPECT_EQ(r.strides.at(gap), gap == held[6] ? 7u : 2u) << gap;
  EXPECT_EQ(r.sizes.at(10), r.ops);
}

// The per-second timeline: each read and write in the second it started,
// counted from the first event; a start far past any real run (a forged
// trace) stays out of it rather than making it petabytes long.
TEST(AnalysisTest, PerSecondTimeline) {
  SetBuilder b;
  size_t p = b.Process(7);
  b.String(p, 1, "/f");
  constexpr uint64_t kS = 1000000000;
  b.Read(p, 5, 1, 1, 0, 100);                  // second 0 (the run starts at 5)
  b.Read(p, kS + 4, 1, 1, 100, 200);           // still second 0
  b.Read(p, kS + 5, 1, 1, 300, 400);           // second 1
  b.Add(p, EventKind::Pwrite64, 3 * kS + 10, 1, 1, 0, 50, 50);  // second 3
  b.Read(p, 3 * kS + 11, 1, 1, 700, 1);        // second 3
  b.Read(p, uint64_t{1} << 62, 1, 1, 701, 7);  // past the bound: in no second
  Summary s = Analyze(b.Build());
  using Row = std::pair<uint64_t, uint64_t>;
  EXPECT_EQ(s.per_second, (std::vector<Row>{{300, 0}, {400, 0}, {0, 0}, {1, 50}}));
  EXPECT_EQ(s.run.read.bytes, 708u);  // counted everywhere else
}

// MPI_Init gives the process a rank mid-run: its accesses to a file stay one
// sequence (not a second `first`), and each rank level gets its share.
TEST(AnalysisTest, RankChangeKeepsTheAccessSequence) {
  SetBuilder b;
  size_t p = b.Process(7);
  b.String(p, 1, "/f");
  b.Read(p, 0, 1, 1, 0, 100);
  b.Read(p, 10, 1, 1, 100, 100);
  b.SetRank(p, 3);
  b.Read(p, 20, 1, 1, 200, 100);
  b.Read(p, 30, 1, 1, 300, 100);
  Summary s = Analyze(b.Build());
  const AccessStats& r = s.files.at("/f").read;
  EXPECT_EQ(r.first, 1u);
  EXPECT_EQ(r.consecutive, 3u);
  ASSERT_EQ(s.ranks.size(), 1u);
  EXPECT_EQ(s.ranks.at(3).read.ops, 2u);
  EXPECT_EQ(s.ranks.at(3).read.consecutive, 2u);
  EXPECT_EQ(s.run.read.ops, 4u);
}

// A pread inside an MPI_File_read_at is part of it: bytes count once.
TEST(AnalysisTest, NestedCallsAreNotCountedTwice) {
  SetBuilder b;
  size_t p = b.Process(9, 0);
  b.String(p, 1, "/shared");
  b.Add(p, EventKind::MpiFileReadAt, 0, 100, 1, 0, 1000, 0, 2, 0, /*aux=*/1000);
  b.Add(p, EventKind::Pread64, 10, 50, 1, 0, 1000, 1000, 5, kEventFlagNested);
  Summary s = Analyze(b.Build());
  EXPECT_EQ(s.run.read.bytes, 1000u);
  EXPECT_EQ(s.run.read.ops, 1u);
  EXPECT_EQ(s.nested_events, 1u);
  EXPECT_EQ(s.run.mpi_independent_bytes, 1000u);
  EXPECT_EQ(s.ranks.at(0).read.bytes, 1000u);
}

// Asynchronous requests (issue 52) are reads like any other: per file with
// their bytes and access pattern, outstanding from their submission to
// their completion (four in flight together count once in the union), so
// the GPU's idle time under them is data stall; and no call nests in one:
// a nested pread of the same file while they were in flight (its outer call
// unknown) still counts, where inside a pread64 of that file it would not.
TEST(AnalysisTest, AsynchronousRequestsAreReads) {
  SetBuilder b;
  size_t trainer = b.Process(100);
  size_t worker = b.Process(101);
  b.String(worker, 1, "/data/a");
  b.Kernel(trainer, 0, 0, 100);
  b.Kernel(trainer, 0, 400, 500);
  for (int i = 0; i < 4; ++i) {  // submitted at 100, completed at 150 .. 300
    b.Add(worker, EventKind::UringRead, 100, 50 + 50 * i, 1, 4096 * i, 4096, 4096, 3, 0,
          PackAsyncAux(20, 22, 101));
  }
  b.Add(worker, EventKind::Pread64, 200, 10, 1, 4 * 4096, 4096, 4096, 3, kEventFlagNested);
  Summary s = Analyze(b.Build());
  const AccessStats& r = s.files.at("/data/a").read;
  EXPECT_EQ(r.ops, 5u);
  EXPECT_EQ(r.bytes, 5u * 4096);
  EXPECT_EQ(r.first, 1u);
  EXPECT_EQ(r.consecutive, 4u);
  EXPECT_EQ(s.nested_events, 0u);
  EXPECT_EQ(s.io_outstanding_ns, 200u);
  EXPECT_EQ(s.data_stall_ns, 200u);
  ASSERT_EQ(s.stall_by_file.size(), 1u);
  EXPECT_EQ(s.stall_by_file[0].what, "/data/a");
}

// Hands out a TraceSet's events at most `batch` at a time.
class BatchedSource : public EventSource {
 public:
  BatchedSource(const TraceSet& set, size_t batch) : inner_(set), batch_(batch) {}
  const std::vector<ProcessTrace>& processes() const override { return inner_.processes(); }
  size_t Next(StreamEvent* out, size_t max) override {
    return inner_.Next(out, std::min(max, batch_));
  }

 private:
  TraceSetSource inner_;
  size_t batch_;
};

// The summary takes a run of calls (one kind, process, file and rank) at a
// time. Whatever the batches cut the runs into, the figures are those of
// calls taken one by one: on a trace of every kind of event the summary
// handles, in runs of random length.
TEST(AnalysisTest, RunsOfCallsGiveTheFiguresOfSingleCalls) {
  std::mt19937_64 rng(11);
  auto pick = [&rng](uint64_t n) { return rng() % n; };
  SetBuilder b;
  const size_t procs[] = {b.Process(10), b.Process(11, 0), b.Process(12)};
  for (size_t p : procs) {
    for (uint32_t f = 1; f <= 3; ++f) b.String(p, f, "/data/" + std::to_string(f));
  }
  const EventKind kinds[] = {EventKind::Pread64, EventKind::Pwrite64,
                             EventKind::Openat,  EventKind::Lseek,
                             EventKind::Fsync,   EventKind::MpiFileReadAt,
                             EventKind::Pread64, EventKind::MpiFileReadAtAll};
  uint64_t t = 1000;
  int64_t offset[3][4] = {};
  for (int run = 0; run < 400; ++run) {
    const size_t p = procs[pick(3)];
    if (run == 200) b.SetRank(procs[2], 1);  // MPI_Init mid-run
    const EventKind kind = kinds[pick(8)];
    const uint32_t file = static_cast<uint32_t>(pick(4));
    const uint16_t flags = kind == EventKind::MpiFileReadAtAll ? kEventFlagCollective
                           : pick(10) == 0                     ? kEventFlagNested
                                                               : 0;
    const uint64_t size = pick(3) == 0 ? 4096 : pick(1 << 20);
    for (uint64_t i = 0, n = 1 + pick(3) * pick(40); i < n; ++i) {
      t += pick(3) == 0 ? 0 : pick(1u << 28);  // equal starts too; seconds pass
      int64_t& off = offset[p][file];
      off = pick(4) == 0 ? static_cast<int64_t>(pick(1 << 30)) : off + static_cast<int64_t>(size);
      const bool failed = pick(8) == 0;
      const uint64_t n_bytes = pick(4) == 0 ? pick(1 << 20) : size;  // mostly one size a run
      b.Add(p, kind, t, pick(1u << 30), file, pick(10) == 0 ? -1 : off, n_bytes,
            failed ? -1 : static_cast<int64_t>(n_bytes - pick(2)), 3, flags, n_bytes / 2);
      if (failed) b.SetErrOfLast(p, 5);
    }
    if (pick(5) == 0) b.Kernel(procs[pick(3)], static_cast<int>(pick(2)), t, t + pick(1u << 29));
  }
  const TraceSet& set = b.Build();
  TraceSetSource whole(set);
  const std::string expected = SummaryJson(Analyze(whole, 16));
  for (size_t batch : {1, 2, 7, 256}) {
    BatchedSource source(set, batch);
    EXPECT_EQ(SummaryJson(Analyze(source, 16)), expected) << "batches of " << batch;
  }
  // The trace holds what the test is about.
  const Summary s = Analyze(set);
  EXPECT_GT(s.run.read.ops, 1000u);
  EXPECT_GT(s.run.write.ops, 200u);
  EXPECT_GT(s.nested_events, 10u);  // repeats of the call around them (nested_calls.h)
  EXPECT_GT(s.run.mpi_collective_ops, 100u);
  EXPECT_GT(s.run.read.consecutive, 100u);
  EXPECT_GT(s.per_second.size(), 100u);
  EXPECT_FALSE(s.gpus.empty());
  EXPECT_GT(s.data_stall_ns, 0u);
}

}  // namespace
}  // namespace dlprof::dump
