// The flusher's per-interval counters (lib/core/interval_counters.h): the
// GPU record of each interval -- the union of its kernels', copies' and
// memsets' spans, less what an earlier interval counted of records that
// arrived late -- the newest event drained, and the record of the interval
// so far, written and read back, with the names of its files written over
// with it.
#include "lib/core/interval_counters.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "lib/core/string_table.h"
#include "lib/format/trace_file.h"

namespace dlprof::core {
namespace {

constexpr uint64_t kMs = 1000000;

Event Gpu(EventKind kind, uint64_t start, uint64_t end) {
  Event e{};
  e.kind = static_cast<uint16_t>(kind);
  e.start_ns = start;
  e.dur_ns = end - start;
  e.offset = -1;
  return e;
}

class IntervalCountersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(strings_.Init());
    char dir[] = "/tmp/interval_countersXXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    path_ = dir_ + "/p.dlcount";
    format::ProcessInfo info;
    info.pid = 1;
    info.host = "h";
    info.flags = kHeaderFlagSegment;
    std::string error;
    ASSERT_TRUE(counters_.Open(path_, format::EncodeFileHeader(info), 0, &error)) << error;
  }
  void TearDown() override {
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }
  format::CountersFile Read() {
    format::CountersFile c;
    std::string error;
    EXPECT_TRUE(format::ReadCountersFile(path_, &c, &error)) << error;
    EXPECT_EQ(c.damaged, 0u);
    return c;
  }

  uint32_t Intern(const std::string& text) { return strings_.Intern(text.data(), text.size()); }
  // A call on `file` of [start_ms, end_ms) returning `ret`, counted.
  void AddCall(EventKind kind, uint64_t start_ms, uint64_t end_ms, uint32_t file, int64_t ret) {
    Event e = Gpu(kind, start_ms * kMs, end_ms * kMs);
    e.file = file;
    e.ret = ret;
    counters_.Add(7, &e, 1, format::TickScale{});
  }

  // Ends the pass and the run at `end_ms`: one wait of the thread's own,
  // `reading_ns` of reading in it.
  void ExpectOneWaitReading(uint64_t end_ms, uint64_t reading_ns) {
    counters_.EndPass();
    ASSERT_TRUE(counters_.MaybeEmit(end_ms * kMs, -1, true));
    const format::CountersFile c = Read();
    ASSERT_EQ(c.batches.size(), 1u);
    EXPECT_EQ(c.batches[0].read.count, 1u);
    EXPECT_EQ(c.batches[0].read.reading_ns, reading_ns);
  }

  StringTable strings_;
  IntervalCounters counters_{&strings_, 1000 * kMs};
  std::string dir_, path_;
};

