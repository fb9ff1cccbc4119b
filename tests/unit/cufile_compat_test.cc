// CufileCompatReads: which POSIX calls of a process were cuFile's
// compatibility mode serving a cuFile I/O on one of libcufile's threads.
#include "lib/read/cufile_compat.h"

#include <gtest/gtest.h>

#include <string>
#include <unordered_map>
#include <vector>

namespace dlprof::read {
namespace {

Event Make(EventKind kind, uint64_t start, uint64_t dur, uint32_t file, int64_t offset,
           uint64_t size, uint16_t flags = 0) {
  Event e{};
  e.kind = static_cast<uint16_t>(kind);
  e.flags = flags;
  e.start_ns = start;
  e.dur_ns = dur;
  e.file = file;
  e.offset = offset;
  e.size = size;
  e.ret = static_cast<int64_t>(size);
  return e;
}

constexpr uint16_t kServed = kEventFlagNested | kEventFlagServesTransfer;
// The program's thread (it calls cuFile), CUDA's callback thread (it
// records a stream I/O at its completion) and one of libcufile's workers.
constexpr int32_t kMain = 100, kCallback = 101, kWorker = 102;

class CufileCompatTest : public ::testing::Test {
 protected:
  std::unordered_map<uint32_t, std::string> strings{
      {1, "/data/shard.bin"}, {2, "/data/other.bin"}, {3, "/data/shard.bin"}};
};

TEST_F(CufileCompatTest, FlagsReadsInsideATransferInTimeAndRange) {
  CufileCompatReads reads(&strings);
  // A batch entry: submitted at 100, its completion seen at 1000, 256 KiB at 2 MiB.
  Event batch = Make(EventKind::CufileBatchRead, 100, 900, 1, 2 << 20, 256 << 10);
  reads.See(batch, kMain);
  Event inside = Make(EventKind::Pread64, 200, 50, 1, 2 << 20, 256 << 10);
  Event other_file = Make(EventKind::Pread64, 210, 50, 2, 2 << 20, 256 << 10);
  Event past_end = Make(EventKind::Pread64, 220, 50, 1, (2 << 20) + (128 << 10), 256 << 10);
  Event same_path_other_id = Make(EventKind::Pread, 230, 50, 3, (2 << 20) + 4096, 4096);
  Event already_nested = Make(EventKind::Pread64, 240, 5, 1, 2 << 20, 4096, kEventFlagNested);
  Event not_data = Make(EventKind::Fstat, 250, 5, 1, -1, 0);
  for (Event* e : {&inside, &other_file, &past_end, &same_path_other_id, &already_nested,
                   &not_data}) {
    reads.See(*e, kWorker);
  }
  EXPECT_EQ(inside.flags, kServed);
  EXPECT_EQ(other_file.flags, 0);
  EXPECT_EQ(past_end.flags, 0);
  EXPECT_EQ(same_path_other_id.flags, kServed);
  EXPECT_EQ(already_nested.flags, kEventFlagNested);  // its own thread's call holds it
  EXPECT_EQ(not_data.flags, 0);
  EXPECT_EQ(batch.flags, 0);
}

TEST_F(CufileCompatTest, AReadAfterTheTransferEndedIsTheProgramsOwn) {
  CufileCompatReads reads(&strings);
  Event async = Make(EventKind::CufileAsyncRead, 100, 900, 1, 0, 1 << 20);
  reads.See(async, kCallback);
  Event after = Make(EventKind::Pread64, 1001, 10, 1, 0, 4096);
  reads.See(after, kWorker);
  EXPECT_EQ(after.flags, 0);
  // And the transfer is gone: a later one's range does not inherit it.
  Event write = Make(EventKind::CufileWrite, 2000, 100, 1, 1 << 20, 4096);
  reads.See(write, kMain);
  Event pwrite = Make(EventKind::Pwrite64, 2010, 10, 1, 1 << 20, 4096);
  Event pread_old_range = Make(EventKind::Pread64, 2020, 10, 1, 0, 4096);
  reads.See(pwrite, kWorker);
  reads.See(pread_old_range, kWorker);
  EXPECT_EQ(pwrite.flags, kServed);
  EXPECT_EQ(pread_old_range.flags, 0);
}

TEST_F(CufileCompatTest, AFailedTransferNamesNoRange) {
  CufileCompatReads reads(&strings);
  Event failed = Make(EventKind::CufileRead, 100, 900, 1, -1, 0);
  reads.See(failed, kMain);
  Event pread = Make(EventKind::Pread64, 200, 10, 1, 0, 4096);
  reads.See(pread, kWorker);
  EXPECT_EQ(pread.flags, 0);
}

TEST_F(CufileCompatTest, ARangeInBlockOrderIsFlaggedByStart) {
  // As the C ABI hands out a block range: the worker's pread was written
  // before the batch entry, which is recorded when its completion is seen.
  std::vector<Event> events = {
      Make(EventKind::Pread64, 300, 10, 1, 0, 4096),
      Make(EventKind::Pread64, 5000, 10, 1, 0, 4096),
      Make(EventKind::CufileBatchRead, 100, 900, 1, 0, 4096),
  };
  CufileCompatReads::FlagRange(&events, {kWorker, kWorker, kMain}, &strings);
  EXPECT_EQ(events[0].flags, kServed);
  EXPECT_EQ(events[1].flags, 0);
  EXPECT_EQ(events[2].flags, 0);
}

// The program's own read of a file's header, on the thread that queued a
// stream read of that file still in flight: its own call, its bytes its own
// (it was flagged, and the file's 68 KiB read counted as 64). The stream
// I/O is recorded by the callback thread; the worker's pread is served.
TEST_F(CufileCompatTest, TheCallingThreadsOwnReadIsItsOwn) {
  CufileCompatReads reads(&strings);
  Event submit = Make(EventKind::CufileReadAsync, 100, 5, 1, 0, 64 << 10);
  reads.See(submit, kMain);
  Event async = Make(EventKind::CufileAsyncRead, 100, 900, 1, 0, 64 << 10);
  reads.See(async, kCallback);
  Event header = Make(EventKind::Pread64, 150, 10, 1, 0, 4096);
  Event worker = Make(EventKind::Pread64, 160, 50, 1, 0, 64 << 10);
  Event callback = Make(EventKind::Pread64, 170, 50, 1, 0, 64 << 10);
  reads.See(header, kMain);
  reads.See(worker, kWorker);
  reads.See(callback, kCallback);
  EXPECT_EQ(header.flags, 0);
  EXPECT_EQ(worker.flags, kServed);
  EXPECT_EQ(callback.flags, kServed);
}

}  // namespace
}  // namespace dlprof::read
