// The whole run's record so far (lib/analysis/whole_run.h): a counters file
// whose last interval is in progress, its files named in strings so far
// (docs/FORMAT_BOUNDED.md, record 11) before it. The whole run counts the
// interval once and names its files, though its second pass stops where
// the records kept end, before those names. And a file that processes
// class each by their own use: the job's class.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "lib/analysis/whole_run.h"
#include "lib/format/counters.h"
#include "lib/format/path_class.h"
#include "tests/helpers/counters_dir.h"

namespace dlprof::analysis {
namespace {

constexpr uint64_t kS = 1000000000;

// An interval of `reads` 4 KiB reads of file `file` (a string id), from `at`.
format::IntervalRecord Reads(uint64_t at, uint32_t file, uint64_t reads, bool so_far) {
  format::IntervalRecord r;
  r.start_ns = at;
  r.end_ns = at + kS;
  r.so_far = so_far;
  format::IoTotals io;
  io.reads = reads;
  io.read_bytes = reads * 4096;
  io.read_ns = reads * 1000;
  r.classes[format::kPathData] = io;
  r.files.push_back(format::FileRow{file, format::kPathData, io});
  return r;
}

TEST(WholeRunSoFarTest, TheRecordSoFarsFilesAreNamedAndCountedOnce) {
  testing::CountersDir dir("whole_run_so_far");
  ASSERT_FALSE(dir.empty());
  std::vector<uint8_t> bytes;
  format::AppendStringsRecord({{2, "/cache/kept.tmp"}}, &bytes);
  format::AppendIntervalRecord(Reads(1000 * kS, 2, 5, false), &bytes);
  // The tail a pass leaves: the names of the record so far, then it.
  format::AppendStringsRecord({{3, "/cache/so-far.tmp"}}, &bytes, format::kCounterStringsSoFar);
  format::AppendIntervalRecord(Reads(1001 * kS, 3, 7, true), &bytes);
  dir.Add(testing::SegmentProcess(7, "/bin/cache"), bytes);

  const WholeRun w = dir.Read();
  ASSERT_TRUE(w.present);
  EXPECT_EQ(w.classes[format::kPathData].reads, 12u);
  EXPECT_EQ(w.classes[format::kPathData].read_bytes, 12u * 4096);
  ASSERT_EQ(w.files.size(), 2u);
  EXPECT_EQ(w.files[0].path, "/cache/so-far.tmp");
  EXPECT_EQ(w.files[0].io.reads, 7u);
  EXPECT_EQ(w.files[1].path, "/cache/kept.tmp");
  EXPECT_EQ(w.files[1].io.reads, 5u);
}

// A shard the loop's process wrote (an output, by its use) and its loader
// worker read (data, by its): the whole run's top files name it data, as
// the full events class it by the job's use, whichever process is read
// last (the last one's class was taken: "(outputs)" for a data shard).
TEST(WholeRunSoFarTest, AFileIsClassedByTheJobsUseOfIt) {
  testing::CountersDir dir("whole_run_class");
  ASSERT_FALSE(dir.empty());
  for (const int32_t pid : {8, 7}) {  // the reader first, the writer last
    std::vector<uint8_t> bytes;
    format::AppendStringsRecord({{2, "/scratch/shard.bin"}}, &bytes);
    format::IntervalRecord r = Reads(1000 * kS, 2, 5, false);
    if (pid == 7) {  // the writer's: 5 writes, an output to it
      format::IoTotals& io = r.files[0].io;
      std::swap(io.reads, io.writes);
      std::swap(io.read_bytes, io.write_bytes);
      std::swap(io.read_ns, io.write_ns);
      r.files[0].cls = format::kPathOutputs;
      r.classes[format::kPathOutputs] = io;
      r.classes[format::kPathData] = format::IoTotals();
    }
    format::AppendIntervalRecord(r, &bytes);
    dir.Add(testing::SegmentProcess(pid, "/usr/bin/python3"), bytes);
  }
  const WholeRun w = dir.Read();
  ASSERT_EQ(w.files.size(), 1u);
  EXPECT_EQ(w.files[0].cls, format::kPathData);
  EXPECT_EQ(w.files[0].io.reads, 5u);
  EXPECT_EQ(w.files[0].io.writes, 5u);
  // Each process's calls stay in the class its use gave them.
  EXPECT_EQ(w.classes[format::kPathData].reads, 5u);
  EXPECT_EQ(w.classes[format::kPathOutputs].writes, 5u);
}

}  // namespace
}  // namespace dlprof::analysis
