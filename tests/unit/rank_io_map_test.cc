// The rank's I/O map (lib/core/rank_io_map.h): marks rounded to the
// nearest bin, their union across processes (a forked child marks the
// same map), laps that replace old marks without clearing, and the part of
// the marked time outside the GPU's busy spans; then the data stall record
// that a process with GPU work writes from it (interval_counters.h); and
// the map file a worker started by exec marks (shm_file.h).
#include "lib/core/rank_io_map.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "lib/core/interval_counters.h"
#include "lib/core/shm_file.h"
#include "lib/core/string_table.h"
#include "lib/format/trace_file.h"

namespace dlprof::core {
namespace {

constexpr uint64_t kUs = 1000, kMs = 1000000;
constexpr uint64_t kBinNs = uint64_t{1} << RankIoMap::kBinShift;
using Spans = std::vector<std::pair<uint64_t, uint64_t>>;

class RankIoMapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    map_.ResetForTest();
    ASSERT_TRUE(map_.Join(-1));
  }
  void TearDown() override { map_.ResetForTest(); }
  RankIoMap& map_ = RankIoMap::Get();
};

TEST_F(RankIoMapTest, AMarkIsItsCallToTheNearestBin) {
  // 100 us from a bin's start: 48.8 bins, rounded to 49 (100.35 us).
  const uint64_t t0 = 1000 * kBinNs;
  map_.Mark(t0, t0 + 100 * kUs);
  RankIoMap::Measure m = map_.Read(0, 10 * kMs, {});
  EXPECT_EQ(m.io_ns, 49 * kBinNs);
  EXPECT_EQ(m.stall_ns, m.io_ns);
  // The GPU busy over the second half of it: the first half is the stall.
  m = map_.Read(0, 10 * kMs, {{t0 + 25 * kBinNs, t0 + 100 * kBinNs}});
  EXPECT_EQ(m.io_ns, 49 * kBinNs);
  EXPECT_EQ(m.stall_ns, 25 * kBinNs);
  // A read of part of it counts that part, to the ns.
  m = map_.Read(t0 + 1000, t0 + 3 * kBinNs, {});
  EXPECT_EQ(m.io_ns, 3 * kBinNs - 1000);
  // A call under half a bin marks nothing; its neighbours' rounding makes
  // up for it on average: 1000 calls of 1.5 us at every phase of a bin.
  map_.ResetForTest();
  ASSERT_TRUE(map_.Join(-1));
  for (uint64_t i = 0; i < 1000; ++i) {
    const uint64_t start = 10 * kMs + i * 10 * kUs + (i * 37) % kBinNs;
    map_.Mark(start, start + 1500);
  }
  m = map_.Read(0, 30 * kMs, {});
  EXPECT_NEAR(static_cast<double>(m.io_ns), 1500.0 * 1000, 0.05 * 1500 * 1000);
}

TEST_F(RankIoMapTest, MarksAcrossWordsAndProcessesAreOneUnion) {
  // A call over many words, and one in another process (a forked loader
  // worker) that overlaps its end and goes on past it.
  const uint64_t t0 = 5000 * kBinNs;
  map_.Mark(t0, t0 + 200 * kBinNs);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Its environment may name another rank: its parent's map still.
    RankIoMap& map = RankIoMap::Get();
    if (!map.Join(7)) _exit(2);
    map.Mark(t0 + 150 * kBinNs, t0 + 300 * kBinNs);
    map.StartMeasuring(t0);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  EXPECT_TRUE(map_.measuring());
  const RankIoMap::Measure m =
      map_.Read(t0 - kMs, t0 + kMs, {{t0 + 100 * kBinNs, t0 + 110 * kBinNs}});
  EXPECT_EQ(m.io_ns, 300 * kBinNs);
  EXPECT_EQ(m.stall_ns, 290 * kBinNs);
}

TEST_F(RankIoMapTest, ALaterLapTakesTheWordOverAndAnEarlierOneIsDropped) {
  const uint64_t t0 = 3 * RankIoMap::kLapNs + 640 * kBinNs;
  map_.Mark(t0, t0 + 10 * kBinNs);
  // The same bins a lap later: the old marks are gone from the word, and
  // a read of the old lap finds nothing of the new one.
  const uint64_t t1 = t0 + RankIoMap::kLapNs;
  map_.Mark(t1 + 20 * kBinNs, t1 + 25 * kBinNs);
  EXPECT_EQ(map_.Read(t1, t1 + kMs, {}).io_ns, 5 * kBinNs);
  EXPECT_EQ(map_.Read(t0, t0 + kMs, {}).io_ns, 0u);
  // A call of the earlier lap drained late is dropped, not mixed in.
  map_.Mark(t0, t0 + 10 * kBinNs);
  EXPECT_EQ(map_.Read(t1, t1 + kMs, {}).io_ns, 5 * kBinNs);
  // A read longer than a lap reads the last lap only: not a call 5 ms
  // before it, whose word no later lap took over.
  const uint64_t old = t1 + kMs - RankIoMap::kLapNs - 5 * kMs;
  map_.Mark(old, old + 10 * kBinNs);
  EXPECT_EQ(map_.Read(old, old + kMs, {}).io_ns, 10 * kBinNs);
  EXPECT_EQ(map_.Read(0, t1 + kMs, {}).io_ns, 5 * kBinNs);
}

