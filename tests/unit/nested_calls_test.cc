// The summary's nested calls (lib/analysis/meters/nested_calls.h) when a call
// starts in the same nanosecond as the call around it: the clock read twice
// within one of its steps (an AMD EPYC's TSC steps by 10 ns; a hot cuFileRead
// reaches its first pread in about that) gives both one start, and the
// stream, which orders one thread's events of one start as the ring holds
// them (by end), hands the nested call out first. Seen as integration.gds
// counting one 64 KiB pread of a cuFileRead beside it under load. The traces
// are files written as the runtime writes them, read as dlprof-dump
// --summary reads them.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "lib/analysis/meters/summary_builder.h"
#include "lib/analysis/summarize.h"
#include "lib/analysis/summary/partial_summary.h"
#include "lib/read/job.h"
#include "tests/helpers/trace_builder.h"
#include "tools/dump/summary_output.h"

namespace dlprof::dump {
using namespace dlprof::analysis;
namespace {

using testing::MakeEvent;

constexpr uint32_t kShard = 1, kOther = 2;
constexpr int32_t kPid = 1234, kMain = 1234, kWorker = 1240;

Event Call(EventKind kind, uint64_t start, uint64_t dur, uint32_t file, int64_t offset,
           uint64_t size, int64_t ret, uint16_t flags = 0) {
  Event e = MakeEvent(kind, start, dur);
  e.file = file;
  e.fd = 3;
  e.offset = offset;
  e.size = size;
  e.ret = ret;
  e.flags = flags;
  return e;
}

Event Pread(uint64_t start, uint64_t dur, uint32_t file, int64_t offset, int64_t ret,
            uint16_t flags = kEventFlagNested) {
  return Call(EventKind::Pread, start, dur, file, offset, 65536, ret, flags);
}

// A thread's events, each list a block, in the order the ring held them.
struct Run {
  int32_t tid;
  std::vector<std::vector<Event>> blocks;
};

std::string WriteTrace(const testing::ScratchDir& dir, const std::vector<Run>& runs) {
  format::ProcessInfo info = testing::DefaultProcess();
  info.pid = kPid;
  testing::TraceBuilder b(info);
  size_t most = 0;
  for (const Run& r : runs) most = std::max(most, r.blocks.size());
  for (size_t k = 0; k < most; ++k) {
    b.Block();
    if (k == 0) b.String(kShard, "/data/shard.bin").String(kOther, "/data/other.bin");
    for (const Run& r : runs) {
      if (k < r.blocks.size()) b.Events(r.tid, r.blocks[k]);
    }
  }
  return b.Write(dir.File("trace.dlprof"));
}

Summary SummarizeFile(const std::string& path) {
  const TraceCatalog catalog = CatalogTraces({path});
  SummarizeOptions o;
  o.selection.base_ns = catalog.base_ns();
  o.threads = 0;
  return Summarize(catalog, o).summary;
}

// The stream in batches of `n` events: a held call waits across batches.
class Batches : public EventSource {
 public:
  Batches(std::unique_ptr<FileStream> inner, size_t n) : inner_(std::move(inner)), n_(n) {}
  const std::vector<ProcessTrace>& processes() const override { return inner_->processes(); }
  size_t Next(StreamEvent* out, size_t max) override {
    return inner_->Next(out, std::min(max, n_));
  }