TEST_F(IntervalCountersTest, EachIntervalsGpuBusyIsItsSpansUnionCountedOnce) {
  // Interval 1: two kernels that overlap on one device and a copy on
  // another inside the first ([10, 30) and [40, 50) ms: 30 ms busy).
  const Event first[] = {Gpu(EventKind::CudaKernel, 10 * kMs, 20 * kMs),
                         Gpu(EventKind::CudaKernel, 15 * kMs, 30 * kMs),
                         Gpu(EventKind::CudaMemcpy, 12 * kMs, 18 * kMs),
                         Gpu(EventKind::CudaKernel, 40 * kMs, 50 * kMs)};
  counters_.Add(7, first, 4, format::TickScale{});
  ASSERT_TRUE(counters_.MaybeEmit(1000 * kMs, -1, false));
  // Interval 2: a kernel of interval 1's time that came late, half of it
  // in a gap interval 1 left ([25, 35): 5 ms new), and one of its own.
  const Event second[] = {Gpu(EventKind::CudaKernel, 25 * kMs, 35 * kMs),
                          Gpu(EventKind::CudaKernel, 1100 * kMs, 1107 * kMs)};
  counters_.Add(7, second, 2, format::TickScale{});
  ASSERT_TRUE(counters_.MaybeEmit(2000 * kMs, -1, false));
  // Interval 3: no GPU work, no GPU record.
  const Event read[] = {Gpu(EventKind::Pread64, 2100 * kMs, 2101 * kMs)};
  counters_.Add(7, read, 1, format::TickScale{});
  ASSERT_TRUE(counters_.MaybeEmit(3000 * kMs, -1, true));

  const format::CountersFile c = Read();
  ASSERT_EQ(c.intervals.size(), 3u);
  ASSERT_EQ(c.gpu.size(), 2u);
  EXPECT_EQ(c.gpu[0].start_ns, c.intervals[0].start_ns);
  EXPECT_EQ(c.gpu[0].busy_ns, 30 * kMs);
  EXPECT_EQ(c.gpu[0].first_ns, 10 * kMs);
  EXPECT_EQ(c.gpu[0].last_ns, 50 * kMs);
  EXPECT_EQ(c.gpu[0].spans, 4u);
  EXPECT_EQ(c.gpu[1].start_ns, c.intervals[1].start_ns);
  EXPECT_EQ(c.gpu[1].busy_ns, 5 * kMs + 7 * kMs);
  EXPECT_EQ(c.gpu[1].first_ns, 25 * kMs);
  EXPECT_EQ(c.gpu[1].last_ns, 1107 * kMs);
  EXPECT_EQ(c.gpu[1].spans, 2u);
  // The GPU kinds' rows are as before: calls and summed durations.
  uint64_t kernels = 0;
  for (const format::KindRow& k : c.intervals[0].kinds) {
    if (k.kind == static_cast<uint32_t>(EventKind::CudaKernel)) kernels = k.calls;
  }
  EXPECT_EQ(kernels, 3u);
}

TEST_F(IntervalCountersTest, AFailedCuFileReadMovesNoBytes) {
  // cuFileRead: ret the bytes moved, or a CUfileOpError's negative with
  // err 0 (lib/intercept/cufile_calls.cc). One of each, in one run.
  Event ok = Gpu(EventKind::CufileRead, 1 * kMs, 2 * kMs);
  ok.ret = 4096;
  Event failed = Gpu(EventKind::CufileRead, 3 * kMs, 4 * kMs);
  failed.ret = -5001;
  const Event reads[] = {ok, failed, ok};
  counters_.Add(7, reads, 3, format::TickScale{});
  ASSERT_TRUE(counters_.MaybeEmit(1000 * kMs, -1, true));
  const format::CountersFile c = Read();
  ASSERT_EQ(c.intervals.size(), 1u);
  ASSERT_EQ(c.intervals[0].kinds.size(), 1u);
  const format::KindRow& k = c.intervals[0].kinds[0];
  EXPECT_EQ(k.calls, 3u);
  EXPECT_EQ(k.bytes, 8192u);
  EXPECT_EQ(k.errors, 1u);
  uint64_t read_bytes = 0, reads_counted = 0;
  for (const format::IoTotals& t : c.intervals[0].classes) {
    read_bytes += t.read_bytes;
    reads_counted += t.reads;
  }
  EXPECT_EQ(reads_counted, 3u);
  EXPECT_EQ(read_bytes, 8192u);
}

TEST_F(IntervalCountersTest, AFileWrittenThenMappedIsReadData) {
  // Interval 1: the process writes its token file (outputs, so far).
  const uint32_t file = Intern("/data/tokens.bin");
  AddCall(EventKind::Pwrite64, 1, 2, file, 4096);
  ASSERT_TRUE(counters_.MaybeEmit(1000 * kMs, -1, false));
  // Interval 2: a wait whose page faults on it the flusher drains after
  // the wait (the rings first, then the faults): its reading.
  AddCall(EventKind::AppRegion, 1100, 1110, Intern("load_batch"), 0);
  AddCall(EventKind::MajorFault, 1102, 1105, file, 0);
  ExpectOneWaitReading(2000, 3 * kMs);
}

