// The whole run's checkpoint saves in the flusher's counters (lib/core/
// checkpoint_saves.h): save regions with their thread's writes, bursts of
// writes with no region, their settling, and the files read back.
#include <fcntl.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "tests/helpers/interval_counters_fixture.h"

namespace dlprof::core {
namespace {

// A save region of the loop's thread (it stepped, once in the threads
// that ran the loop however often) and one of another thread, each with
// its thread's writes in it: the loop thread's log line
// before its save is not the save's; the save's two bursts 3 ms apart are
// both its, its file the one it wrote. The saved file read after a later
// step of that thread is read as data, once; read before, it is not.
TEST_F(IntervalCountersTest, SavesKeepTheirThreadsWritesAndWhetherItRanTheLoop) {
  const uint32_t save = Intern("save_checkpoint"), log = Intern("/out/log.txt");
  const uint32_t ckpt = Intern("/out/ckpt.pt"), other = Intern("/out/ema.pt");
  auto write = [&](uint32_t tid, uint32_t file, uint64_t start_ms, uint64_t bytes) {
    Event e = Gpu(EventKind::Write, start_ms * kMs, (start_ms + 1) * kMs);
    e.file = file;
    e.ret = static_cast<int64_t>(bytes);
    counters_.Add(tid, &e, 1, format::TickScale{});
  };
  auto region = [&](uint32_t tid, uint32_t name, uint64_t start_ms, uint64_t end_ms) {
    Event e = Gpu(EventKind::AppRegion, start_ms * kMs, end_ms * kMs);
    e.file = name;
    counters_.Add(tid, &e, 1, format::TickScale{});
  };
  region(7, Intern("optimizer_step"), 0, 1);
  write(7, log, 2, 100);
  write(7, ckpt, 6, 1 << 20);
  write(7, ckpt, 10, 1 << 20);
  region(7, save, 5, 20);
  write(8, other, 31, 4096);
  region(8, save, 30, 40);
  AddCall(EventKind::Read, 21, 22, ckpt, 4096);  // verifying the save: no step since
  region(7, Intern("optimizer_step"), 50, 51);
  AddCall(EventKind::Read, 60, 61, ckpt, 4096);
  AddCall(EventKind::Read, 70, 71, ckpt, 4096);
  ASSERT_TRUE(counters_.MaybeEmit(1000 * kMs, -1, true));
  const format::CountersFile c = Read();
  ASSERT_EQ(c.saves.size(), 1u);
  const format::SavesRecord& r = c.saves[0];
  ASSERT_EQ(r.saves.size(), 2u);
  EXPECT_EQ(r.saves[0].start_ns, 5 * kMs);
  EXPECT_EQ(r.saves[0].end_ns, 20 * kMs);
  EXPECT_EQ(r.saves[0].bytes, 2u << 20);
  EXPECT_EQ(r.saves[0].write_ns, 2 * kMs);
  EXPECT_EQ(r.saves[0].file, ckpt);
  EXPECT_EQ(r.saves[0].thread, 7u);
  EXPECT_EQ(r.saves[1].bytes, 4096u);
  EXPECT_EQ(r.saves[1].file, other);
  EXPECT_EQ(r.saves[1].thread, 8u);
  EXPECT_EQ(r.loop_threads, std::vector<uint32_t>{7});
  EXPECT_EQ(r.loaded, std::vector<uint32_t>{ckpt});
  EXPECT_EQ(r.unsampled, 0u);
}

// A save of 100 tensors, each written 2 ms after the last (its copy off
// the GPU): more runs than a thread keeps, all of them the save's, and
// the log line written 2 ms before it none of it.
TEST_F(IntervalCountersTest, ASaveOfManyBurstsKeepsAllItsBytes) {
  const uint32_t ckpt = Intern("/out/ckpt.pt");
  AddCall(EventKind::Write, 2, 3, Intern("/out/log.txt"), 100);
  for (uint64_t k = 0; k < 100; ++k) AddCall(EventKind::Write, 5 + 3 * k, 6 + 3 * k, ckpt, 4096);
  AddCall(EventKind::AppRegion, 5, 400, Intern("save_checkpoint"), 0);
  ASSERT_TRUE(counters_.MaybeEmit(1000 * kMs, -1, true));
  const format::CountersFile c = Read();
  ASSERT_EQ(c.saves.size(), 1u);
  ASSERT_EQ(c.saves[0].saves.size(), 1u);
  EXPECT_EQ(c.saves[0].saves[0].bytes, 100 * 4096u);
  EXPECT_EQ(c.saves[0].saves[0].write_ns, 100 * kMs);
  EXPECT_EQ(c.saves[0].saves[0].file, ckpt);
}

// torch.save, then fsync of its file: the sync settles the save, which
// ends with it, as the full events' (a close of another file, and a sync
// more than 100 ms after, do not); sync() settles its thread's last save.
TEST_F(IntervalCountersTest, ASyncOfASavedFileSettlesTheSave) {
  const uint32_t save = Intern("save_checkpoint"), ckpt = Intern("/out/ckpt.pt");
  AddCall(EventKind::Write, 6, 7, ckpt, 1 << 20);
  AddCall(EventKind::AppRegion, 5, 20, save, 0);
  AddCall(EventKind::Close, 21, 22, Intern("/out/log.txt"), 0);
  AddCall(EventKind::Fsync, 30, 80, ckpt, 0);
  AddCall(EventKind::Fsync, 300, 310, ckpt, 0);
  // Loaded back at once to verify it: the load's close is not the save's
  // (it stretched the save over the load: 86.3 ms of saves for 28.7).
  const uint32_t ema = Intern("/out/ema.pt");
  AddCall(EventKind::Write, 331, 332, ema, 4096);
  AddCall(EventKind::AppRegion, 330, 333, save, 0);
  AddCall(EventKind::Read, 341, 342, ema, 4096);
  AddCall(EventKind::Close, 343, 344, ema, 0);
  AddCall(EventKind::Write, 401, 402, ckpt, 1 << 20);
  AddCall(EventKind::AppRegion, 400, 420, save, 0);
  AddCall(EventKind::Sync, 430, 500, 0, 0);
  // The same file saved again: its close, inside that save, is not the
  // last save's (it stretched each save over the step between).
  AddCall(EventKind::Write, 511, 512, ckpt, 1 << 20);
  AddCall(EventKind::Close, 513, 514, ckpt, 0);
  AddCall(EventKind::AppRegion, 510, 515, save, 0);
  ASSERT_TRUE(counters_.MaybeEmit(1000 * kMs, -1, true));
  const format::CountersFile c = Read();
  ASSERT_EQ(c.saves.size(), 1u);
  ASSERT_EQ(c.saves[0].saves.size(), 4u);
  EXPECT_EQ(c.saves[0].saves[0].end_ns, 80 * kMs);
  EXPECT_EQ(c.saves[0].saves[1].end_ns, 333 * kMs);
  EXPECT_EQ(c.saves[0].saves[2].end_ns, 500 * kMs);
  EXPECT_EQ(c.saves[0].saves[3].end_ns, 515 * kMs);
}

// Saves with no region (np.save, raw writes), found as the full events
// find them: a burst of 16 MiB of writes on a job file, from the open that
// truncated the last save to the close that ended it, and the fsync after
// it (np.save closes a stream on a dup of the file's descriptor, then the
// program syncs the file); its thread's step ends another. None: a log
// written 100 B every 60 ms (a pause ends a small burst), 512 KiB written
// at once, a file written and then read (the data set being made), a
// burst inside a save region (the region's, also where its file was opened
// before the region and closed after it), and the open for output before
// a step and a write after it (the open no save's).
TEST_F(IntervalCountersTest, BurstsOfWritesWithNoRegionAreSaves) {
  const uint32_t step = Intern("optimizer_step"), ckpt = Intern("/out/ckpt.npy");
  const uint32_t log = Intern("/out/log.txt"), small = Intern("/out/small.bin");
  const uint32_t made = Intern("/data/made.bin"), raw = Intern("/out/raw.bin");
  const uint32_t torch = Intern("/out/model.pt");
  AddCall(EventKind::AppRegion, 0, 1, step, 0);
  Event open = Gpu(EventKind::Open64, 2 * kMs, 5 * kMs);  // O_TRUNC of the last save: 3 ms
  open.file = ckpt;
  open.aux = O_WRONLY | O_TRUNC;
  counters_.Add(7, &open, 1, format::TickScale{});
  for (uint64_t k = 0; k < 16; ++k) AddCall(EventKind::Write, 6 + k, 7 + k, ckpt, 1 << 20);
  AddCall(EventKind::Close, 30, 31, ckpt, 0);
  AddCall(EventKind::Fsync, 40, 90, ckpt, 0);
  for (uint64_t k = 0; k < 4; ++k) AddCall(EventKind::Write, 100 + 60 * k, 101 + 60 * k, log, 100);
  AddCall(EventKind::Write, 400, 410, small, 512 << 10);
  AddCall(EventKind::Close, 411, 412, small, 0);
  AddCall(EventKind::Write, 420, 440, made, 4 << 20);
  AddCall(EventKind::Close, 441, 442, made, 0);
  AddCall(EventKind::Read, 450, 451, made, 4096);
  AddCall(EventKind::Write, 461, 471, torch, 4 << 20);
  AddCall(EventKind::Close, 472, 473, torch, 0);
  AddCall(EventKind::AppRegion, 460, 480, Intern("save_checkpoint"), 0);
  // torch.save(model, f) of a file opened before it and closed after.
  const uint32_t opened = Intern("/out/opened.pt");
  AddCall(EventKind::Write, 480, 481, opened, 100);  // a header before the save
  AddCall(EventKind::Write, 483, 486, opened, 4 << 20);
  AddCall(EventKind::AppRegion, 482, 487, Intern("save_checkpoint"), 0);
  AddCall(EventKind::Close, 488, 489, opened, 0);
  Event reopen = Gpu(EventKind::Open64, 490 * kMs, 491 * kMs);
  reopen.file = raw;
  reopen.aux = O_WRONLY | O_TRUNC;
  counters_.Add(7, &reopen, 1, format::TickScale{});
  AddCall(EventKind::AppRegion, 495, 496, step, 0);
  AddCall(EventKind::Write, 500, 520, raw, 8 << 20);
  AddCall(EventKind::AppRegion, 530, 531, step, 0);
  ASSERT_TRUE(counters_.MaybeEmit(1000 * kMs, -1, true));
  const format::CountersFile c = Read();
  ASSERT_EQ(c.saves.size(), 1u);
  const std::vector<format::SaveSample>& saves = c.saves[0].saves;
  ASSERT_EQ(saves.size(), 4u);
  EXPECT_EQ(saves[0].start_ns, 2 * kMs);
  EXPECT_EQ(saves[0].end_ns, 90 * kMs);
  EXPECT_EQ(saves[0].bytes, 16u << 20);
  EXPECT_EQ(saves[0].write_ns, 16 * kMs);
  EXPECT_EQ(saves[0].file, ckpt);
  EXPECT_EQ(saves[0].thread, 7u);
  EXPECT_EQ(saves[1].file, torch);  // the region's
  EXPECT_EQ(saves[1].start_ns, 460 * kMs);
  EXPECT_EQ(saves[2].file, opened);  // the region's, settled by the close
  EXPECT_EQ(saves[2].start_ns, 482 * kMs);
  EXPECT_EQ(saves[2].end_ns, 489 * kMs);
  EXPECT_EQ(saves[3].file, raw);
  EXPECT_EQ(saves[3].start_ns, 500 * kMs);
  EXPECT_EQ(saves[3].end_ns, 520 * kMs);
}

// An atomic save: written to a temporary file, closed, then renamed over
// the last (Lightning's, Hugging Face's): the rename settles the burst, as
// in the full events; a rename without a close before it ends the burst.
TEST_F(IntervalCountersTest, ARenameSettlesOrEndsASavesBurst) {
  const uint32_t tmp = Intern("/out/ckpt.tmp"), raw = Intern("/out/raw.tmp");
  AddCall(EventKind::Write, 10, 20, tmp, 4 << 20);
  AddCall(EventKind::Close, 21, 22, tmp, 0);
  AddCall(EventKind::Rename, 30, 31, tmp, 0);
  AddCall(EventKind::Write, 100, 110, raw, 4 << 20);
  AddCall(EventKind::Rename, 120, 121, raw, 0);
  ASSERT_TRUE(counters_.MaybeEmit(1000 * kMs, -1, true));
  const format::CountersFile c = Read();
  ASSERT_EQ(c.saves.size(), 1u);
  ASSERT_EQ(c.saves[0].saves.size(), 2u);
  EXPECT_EQ(c.saves[0].saves[0].start_ns, 10 * kMs);
  EXPECT_EQ(c.saves[0].saves[0].end_ns, 31 * kMs);
  EXPECT_EQ(c.saves[0].saves[1].end_ns, 121 * kMs);
}

// A save that ends just before its interval does (torch.save at 990 ms of
// a 1 s interval) is settled by its file's fsync in the next one: it goes
// in the next interval's record, with the fsync (written at once, its
// sync's 50 ms were lost). One that ended earlier stays in its own.
TEST_F(IntervalCountersTest, ASaveSettledInTheNextIntervalIsInItsRecord) {
  const uint32_t save = Intern("save_checkpoint"), ckpt = Intern("/out/ckpt.pt");
  AddCall(EventKind::Write, 501, 502, Intern("/out/early.pt"), 1 << 20);
  AddCall(EventKind::AppRegion, 500, 505, save, 0);
  AddCall(EventKind::Write, 991, 992, ckpt, 1 << 20);
  AddCall(EventKind::AppRegion, 990, 995, save, 0);
  ASSERT_TRUE(counters_.MaybeEmit(1000 * kMs, -1, false));
  AddCall(EventKind::Fsync, 1010, 1060, ckpt, 0);
  ASSERT_TRUE(counters_.MaybeEmit(2000 * kMs, -1, true));
  const format::CountersFile c = Read();
  ASSERT_EQ(c.saves.size(), 2u);
  ASSERT_EQ(c.saves[0].saves.size(), 1u);
  EXPECT_EQ(c.saves[0].saves[0].end_ns, 505 * kMs);
  ASSERT_EQ(c.saves[1].saves.size(), 1u);
  EXPECT_EQ(c.saves[1].saves[0].start_ns, 990 * kMs);
  EXPECT_EQ(c.saves[1].saves[0].end_ns, 1060 * kMs);
  EXPECT_EQ(c.saves[1].saves[0].file, ckpt);
}

}  // namespace
}  // namespace dlprof::core
