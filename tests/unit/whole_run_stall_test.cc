// The whole run's data stall from a bounded trace's counters
// (lib/analysis/whole_run_gpu.h): counters files written with the format's
// own functions into a temporary directory and read as dlprof-dump reads
// them (ReadWholeRun). Each data stall record's stall is prorated to the
// part of its stretch inside the loop's window and the GPU's, as the full
// events count it; a point has the records whose stretch's middle is in it;
// ranks are summed; a run without data stall records has none, not 0.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "dlprof/format.h"
#include "lib/analysis/findings/whole_run_verdict.h"
#include "lib/analysis/json/whole_run_json.h"
#include "lib/analysis/whole_run.h"
#include "lib/format/counters.h"
#include "tests/helpers/counters_dir.h"
#include "tools/dump/whole_run_text.h"

namespace dlprof::analysis {
namespace {

constexpr uint64_t kMs = 1000000;
constexpr uint64_t kS = 1000 * kMs;
constexpr uint64_t kT0 = 1000 * kS;  // the run's first interval's start
constexpr uint32_t kBatchName = 1;    // the "load_batch" string's id

// Counters files in a temporary directory (tests/helpers/counters_dir.h).
class WholeRunStallTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(dir_.empty()); }

  // A process's counters file: its header, then `records`.
  void AddProcess(int32_t pid, const std::vector<uint8_t>& records) {
    std::vector<uint8_t> bytes;
    format::AppendStringsRecord({{kBatchName, "load_batch"}}, &bytes);
    bytes.insert(bytes.end(), records.begin(), records.end());
    dir_.Add(dlprof::testing::SegmentProcess(pid, "/bin/train"), bytes);
  }

  WholeRun Read() const { return dir_.Read(); }

  dlprof::testing::CountersDir dir_{"whole_run_stall_test"};
};

// Interval `i` of 1 s from kT0, of rank `rank`; a batch wait in it from
// `wait_from` to `wait_to` (offsets from kT0; none where both are 0).
void Interval(uint64_t i, int32_t rank, std::vector<uint8_t>* out, uint64_t wait_from = 0,
              uint64_t wait_to = 0) {
  format::IntervalRecord r;
  r.start_ns = kT0 + i * kS;
  r.end_ns = r.start_ns + kS;
  r.rank = rank;
  if (wait_to > wait_from) {
    r.regions.push_back(format::RegionRow{kBatchName, 1, wait_to - wait_from, wait_to - wait_from,
                                          kT0 + wait_from, kT0 + wait_to});
  }
  format::AppendIntervalRecord(r, out);
}

// The GPU record of interval `i`: `busy` in its spans from `first` to `last`.
void Gpu(uint64_t i, uint64_t busy, uint64_t first, uint64_t last, std::vector<uint8_t>* out) {
  format::AppendGpuRecord(format::GpuRecord{kT0 + i * kS, busy, kT0 + first, kT0 + last, 1}, out);
}

// A data stall record of the stretch [from, to), all of it with I/O.
void Stall(uint64_t from, uint64_t to, uint64_t stall, std::vector<uint8_t>* out) {
  format::AppendDataStallRecord(format::DataStallRecord{kT0 + from, kT0 + to, to - from, stall},
                                out);
}

// One process, a loop from 1.5 s to 3.5 s and GPU work from 0.5 s to
// 3.25 s: the data stall counts inside both, [1.5 s, 3.25 s), each
// stretch's stall in the share of it inside (the last stretch goes on
// after the GPU's last work, as a writer's stretches do, up to its exit).
TEST_F(WholeRunStallTest, EachStretchsStallIsProratedToTheLoopAndTheGpusWindow) {
  std::vector<uint8_t> b;
  Interval(0, -1, &b);
  Gpu(0, 200 * kMs, 500 * kMs, 1000 * kMs, &b);
  Interval(1, -1, &b, 1500 * kMs, 1510 * kMs);  // the loop's first wait
  Stall(500 * kMs, 1000 * kMs, 100 * kMs, &b);  // (measured an interval late)
  Interval(2, -1, &b);
  Stall(1000 * kMs, 2000 * kMs, 400 * kMs, &b);
  Interval(3, -1, &b, 3490 * kMs, 3500 * kMs);  // its last
  Gpu(3, 100 * kMs, 3000 * kMs, 3250 * kMs, &b);
  Stall(2000 * kMs, 3000 * kMs, 300 * kMs, &b);
  Interval(4, -1, &b);
  Stall(3000 * kMs, 4000 * kMs, 200 * kMs, &b);
  AddProcess(7, b);
  const WholeRun w = Read();
  ASSERT_TRUE(w.present);
  EXPECT_EQ(w.loop_start_ns, kT0 + 1500 * kMs);
  EXPECT_EQ(w.loop_end_ns, kT0 + 3500 * kMs);
  // None of [0.5, 1), half of [1, 2), all of [2, 3), a quarter of [3, 4).
  EXPECT_TRUE(w.data_stall);
  EXPECT_EQ(w.data_stall_ns, (0 + 200 + 300 + 50) * kMs);
  // GPU busy as before: the first record before the loop, the last inside.
  EXPECT_EQ(w.gpu_busy_ns, 100 * kMs);
  // Points of an interval each: a record in the point of its stretch's
  // middle, whole (not in the point of the interval record before it).
  ASSERT_EQ(w.points.points.size(), 5u);
  const uint64_t points[] = {100, 400, 300, 200, 0};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(w.points.points[i].data_stall_ns, points[i] * kMs) << i;
  }

  const Verdict v = WholeRunVerdict(w);
  EXPECT_TRUE(v.has_data_stall);
  EXPECT_EQ(v.data_stall_ns, 550 * kMs);
  EXPECT_EQ(v.loop_ns, 2 * kS);
  // 550 ms of a GPU window of 2.75 s: 20 %, over the finding's 10 %.
  bool finding = false;
  for (const Finding& f : v.findings) finding = finding || f.rule == "data_stall";
  EXPECT_TRUE(finding);
  const std::string json = WholeRunJson(w);
  EXPECT_NE(json.find("\"gpu_busy_ns\":100000000,\"data_stall_ns\":550000000,"),
            std::string::npos) << json;
  EXPECT_NE(json.find("\"data_stall\":{\"ns\":550000000,\"loop_per_mille\":275},\"gpu_busy\":"),
            std::string::npos) << json;
  EXPECT_NE(json.find("\"gpu_busy_ns\":0,\"data_stall_ns\":400000000,"), std::string::npos) << json;
  const std::string text = dump::WholeRunText(w, 5);
  EXPECT_NE(text.find("  GPU busy     5.0 % of the loop (100.0 ms)\n"
                      "  data stall   27.5 % of the loop (550.0 ms): I/O outstanding, the GPU "
                      "idle\n"),
            std::string::npos) << text;
}