TEST_F(IntervalCountersTest, AStepLoopsCallsOnAFileItWroteAreItsReadingBeforeItsFaults) {
  // nanoGPT's get_batch over a token file the process wrote (outputs, so
  // far): each step's window opens and maps it, then faults on it. The
  // flusher, behind on a busy machine, drains the ring -- both windows'
  // calls and steps -- before the faults that read the file: the calls are
  // still the steps' reading, as in the full events (integration
  // keep_causes lost 0.3 ms a step), 3 ms a window (open, mmap, fault).
  const uint32_t file = Intern("/data/train.bin"), step = Intern("optimizer_step");
  AddCall(EventKind::Pwrite64, 1, 2, file, 4096);
  ASSERT_TRUE(counters_.MaybeEmit(1000 * kMs, -1, false));
  for (uint64_t at : {1110, 1120}) {
    AddCall(EventKind::Open64, at, at + 1, file, 3);
    AddCall(EventKind::Mmap64, at + 1, at + 2, file, 0);
    AddCall(EventKind::AppRegion, at + 5, at + 6, step, 0);
  }
  for (uint64_t at : {1110, 1120}) AddCall(EventKind::MajorFault, at + 2, at + 3, file, 4096);
  counters_.EndPass();
  // The run ends: the first window is the second's period (10 ms) long.
  ASSERT_TRUE(counters_.MaybeEmit(2000 * kMs, -1, true));
  const format::CountersFile c = Read();
  uint64_t waits = 0, wait_ns = 0;
  for (const format::StepRecord& r : c.steps) {
    waits += r.waits;
    wait_ns += r.wait_ns;
  }
  EXPECT_EQ(waits, 2u);
  EXPECT_EQ(wait_ns, 2 * 3 * kMs);
}

// A prefetcher thread (8) that never steps, in a process whose thread 7
// steps: its reads of one file, drained as one run of calls.
class OtherThreadTest : public IntervalCountersTest {
 protected:
  // Thread 8's reads of `len_us` at each of `at_us`.
  void OtherThreadReads(std::initializer_list<uint64_t> at_us, uint64_t len_us) {
    std::vector<Event> reads;
    for (uint64_t at : at_us) {
      reads.push_back(Gpu(EventKind::Read, at * 1000, (at + len_us) * 1000));
      reads.back().file = Intern("/data/shard.bin");
      reads.back().ret = 65536;
    }
    counters_.Add(8, reads.data(), reads.size(), format::TickScale{});
  }
  void Step(uint64_t at_ms) {
    AddCall(EventKind::AppRegion, at_ms, at_ms + 2, Intern("optimizer_step"), 0);
  }
  // The run's other threads' data I/O, once it ends at 2 s.
  uint64_t OtherThreadsIo() {
    EXPECT_TRUE(counters_.MaybeEmit(2000 * kMs, -1, true));
    uint64_t other = 0;
    for (const format::StepRecord& r : Read().steps) other += r.other_threads_io_ns;
    return other;
  }
};

// Four 0.2 ms reads, 5 ms of decoding after each, are 0.8 ms of the other
// threads' data I/O, the full events' union of its calls (a run was one
// span: 15.8 ms, the decoding counted as I/O, and a loop "not measured"
// for a prefetcher's reading it never did).
TEST_F(OtherThreadTest, ReadsFarApartAreOnlyTheirCalls) {
  Step(1000);
  OtherThreadReads({1010000, 1015000, 1020000, 1025000}, 200);
  Step(1040);
  counters_.EndPass();
  EXPECT_EQ(OtherThreadsIo(), 4 * 200000u);
}

// The prefetcher's ring drained before the stepping thread's (the newest
// thread's first), in the one pass that holds the loop's first steps: its
// reads are another thread's all the same (under load, one pass over most
// of a short loop lost them all: "not held back").
TEST_F(OtherThreadTest, ReadsDrainedBeforeTheFirstStepAreCounted) {
  OtherThreadReads({1010000, 1015000, 1020000, 1025000}, 200);
  Step(1000);
  Step(1040);
  counters_.EndPass();
  EXPECT_EQ(OtherThreadsIo(), 4 * 200000u);
}