 private:
  std::unique_ptr<FileStream> inner_;
  size_t n_;
};

std::string SummaryInBatches(const std::string& path, size_t n) {
  const TraceCatalog catalog = CatalogTraces({path});
  Batches source(OpenStream(catalog, nullptr, {0}, 0), n);
  return SummaryJson(FinishSummary(AnalyzePartial(source)));
}

// The kinds of the events that start at `t`, in the stream's order.
std::vector<uint16_t> KindsAt(const std::string& path, uint64_t t) {
  const TraceCatalog catalog = CatalogTraces({path});
  std::unique_ptr<FileStream> stream = OpenStream(catalog, nullptr, {0}, 0);
  std::vector<uint16_t> out;
  StreamEvent batch[16];
  for (size_t n; (n = stream->Next(batch, 16)) > 0;) {
    for (size_t i = 0; i < n; ++i) {
      if (batch[i].event->start_ns == t) out.push_back(batch[i].event->kind);
    }
  }
  return out;
}

// The second cuFileRead of integration.gds's program as traced: its first
// pread starts in its nanosecond. Its bytes count once, however the
// stream's batches or the flusher's blocks cut the thread's events.
TEST(NestedCallsTest, ACallStartingWithTheCallAroundItIsCountedOnce) {
  const std::vector<Event> first = {
      Pread(1100, 400, kShard, 0, 65536), Pread(1500, 300, kShard, 65536, 65536),
      Pread(1800, 300, kShard, 131072, 65536), Pread(2100, 50, kShard, 196608, 3392),
      Call(EventKind::CufileRead, 1000, 1200, kShard, 0, 200000, 200000)};
  const std::vector<Event> second = {
      Pread(3000, 54, kShard, 200000, 65536), Pread(3060, 40, kShard, 265536, 34464),
      Pread(3110, 4, kShard, 300000, 0),
      Call(EventKind::CufileRead, 3000, 120, kShard, 200000, 200000, 100000)};
  const Event after = Call(EventKind::Close, 4000, 10, kShard, -1, 0, 0);
  std::vector<Event> all = first;
  all.insert(all.end(), second.begin(), second.end());
  all.push_back(after);
  // Drained between the second call's preads and its event, too.
  std::vector<Event> cut_before = first, cut_after = {second.back(), after};
  cut_before.insert(cut_before.end(), second.begin(), second.end() - 1);
  for (const auto& blocks : {std::vector<std::vector<Event>>{all},
                             std::vector<std::vector<Event>>{cut_before, cut_after}}) {
    testing::ScratchDir dir;
    const std::string path = WriteTrace(dir, {{kMain, blocks}});
    // What the test is about: the stream hands the pread out before its call.
    EXPECT_EQ(KindsAt(path, 3000),
              (std::vector<uint16_t>{static_cast<uint16_t>(EventKind::Pread),
                                     static_cast<uint16_t>(EventKind::CufileRead)}));
    const Summary s = SummarizeFile(path);
    const AccessStats& r = s.files.at("/data/shard.bin").read;
    EXPECT_EQ(r.bytes, 300000u) << blocks.size() << " blocks";
    EXPECT_EQ(r.ops, 2u);
    EXPECT_EQ(s.nested_events, 7u);
    EXPECT_EQ(s.run.read.bytes, 300000u);
    const std::string whole = SummaryInBatches(path, 256);
    for (size_t n : {1, 2, 5}) EXPECT_EQ(SummaryInBatches(path, n), whole) << "batches of " << n;
  }
}

// Held for a call around it that may come next, a nested call still counts
// where it did: inside a call that is no I/O or that is another file's, or
// when the call around it never comes (lost); and the figures keep the
// stream's order (each read of the file after the first is consecutive).
TEST(NestedCallsTest, ANestedCallThatDoesNotRepeatItsOuterCallStillCounts) {
  const std::vector<Event> main = {
      // MPI_Init reads a file of its own in its first nanosecond.
      Pread(1000, 50, kOther, 0, 65536), Call(EventKind::MpiInit, 1000, 500, 0, -1, 0, 0),
      // Another file's read in a cuFileRead's first nanosecond.
      Pread(2000, 50, kOther, 65536, 65536),
      Call(EventKind::CufileRead, 2000, 100, kShard, 0, 65536, 65536),
      // A read whose call around it was lost; then one not nested.
      Pread(3000, 50, kOther, 131072, 65536), Pread(4000, 50, kOther, 196608, 65536, 0)};
  // Another thread's reads, one in the lost call's nanosecond.
  const std::vector<Event> worker = {Pread(2999, 5, kShard, 65536, 65536, 0),
                                     Pread(3000, 5, kShard, 131072, 65536, 0)};
  testing::ScratchDir dir;
  const std::string path = WriteTrace(dir, {{kMain, {main}}, {kWorker, {worker}}});
  const Summary s = SummarizeFile(path);
  const AccessStats& other = s.files.at("/data/other.bin").read;
  EXPECT_EQ(other.ops, 4u);
  EXPECT_EQ(other.bytes, 4u * 65536);
  EXPECT_EQ(other.first, 1u);
  EXPECT_EQ(other.consecutive, 3u);
  const AccessStats& shard = s.files.at("/data/shard.bin").read;
  EXPECT_EQ(shard.ops, 3u);
  EXPECT_EQ(shard.consecutive, 2u);
  EXPECT_EQ(s.nested_events, 0u);
  const std::string whole = SummaryInBatches(path, 256);
  for (size_t n : {1, 2, 3}) EXPECT_EQ(SummaryInBatches(path, n), whole) << "batches of " << n;
}

}  // namespace
}  // namespace dlprof::dump