TEST_F(RankIoMapTest, ASecondProcessWithGpuWorkMeasuresAMapOfItsOwn) {
  // Trainers forked by one launcher: the first to have GPU work measures
  // the map they share; another takes a map of its own, for the workers it
  // forks, and its calls no longer reach the first one's.
  map_.StartMeasuring(10 * kMs);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    RankIoMap& map = RankIoMap::Get();
    if (!map.Join(-1)) _exit(2);
    map.StartMeasuring(20 * kMs);
    if (map.measuring_since_ns() != 20 * kMs) _exit(3);
    map.Mark(15000 * kBinNs, 15100 * kBinNs);
    if (map.Read(0, 40 * kMs, {}).io_ns != 100 * kBinNs) _exit(4);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(map_.measuring_since_ns(), 10 * kMs);
  EXPECT_EQ(map_.Read(0, 40 * kMs, {}).io_ns, 0u);
  // Its own second start changes nothing.
  map_.StartMeasuring(50 * kMs);
  EXPECT_EQ(map_.measuring_since_ns(), 10 * kMs);
}

TEST_F(RankIoMapTest, AnotherRanksMapIsNew) {
  map_.Mark(10 * kMs, 11 * kMs);
  map_.StartMeasuring(1);
  ASSERT_TRUE(map_.Join(-1));  // the same rank: the same map
  EXPECT_GT(map_.Read(0, 20 * kMs, {}).io_ns, 0u);
  ASSERT_TRUE(map_.Join(3));  // MPI_Init made the process rank 3
  EXPECT_EQ(map_.Read(0, 20 * kMs, {}).io_ns, 0u);
  EXPECT_FALSE(map_.measuring());
}

// A worker started by exec (spawn, forkserver): the map file its GPU
// process makes once it measures, handed on by name; the measurer reads it
// with its own map, and removes it when it finishes.
TEST_F(RankIoMapTest, AWorkerStartedByExecMarksTheFileItsGpuProcessMade) {
  map_.ResetForTest();
  ASSERT_TRUE(map_.Join(5));
  map_.ShareWithExecChildren();  // not measuring: no file
  EXPECT_STREQ(map_.file_path(), "");
  map_.StartMeasuring(10 * kMs);
  map_.ShareWithExecChildren();
  const std::string path = map_.file_path();
  if (path.empty()) GTEST_SKIP() << "no /dev/shm here";
  EXPECT_EQ(access(path.c_str(), F_OK), 0);
  map_.Mark(1000 * kBinNs, 1010 * kBinNs);  // the measurer's own call
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // As an exec'd process starts: no map of its parent's in its memory.
    RankIoMap& map = RankIoMap::Get();
    map.ResetForTest();
    if (!map.JoinFrom(5, path.c_str()) || !map.measuring()) _exit(2);
    map.Mark(2000 * kBinNs, 2020 * kBinNs);
    // One of another rank, or handed no map, marks its own.
    RankIoMap other;
    if (!other.JoinFrom(6, path.c_str()) || other.measuring()) _exit(3);
    other.Mark(3000 * kBinNs, 3040 * kBinNs);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(map_.Read(0, 20 * kMs, {}).io_ns, 30 * kBinNs);
  map_.Leave();
  EXPECT_NE(access(path.c_str(), F_OK), 0);
}

TEST(ShmFileTest, AFileIsMappedByNameAndSweptWhenItsMakerIsGone) {
  char dir[] = "/tmp/shm_fileXXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const ShmFile mine = CreateShmFile("test", 8192, dir);
  ASSERT_NE(mine.map, nullptr);
  static_cast<char*>(mine.map)[4096] = 'x';
  void* again = OpenShmFile(mine.path, 8192);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(static_cast<char*>(again)[4096], 'x');
  EXPECT_EQ(OpenShmFile(mine.path, 4096), nullptr);  // not the size asked
  // A file of a process gone (a pid just reaped), beside ours.
  const pid_t gone = fork();
  ASSERT_GE(gone, 0);
  if (gone == 0) _exit(0);
  ASSERT_EQ(waitpid(gone, nullptr, 0), gone);
  std::string stale = mine.path;
  const size_t pid_at = stale.rfind('-', stale.rfind('-') - 1) + 1;
  stale = stale.substr(0, pid_at) + std::to_string(gone) + "-1";
  FILE* f = fopen(stale.c_str(), "w");
  ASSERT_NE(f, nullptr);
  fclose(f);
  EXPECT_EQ(SweepShmFiles("test", dir), 1);
  EXPECT_NE(access(stale.c_str(), F_OK), 0);
  EXPECT_EQ(access(mine.path, F_OK), 0);
  RemoveShmFile(mine.path);
  EXPECT_NE(access(mine.path, F_OK), 0);
  rmdir(dir);
}