// A pass of another thread's reads with no step anywhere yet: the loop's
// start-up, not counted when a later pass holds the steps.
TEST_F(OtherThreadTest, ReadsBeforeAnyStepAreNot) {
  OtherThreadReads({900000}, 1000);
  counters_.EndPass();
  Step(1000);
  Step(1040);
  counters_.EndPass();
  EXPECT_EQ(OtherThreadsIo(), 0u);
}

// The request that found the pass over (StopIteration) and one that
// raised each wait in a load_batch holding its mark, and no batch comes out
// of them: the region rows say so (the whole run counted a pass's end as a
// batch: "68 batches" for 64), the mark drained a pass before its region,
// the epoch region around it not taking it.
TEST_F(IntervalCountersTest, RequestsThatEndAPassOrRaiseAreNoBatch) {
  const uint32_t wait = Intern("load_batch"), epoch = Intern("epoch epoch=0");
  AddCall(EventKind::AppMark, 11, 11, Intern("batch loader=0"), 0);
  AddCall(EventKind::AppRegion, 10, 12, wait, 0);
  AddCall(EventKind::AppMark, 21, 21, Intern("raised loader=0"), 0);
  AddCall(EventKind::AppRegion, 20, 22, wait, 0);
  AddCall(EventKind::AppMark, 31, 31, Intern("end loader=0"), 0);
  counters_.EndPass();
  AddCall(EventKind::AppRegion, 30, 40, wait, 0);
  AddCall(EventKind::AppRegion, 5, 45, epoch, 0);
  counters_.EndPass();
  ASSERT_TRUE(counters_.MaybeEmit(1000 * kMs, -1, true));
  const format::CountersFile c = Read();
  ASSERT_EQ(c.intervals.size(), 1u);
  std::map<std::string, std::pair<uint64_t, uint64_t>> rows;  // count, no_batch
  for (const format::RegionRow& g : c.intervals[0].regions) {
    rows[c.strings.at(g.name)] = {g.count, g.no_batch};
  }
  EXPECT_EQ(rows["load_batch"], std::make_pair(uint64_t{3}, uint64_t{2}));
  EXPECT_EQ(rows["epoch epoch=0"], std::make_pair(uint64_t{1}, uint64_t{0}));
}

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
// burst inside a save region (the region's), and the open for output
// before a step and a write after it (the open no save's).
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
  ASSERT_EQ(saves.size(), 3u);
  EXPECT_EQ(saves[0].start_ns, 2 * kMs);
  EXPECT_EQ(saves[0].end_ns, 90 * kMs);
  EXPECT_EQ(saves[0].bytes, 16u << 20);
  EXPECT_EQ(saves[0].write_ns, 16 * kMs);
  EXPECT_EQ(saves[0].file, ckpt);
  EXPECT_EQ(saves[0].thread, 7u);
  EXPECT_EQ(saves[1].file, torch);  // the region's
  EXPECT_EQ(saves[1].start_ns, 460 * kMs);
  EXPECT_EQ(saves[2].file, raw);
  EXPECT_EQ(saves[2].start_ns, 500 * kMs);
  EXPECT_EQ(saves[2].end_ns, 520 * kMs);
}

TEST_F(IntervalCountersTest, TheNewestEventIsEachThreadsLatest) {
  EXPECT_EQ(counters_.newest_event_ns(), 0u);
  const Event a[] = {Gpu(EventKind::Pread64, 5 * kMs, 6 * kMs),
                     Gpu(EventKind::Pread64, 9 * kMs, 10 * kMs)};
  counters_.Add(1, a, 2, format::TickScale{});
  EXPECT_EQ(counters_.newest_event_ns(), 9 * kMs);
  // Another thread's ring drained later, with older events: no change.
  const Event b[] = {Gpu(EventKind::Pread64, 7 * kMs, 8 * kMs)};
  counters_.Add(2, b, 1, format::TickScale{});
  EXPECT_EQ(counters_.newest_event_ns(), 9 * kMs);
}

