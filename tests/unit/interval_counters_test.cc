// The flusher's per-interval counters (lib/core/interval_counters.h): the
// GPU record of each interval -- the union of its kernels', copies' and
// memsets' spans, less what an earlier interval counted of records that
// arrived late -- the newest event drained, and the record of the interval
// so far, written and read back, with the names of its files written over
// with it.
#include "lib/core/interval_counters.h"

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
#include "tests/helpers/interval_counters_fixture.h"

namespace dlprof::core {
namespace {

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