// The counters of a process with GPU work: the stall of each stretch,
// written one interval late, against every process's marks.
TEST_F(RankIoMapTest, TheCountersWriteEachStretchsStallOneIntervalLate) {
  StringTable strings;
  ASSERT_TRUE(strings.Init());
  char dir[] = "/tmp/rank_io_mapXXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string path = std::string(dir) + "/p.dlcount";
  IntervalCounters counters(&strings, 1000 * kMs, &map_);
  format::ProcessInfo info;
  info.pid = 1;
  info.host = "h";
  info.flags = kHeaderFlagSegment;
  std::string error;
  ASSERT_TRUE(counters.Open(path, format::EncodeFileHeader(info), 0, &error)) << error;
  map_.ResetForTest();  // the counters join at their first pass
  auto event = [](EventKind kind, uint64_t start, uint64_t end) {
    Event e{};
    e.kind = static_cast<uint16_t>(kind);
    e.start_ns = start;
    e.dur_ns = end - start;
    e.ret = 4096;
    return e;
  };
  // Interval 1 ([0, 1 s)): a read before CUPTI attached (not marked: no
  // one measures yet), CUPTI's clock sync at 70 ms, the flusher's pass at
  // 80 ms (measuring from then on), the first kernels, [100, 110) and
  // [300, 310) ms.
  const Event before = event(EventKind::Pread64, 50 * kMs, 60 * kMs);
  counters.Add(7, &before, 1, format::TickScale{});
  const Event sync = event(EventKind::CudaClockSync, 70 * kMs, 70 * kMs);
  counters.Add(7, &sync, 1, format::TickScale{});
  EXPECT_FALSE(map_.measuring());
  ASSERT_FALSE(counters.MaybeEmit(80 * kMs, -1, false));
  EXPECT_EQ(map_.measuring_since_ns(), 80 * kMs);
  const Event kernels[] = {event(EventKind::CudaKernel, 100 * kMs, 110 * kMs),
                           event(EventKind::CudaKernel, 300 * kMs, 310 * kMs)};
  counters.Add(7, kernels, 2, format::TickScale{});
  // A worker's read [105, 200) ms (half under a kernel's end), and ours,
  // [400, 450) ms.
  map_.Mark(105 * kMs, 200 * kMs);
  const Event read = event(EventKind::Pread64, 400 * kMs, 450 * kMs);
  counters.Add(7, &read, 1, format::TickScale{});
  ASSERT_TRUE(counters.MaybeEmit(1000 * kMs, -1, false));
  // Interval 2: a kernel late from CUPTI in interval 1's time, over
  // [420, 430) ms of our read; a read of interval 2's time, [1500, 1600).
  const Event late = event(EventKind::CudaKernel, 420 * kMs, 430 * kMs);
  counters.Add(7, &late, 1, format::TickScale{});
  map_.Mark(1500 * kMs, 1600 * kMs);
  ASSERT_TRUE(counters.MaybeEmit(2000 * kMs, -1, false));
  // The end: a kernel at [1700, 1800) ms ends the GPU's work.
  const Event last = event(EventKind::CudaKernel, 1700 * kMs, 1800 * kMs);
  counters.Add(7, &last, 1, format::TickScale{});
  ASSERT_TRUE(counters.MaybeEmit(2500 * kMs, -1, true));

  format::CountersFile c;
  ASSERT_TRUE(format::ReadCountersFile(path, &c, &error)) << error;
  ASSERT_EQ(c.intervals.size(), 3u);
  ASSERT_EQ(c.stalls.size(), 2u);
  // Interval 1 measured nothing: the stall of its time waits a stretch.
  // Written at interval 2's end: [100 ms, 1 s), against the late kernel too.
  EXPECT_EQ(c.stalls[0].from_ns, 100 * kMs);
  EXPECT_EQ(c.stalls[0].to_ns, 1000 * kMs);
  const double bin = kBinNs;
  EXPECT_NEAR(c.stalls[0].io_ns, 145.0 * kMs, bin);
  EXPECT_NEAR(c.stalls[0].stall_ns, (90.0 + 40.0) * kMs, 2 * bin);
  // At the end: [1 s, 1.8 s), to the GPU's last work.
  EXPECT_EQ(c.stalls[1].from_ns, 1000 * kMs);
  EXPECT_EQ(c.stalls[1].to_ns, 1800 * kMs);
  EXPECT_NEAR(c.stalls[1].io_ns, 100.0 * kMs, bin);
  EXPECT_NEAR(c.stalls[1].stall_ns, 100.0 * kMs, bin);
  unlink(path.c_str());
  rmdir(dir);
}

}  // namespace
}  // namespace dlprof::core