TEST_F(IntervalCountersTest, TheIntervalSoFarIsOnDiskUntilItsRecordReplacesIt) {
  const char path[] = "/data/shard.bin";
  const uint32_t file = Intern(path);
  auto reads = [&](uint64_t at_ms, int n) {
    for (int i = 0; i < n; ++i) AddCall(EventKind::Pread64, at_ms + i, at_ms + i + 1, file, 4096);
  };
  auto data_reads = [](const format::IntervalRecord& r) { return r.classes[0].reads; };
  // Before the interval's end (1 s), each pass leaves what it holds so far.
  reads(10, 3);
  EXPECT_FALSE(counters_.MaybeEmit(200 * kMs, -1, false));
  format::CountersFile c = Read();
  ASSERT_EQ(c.intervals.size(), 1u);
  EXPECT_TRUE(c.so_far);
  EXPECT_TRUE(c.intervals[0].so_far);
  EXPECT_EQ(c.intervals[0].end_ns, 200 * kMs);
  EXPECT_EQ(data_reads(c.intervals[0]), 3u);
  ASSERT_EQ(c.intervals[0].files.size(), 1u);
  EXPECT_EQ(c.strings.at(c.intervals[0].files[0].file), path);
  reads(300, 2);
  EXPECT_FALSE(counters_.MaybeEmit(400 * kMs, -1, false));
  // A keep record, written where the records kept end: the record so far
  // after it again, whole (Read() finds no damage).
  counters_.Keep(format::KeepRecord{450 * kMs, 0, 500 * kMs, "k"});
  c = Read();
  ASSERT_EQ(c.keeps.size(), 1u);
  ASSERT_EQ(c.intervals.size(), 1u);
  EXPECT_TRUE(c.so_far);
  EXPECT_EQ(data_reads(c.intervals[0]), 5u);
  reads(500, 1);
  EXPECT_FALSE(counters_.MaybeEmit(600 * kMs, -1, false));
  c = Read();
  ASSERT_EQ(c.keeps.size(), 1u);
  ASSERT_EQ(c.intervals.size(), 1u);
  EXPECT_EQ(data_reads(c.intervals[0]), 6u);
  // Nothing new: no write. The interval's end: its record, over it.
  EXPECT_FALSE(counters_.MaybeEmit(800 * kMs, -1, false));
  EXPECT_EQ(Read().intervals[0].end_ns, 600 * kMs);
  ASSERT_TRUE(counters_.MaybeEmit(1000 * kMs, -1, false));
  c = Read();
  ASSERT_EQ(c.intervals.size(), 1u);
  EXPECT_FALSE(c.so_far);
  EXPECT_FALSE(c.intervals[0].so_far);
  EXPECT_EQ(data_reads(c.intervals[0]), 6u);
  // The next interval's so far, after it, in the same room however often
  // it is written (but for its varints' lengths).
  reads(1100, 1);
  EXPECT_FALSE(counters_.MaybeEmit(1100 * kMs, -1, false));
  struct stat st;
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  for (uint64_t pass = 1; pass <= 200; ++pass) {
    reads(1100 + pass, 1);
    EXPECT_FALSE(counters_.MaybeEmit((1100 + pass) * kMs, -1, false));
  }
  struct stat after;
  ASSERT_EQ(stat(path_.c_str(), &after), 0);
  EXPECT_LE(after.st_size, st.st_size + 16);
  c = Read();
  ASSERT_EQ(c.intervals.size(), 2u);
  EXPECT_TRUE(c.so_far);
  EXPECT_EQ(data_reads(c.intervals[1]), 201u);
  EXPECT_EQ(c.intervals[1].start_ns, 1000 * kMs);
  // At exit, the last record replaces it.
  ASSERT_TRUE(counters_.MaybeEmit(1400 * kMs, -1, true));
  c = Read();
  ASSERT_EQ(c.intervals.size(), 2u);
  EXPECT_FALSE(c.so_far);
  EXPECT_EQ(data_reads(c.intervals[0]) + data_reads(c.intervals[1]), 207u);
}