// Two ranks without a loop: each rank's stall inside its own GPU's window,
// the run's theirs summed. A rank whose process wrote no data stall record
// (a writer from before them) has none -- null, not 0 -- and a run with
// none at all has no data stall in its verdict or text.
TEST_F(WholeRunStallTest, RanksAreSummedAndARankWithoutRecordsHasNone) {
  std::vector<uint8_t> rank0, rank1;
  Interval(0, 0, &rank0);
  Gpu(0, 300 * kMs, 200 * kMs, 900 * kMs, &rank0);
  Interval(1, 0, &rank0);
  Stall(200 * kMs, 1000 * kMs, 80 * kMs, &rank0);  // 0.1 of it after the GPU's last
  Interval(0, 1, &rank1);
  Gpu(0, 500 * kMs, 100 * kMs, 800 * kMs, &rank1);
  Interval(1, 1, &rank1);
  AddProcess(10, rank0);
  AddProcess(11, rank1);
  WholeRun w = Read();
  ASSERT_EQ(w.ranks.size(), 2u);
  EXPECT_TRUE(w.ranks[0].data_stall);
  EXPECT_EQ(w.ranks[0].data_stall_ns, 70 * kMs);
  EXPECT_FALSE(w.ranks[1].data_stall);
  EXPECT_EQ(w.ranks[1].data_stall_ns, 0u);
  EXPECT_TRUE(w.data_stall);
  EXPECT_EQ(w.data_stall_ns, 70 * kMs);
  std::string json = WholeRunJson(w);
  EXPECT_NE(json.find("\"rank\":0,\"processes\":1,\"loop_ns\":0,\"batch_wait_ns\":0,\"batches\":0,"
                      "\"steps\":0,\"gpu_busy_ns\":300000000,\"data_stall_ns\":70000000,"),
            std::string::npos) << json;
  EXPECT_NE(json.find("\"gpu_busy_ns\":500000000,\"data_stall_ns\":null,"), std::string::npos)
      << json;
  // Against the GPUs' windows, 0.7 s each: 5.0 %.
  EXPECT_NE(json.find("\"data_stall\":{\"ns\":70000000,\"loop_per_mille\":50}"), std::string::npos)
      << json;

  // Rank 0 as a writer from before the records wrote it: no data stall.
  dir_.Clear();
  rank0.clear();
  Interval(0, 0, &rank0);
  Gpu(0, 300 * kMs, 200 * kMs, 900 * kMs, &rank0);
  Interval(1, 0, &rank0);
  AddProcess(10, rank0);
  AddProcess(11, rank1);
  w = Read();
  EXPECT_FALSE(w.data_stall);
  EXPECT_TRUE(w.gpu);
  json = WholeRunJson(w);
  EXPECT_NE(json.find("\"gpu_busy_ns\":800000000,\"data_stall_ns\":null,"), std::string::npos)
      << json;
  EXPECT_NE(json.find("\"data_stall\":null,\"gpu_busy\":{"), std::string::npos) << json;
  EXPECT_FALSE(WholeRunVerdict(w).has_data_stall);
  EXPECT_EQ(dump::WholeRunText(w, 5).find("data stall"), std::string::npos);
}

}  // namespace
}  // namespace dlprof::analysis
