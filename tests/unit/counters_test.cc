// The counters stream of bounded traces (lib/format/counters.h): records
// written and read back (a data stall and a lost record among them, whole or with
// figures no stretch can have), the interval so far, a torn last record,
// damage, and the file beside a trace's segments.
#include "lib/format/counters.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "lib/format/crc32c.h"
#include "lib/format/trace_file.h"

namespace dlprof::format {
namespace {

std::string Write(const std::vector<uint8_t>& bytes) {
  char path[] = "/tmp/counters_testXXXXXX";
  const int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  close(fd);
  return path;
}

std::vector<uint8_t> FileWithRecords(IntervalRecord* r) {
  ProcessInfo info;
  info.pid = 42;
  info.host = "node1";
  info.exe = "/bin/train";
  info.flags = kHeaderFlagSegment;
  std::vector<uint8_t> bytes = EncodeFileHeader(info);
  AppendStringsRecord({{3, "/data/a.bin"}, {7, "load_batch"}}, &bytes);
  r->start_ns = 1000;
  r->end_ns = 5000001000;
  r->rank = 2;
  r->events = 12345;
  r->classes[0].reads = 600;
  r->classes[0].read_bytes = 600 * 4096;
  r->classes[0].read_ns = 999;
  r->classes[4].other_calls = 2;
  r->kinds.push_back(KindRow{17, 600, 600 * 4096, 999, 1});
  FileRow f;
  f.file = 3;
  f.cls = 0;
  f.io = r->classes[0];
  r->files.push_back(f);
  r->regions.push_back(RegionRow{7, 30, 123456, 9999, 2000, 4000000000});
  AppendIntervalRecord(*r, &bytes);
  GpuRecord g;
  g.start_ns = 1000;
  g.busy_ns = 700;
  g.first_ns = 900;  // (a kernel drained in this interval that began before it)
  g.last_ns = 2100;
  g.spans = 4;
  AppendGpuRecord(g, &bytes);
  // Its preprocessing in a step split record after it, what its waits
  // cannot see in a step unseen record and its preprocessing's parts in a
  // step parts record (read as one).
  AppendStepRecord(StepRecord{1000, 3, 4567, 900, 1200, 700, 400, 16000, 2500, 3300}, &bytes);
  // (Measured an interval late: a stretch before the interval it follows.)
  AppendDataStallRecord(DataStallRecord{100, 1000, 600, 250}, &bytes);
  AppendLostRecord(LostRecord{2000, 3500, 777, 3, 28}, &bytes);  // a full disk
  AppendKeepRecord(KeepRecord{3000, 1000, 5000, "dlprof keep"}, &bytes);
  return bytes;
}

TEST(CountersTest, RoundTrip) {
  IntervalRecord r;
  const std::string path = Write(FileWithRecords(&r));
  CountersFile c;
  std::string error;
  ASSERT_TRUE(ReadCountersFile(path, &c, &error)) << error;
  unlink(path.c_str());
  EXPECT_EQ(c.info.pid, 42);
  EXPECT_EQ(c.info.host, "node1");
  EXPECT_FALSE(c.torn);
  EXPECT_EQ(c.damaged, 0u);
  EXPECT_EQ(c.strings.at(3), "/data/a.bin");
  ASSERT_EQ(c.intervals.size(), 1u);
  const IntervalRecord& d = c.intervals[0];
  EXPECT_EQ(d.start_ns, r.start_ns);
  EXPECT_EQ(d.end_ns, r.end_ns);
  EXPECT_EQ(d.rank, 2);
  EXPECT_EQ(d.events, 12345u);
  EXPECT_EQ(d.classes[0].reads, 600u);
  EXPECT_EQ(d.classes[0].read_bytes, 600u * 4096);
  EXPECT_EQ(d.classes[4].other_calls, 2u);
  ASSERT_EQ(d.kinds.size(), 1u);
  EXPECT_EQ(d.kinds[0].kind, 17u);
  EXPECT_EQ(d.kinds[0].errors, 1u);
  ASSERT_EQ(d.files.size(), 1u);
  EXPECT_EQ(d.files[0].io.read_ns, 999u);
  ASSERT_EQ(d.regions.size(), 1u);
  EXPECT_EQ(d.regions[0].count, 30u);
  EXPECT_EQ(d.regions[0].last_end_ns, 4000000000u);
  ASSERT_EQ(c.gpu.size(), 1u);
  EXPECT_EQ(c.gpu[0].start_ns, 1000u);
  EXPECT_EQ(c.gpu[0].busy_ns, 700u);
  EXPECT_EQ(c.gpu[0].first_ns, 900u);
  EXPECT_EQ(c.gpu[0].last_ns, 2100u);
  EXPECT_EQ(c.gpu[0].spans, 4u);
  ASSERT_EQ(c.lost.size(), 1u);
  EXPECT_EQ(c.lost[0].from_ns, 2000u);
  EXPECT_EQ(c.lost[0].to_ns, 3500u);
  EXPECT_EQ(c.lost[0].events, 777u);
  EXPECT_EQ(c.lost[0].blocks, 3u);
  EXPECT_EQ(c.lost[0].error, 28u);
  ASSERT_EQ(c.keeps.size(), 1u);
  EXPECT_EQ(c.keeps[0].reason, "dlprof keep");
  EXPECT_EQ(c.keeps[0].to_ns, 5000u);
  ASSERT_EQ(c.steps.size(), 1u);
  EXPECT_EQ(c.steps[0].start_ns, 1000u);
  EXPECT_EQ(c.steps[0].waits, 3u);
  EXPECT_EQ(c.steps[0].wait_ns, 4567u);
  EXPECT_EQ(c.steps[0].loop_start_ns, 900u);
  EXPECT_EQ(c.steps[0].preprocessing_ns, 1200u);
  EXPECT_EQ(c.steps[0].mapping_ns, 700u);
  EXPECT_EQ(c.steps[0].map_copy_ns, 400u);
  EXPECT_EQ(c.steps[0].unjoined_ns, 16000u);
  EXPECT_EQ(c.steps[0].other_threads_io_ns, 2500u);
  EXPECT_EQ(c.steps[0].map_live_ns, 3300u);
  ASSERT_EQ(c.stalls.size(), 1u);
  EXPECT_EQ(c.stalls[0].from_ns, 100u);
  EXPECT_EQ(c.stalls[0].to_ns, 1000u);
  EXPECT_EQ(c.stalls[0].io_ns, 600u);
  EXPECT_EQ(c.stalls[0].stall_ns, 250u);
}

// Data stall records handed to a visitor in the file's order, between the
// records around them; one whose figures no stretch can have (more stall
// than I/O, more I/O than the stretch's length), though framed and checked
// whole, is damage: itself skipped, the records after it read.
TEST(CountersTest, DataStallRecordsAreVisitedInOrderAndImpossibleOnesRejected) {
  struct Order : CountersVisitor {
    std::vector<std::string> seen;
    std::vector<DataStallRecord> stalls;
    void Interval(IntervalRecord& r) override { seen.push_back("interval"); }
    void Gpu(GpuRecord& r) override { seen.push_back("gpu"); }
    void DataStall(DataStallRecord& r) override {
      seen.push_back("stall");
      stalls.push_back(r);
    }
  };
  ProcessInfo info;
  info.pid = 42;
  info.flags = kHeaderFlagSegment;
  std::vector<uint8_t> bytes = EncodeFileHeader(info);
  IntervalRecord r;
  r.start_ns = 5000;
  r.end_ns = 10000;
  AppendIntervalRecord(r, &bytes);
  AppendDataStallRecord(DataStallRecord{1000, 5000, 4000, 0}, &bytes);  // I/O, GPU always busy
  AppendDataStallRecord(DataStallRecord{1000, 5000, 300, 301}, &bytes);   // stall > I/O
  AppendDataStallRecord(DataStallRecord{1000, 5000, 4001, 10}, &bytes);   // I/O > stretch
  AppendGpuRecord(GpuRecord{5000, 10, 5100, 5200, 1}, &bytes);
  r.start_ns = 10000;
  r.end_ns = 15000;
  AppendIntervalRecord(r, &bytes);
  // A stretch of no I/O at all, and one of a month of it, stalled whole.
  AppendDataStallRecord(DataStallRecord{5000, 10000, 0, 0}, &bytes);
  constexpr uint64_t kMonth = 31ull * 24 * 3600 * 1000000000;
  AppendDataStallRecord(DataStallRecord{10000, 10000 + kMonth, kMonth, kMonth}, &bytes);
  const std::string path = Write(bytes);
  Order order;
  CountersFile c;
  std::string error;
  ASSERT_TRUE(VisitCountersFile(path, &order, &c, &error)) << error;
  EXPECT_EQ(order.seen, (std::vector<std::string>{"interval", "stall", "gpu", "interval",
                                                  "stall", "stall"}));
  EXPECT_EQ(c.damaged, 2u);
  ASSERT_EQ(order.stalls.size(), 3u);
  EXPECT_EQ(order.stalls[0].from_ns, 1000u);
  EXPECT_EQ(order.stalls[0].to_ns, 5000u);
  EXPECT_EQ(order.stalls[0].io_ns, 4000u);
  EXPECT_EQ(order.stalls[0].stall_ns, 0u);
  EXPECT_EQ(order.stalls[1].io_ns, 0u);
  EXPECT_EQ(order.stalls[2].to_ns, 10000 + kMonth);
  EXPECT_EQ(order.stalls[2].stall_ns, kMonth);
  // Read whole: the same records.
  CountersFile whole;
  ASSERT_TRUE(ReadCountersFile(path, &whole, &error)) << error;
  unlink(path.c_str());
  EXPECT_EQ(whole.damaged, 2u);
  ASSERT_EQ(whole.stalls.size(), 3u);
  EXPECT_EQ(whole.stalls[2].io_ns, kMonth);
  EXPECT_EQ(whole.intervals.size(), 2u);
  EXPECT_EQ(whole.gpu.size(), 1u);
}

// A batch record's samples read back, and one written before the longest
// waits were kept (the record ending at its fetches) read with none.
TEST(CountersTest, BatchRecordRoundTripAndWithoutLongestWaits) {
  constexpr uint64_t kTag = 77ull << 42;
  BatchRecord b;
  b.start_ns = 5000;
  b.level = 3;
  b.flow_waits = 40;
  b.flow_wait_ns = 123456;
  b.waits.push_back(WaitSample{kTag | 24, 4000, 4500});  // began in the interval before
  b.longest.push_back(WaitSample{kTag | 31, 6000, 9000});
  b.longest.push_back(WaitSample{kTag | 17, 5100, 7000});
  FetchSample f;
  f.id = kTag | 31;
  f.start_ns = 5500;
  f.end_ns = 8800;
  f.read_us[7] = 3;
  b.fetches.push_back(f);
  ProcessInfo info;
  info.pid = 42;
  info.flags = kHeaderFlagSegment;
  const std::vector<uint8_t> header = EncodeFileHeader(info);
  std::vector<uint8_t> now = header, before = header;
  AppendBatchRecord(b, &now);
  b.longest.clear();
  AppendBatchRecord(b, &before);
  // The record as written before: its last byte (the count of no longest
  // waits) gone, its header's length and checksum made again.
  CounterRecordHeader h;
  std::memcpy(&h, before.data() + header.size(), sizeof(h));
  ASSERT_EQ(before.back(), 0);
  before.pop_back();
  --h.payload_bytes;
  h.payload_crc = Crc32c(before.data() + header.size() + sizeof(h), h.payload_bytes);
  std::memcpy(before.data() + header.size(), &h, sizeof(h));

  for (const auto* bytes : {&now, &before}) {
    const std::string path = Write(*bytes);
    CountersFile c;
    std::string error;
    ASSERT_TRUE(ReadCountersFile(path, &c, &error)) << error;
    unlink(path.c_str());
    EXPECT_EQ(c.damaged, 0u);
    ASSERT_EQ(c.batches.size(), 1u);
    const BatchRecord& d = c.batches[0];
    EXPECT_EQ(d.level, 3);
    EXPECT_EQ(d.flow_wait_ns, 123456u);
    ASSERT_EQ(d.waits.size(), 1u);
    EXPECT_EQ(d.waits[0].start_ns, 4000u);
    ASSERT_EQ(d.fetches.size(), 1u);
    EXPECT_EQ(d.fetches[0].end_ns, 8800u);
    EXPECT_EQ(d.fetches[0].read_us[7], 3u);
    if (bytes == &before) {
      EXPECT_TRUE(d.longest.empty());
      continue;
    }
    ASSERT_EQ(d.longest.size(), 2u);
    EXPECT_EQ(d.longest[0].id, kTag | 31);
    EXPECT_EQ(d.longest[0].end_ns, 9000u);
    EXPECT_EQ(d.longest[1].id, kTag | 17);
    EXPECT_EQ(d.longest[1].start_ns, 5100u);
  }
}

// SIGKILL while a record was being appended: what came before reads.
TEST(CountersTest, TornLastRecordIsSkipped) {
  IntervalRecord r;
  std::vector<uint8_t> bytes = FileWithRecords(&r);
  for (size_t cut : {size_t{3}, size_t{10}, size_t{20}}) {
    std::vector<uint8_t> torn(bytes.begin(), bytes.end() - cut);
    const std::string path = Write(torn);
    CountersFile c;
    std::string error;
    ASSERT_TRUE(ReadCountersFile(path, &c, &error)) << error;
    unlink(path.c_str());
    EXPECT_TRUE(c.torn) << cut;
    EXPECT_EQ(c.intervals.size(), 1u);
    EXPECT_TRUE(c.keeps.empty());
  }
}

TEST(CountersTest, TheIntervalSoFarCountsOnlyAsTheLastRecord) {
  IntervalRecord r;
  std::vector<uint8_t> bytes = FileWithRecords(&r);
  IntervalRecord so_far = r;
  so_far.start_ns = r.end_ns;
  so_far.end_ns = r.end_ns + 200000000;
  so_far.classes[0].reads = 7;
  so_far.so_far = true;
  const uint64_t kept = bytes.size();
  AppendIntervalRecord(so_far, &bytes);
  auto read = [](const std::vector<uint8_t>& b, uint64_t limit = UINT64_MAX) {
    const std::string path = Write(b);
    CountersFile c;
    std::string error;
    EXPECT_TRUE(ReadCountersFile(path, &c, &error, limit)) << error;
    unlink(path.c_str());
    return c;
  };
  CountersFile c = read(bytes);
  EXPECT_TRUE(c.so_far);
  EXPECT_EQ(c.so_far_at, kept);
  EXPECT_EQ(c.damaged, 0u);
  // Read up to it (a reader's second pass: the records kept alone).
  CountersFile before = read(bytes, kept);
  EXPECT_FALSE(before.so_far);
  EXPECT_FALSE(before.torn);
  EXPECT_EQ(before.intervals.size(), 1u);
  ASSERT_EQ(c.intervals.size(), 2u);
  EXPECT_FALSE(c.intervals[0].so_far);
  EXPECT_TRUE(c.intervals[1].so_far);
  EXPECT_EQ(c.intervals[1].classes[0].reads, 7u);
  EXPECT_EQ(c.intervals[1].end_ns, so_far.end_ns);
  // A record after it (its writer writes every record over it): stale.
  AppendKeepRecord(KeepRecord{1, 2, 3, "k"}, &bytes);
  c = read(bytes);
  EXPECT_FALSE(c.so_far);
  EXPECT_EQ(c.intervals.size(), 1u);
  EXPECT_EQ(c.keeps.size(), 2u);
}

TEST(CountersTest, DamagedRecordIsCountedAndSkipped) {
  IntervalRecord r;
  std::vector<uint8_t> bytes = FileWithRecords(&r);
  bytes[bytes.size() - 2] ^= 0xff;  // in the keep record's payload
  const std::string path = Write(bytes);
  CountersFile c;
  std::string error;
  ASSERT_TRUE(ReadCountersFile(path, &c, &error)) << error;
  unlink(path.c_str());
  EXPECT_EQ(c.damaged, 1u);
  EXPECT_EQ(c.intervals.size(), 1u);
  EXPECT_TRUE(c.keeps.empty());
}

// A record's header damaged (its magic, or its length, which no checksum
// covers): reading goes on at the next whole record, and says where the
// damage was and how much was skipped.
TEST(CountersTest, DamagedHeaderSkipsToTheNextWholeRecord) {
  IntervalRecord r;
  const std::vector<uint8_t> clean = FileWithRecords(&r);
  // The interval record's header: after the file header and the strings
  // record, both whole in the clean file.
  CountersFile whole;
  std::string error;
  const std::string clean_path = Write(clean);
  ASSERT_TRUE(ReadCountersFile(clean_path, &whole, &error)) << error;
  unlink(clean_path.c_str());
  uint32_t header_size = 0;
  std::memcpy(&header_size, clean.data() + 12, 4);
  CounterRecordHeader strings;
  std::memcpy(&strings, clean.data() + header_size, sizeof(strings));
  const size_t interval_at = header_size + sizeof(strings) + strings.payload_bytes;
  for (size_t field : {offsetof(CounterRecordHeader, magic),
                       offsetof(CounterRecordHeader, payload_bytes)}) {
    std::vector<uint8_t> bytes = clean;
    bytes[interval_at + field + 1] ^= 0x5a;
    const std::string path = Write(bytes);
    CountersFile c;
    ASSERT_TRUE(ReadCountersFile(path, &c, &error)) << error;
    unlink(path.c_str());
    EXPECT_FALSE(c.torn) << field;
    EXPECT_EQ(c.damaged, 1u) << field;
    ASSERT_EQ(c.damage.size(), 1u) << field;
    EXPECT_EQ(c.damage[0].at, interval_at) << field;
    CounterRecordHeader h;
    std::memcpy(&h, clean.data() + interval_at, sizeof(h));
    EXPECT_EQ(c.damage[0].bytes, sizeof(h) + h.payload_bytes) << field;
    // The interval lost, the records after it read.
    EXPECT_TRUE(c.intervals.empty()) << field;
    EXPECT_EQ(c.gpu.size(), 1u) << field;
    ASSERT_EQ(c.keeps.size(), 1u) << field;
    EXPECT_EQ(c.keeps[0].reason, "dlprof keep") << field;
  }
}

// A file of many MiB is read through a window of a few: every record read
// once, in order, whichever window it straddles (a strings record of most
// of a MiB among them); damage found where it is, whatever the window; and
// a limit reads a prefix, its last record cut.
TEST(CountersTest, ALongFileIsReadThroughAWindow) {
  ProcessInfo info;
  info.pid = 42;
  info.flags = kHeaderFlagSegment;
  std::vector<uint8_t> bytes = EncodeFileHeader(info);
  std::vector<size_t> at;  // each interval record's offset
  constexpr uint64_t kRecords = 60000;
  for (uint64_t i = 0; i < kRecords; ++i) {
    if (i == 20000) AppendStringsRecord({{9, std::string(900000, 'x')}}, &bytes);
    IntervalRecord r;
    r.start_ns = i * 1000;
    r.end_ns = r.start_ns + 1000;
    for (uint32_t k = 0; k < 8; ++k) r.kinds.push_back(KindRow{k, i, i * 4096, i * 7, 0});
    at.push_back(bytes.size());
    AppendIntervalRecord(r, &bytes);
  }
  ASSERT_GT(bytes.size(), size_t{9} << 20);  // more than two windows
  // Damage: a record's magic at about 4 and 8 MiB (where windows meet).
  std::vector<uint64_t> damaged;
  for (size_t near : {size_t{4} << 20, size_t{8} << 20}) {
    const size_t k = std::lower_bound(at.begin(), at.end(), near) - at.begin() - 1;
    bytes[at[k]] ^= 0xff;
    damaged.push_back(k);
  }
  const std::string path = Write(bytes);
  CountersFile c;
  std::string error;
  ASSERT_TRUE(ReadCountersFile(path, &c, &error)) << error;
  EXPECT_EQ(c.bytes, bytes.size());
  EXPECT_FALSE(c.torn);
  ASSERT_EQ(c.damage.size(), 2u);
  for (size_t d = 0; d < 2; ++d) {
    EXPECT_EQ(c.damage[d].at, at[damaged[d]]);
    EXPECT_EQ(c.damage[d].bytes, at[damaged[d] + 1] - at[damaged[d]]);
  }
  EXPECT_EQ(c.strings.at(9).size(), 900000u);
  ASSERT_EQ(c.intervals.size(), kRecords - 2);
  size_t n = 0;
  for (uint64_t i = 0; i < kRecords; ++i) {
    if (i == damaged[0] || i == damaged[1]) continue;
    EXPECT_EQ(c.intervals[n].start_ns, i * 1000);
    EXPECT_EQ(c.intervals[n].kinds[7].calls, i);
    ++n;
  }
  // Its first bytes, to the middle of record 50,000: the records before it.
  CountersFile prefix;
  ASSERT_TRUE(ReadCountersFile(path, &prefix, &error, at[50000] + 30)) << error;
  unlink(path.c_str());
  EXPECT_EQ(prefix.bytes, at[50000] + 30);
  EXPECT_TRUE(prefix.torn);
  ASSERT_EQ(prefix.intervals.size(), 50000u - 2);
  EXPECT_EQ(prefix.intervals.back().start_ns, 49999u * 1000);
}

TEST(CountersTest, NotACountersFile) {
  const std::string path = Write({'h', 'e', 'l', 'l', 'o'});
  CountersFile c;
  std::string error;
  EXPECT_FALSE(ReadCountersFile(path, &c, &error));
  unlink(path.c_str());
  EXPECT_NE(error.find("not a dlprof trace"), std::string::npos) << error;
}

TEST(CountersTest, PathBesideEverySegment) {
  EXPECT_EQ(CountersPathOf("/t/r/h/train-h-1-ab.dlprof"), "/t/r/h/train-h-1-ab.dlcount");
  EXPECT_EQ(CountersPathOf("/t/r/h/train-h-1-ab.k12.dlprof"), "/t/r/h/train-h-1-ab.dlcount");
  EXPECT_EQ(CountersPathOf("/t/r/h/a.kx.dlprof"), "/t/r/h/a.kx.dlcount");
}

}  // namespace
}  // namespace dlprof::format