TEST_F(IntervalCountersTest, ARecordSoFarThatCannotBeWrittenLosesOnlyItself) {
  const uint32_t file = Intern("/data/shard.bin");
  AddCall(EventKind::Pread64, 10, 11, file, 4096);
  // The file cannot be opened for this pass (a directory in its place).
  const std::string aside = path_ + ".aside";
  ASSERT_EQ(rename(path_.c_str(), aside.c_str()), 0);
  ASSERT_EQ(mkdir(path_.c_str(), 0700), 0);
  EXPECT_FALSE(counters_.MaybeEmit(200 * kMs, -1, false));
  ASSERT_EQ(rmdir(path_.c_str()), 0);
  ASSERT_EQ(rename(aside.c_str(), path_.c_str()), 0);
  // The next pass writes it, and the interval's end its record.
  EXPECT_FALSE(counters_.MaybeEmit(400 * kMs, -1, false));
  EXPECT_TRUE(Read().so_far);
  AddCall(EventKind::Pread64, 500, 501, file, 4096);
  ASSERT_TRUE(counters_.MaybeEmit(1000 * kMs, -1, false));
  const format::CountersFile c = Read();
  ASSERT_EQ(c.intervals.size(), 1u);
  EXPECT_FALSE(c.so_far);
  EXPECT_EQ(c.intervals[0].classes[0].reads, 2u);
}

