// The whole run's record so far (lib/analysis/whole_run.h): a counters file
// whose last interval is in progress, its files named in strings so far
// (docs/FORMAT_BOUNDED.md, record 11) before it. The whole run counts the
// interval once and names its files, though its second pass stops where
// the records kept end, before those names.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "dlprof/format.h"
#include "lib/analysis/whole_run.h"
#include "lib/format/counters.h"
#include "lib/format/path_class.h"

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
  char dir[] = "/tmp/whole_run_so_farXXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  format::ProcessInfo info;
  info.pid = 7;
  info.host = "node1";
  info.exe = "/bin/cache";
  info.flags = kHeaderFlagSegment;
  std::vector<uint8_t> bytes = format::EncodeFileHeader(info);
  format::AppendStringsRecord({{2, "/cache/kept.tmp"}}, &bytes);
  format::AppendIntervalRecord(Reads(1000 * kS, 2, 5, false), &bytes);
  // The tail a pass leaves: the names of the record so far, then it.
  format::AppendStringsRecord({{3, "/cache/so-far.tmp"}}, &bytes, format::kCounterStringsSoFar);
  format::AppendIntervalRecord(Reads(1001 * kS, 3, 7, true), &bytes);
  const std::string stem = std::string(dir) + "/cache-node1-7";
  const std::string path = stem + format::kCountersSuffix;
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
  read::TraceCatalog catalog;
  read::CatalogEntry t;
  t.path = stem + ".dlprof";
  t.opened = true;
  t.info = info;
  catalog.Add(std::move(t));

  const WholeRun w = ReadWholeRun(catalog, read::ClockAlignment(), "load_batch");
  unlink(path.c_str());
  rmdir(dir);
  ASSERT_TRUE(w.present);
  EXPECT_EQ(w.classes[format::kPathData].reads, 12u);
  EXPECT_EQ(w.classes[format::kPathData].read_bytes, 12u * 4096);
  ASSERT_EQ(w.files.size(), 2u);
  EXPECT_EQ(w.files[0].path, "/cache/so-far.tmp");
  EXPECT_EQ(w.files[0].io.reads, 7u);
  EXPECT_EQ(w.files[1].path, "/cache/kept.tmp");
  EXPECT_EQ(w.files[1].io.reads, 5u);
}

}  // namespace
}  // namespace dlprof::analysis
