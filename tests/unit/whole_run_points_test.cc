// The whole run over time (lib/analysis/whole_run_points.h): processes'
// interval records, out of phase, on one grid; the points adding up to the
// run; each point's batch wait split by cause; the worst point.
#include "lib/analysis/whole_run_points.h"

#include <gtest/gtest.h>

#include <vector>

namespace dlprof::analysis {
namespace {

constexpr uint64_t kMs = 1000000;
constexpr uint64_t kS = 1000 * kMs;

// An interval record, and whether it is its process's last.
struct Record {
  PointSource s;
  bool last = false;
};

// A record of [start, end) with `wait` of batch wait (none: the process
// did not wait) and `reads` read calls.
Record MakeRecord(uint64_t start, uint64_t end, uint64_t wait, uint64_t reads,
                  bool last = false) {
  Record r;
  r.last = last;
  PointSource& s = r.s;
  s.start_ns = start;
  s.end_ns = end;
  s.io_calls = reads;
  s.read_bytes = reads * 4096;
  s.io_ns = reads * 1000;
  s.batch_wait_ns = wait;
  s.batches = wait > 0 ? 10 : 0;
  s.waited = wait > 0;
  return r;
}

// The points of `records` and of `loop`'s batch records (the middle of
// each one's interval in `mids`), made as the reader makes them: the
// records' spans, the grid, the records folded in, the batch records'
// counts as read and their samples joined at the end.
WholeRunPoints Points(const std::vector<Record>& records, const ProcessBatches& loop = {},
                      const std::vector<uint64_t>& mids = {}) {
  WholeRunPointsBuilder b;
  for (const Record& r : records) b.AddSpan(r.s.start_ns, r.s.end_ns, r.last);
  b.Lay();
  for (const Record& r : records) b.Add(r.s);
  std::vector<uint32_t> at;
  for (size_t k = 0; k < loop.records.size(); ++k) {
    at.push_back(b.PointAt(mids[k]));
    b.causes(at.back()).AddCounts(loop.records[k]);
  }
  const std::vector<ProcessBatches> all = {loop};
  const FetchIndex fetches(all);
  for (size_t k = 0; k < loop.records.size(); ++k) {
    b.causes(at[k]).AddSamples(fetches, loop.machine, loop.records[k]);
  }
  return b.Finish(false);
}

// A batch record whose waits are the thread's own, `reading` of `ns` its reads.
format::BatchRecord OwnWaits(uint64_t start, uint64_t ns, uint64_t reading) {
  format::BatchRecord r;
  r.start_ns = start;
  r.read.count = 10;
  r.read.ns = ns;
  r.read.reading_ns = reading;
  return r;
}

// A loop (intervals of 1 s from t = 0) and a reader process started 0.3 s
// later (its intervals from 0.3 s): each of the reader's records counts in
// the point its middle falls in, once.
TEST(WholeRunPointsTest, RecordsOutOfPhaseCountOnceInThePointOfTheirMiddle) {
  std::vector<Record> sources;
  for (int i = 0; i < 4; ++i) {
    sources.push_back(MakeRecord(i * kS, (i + 1) * kS, 100 * kMs * (i + 1), 0, i == 3));
  }
  for (int i = 0; i < 3; ++i) {
    const uint64_t a = 300 * kMs + i * kS;
    sources.push_back(MakeRecord(a, a + kS, 0, 100 + i, false));
  }
  sources.push_back(MakeRecord(3300 * kMs, 3400 * kMs, 0, 7, true));  // its exit
  const WholeRunPoints t = Points(sources);
  EXPECT_EQ(t.point_ns, kS);
  ASSERT_EQ(t.points.size(), 4u);
  // Middles 0.8, 1.8, 2.8 s: points 0, 1, 2; the exit's 3.35 s: point 3.
  const uint64_t reads[] = {100, 101, 102, 7};
  uint64_t calls = 0, wait = 0;
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(t.points[i].start_ns, i * kS);
    EXPECT_EQ(t.points[i].end_ns, (i + 1) * kS);
    EXPECT_EQ(t.points[i].io_calls, reads[i]) << i;
    EXPECT_EQ(t.points[i].batch_wait_ns, 100 * kMs * (i + 1)) << i;
    EXPECT_EQ(t.points[i].waiting_ns, kS) << i;
    calls += t.points[i].io_calls;
    wait += t.points[i].batch_wait_ns;
  }
  EXPECT_EQ(calls, 100u + 101 + 102 + 7);
  EXPECT_EQ(wait, 1000 * kMs);
  EXPECT_EQ(t.worst, 3);
}

// A run of 3,000 intervals: points of several intervals, at most
// kMaxPoints of them, adding up to the run.
TEST(WholeRunPointsTest, ALongRunHasPointsOfWholeIntervals) {
  std::vector<Record> sources;
  for (uint64_t i = 0; i < 3000; ++i) {
    sources.push_back(MakeRecord(i * 5 * kS, (i + 1) * 5 * kS, kMs * (i % 7 + 1), 3, i == 2999));
  }
  const WholeRunPoints t = Points(sources);
  EXPECT_EQ(t.point_ns, 5 * 5 * kS);  // ceil(3000 / 720) = 5 intervals
  ASSERT_EQ(t.points.size(), 600u);
  EXPECT_LE(t.points.size(), kMaxPoints);
  uint64_t calls = 0;
  for (const WholeRunPoint& p : t.points) {
    EXPECT_EQ(p.io_calls, 15u);
    EXPECT_EQ(p.waiting_ns, 25 * kS);
    calls += p.io_calls;
  }
  EXPECT_EQ(calls, 9000u);
}

// A point's batch wait split by cause comes from the batch records of its
// own intervals; the run's slow stretch is the worst point, and a
// process's last short record, all waiting, is not.
TEST(WholeRunPointsTest, EachPointSplitsItsOwnWaitsAndTheWorstIsTheSlowStretch) {
  std::vector<Record> sources;
  ProcessBatches loop{"m", {}};
  std::vector<uint64_t> mids;
  for (int i = 0; i < 6; ++i) {
    const bool slow = i == 2 || i == 3;
    const uint64_t wait = slow ? 600 * kMs : 100 * kMs;
    sources.push_back(MakeRecord(i * kS, (i + 1) * kS, wait, 50, false));
    // The slow stretch waits on preprocessing (its reads stay 80 ms).
    loop.records.push_back(OwnWaits(i * kS, wait, 80 * kMs));
    mids.push_back(i * kS + kS / 2);
  }
  sources.push_back(MakeRecord(6 * kS, 6 * kS + 10 * kMs, 10 * kMs, 0, true));
  loop.records.push_back(OwnWaits(6 * kS, 10 * kMs, 0));
  mids.push_back(6 * kS + 5 * kMs);
  const WholeRunPoints t = Points(sources, loop, mids);
  ASSERT_EQ(t.points.size(), 7u);  // the exit's 10 ms: a point of its own
  EXPECT_EQ(t.points[0].causes.reading_ns, 80 * kMs);
  EXPECT_EQ(t.points[0].causes.preprocessing_ns, 20 * kMs);
  EXPECT_EQ(t.points[2].causes.reading_ns, 80 * kMs);
  EXPECT_EQ(t.points[2].causes.preprocessing_ns, 520 * kMs);
  EXPECT_EQ(t.points[6].causes.preprocessing_ns, 10 * kMs);
  for (const WholeRunPoint& p : t.points) EXPECT_EQ(p.causes.total_ns(), p.batch_wait_ns);
  // Point 6 waited all of its 10 ms, but its waiting_ns is under half the
  // median: the worst is the first slow point.
  EXPECT_EQ(t.worst, 2);
}

TEST(WholeRunPointsTest, NoRecordsNoPoints) {
  const WholeRunPoints t = Points({});
  EXPECT_TRUE(t.points.empty());
  EXPECT_EQ(t.worst, -1);
}

}  // namespace
}  // namespace dlprof::analysis