// A cache's temporary files: each pass's newest file takes the most time,
// so the files of each record so far are new, and most never reach the
// interval's record. Their names are written over with the record so far
// (strings so far): the file keeps the names its records kept name, and
// one record so far's; before, each pass defined its new names for good
// (the file grew by a path a pass: 8.8 MB an hour of 227-byte paths).
TEST_F(IntervalCountersTest, ARecordSoFarsFileNamesAreWrittenOverWithIt) {
  const std::string dir = "/scratch/" + std::string(190, 'd') + "/cache-entry-";
  constexpr int kIntervals = 6, kPasses = 20;
  uint64_t calls = 0, bytes = 0;
  auto named = [](const format::CountersFile& c) {
    std::set<uint32_t> ids;
    for (const format::IntervalRecord& r : c.intervals) {
      for (const format::FileRow& f : r.files) ids.insert(f.file);
    }
    return ids;
  };
  for (int i = 0; i < kIntervals; ++i) {
    for (int pass = 0; pass < kPasses; ++pass) {
      const uint64_t at_ms = i * 1000 + pass * 40;
      const uint32_t file = Intern(dir + std::to_string(i * kPasses + pass) + ".tmp");
      // Longer each pass: the newest file is the interval's busiest.
      AddCall(EventKind::Pread64, at_ms, at_ms + 1 + pass, file, 4096);
      ++calls;
      bytes += 4096;
      EXPECT_FALSE(counters_.MaybeEmit((at_ms + 30) * kMs, -1, false));
    }
    ASSERT_TRUE(counters_.MaybeEmit((i + 1) * 1000 * kMs, -1, false));
  }
  // Half the next interval, then read as a process killed there leaves it.
  for (int pass = 0; pass < kPasses / 2; ++pass) {
    const uint64_t at_ms = kIntervals * 1000 + pass * 40;
    const uint32_t file = Intern(dir + "next-" + std::to_string(pass) + ".tmp");
    AddCall(EventKind::Pread64, at_ms, at_ms + 1 + pass, file, 4096);
    ++calls;
    bytes += 4096;
    EXPECT_FALSE(counters_.MaybeEmit((at_ms + 30) * kMs, -1, false));
  }
  const format::CountersFile c = Read();
  ASSERT_EQ(c.intervals.size(), kIntervals + 1u);
  ASSERT_TRUE(c.so_far);
  uint64_t read_calls = 0, read_bytes = 0;
  for (const format::IntervalRecord& r : c.intervals) {
    for (const format::IoTotals& io : r.classes) {
      read_calls += io.reads;
      read_bytes += io.read_bytes;
    }
    EXPECT_EQ(r.files.size(), IntervalCounters::kTopFiles);
    for (const format::FileRow& f : r.files) EXPECT_EQ(c.strings.count(f.file), 1u);
  }
  EXPECT_EQ(read_calls, calls);
  EXPECT_EQ(read_bytes, bytes);
  // Every name the file defines is one its records name: 8 an interval.
  const std::set<uint32_t> ids = named(c);
  EXPECT_EQ(ids.size(), (kIntervals + 1) * IntervalCounters::kTopFiles);
  EXPECT_EQ(c.strings.size(), ids.size()) << "names defined that no record names";
  struct stat st;
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  // The paths named, the records (~40 bytes a file row), the header.
  const size_t bound = ids.size() * (dir.size() + 48) + (kIntervals + 1) * 200 + 1024;
  EXPECT_LE(static_cast<size_t>(st.st_size), bound);

  // The records kept end where the strings so far begin: read up to there
  // (the whole run's second pass), the same intervals but the one so far.
  format::CountersFile kept;
  std::string error;
  ASSERT_TRUE(format::ReadCountersFile(path_, &kept, &error, c.so_far_at)) << error;
  EXPECT_FALSE(kept.so_far);
  EXPECT_FALSE(kept.torn);
  EXPECT_EQ(kept.damaged, 0u);
  EXPECT_EQ(kept.intervals.size(), static_cast<size_t>(kIntervals));
  EXPECT_LT(kept.strings.size(), c.strings.size());
  // Cut anywhere in the tail (a kill during its write): the records kept,
  // then the record so far whole with its names, or none (torn).
  std::string whole(static_cast<size_t>(st.st_size), '\0');
  {
    std::FILE* f = std::fopen(path_.c_str(), "rb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fread(whole.data(), 1, whole.size(), f), whole.size());
    std::fclose(f);
  }
  for (off_t cut = static_cast<off_t>(c.so_far_at); cut <= st.st_size; ++cut) {
    std::FILE* f = std::fopen(path_.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(std::fwrite(whole.data(), 1, static_cast<size_t>(cut), f), static_cast<size_t>(cut));
    std::fclose(f);
    format::CountersFile t;
    ASSERT_TRUE(format::ReadCountersFile(path_, &t, &error)) << error;
    ASSERT_EQ(t.damaged, 0u) << cut;
    EXPECT_EQ(t.so_far, cut == st.st_size) << cut;
    if (cut == static_cast<off_t>(c.so_far_at)) {
      EXPECT_FALSE(t.torn);
    }
    ASSERT_EQ(t.intervals.size(), kIntervals + (t.so_far ? 1u : 0u)) << cut;
    for (const format::IntervalRecord& r : t.intervals) {
      for (const format::FileRow& f : r.files) EXPECT_EQ(t.strings.count(f.file), 1u) << cut;
    }
  }
}

TEST_F(IntervalCountersTest, TheRecordSoFarLeavesTheIntervalsClassesAsTheyWere) {
  // A file written, the record so far, then a wait that reads it, all in
  // one interval: its read is the wait's reading, as without the record so
  // far (the interval's events are classed by the use before it).
  const uint32_t file = Intern("/data/written.bin");
  AddCall(EventKind::Pwrite64, 1, 2, file, 4096);
  EXPECT_FALSE(counters_.MaybeEmit(200 * kMs, -1, false));
  AddCall(EventKind::Pread64, 302, 305, file, 4096);
  AddCall(EventKind::AppRegion, 300, 310, Intern("load_batch"), 0);
  ExpectOneWaitReading(1000, 3 * kMs);
}

}  // namespace
}  // namespace dlprof::core
