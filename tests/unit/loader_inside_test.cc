// Inside the loader (lib/analysis/meters/fetch_parts.h and the head-of-line
// time of wait_causes.h; docs/ANALYSIS_LOADER.md, "Inside the loader") on rank
// groups built by hand with answers worked out by hand: a fetch's
// preprocessing by part, its samples, batches held up behind a slow one;
// then the verdict's finding.
#include <gtest/gtest.h>

#include <array>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "lib/analysis/findings/verdict.h"
#include "lib/analysis/meters/handover.h"
#include "lib/analysis/meters/out_of_order.h"
#include "tests/helpers/rank_group.h"

namespace dlprof::analysis {
namespace {

using namespace testing::rank_group;  // kSample, kBlur, ...
using Parts = std::vector<std::pair<std::string, uint64_t>>;

TEST(LoaderInsideTest, AFetchsPreprocessingByPartAndItsSamples) {
  testing::RankGroup g(1);
  g.Wait(900, 2100);
  g.Fetch(1, 1000, 2000);
  g.Sample(1, 1000, 1500, 7);
  g.Call(1, EventKind::AppRegion, 1010, 1100, kDecode);
  g.Read(1, 1020, 1060);  // the decode's reading: reading, not decode
  g.Call(1, EventKind::AppRegion, 1100, 1400, kBlur);
  g.Call(1, EventKind::AppRegion, 1400, 1450, kCrop);
  g.Sample(1, 1500, 1900, 8);
  g.Call(1, EventKind::AppRegion, 1500, 1800, kBlur);
  g.Call(1, EventKind::AppRegion, 1900, 1990, kCollate);
  g.Flow(1, 1999, 2050, 1);
  const RankFigures f = g.Measure();
  // 1000 of fetch, 40 of it reading: blur 600, the dataset's own code 170
  // (the samples' rest and the fetcher's), collate 90, decode 50, crop 50.
  EXPECT_EQ(f.preprocessing_parts, (Parts{{"GaussianBlur", 600}, {"dataset", 170}, {"collate", 90},
                                          {"decode", 50}, {"RandomResizedCrop", 50}}));
  ASSERT_EQ(f.slowest_samples.size(), 2u);
  EXPECT_EQ(f.slowest_samples[0].index, 7);
  EXPECT_EQ(f.slowest_samples[0].ns, 500u);
  EXPECT_EQ(f.slowest_samples[0].files, std::vector<std::string>{"/data/train/shard1.bin"});
  EXPECT_EQ(f.slowest_samples[0].pid, 101);
  EXPECT_EQ(f.slowest_samples[1].index, 8);
  EXPECT_TRUE(f.slowest_samples[1].files.empty());
  EXPECT_EQ(f.head_of_line_ns, 0u);
}

TEST(LoaderInsideTest, PageFaultsOnAMappedFileAreReadingAsCallsAre) {
  // The fetch above, its samples read through a map (LMDB, np.memmap): the
  // same page faults in the same places are reading too. They were the
  // dataset's own code (or the part they fell in), and a sample that read
  // only through its map listed no file.
  testing::RankGroup g(1);
  g.Wait(900, 2100);
  g.Fetch(1, 1000, 2000);
  g.Sample(1, 1000, 1500, 7);
  g.Call(1, EventKind::AppRegion, 1010, 1100, kDecode);
  g.Fault(1, 1020, 1060);  // inside decode: reading, not decode
  g.Call(1, EventKind::AppRegion, 1100, 1400, kBlur);
  g.Call(1, EventKind::AppRegion, 1400, 1450, kCrop);
  g.Sample(1, 1500, 1900, 8);
  g.Fault(1, 1510, 1600);  // the sample's own code: reading, not dataset
  g.Call(1, EventKind::AppRegion, 1600, 1800, kBlur);
  g.Call(1, EventKind::AppRegion, 1900, 1990, kCollate);
  g.Flow(1, 1999, 2050, 1);
  const RankFigures f = g.Measure();
  // 1000 of fetch, 130 of it reading: blur 500, the dataset's own code 180,
  // collate 90, decode 50, crop 50.
  EXPECT_EQ(f.preprocessing_parts, (Parts{{"GaussianBlur", 500}, {"dataset", 180}, {"collate", 90},
                                          {"decode", 50}, {"RandomResizedCrop", 50}}));
  ASSERT_EQ(f.slowest_samples.size(), 2u);
  for (const auto& s : f.slowest_samples) {
    EXPECT_EQ(s.files, std::vector<std::string>{"/data/train/shard1.bin"}) << s.index;
  }
}

TEST(LoaderInsideTest, ABatchHeldUpBehindASlowOne) {
  // Batch 0 (worker 1) takes until 5000; batch 1 (worker 2) was made at 2000.
  testing::RankGroup g(2);
  constexpr uint64_t kTag = 0xABCDEull << 24;
  g.Fetch(1, 1000, 5000);
  g.Sample(1, 1000, 4900, 16);
  g.Read(1, 1100, 4800, kData);
  g.Fetch(2, 1000, 2000);
  g.Sample(2, 1000, 1900, 17);
  g.Flow(2, 1999, 5250, kTag | 1);
  g.Wait(1500, 5100);
  g.Flow(1, 4999, 5050, kTag | 0);
  g.Wait(5200, 5300);
  const RankFigures f = g.Measure();
  ASSERT_EQ(f.steps.size(), 2u);
  EXPECT_EQ(f.steps[0].head_of_line_ns, 3000u);  // 2000 (batch 1 made) to 5000
  EXPECT_EQ(f.steps[1].head_of_line_ns, 0u);
  EXPECT_EQ(f.head_of_line_ns, 3000u);
  ASSERT_EQ(f.late_batches.size(), 1u);
  EXPECT_EQ(f.late_batches[0].slowest.index, 16);
  EXPECT_EQ(f.late_batches[0].slowest.files, std::vector<std::string>{"/data/train/shard1.bin"});
  // The verdict: a finding naming the sample and its file, and what
  // in_order=False would give.
  const Verdict v = testing::VerdictOfOneRank(f, 6000);
  EXPECT_EQ(v.head_of_line_ns, 3000u);
  const Finding* hol = testing::FindingOf(v, "head_of_line");
  ASSERT_NE(hol, nullptr);
  EXPECT_EQ(hol->samples, std::vector<int64_t>{16});
  EXPECT_EQ(hol->files, std::vector<std::string>{"/data/train/shard1.bin"});
  // Had batch 1 been handed over when made (2000), the loop would have taken
  // it at once and then waited for batch 0 until 5050: no saving.
  EXPECT_EQ(hol->in_order_wait_ns, v.out_of_order_wait_ns);
  EXPECT_NE(hol->what.find("sample 16 ("), std::string::npos) << hol->what;
  EXPECT_NE(VerdictJson(v).find("\"samples\":[16],\"files\":[\"/data/train/shard1.bin\"],"
                                "\"parts\":[],\"estimate\":{\"in_order\":false,"),
            std::string::npos);
}

TEST(LoaderInsideTest, ABatchHeldUpInCollateNamesCollate) {
  // As above, but batch 0's samples are quick (100 each) and its collate_fn
  // takes 3000 of its 4000: no sample held it, collate did.
  testing::RankGroup g(2);
  constexpr uint64_t kTag = 0xABCDEull << 24;
  g.Fetch(1, 1000, 5000);
  g.Sample(1, 1000, 1100, 16);
  g.Sample(1, 1100, 1200, 18);
  g.Call(1, EventKind::AppRegion, 1900, 4900, testing::kCollate);
  g.Fetch(2, 1000, 2000);
  g.Sample(2, 1000, 1900, 17);
  g.Flow(2, 1999, 5250, kTag | 1);
  g.Wait(1500, 5100);
  g.Flow(1, 4999, 5050, kTag | 0);
  g.Wait(5200, 5300);
  const RankFigures f = g.Measure();
  ASSERT_EQ(f.late_batches.size(), 1u);
  EXPECT_EQ(f.late_batches[0].held_by, "collate");
  EXPECT_EQ(f.late_batches[0].held_by_ns, 3000u);
  const Verdict v = testing::VerdictOfOneRank(f, 6000);
  const Finding* hol = testing::FindingOf(v, "head_of_line");
  ASSERT_NE(hol, nullptr);
  EXPECT_EQ(hol->samples, std::vector<int64_t>{});
  EXPECT_EQ(hol->parts, std::vector<std::string>{"collate"});
  EXPECT_NE(hol->what.find("held up in collate"), std::string::npos) << hol->what;
  EXPECT_EQ(hol->what.find("sample 16"), std::string::npos) << hol->what;
  EXPECT_NE(hol->advice.find("make collate cheaper"), std::string::npos) << hol->advice;
  EXPECT_EQ(hol->advice.find("cache them"), std::string::npos) << hol->advice;
}

TEST(LoaderInsideTest, AnIoBoundLateBatchIsHeldUpInReadingNotCollate) {
  // Batch 0's four samples each read for 900 of their 950 (no one of them
  // half the fetch), then a collate of 30: its reading held it up, and the
  // collate, a hundredth of its head-of-line time, is not named (it was
  // "make collate cheaper" for 2.8 ms of 710 ms).
  testing::RankGroup g(2);
  constexpr uint64_t kTag = 0xABCDEull << 24;
  g.Fetch(1, 1000, 4900);
  for (uint64_t i = 0; i < 4; ++i) {
    const uint64_t at = 1000 + i * 960;
    g.Sample(1, at, at + 950, 16 + static_cast<int64_t>(i));
    g.Read(1, at + 10, at + 910, kData);
  }
  g.Call(1, EventKind::AppRegion, 4850, 4880, testing::kCollate);
  g.Fetch(2, 1000, 2000);
  g.Sample(2, 1000, 1900, 20);
  g.Flow(2, 1999, 5250, kTag | 1);
  g.Wait(1500, 5000);
  g.Flow(1, 4899, 4950, kTag | 0);
  g.Wait(5200, 5300);
  const RankFigures f = g.Measure();
  ASSERT_EQ(f.late_batches.size(), 1u);
  EXPECT_EQ(f.late_batches[0].head_of_line_ns, 2900u);  // 2000 to 4900
  EXPECT_EQ(f.late_batches[0].held_by, "reading");
  EXPECT_EQ(f.late_batches[0].held_by_ns, 3600u);
  const Verdict v = testing::VerdictOfOneRank(f, 6000);
  const Finding* hol = testing::FindingOf(v, "head_of_line");
  ASSERT_NE(hol, nullptr);
  EXPECT_EQ(hol->parts, std::vector<std::string>{"reading"});
  EXPECT_EQ(hol->advice.find("collate"), std::string::npos) << hol->advice;
  EXPECT_NE(hol->advice.find("faster reads for them"), std::string::npos) << hol->advice;
}

TEST(LoaderInsideTest, ALateBatchReadThroughAMapIsHeldUpInReading) {
  // The batch above, its samples reading through a map, a page fault at a
  // time (40 faults of 20 each, 800 a sample), then a collate of 30. The faults were the
  // dataset's code, and a collate_fn was named for a batch that waited on
  // its pages ("held up in collate ... make collate cheaper").
  testing::RankGroup g(2);
  constexpr uint64_t kTag = 0xABCDEull << 24;
  g.Fetch(1, 1000, 4900);
  for (uint64_t i = 0; i < 4; ++i) {
    const uint64_t at = 1000 + i * 960;
    g.Sample(1, at, at + 950, 16 + static_cast<int64_t>(i));
    for (uint64_t k = 0; k < 40; ++k) g.Fault(1, at + 10 + k * 22, at + 10 + k * 22 + 20);
  }
  g.Call(1, EventKind::AppRegion, 4850, 4880, testing::kCollate);
  g.Fetch(2, 1000, 2000);
  g.Sample(2, 1000, 1900, 20);
  g.Flow(2, 1999, 5250, kTag | 1);
  g.Wait(1500, 5000);
  g.Flow(1, 4899, 4950, kTag | 0);
  g.Wait(5200, 5300);
  const RankFigures f = g.Measure();
  ASSERT_EQ(f.late_batches.size(), 1u);
  EXPECT_EQ(f.late_batches[0].held_by, "reading");
  EXPECT_EQ(f.late_batches[0].held_by_ns, 4u * 40 * 20);
  EXPECT_EQ(f.late_batches[0].slowest.files,
            std::vector<std::string>{"/data/train/shard1.bin"});
  const Verdict v = testing::VerdictOfOneRank(f, 6000);
  const Finding* hol = testing::FindingOf(v, "head_of_line");
  ASSERT_NE(hol, nullptr);
  EXPECT_EQ(hol->parts, std::vector<std::string>{"reading"});
  EXPECT_EQ(hol->advice.find("collate"), std::string::npos) << hol->advice;
}

TEST(LoaderInsideTest, APartTooSmallForTheLateTimeIsNotNamed) {
  // Batch 0's fetch (3650) in six parts of about 600: reading, decode,
  // blur, crop, the dataset's own code and, the largest, collate 650, under
  // a quarter of its head-of-line time (2650): no part held it up, and its
  // slowest sample (1800, under half the fetch) is named instead.
  testing::RankGroup g(2);
  constexpr uint64_t kTag = 0xABCDEull << 24;
  g.Fetch(1, 1000, 4650);
  g.Sample(1, 1000, 2800, 16);
  g.Read(1, 1000, 1600, kData);
  g.Call(1, EventKind::AppRegion, 1600, 2200, testing::kDecode);
  g.Call(1, EventKind::AppRegion, 2200, 2800, testing::kBlur);
  g.Sample(1, 2800, 4000, 18);
  g.Call(1, EventKind::AppRegion, 2800, 3400, testing::kCrop);
  g.Call(1, EventKind::AppRegion, 4000, 4650, testing::kCollate);
  g.Fetch(2, 1000, 2000);
  g.Sample(2, 1000, 1900, 17);
  g.Flow(2, 1999, 5250, kTag | 1);
  g.Wait(1500, 4750);
  g.Flow(1, 4649, 4700, kTag | 0);
  g.Wait(5200, 5300);
  const RankFigures f = g.Measure();
  ASSERT_EQ(f.late_batches.size(), 1u);
  EXPECT_EQ(f.late_batches[0].head_of_line_ns, 2650u);  // 2000 to 4650
  EXPECT_EQ(f.late_batches[0].held_by, "");
  EXPECT_EQ(f.late_batches[0].slowest.index, 16);
}

TEST(LoaderInsideTest, APartOfAFewShortLateBatchesIsNotNamed) {
  // The late batch of ABatchHeldUpBehindASlowOne (3000 of head-of-line
  // time, sample 16), and another one held up 10 in collate: a part under a
  // tenth of the head-of-line time is not the finding's.
  testing::RankGroup g(2);
  constexpr uint64_t kTag = 0xABCDEull << 24;
  g.Fetch(1, 1000, 5000);
  g.Sample(1, 1000, 4900, 16);
  g.Fetch(2, 1000, 2000);
  g.Sample(2, 1000, 1900, 17);
  g.Flow(2, 1999, 5250, kTag | 1);
  g.Wait(1500, 5100);
  g.Flow(1, 4999, 5050, kTag | 0);
  g.Wait(5200, 5300);
  RankFigures f = g.Measure();
  LateBatch held;
  held.head_of_line_ns = 20;
  held.held_by = "collate";
  held.held_by_ns = 10;
  f.late_batches.push_back(held);
  const Verdict v = testing::VerdictOfOneRank(f, 6000);
  const Finding* hol = testing::FindingOf(v, "head_of_line");
  ASSERT_NE(hol, nullptr);
  EXPECT_EQ(hol->parts, std::vector<std::string>{});
  EXPECT_EQ(hol->samples, std::vector<int64_t>{16});
  EXPECT_EQ(hol->advice.find("collate"), std::string::npos) << hol->advice;
}

TEST(LoaderInsideTest, ASampleTooSmallForItsLateBatchIsNotNamed) {
  // Batch 0's fetch (4000): two samples of 100, a collate of 100, and 3700
  // in none of them (its worker off its CPU on a loaded machine: a collate
  // batch's 1 ms sample was named for 47 ms of head-of-line time). Its
  // slowest sample, under a quarter of its head-of-line time (3000), did
  // not hold it up: no sample is named.
  testing::RankGroup g(2);
  constexpr uint64_t kTag = 0xABCDEull << 24;
  g.Fetch(1, 1000, 5000);
  g.Sample(1, 1000, 1100, 16);
  g.Sample(1, 1100, 1200, 18);
  g.Call(1, EventKind::AppRegion, 1200, 1300, testing::kCollate);
  g.Fetch(2, 1000, 2000);
  g.Sample(2, 1000, 1900, 17);
  g.Flow(2, 1999, 5250, kTag | 1);
  g.Wait(1500, 5100);
  g.Flow(1, 4999, 5050, kTag | 0);
  g.Wait(5200, 5300);
  const RankFigures f = g.Measure();
  ASSERT_EQ(f.late_batches.size(), 1u);
  EXPECT_EQ(f.late_batches[0].head_of_line_ns, 3000u);
  EXPECT_EQ(f.late_batches[0].held_by, "");
  EXPECT_EQ(f.late_batches[0].slowest.ns, 0u);
  const Verdict v = testing::VerdictOfOneRank(f, 6000);
  const Finding* hol = testing::FindingOf(v, "head_of_line");
  ASSERT_NE(hol, nullptr);
  EXPECT_EQ(hol->samples, std::vector<int64_t>{});
  EXPECT_EQ(hol->what.find("sample 16"), std::string::npos) << hol->what;
}

TEST(LoaderInsideTest, TheSampleOfAShortLateBatchIsNotNamed) {
  // The late batch of ABatchHeldUpBehindASlowOne (3000 of head-of-line
  // time, sample 16 of 3900), and another one 40 late whose sample 30 took
  // 20: a sample under a tenth of the head-of-line time is not the
  // finding's (a 1 ms sample of a batch 0.4 ms late was named beside 186 ms).
  testing::RankGroup g(2);
  constexpr uint64_t kTag = 0xABCDEull << 24;
  g.Fetch(1, 1000, 5000);
  g.Sample(1, 1000, 4900, 16);
  g.Fetch(2, 1000, 2000);
  g.Sample(2, 1000, 1900, 17);
  g.Flow(2, 1999, 5250, kTag | 1);
  g.Wait(1500, 5100);
  g.Flow(1, 4999, 5050, kTag | 0);
  g.Wait(5200, 5300);
  RankFigures f = g.Measure();
  LateBatch short_one;
  short_one.head_of_line_ns = 40;
  short_one.slowest.index = 30;
  short_one.slowest.ns = 20;
  f.late_batches.push_back(short_one);
  const Verdict v = testing::VerdictOfOneRank(f, 6000);
  const Finding* hol = testing::FindingOf(v, "head_of_line");
  ASSERT_NE(hol, nullptr);
  EXPECT_EQ(hol->samples, std::vector<int64_t>{16});
}

TEST(LoaderInsideTest, WhatInOrderFalseWouldSave) {
  // Two workers (1, 2), batches round-robin, all four given out at once (2
  // a worker): batch 0 (worker 1) takes 1000, the others 100 each; batch 2
  // had 50 of hand-over; the loop works 50 after each batch. Replayed in
  // order: ready at 1000, 100, 1150 (worker 1 free at 1000), 200: waits
  // 1000, 0, 50 (asked at 1100), 0: 1050.
  const std::vector<BatchTiming> pass = {
      {0, 1000, 0, 1000, 1}, {1050, 1050, 0, 100, 2}, {1100, 1150, 1000, 1100, 1},
      {1200, 1250, 1150, 1250, 2}};
  // Out of order: batch 1 at 100 (100), batch 3 at 200 (50: asked at 150),
  // batch 0 at 1000 (750: asked at 250), batch 2 at 1150 (100: asked at
  // 1050): 1000. Saved: 50.
  EXPECT_EQ(OutOfOrderSaving(pass), 50u);
  // A batch whose making is unknown: nothing to replay.
  EXPECT_EQ(OutOfOrderSaving({{0, 70, 0, 0, 1}}), 0u);
  EXPECT_EQ(OutOfOrderSaving({}), 0u);
}

TEST(LoaderInsideTest, ASampleSlowInEveryPassIsToldApart) {
  testing::RankGroup g(2);
  // Two passes, new workers each (1, then 2): sample 3 slow both times,
  // sample 9 once.
  for (uint32_t pass = 0; pass < 2; ++pass) {
    const uint64_t t = 10000 * (pass + 1);
    g.Iter(t, t + 10, pass == 0 ? kFirstPass : kSecondPass);
    g.Fetch(pass + 1, t + 100, t + 2000);
    g.Sample(pass + 1, t + 100, t + 1100, 3);
    g.Sample(pass + 1, t + 1100, t + (pass == 0 ? 1900 : 1200), 9);
    g.Flow(pass + 1, t + 1999, t + 2050, pass);
    g.Wait(t + 20, t + 2100);
  }
  const RankFigures f = g.Measure();
  ASSERT_GE(f.slowest_samples.size(), 3u);
  EXPECT_EQ(f.slowest_samples[0].index, 3);
  EXPECT_EQ(f.slowest_samples[0].slow_passes, 2u);
  EXPECT_EQ(f.slowest_samples[0].loader, 0);  // its passes' marks' L
  EXPECT_EQ(f.slowest_samples[2].index, 9);
  EXPECT_EQ(f.slowest_samples[2].ns, 800u);
  EXPECT_EQ(f.slowest_samples[2].pass, 1u);
  EXPECT_EQ(f.slowest_samples[2].slow_passes, 1u);  // 100 ns the second time
}

// Handovers on its own: the parts between the bootstrap's moments, and the
// cause by the largest part.
class HandoverTest : public ::testing::Test {
 protected:
  HandoverTest() {
    for (int pid : {100, 101, 102}) {
      ProcessTrace p;
      p.info.pid = pid;
      p.info.cpus = "2";
      p.strings[1] = "batch_sent";
      p.strings[2] = "batch_received";
      processes_.push_back(std::move(p));
    }
  }
  void Counter(uint32_t process, int32_t tid, uint32_t name, uint64_t at, uint64_t value) {
    events_.push_back(dlprof::testing::MakeEvent(EventKind::AppCounter, at, 0));
    events_.back().file = name;
    events_.back().aux = value;
    h_.AddCounter({&events_.back(), tid, 0, process, 0});
  }
  std::vector<ProcessTrace> processes_;
  std::deque<Event> events_;  // stable addresses
  Handovers h_{processes_, 2};
};

TEST_F(HandoverTest, PartsBetweenTheMoments) {
  // Made at 1000, sent at 1300, received at 1350, the wait ends at 1600.
  Counter(1, 555, 1, 1300, 42);
  Counter(0, 100, 2, 1350, 0);
  // The worker busy on its next batch meanwhile.
  const HandoverSplit s = h_.Split(1000, 1600, 1, true, 42, 0, 100, 0, {{1, 1000, 1500}});
  EXPECT_EQ(s.in_worker_ns, 300u);
  EXPECT_EQ(s.in_transit_ns, 50u);
  EXPECT_EQ(s.rebuild_ns, 250u);
  EXPECT_EQ(s.cause, HandoverCause::kWorkerBusy);
}

TEST_F(HandoverTest, CausesByTheLargestPart) {
  // Read by another thread (the pin-memory thread), in transit most.
  Counter(1, 555, 1, 1100, 7);
  Counter(0, 777, 2, 1800, 0);
  EXPECT_EQ(h_.Split(1000, 1900, 1, true, 7, 0, 100, 0, {}).cause, HandoverCause::kPinMemory);
  // Two workers fetching and the loop on 2 CPUs: crowded.
  Counter(1, 555, 1, 2500, 8);
  EXPECT_EQ(h_.Split(2000, 2600, 1, true, 8, 0, 100, 0, {{1, 2000, 2600}, {2, 1900, 2700}}).cause,
            HandoverCause::kCpusOversubscribed);
  // A large batch, nothing else measured.
  Counter(1, 555, 1, 3500, 9);
  EXPECT_EQ(h_.Split(3000, 3600, 1, true, 9, 0, 100, 8 << 20, {}).cause, HandoverCause::kBatchSize);
  // No moments at all: all in transit, unexplained.
  const HandoverSplit none = h_.Split(4000, 4100, 1, false, 0, 2, 102, 0, {});
  EXPECT_EQ(none.in_transit_ns, 100u);
  EXPECT_EQ(none.cause, HandoverCause::kNone);
  // Read by the pin-memory thread early, then pinned a long time before the
  // loop got it: the pinning is in the rebuild part, and still pin_memory's.
  Counter(1, 555, 1, 5100, 10);
  Counter(0, 777, 2, 5150, 0);
  const HandoverSplit pinned = h_.Split(5000, 5900, 1, true, 10, 0, 100, 0, {});
  EXPECT_EQ(pinned.rebuild_ns, 750u);
  EXPECT_EQ(pinned.cause, HandoverCause::kPinMemory);
}

// The CPUs a wait is judged by are its own process's: a launcher's image
// before it exec'd the job (taskset -c 0 python ...) recorded the CPUs it
// had before it restricted them, and the rank's largest count is not the
// job's.
TEST(HandoverCpusTest, TheWaitingProcesssOwnCpusNotALaunchers) {
  std::vector<ProcessTrace> processes;
  for (const char* cpus : {"1", "1", "2"}) {  // the loop, a worker, taskset's image
    ProcessTrace p;
    p.info.cpus = cpus;
    processes.push_back(std::move(p));
  }
  Handovers h(processes, 2);  // the rank's largest count
  // The worker fetching through the wait: with the loop, two processes for
  // the loop's one CPU.
  EXPECT_EQ(h.Split(1000, 1600, 1, false, 0, 0, 100, 0, {{1, 900, 1700}}).cause,
            HandoverCause::kCpusOversubscribed);
  // A process whose count is unknown: the rank's (two CPUs for two).
  processes[0].info.cpus = "";
  EXPECT_EQ(h.Split(2000, 2600, 1, false, 0, 0, 100, 0, {{1, 1900, 2700}}).cause,
            HandoverCause::kNone);
}

}  // namespace
}  // namespace dlprof::analysis
