// Checkpoints in the loop (lib/analysis/meters/checkpoint_meter.h, docs/
// ANALYSIS_CHECKPOINTS.md) on rank groups built by hand: saves marked by
// the bootstrap's regions and bursts of writes without them, on the loop's
// thread (the loop stopped) or another (in the background), the fsync that
// settles a save, a save right after the last step, the restore before the
// loop; then the verdict's bound, finding and JSON.
#include "lib/analysis/meters/checkpoint_meter.h"

#include <gtest/gtest.h>

#include <string>

#include "lib/analysis/findings/verdict.h"
#include "tests/helpers/rank_group.h"

namespace dlprof::analysis {
namespace {

using namespace testing::rank_group;  // kSave, kCheckpoint, ...
constexpr uint64_t kMiB = 1 << 20;
constexpr int32_t kSaver = 555;  // a thread of the main process that only saves

// A loop of 4 steps of 1000 ns (batch waits [k*1000, k*1000 + 100)).
testing::RankGroup Loop() {
  testing::RankGroup g(0);
  for (uint64_t k = 1; k <= 4; ++k) g.Wait(k * 1000, k * 1000 + 100);
  return g;
}

TEST(CheckpointMeterTest, ASaveOnTheLoopsThreadStopsIt) {
  testing::RankGroup g = Loop();
  g.Call(0, EventKind::AppRegion, 1500, 1800, kSave);  // torch.save
  g.Write(0, 1550, 1650, kCheckpoint, 30 * kMiB);
  g.Write(0, 1660, 1700, kCheckpoint, 18 * kMiB);
  g.Call(0, EventKind::Fsync, 1810, 1900, kCheckpoint);  // then fsync: the save's
  const CheckpointFigures c = g.Measure().checkpoint;
  EXPECT_EQ(c.saves, 1u);
  EXPECT_EQ(c.bytes, 48 * kMiB);
  EXPECT_EQ(c.ns, 400u);
  EXPECT_EQ(c.blocking_ns, 400u);
  EXPECT_EQ(c.background_ns, 0u);
  EXPECT_EQ(c.write_ns, 140u);
}

TEST(CheckpointMeterTest, ASaveOnAnotherThreadRunsInTheBackground) {
  testing::RankGroup g = Loop();
  g.Call(0, EventKind::AppRegion, 1500, 2500, kSave, kSaver);
  g.Write(0, 1600, 2400, kCheckpoint, 8 * kMiB, kSaver);
  const CheckpointFigures c = g.Measure().checkpoint;
  EXPECT_EQ(c.saves, 1u);
  EXPECT_EQ(c.blocking_ns, 0u);
  EXPECT_EQ(c.background_ns, 1000u);
}

TEST(CheckpointMeterTest, ABurstOfWritesEndedByACloseIsASave) {
  // No region (another framework, DLIO's checkpointing): 2 MiB written on a
  // job file, then closed; a small log's writes are none.
  testing::RankGroup g = Loop();
  g.Write(0, 2200, 2300, kCheckpoint, kMiB);
  g.Write(0, 2310, 2400, kCheckpoint, kMiB);
  g.Call(0, EventKind::Close, 2400, 2450, kCheckpoint);
  g.Write(0, 2600, 2610, kData, 100);
  g.Call(0, EventKind::Close, 2610, 2620, kData);
  // Code written (a cache of bytecode) is no checkpoint whatever its size.
  g.Write(0, 2700, 2800, kCode, 4 * kMiB);
  const CheckpointFigures c = g.Measure().checkpoint;
  EXPECT_EQ(c.saves, 1u);
  EXPECT_EQ(c.bytes, 2 * kMiB);
  EXPECT_EQ(c.blocking_ns, 250u);
}

TEST(CheckpointMeterTest, TheFsyncAfterABurstEndedByACloseIsTheSaves) {
  // np.save(f) then os.fsync(f.fileno()): numpy writes through a stream on
  // a dup of f's descriptor and closes it (ending the burst), then the
  // program fsyncs and closes f: both the save's (the fsync was left out,
  // half of the save's time). A close of the file after 100 ms is not.
  testing::RankGroup g = Loop();
  g.Write(0, 2200, 2300, kCheckpoint, 2 * kMiB);
  g.Call(0, EventKind::Close, 2300, 2310, kCheckpoint);  // fclose of the dup
  g.Call(0, EventKind::Fsync, 2320, 2500, kCheckpoint);
  g.Call(0, EventKind::Close, 2510, 2520, kCheckpoint);
  g.Call(0, EventKind::Close, 2520 + CheckpointMeter::kSettleNs + 1,
         2530 + CheckpointMeter::kSettleNs, kCheckpoint);
  const CheckpointFigures c = g.Measure().checkpoint;
  EXPECT_EQ(c.saves, 1u);
  EXPECT_EQ(c.bytes, 2 * kMiB);
  EXPECT_EQ(c.ns, 320u);
}

TEST(CheckpointMeterTest, WritesSpreadOverTheLoopAreNoSave) {
  // A file kept open and written between the steps, closed at the end: 2 MiB
  // by then, but each step's writes are a burst of their own (each of the
  // loop's thread, ended by the next batch wait; on another thread, by a
  // pause of 60 ms). 2 MiB written at once on that thread is one save, in
  // the background.
  constexpr uint64_t kMs = 1000000;
  testing::RankGroup g(0);
  for (uint64_t k = 1; k <= 5; ++k) g.Wait(k * 100 * kMs, k * 100 * kMs + kMs);
  for (uint64_t k = 1; k <= 4; ++k) {
    g.Write(0, k * 100 * kMs + 50 * kMs, k * 100 * kMs + 51 * kMs, kCheckpoint, kMiB / 2);
    g.Write(0, k * 60 * kMs + 90 * kMs, k * 60 * kMs + 91 * kMs, kData, kMiB / 2, kSaver);
  }
  g.Call(0, EventKind::Close, 460 * kMs, 461 * kMs, kCheckpoint);
  g.Call(0, EventKind::Close, 462 * kMs, 463 * kMs, kData, kSaver);
  g.Write(0, 470 * kMs, 471 * kMs, kCheckpoint, kMiB, kSaver);
  g.Write(0, 472 * kMs, 473 * kMs, kCheckpoint, kMiB, kSaver);
  g.Call(0, EventKind::Close, 473 * kMs, 474 * kMs, kCheckpoint, kSaver);
  const CheckpointFigures c = g.Measure().checkpoint;
  EXPECT_EQ(c.saves, 1u);
  EXPECT_EQ(c.bytes, 2 * kMiB);
  EXPECT_EQ(c.background_ns, 4 * kMs);
  EXPECT_EQ(c.blocking_ns, 0u);
}

TEST(CheckpointMeterTest, ASaveThatCompressesBetweenItsWritesIsOne) {
  // np.savez_compressed on the loop's thread: 4 MiB written after each of
  // four arrays is compressed (130 ms), then closed: one save, not four
  // pieces (a pause ends only a burst under kMinBurstBytes).
  constexpr uint64_t kMs = 1000000;
  testing::RankGroup g(0);
  g.Wait(100 * kMs, 101 * kMs);
  for (uint64_t k = 0; k < 4; ++k) {
    g.Write(0, 240 * kMs + k * 135 * kMs, 245 * kMs + k * 135 * kMs, kCheckpoint, 4 * kMiB);
  }
  g.Call(0, EventKind::Close, 650 * kMs, 651 * kMs, kCheckpoint);
  g.Wait(700 * kMs, 701 * kMs);
  const CheckpointFigures c = g.Measure().checkpoint;
  EXPECT_EQ(c.saves, 1u);
  EXPECT_EQ(c.bytes, 16 * kMiB);
  EXPECT_EQ(c.blocking_ns, 411 * kMs);  // its first write to its close
}

TEST(CheckpointMeterTest, ASaveIntoMemoryThenWrittenIsOne) {
  // Lightning's atomic save: torch.save into a BytesIO (a region, no
  // write), then its bytes written to a temporary file, closed and renamed
  // into place: one save, from the region's start to the rename's end.
  testing::RankGroup g = Loop();
  g.Call(0, EventKind::AppRegion, 1500, 1800, kSave);
  g.Write(0, 1850, 1900, kCheckpoint, 32 * kMiB);
  g.Call(0, EventKind::Close, 1900, 1910, kCheckpoint);
  g.Call(0, EventKind::Rename, 1910, 1980, kCheckpoint);
  const CheckpointFigures c = g.Measure().checkpoint;
  EXPECT_EQ(c.saves, 1u);
  EXPECT_EQ(c.bytes, 32 * kMiB);
  EXPECT_EQ(c.blocking_ns, 480u);
}

TEST(CheckpointMeterTest, SavesOfOneFileAFewStepsApartAreEachTheirOwn) {
  // torch.save of the same path every step, each closing its file inside
  // its own region, the last then fsynced: three saves of 300 ns, the fsync
  // the last one's. The next save's close is no settling of the one before
  // (which made it reach over the steps between: 2,350 ns, not 950).
  testing::RankGroup g = Loop();
  for (uint64_t k = 1; k <= 3; ++k) {
    g.Call(0, EventKind::AppRegion, k * 1000 + 200, k * 1000 + 500, kSave);
    g.Call(0, EventKind::Fopen64, k * 1000 + 210, k * 1000 + 240, kCheckpoint);
    g.Write(0, k * 1000 + 250, k * 1000 + 400, kCheckpoint, 8 * kMiB);
    g.Call(0, EventKind::Fclose, k * 1000 + 450, k * 1000 + 490, kCheckpoint);
  }
  g.Call(0, EventKind::Fsync, 3510, 3550, kCheckpoint);
  CheckpointFigures c = g.Measure().checkpoint;
  EXPECT_EQ(c.saves, 3u);
  EXPECT_EQ(c.bytes, 24 * kMiB);
  EXPECT_EQ(c.blocking_ns, 950u);
  // Lightning's atomic save every step: into memory, then its bytes written
  // to the same temporary file, closed and renamed. The next save's close
  // ends its own burst, not the save before: two saves of 220 ns (1,220
  // before).
  testing::RankGroup l = Loop();
  for (uint64_t k = 1; k <= 2; ++k) {
    l.Call(0, EventKind::AppRegion, k * 1000 + 500, k * 1000 + 600, kSave);
    l.Write(0, k * 1000 + 650, k * 1000 + 700, kCheckpoint, 32 * kMiB);
    l.Call(0, EventKind::Close, k * 1000 + 700, k * 1000 + 710, kCheckpoint);
    l.Call(0, EventKind::Rename, k * 1000 + 710, k * 1000 + 720, kCheckpoint);
  }
  c = l.Measure().checkpoint;
  EXPECT_EQ(c.saves, 2u);
  EXPECT_EQ(c.bytes, 64 * kMiB);
  EXPECT_EQ(c.blocking_ns, 440u);
}

TEST(CheckpointMeterTest, ABurstOnAFileReadAfterwardsIsTheDataSetBeingMade) {
  // 8 MiB written and closed in the loop's window, then read: by the same
  // process, and (the same path) by a worker. Neither is a save; a burst
  // on a file read only before it (a checkpoint restored, then saved over)
  // is one.
  testing::RankGroup g(1);
  for (uint64_t k = 1; k <= 4; ++k) g.Wait(k * 1000, k * 1000 + 100);
  g.Write(0, 1200, 1300, kData, 8 * kMiB);
  g.Call(0, EventKind::Close, 1300, 1310, kData);
  g.Read(0, 1400, 1410, kData);
  g.Write(0, 2200, 2300, kCheckpoint, 8 * kMiB);
  g.Call(0, EventKind::Close, 2300, 2310, kCheckpoint);
  g.Read(1, 2500, 2510, kCheckpoint);
  g.Read(0, 2600, 2610, kCode);  // another file read: changes nothing
  const CheckpointFigures none = g.Measure().checkpoint;
  EXPECT_EQ(none.saves, 0u);
  testing::RankGroup r = Loop();
  r.Read(0, 500, 510, kCheckpoint);  // restored before the loop
  r.Write(0, 2200, 2300, kCheckpoint, 8 * kMiB);
  r.Call(0, EventKind::Close, 2300, 2310, kCheckpoint);
  const CheckpointFigures saved = r.Measure().checkpoint;
  EXPECT_EQ(saved.saves, 1u);
  EXPECT_EQ(saved.bytes, 8 * kMiB);
}

TEST(CheckpointMeterTest, ADataSetWrittenThenReadThroughItsMapIsNoSave) {
  // scripts/torch_memmap.py's get_batch loop (times in ms): 8 MiB written
  // and closed at start-up, then each step's window np.memmap's page faults
  // and its close 0.5 ms after them. A fault reads the file as a read call
  // does: the burst made the data set, and its closes are the reading's.
  // (Each close, within kSettleNs of the one before, settled the "save" on
  // and on: no step's wait held one; 1.4 ms of a 445 ms wait.)
  constexpr uint64_t kMs = 1000000;
  testing::RankGroup g(0);
  g.Write(0, 900 * kMs, 910 * kMs, kData, 8 * kMiB);
  g.Call(0, EventKind::Close, 910 * kMs, 911 * kMs, kData);
  for (uint64_t k = 0; k < 6; ++k) {
    const uint64_t at = (1000 + 50 * k) * kMs;
    g.Fault(0, at + 5 * kMs, at + 10 * kMs);
    g.Call(0, EventKind::Close, at + 10500000, at + 10600000, kData);
    g.Step(at + 40 * kMs, at + 50 * kMs);
  }
  const RankFigures f = g.Measure();
  ASSERT_TRUE(f.loop_of_steps);
  ASSERT_EQ(f.steps.size(), 6u);
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(f.steps[i].batch_wait_ns, 5600000u) << i;
  EXPECT_EQ(f.checkpoint.saves, 0u);
  // A checkpoint written and closed between two steps of the loop, then
  // mapped after it (np.memmap of the last save, checked): a save still.
  // (Taken for the data set being made, the loop's saves went: a review's
  // run of 6 saves, 689 ms by its clock, "not held back" with none.)
  testing::RankGroup c(0);
  for (uint64_t k = 0; k < 4; ++k) c.Step((1000 + 50 * k) * kMs, (1010 + 50 * k) * kMs);
  c.Write(0, 1020 * kMs, 1030 * kMs, kCheckpoint, 8 * kMiB);
  c.Call(0, EventKind::Close, 1030 * kMs, 1031 * kMs, kCheckpoint);
  c.Fault(0, 1300 * kMs, 1301 * kMs, kCheckpoint);
  EXPECT_EQ(c.Measure().checkpoint.saves, 1u);
}

TEST(CheckpointMeterTest, ASavesOpenAndCloseAreNoBatchWait) {
  // A loop without a DataLoader (times in ms): between steps 2 and 3,
  // torch.save's fopen (truncating the last save: 90 ms) and fclose in its
  // region, then the file opened, fsynced and closed, are the save's, not
  // step 3's reading (260 ms of it before, 100 after). A read of the
  // stepping thread while another thread saves is its reading.
  constexpr uint64_t kMs = 1000000;
  testing::RankGroup g(0);
  g.Step(1000 * kMs, 1100 * kMs);
  g.Read(0, 1500 * kMs, 1600 * kMs);
  g.Step(2000 * kMs, 2100 * kMs);
  g.Call(0, EventKind::AppRegion, 2200 * kMs, 2500 * kMs, kSave);
  g.Call(0, EventKind::Fopen64, 2210 * kMs, 2300 * kMs, kCheckpoint);
  g.Write(0, 2300 * kMs, 2400 * kMs, kCheckpoint, 8 * kMiB);
  g.Call(0, EventKind::Fclose, 2400 * kMs, 2450 * kMs, kCheckpoint);
  g.Call(0, EventKind::Open, 2510 * kMs, 2520 * kMs, kCheckpoint);
  g.Call(0, EventKind::Fsync, 2520 * kMs, 2600 * kMs, kCheckpoint);
  g.Call(0, EventKind::Close, 2600 * kMs, 2610 * kMs, kCheckpoint);
  g.Read(0, 2700 * kMs, 2800 * kMs);
  g.Step(3000 * kMs, 3100 * kMs);
  g.Call(0, EventKind::AppRegion, 3200 * kMs, 3500 * kMs, kSave, kSaver);
  g.Read(0, 3250 * kMs, 3350 * kMs);
  g.Step(4000 * kMs, 4100 * kMs);
  const RankFigures f = g.Measure();
  ASSERT_TRUE(f.loop_of_steps);
  ASSERT_EQ(f.steps.size(), 4u);
  for (size_t i = 1; i < 4; ++i) EXPECT_EQ(f.steps[i].batch_wait_ns, 100 * kMs) << i;
  EXPECT_EQ(f.batch_wait_ns, 300 * kMs);
  EXPECT_EQ(f.checkpoint.blocking_ns, 410 * kMs);  // to the close after its fsync
}

TEST(CheckpointMeterTest, ALoadOfTheSaveJustWrittenIsNeitherSaveNorBatchWait) {
  // A loop without a DataLoader (times in ms) saving with torch.save, then
  // verifying the file with torch.load at once: the load's close of its
  // read-only descriptor, 85 ms after the save, stretched the save over
  // the load, whose reads were step 3's batch wait too (counted twice). The
  // save is its region alone; step 3's wait its data read alone. A
  // torch.load of a file no save wrote (a data set of .pt samples) between
  // steps 3 and 4 is reading (a load of a saved file after the loop stepped
  // since: ASaveLoadedAsDataAfterAStepFilledACache).
  constexpr uint64_t kMs = 1000000;
  constexpr uint32_t kPtSample = 40;  // a .pt sample file of the data set
  testing::RankGroup g(0);
  g.Name(kPtSample, "/data/train/sample7.pt");
  g.Step(1000 * kMs, 1100 * kMs);
  g.Read(0, 1500 * kMs, 1600 * kMs);
  g.Step(2000 * kMs, 2100 * kMs);
  g.Call(0, EventKind::AppRegion, 2200 * kMs, 2300 * kMs, kSave);
  g.Write(0, 2210 * kMs, 2280 * kMs, kCheckpoint, 8 * kMiB);
  g.Call(0, EventKind::Close, 2280 * kMs, 2290 * kMs, kCheckpoint);
  g.Call(0, EventKind::AppRegion, 2305 * kMs, 2390 * kMs, kRestore);
  g.Open(0, 2310 * kMs, 2315 * kMs, kCheckpoint, O_RDONLY);
  g.Read(0, 2315 * kMs, 2375 * kMs, kCheckpoint);
  g.Call(0, EventKind::Close, 2380 * kMs, 2385 * kMs, kCheckpoint);
  g.Read(0, 2700 * kMs, 2800 * kMs);
  g.Step(3000 * kMs, 3100 * kMs);
  g.Call(0, EventKind::AppRegion, 3200 * kMs, 3300 * kMs, kRestore);
  g.Read(0, 3210 * kMs, 3290 * kMs, kPtSample);
  g.Step(4000 * kMs, 4100 * kMs);
  const RankFigures f = g.Measure();
  ASSERT_TRUE(f.loop_of_steps);
  ASSERT_EQ(f.steps.size(), 4u);
  EXPECT_EQ(f.steps[1].batch_wait_ns, 100 * kMs);
  EXPECT_EQ(f.steps[2].batch_wait_ns, 100 * kMs);  // 160 with the load's reads
  EXPECT_EQ(f.steps[3].batch_wait_ns, 80 * kMs);   // the .pt sample's read
  EXPECT_EQ(f.checkpoint.saves, 1u);
  EXPECT_EQ(f.checkpoint.blocking_ns, 100 * kMs);  // 185 to the load's close
  EXPECT_EQ(f.checkpoint.restore_ns, 0u);          // no restore: both in the loop
}

TEST(CheckpointMeterTest, ASaveLoadedAsDataAfterAStepFilledACache) {
  // A loop without a DataLoader (times in ms) caching its samples: in
  // epoch 0, each step reads a raw sample (100 ms) and torch.saves it
  // decoded to a file of its own (a region of 180 ms, 150 in writes); in
  // epoch 1, each step torch.loads one (80 ms of reads). 100 samples, more
  // than the 64 files the meter once kept. Each save was a checkpoint of
  // the loop's (18 s of them); they are the cache's fill, the step's data
  // time: 280 ms of its wait, 250 of it in calls (reading), 30 the
  // program's own (preprocessing). A real checkpoint saved between two
  // steps and reloaded once the loop is over (the best model, to evaluate
  // it) stays a save.
  constexpr uint64_t kMs = 1000000;
  constexpr int kSamples = 100;
  constexpr uint32_t kCached = 1000;  // the cache file of sample i: kCached + i
  testing::RankGroup g(0);
  for (int i = 0; i < kSamples; ++i) {
    g.Name(kCached + i, "/scratch/cache/s" + std::to_string(i) + ".pt");
  }
  uint64_t t = 1000 * kMs;
  g.Step(t, t + 100 * kMs);
  for (int i = 0; i < 2 * kSamples; ++i) {
    const uint32_t file = kCached + i % kSamples;
    if (i < kSamples) {
      g.Read(0, t + 500 * kMs, t + 600 * kMs);
      g.Call(0, EventKind::AppRegion, t + 620 * kMs, t + 800 * kMs, kSave);
      g.Write(0, t + 630 * kMs, t + 780 * kMs, file, 4 * kMiB);
      g.Call(0, EventKind::Close, t + 785 * kMs, t + 790 * kMs, file);
    } else {
      g.Call(0, EventKind::AppRegion, t + 500 * kMs, t + 600 * kMs, kRestore);
      g.Read(0, t + 510 * kMs, t + 590 * kMs, file);
    }
    if (i == kSamples + 10) {  // the real checkpoint
      g.Call(0, EventKind::AppRegion, t + 700 * kMs, t + 800 * kMs, kSave);
      g.Write(0, t + 710 * kMs, t + 790 * kMs, kCheckpoint, 8 * kMiB);
    }
    t += 1000 * kMs;
    g.Step(t, t + 100 * kMs);
  }
  g.Call(0, EventKind::AppRegion, t + 300 * kMs, t + 400 * kMs, kRestore);  // after the loop
  g.Read(0, t + 310 * kMs, t + 390 * kMs, kCheckpoint);
  const RankFigures f = g.Measure();
  ASSERT_TRUE(f.loop_of_steps);
  ASSERT_EQ(f.steps.size(), 2u * kSamples + 1);
  for (int i = 1; i <= kSamples; ++i) {
    EXPECT_EQ(f.steps[i].batch_wait_ns, 280 * kMs) << i;
    EXPECT_EQ(f.steps[i].reading_ns, 250 * kMs) << i;
    EXPECT_EQ(f.steps[i].preprocessing_ns, 30 * kMs) << i;
  }
  for (int i = kSamples + 1; i <= 2 * kSamples; ++i) {
    EXPECT_EQ(f.steps[i].batch_wait_ns, 80 * kMs) << i;
  }
  EXPECT_EQ(f.checkpoint.saves, 1u);
  EXPECT_EQ(f.checkpoint.bytes, 8 * kMiB);
  EXPECT_EQ(f.checkpoint.blocking_ns, 100 * kMs);
}

TEST(CheckpointMeterTest, ABestModelReloadedMidRunStaysASave) {
  // Early stopping's "reload best" (times in ms): best.pt saved after
  // steps 2, 4 and 6 (a region of 100 ms, 80 in writes), torch.loaded
  // once after step 5 and trained on. One file loaded after a later step is no
  // cache of samples: both saves stay the loop's (a review's run: 3 of 4
  // saves, the reloaded one's 109 ms counted as the batch wait).
  constexpr uint64_t kMs = 1000000;
  testing::RankGroup g(0);
  uint64_t t = 1000 * kMs;
  g.Step(t, t + 100 * kMs);
  for (int k = 1; k <= 6; ++k) {
    g.Read(0, t + 500 * kMs, t + 600 * kMs);
    if (k % 2 == 0) {
      g.Call(0, EventKind::AppRegion, t + 700 * kMs, t + 800 * kMs, kSave);
      g.Write(0, t + 710 * kMs, t + 790 * kMs, kCheckpoint, 8 * kMiB);
    }
    if (k == 5) {
      g.Call(0, EventKind::AppRegion, t + 650 * kMs, t + 700 * kMs, kRestore);
      g.Read(0, t + 660 * kMs, t + 690 * kMs, kCheckpoint);
    }
    t += 1000 * kMs;
    g.Step(t, t + 100 * kMs);
  }
  const RankFigures f = g.Measure();
  ASSERT_TRUE(f.loop_of_steps);
  EXPECT_EQ(f.checkpoint.saves, 3u);
  EXPECT_EQ(f.checkpoint.bytes, 3 * 8 * kMiB);
  EXPECT_EQ(f.checkpoint.blocking_ns, 3 * 100 * kMs);
}

TEST(CheckpointMeterTest, ACheckpointAnEpochLoadedForEvaluationStaysASave) {
  // Six epochs of 4 steps (times in ms), each ending with a save of its
  // own ckpt_E.pt (a region of 100 ms, 80 in writes); after the second
  // step of the next epoch, the last checkpoint torch.loaded to evaluate
  // it. Five paths loaded after later steps, but one save in 4 steps: no
  // cache of samples (a review's run: every save taken for a fill, the
  // checkpoints line gone, the verdict "waited for data").
  constexpr uint64_t kMs = 1000000;
  constexpr uint32_t kEpochCkpt = 2000;  // ckpt_E.pt: kEpochCkpt + E
  testing::RankGroup g(0);
  for (uint32_t e = 0; e < 6; ++e) {
    g.Name(kEpochCkpt + e, "/ckpt/ckpt_" + std::to_string(e) + ".pt");
  }
  uint64_t t = 1000 * kMs;
  g.Step(t, t + 100 * kMs);
  for (int k = 1; k <= 24; ++k) {
    const uint32_t epoch = (k - 1) / 4;
    g.Read(0, t + 500 * kMs, t + 600 * kMs);
    if (k % 4 == 2 && epoch > 0) {
      g.Call(0, EventKind::AppRegion, t + 650 * kMs, t + 700 * kMs, kRestore);
      g.Read(0, t + 660 * kMs, t + 690 * kMs, kEpochCkpt + epoch - 1);
    }
    if (k % 4 == 0) {
      g.Call(0, EventKind::AppRegion, t + 700 * kMs, t + 800 * kMs, kSave);
      g.Write(0, t + 710 * kMs, t + 790 * kMs, kEpochCkpt + epoch, 8 * kMiB);
    }
    t += 1000 * kMs;
    g.Step(t, t + 100 * kMs);
  }
  const RankFigures f = g.Measure();
  ASSERT_TRUE(f.loop_of_steps);
  EXPECT_EQ(f.checkpoint.saves, 6u);
  EXPECT_EQ(f.checkpoint.blocking_ns, 6 * 100 * kMs);
}

TEST(CheckpointMeterTest, ACopyOfACheckpointIsOutputAndOfADataFileReading) {
  // A loop without a DataLoader (times in ms): step 2's batch is a shard
  // staged to a local disk by sendfile (40 ms) and read there (60 ms):
  // its wait; after step 2 a save, then its copy to model_best (30 ms):
  // the job's output, no batch wait of step 3 (its read alone).
  constexpr uint64_t kMs = 1000000;
  constexpr uint32_t kLocal = 41, kBest = 42;
  testing::RankGroup g(0);
  g.Name(kLocal, "/local/shard2.npy");
  g.Name(kBest, "/ckpt/model_best.pth.tar");
  g.Step(1000 * kMs, 1100 * kMs);
  g.Copy(0, 1500 * kMs, 1540 * kMs, kData, kLocal, 8 * kMiB);
  g.Read(0, 1540 * kMs, 1600 * kMs, kLocal);
  g.Step(2000 * kMs, 2100 * kMs);
  g.Call(0, EventKind::AppRegion, 2200 * kMs, 2300 * kMs, kSave);
  g.Write(0, 2210 * kMs, 2280 * kMs, kCheckpoint, 8 * kMiB);
  g.Copy(0, 2300 * kMs, 2330 * kMs, kCheckpoint, kBest, 8 * kMiB);
  g.Read(0, 2700 * kMs, 2800 * kMs);
  g.Step(3000 * kMs, 3100 * kMs);
  const RankFigures f = g.Measure();
  ASSERT_TRUE(f.loop_of_steps);
  ASSERT_EQ(f.steps.size(), 3u);
  EXPECT_EQ(f.steps[1].batch_wait_ns, 100 * kMs);  // 60 with the staging copy as output
  EXPECT_EQ(f.steps[2].batch_wait_ns, 100 * kMs);  // 130 with the checkpoint's copy
}

TEST(CheckpointMeterTest, TheCloseOfABurstsCopyIsTheSavesNotTheNextWait) {
  // No region (times in ms): a save's writes and close, then shutil.copyfile
  // to model_best (sendfile 30 ms) whose close took 25 ms (a loaded
  // machine): the save's, not step 3's batch wait (its read alone). The
  // close was judged before the copy's burst ended, and no save had it.
  constexpr uint64_t kMs = 1000000;
  constexpr uint32_t kBest = 42;
  testing::RankGroup g(0);
  g.Name(kBest, "/ckpt/model_best.bin");
  g.Step(1000 * kMs, 1100 * kMs);
  g.Read(0, 1500 * kMs, 1600 * kMs);
  g.Step(2000 * kMs, 2100 * kMs);
  g.Write(0, 2200 * kMs, 2300 * kMs, kCheckpoint, 8 * kMiB);
  g.Call(0, EventKind::Close, 2300 * kMs, 2310 * kMs, kCheckpoint);
  g.Copy(0, 2320 * kMs, 2350 * kMs, kCheckpoint, kBest, 8 * kMiB);
  g.Call(0, EventKind::Close, 2350 * kMs, 2375 * kMs, kBest);
  g.Read(0, 2700 * kMs, 2800 * kMs);
  g.Step(3000 * kMs, 3100 * kMs);
  const RankFigures f = g.Measure();
  ASSERT_TRUE(f.loop_of_steps);
  ASSERT_EQ(f.steps.size(), 3u);
  EXPECT_EQ(f.steps[2].batch_wait_ns, 100 * kMs);  // 135 with the close joined to it
  EXPECT_EQ(f.checkpoint.blocking_ns, (110 + 55) * kMs);  // the save, the copy
}

TEST(CheckpointMeterTest, ABurstSavesOpenForOutputIsItsAndNoBatchWait) {
  // No region (times in ms): open(path, "wb") truncating the last save's
  // file (90 ms), then its writes and fsync. The save starts at the open,
  // and step 3's batch wait is its read alone (the open was counted in it,
  // and left out of the save). A read-write open keeping its file (LMDB's)
  // and an open for output followed by a step before its writes are not
  // the save's.
  constexpr uint64_t kMs = 1000000;
  testing::RankGroup g(0);
  g.Step(1000 * kMs, 1100 * kMs);
  g.Read(0, 1500 * kMs, 1600 * kMs);
  g.Step(2000 * kMs, 2100 * kMs);
  g.Open(0, 2200 * kMs, 2290 * kMs, kCheckpoint, O_WRONLY | O_CREAT | O_TRUNC);
  g.Write(0, 2300 * kMs, 2400 * kMs, kCheckpoint, 8 * kMiB);
  g.Call(0, EventKind::Fsync, 2400 * kMs, 2500 * kMs, kCheckpoint);
  g.Call(0, EventKind::Close, 2500 * kMs, 2510 * kMs, kCheckpoint);
  g.Open(0, 2600 * kMs, 2700 * kMs, kData, O_RDWR | O_CREAT);
  g.Read(0, 2700 * kMs, 2800 * kMs);
  g.Step(3000 * kMs, 3100 * kMs);
  g.Open(0, 3200 * kMs, 3210 * kMs, kCheckpoint, O_WRONLY | O_TRUNC);
  g.Step(3300 * kMs, 3400 * kMs);
  g.Write(0, 3500 * kMs, 3600 * kMs, kCheckpoint, 8 * kMiB);
  g.Call(0, EventKind::Close, 3600 * kMs, 3610 * kMs, kCheckpoint);
  g.Step(4000 * kMs, 4100 * kMs);
  const RankFigures f = g.Measure();
  ASSERT_TRUE(f.loop_of_steps);
  ASSERT_EQ(f.steps.size(), 5u);
  EXPECT_EQ(f.steps[1].batch_wait_ns, 100 * kMs);
  EXPECT_EQ(f.steps[2].batch_wait_ns, 200 * kMs);  // the read-write open and its read
  EXPECT_EQ(f.checkpoint.saves, 2u);
  EXPECT_EQ(f.checkpoint.blocking_ns, (310 + 110) * kMs);  // the second from its first write
}

TEST(CheckpointMeterTest, SavesOutsideTheLoopAndRightAfterItsLastStep) {
  testing::RankGroup g = Loop();
  // Initial weights before the loop: start-up's, not counted.
  g.Call(0, EventKind::AppRegion, 100, 200, kSave);
  g.Write(0, 110, 190, kCheckpoint, 2 * kMiB);
  // Right after the last step: the save of the last steps, which ends it.
  g.Call(0, EventKind::AppRegion, 4200, 4900, kSave);
  g.Write(0, 4300, 4800, kCheckpoint, 2 * kMiB);
  const RankFigures f = g.Measure();
  EXPECT_EQ(f.checkpoint.saves, 1u);
  EXPECT_EQ(f.checkpoint.blocking_ns, 700u);
  EXPECT_EQ(f.loop_end_ns, 4900u);
}

TEST(CheckpointMeterTest, RestoringACheckpointIsStartUps) {
  testing::RankGroup g = Loop();
  g.Call(0, EventKind::AppRegion, 200, 700, kRestore);  // torch.load
  g.Read(0, 300, 600, kCheckpoint);
  // torch.load in the loop (a data set of .pt samples) restores nothing.
  g.Call(0, EventKind::AppRegion, 2200, 2300, kRestore);
  const CheckpointFigures c = g.Measure().checkpoint;
  EXPECT_EQ(c.restore_ns, 500u);
  EXPECT_EQ(c.restore_bytes, 4096u);
  EXPECT_EQ(c.saves, 0u);
}

// A summary whose one rank's loop of 10 s stopped `blocking_ms` for saves
// and waited `wait_ms` for batches.
Summary WithSaves(uint64_t blocking_ms, uint64_t wait_ms) {
  constexpr uint64_t kMs = 1000000;
  Summary s;
  s.run_start_ns = 0;
  s.run_end_ns = 12000 * kMs;
  RankFigures r;
  r.rank = 0;
  r.loop = true;
  r.loop_start_ns = 2000 * kMs;
  r.loop_end_ns = 12000 * kMs;
  r.steps.resize(10);
  r.batch_wait_ns = r.reading_ns = wait_ms * kMs;
  r.checkpoint.saves = 3;
  r.checkpoint.bytes = 300 * kMiB;
  r.checkpoint.ns = r.checkpoint.blocking_ns = blocking_ms * kMs;
  r.checkpoint.write_ns = blocking_ms * kMs / 2;
  s.rank_figures.push_back(r);
  return s;
}

TEST(CheckpointMeterTest, TheVerdictsCheckpointBoundAndFinding) {
  Verdict v = ComputeVerdict(WithSaves(3000, 500));
  EXPECT_EQ(v.bound, Bound::kCheckpoint);
  ASSERT_FALSE(v.findings.empty());
  EXPECT_EQ(v.findings[0].rule, "checkpoint");
  EXPECT_NE(v.findings[0].what.find("3 checkpoint saves 30.0 % of the loop"), std::string::npos)
      << v.findings[0].what;
  const std::string j = VerdictJson(v);
  EXPECT_NE(j.find("\"checkpoint\":{\"ns\":3000000000,\"writes\":3,\"bytes\":314572800,"
                   "\"blocking_ns\":3000000000,\"background_ns\":0,\"per_mille\":300,"),
            std::string::npos)
      << j;
  EXPECT_NE(j.find("\"bound\":\"checkpoint\""), std::string::npos);
  // Waiting for data longer than the saves: data leads.
  EXPECT_EQ(ComputeVerdict(WithSaves(1500, 2000)).bound, Bound::kData);
  // Under a tenth of the loop: neither, and no finding.
  v = ComputeVerdict(WithSaves(900, 500));
  EXPECT_EQ(v.bound, Bound::kNeither);
  for (const Finding& f : v.findings) EXPECT_NE(f.rule, "checkpoint");
  // No save: null.
  Summary none = WithSaves(0, 500);
  none.rank_figures[0].checkpoint = CheckpointFigures();
  EXPECT_NE(VerdictJson(ComputeVerdict(none)).find("\"checkpoint\":null"), std::string::npos);
}

}  // namespace
}  // namespace dlprof::analysis
