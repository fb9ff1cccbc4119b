// FileStream: the time-ordered merge of trace files, block by block.
#include "lib/read/file_stream.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "tests/helpers/trace_builder.h"
#include "lib/read/trace_set.h"

namespace dlprof::read {
namespace {

using testing::Contains;
using testing::MakeEvent;
using testing::ScratchDir;
using testing::TraceBuilder;

struct Seen {
  uint64_t start;
  int32_t pid, tid;
  uint32_t process, index;
  uint64_t aux;  // which event it was
};

std::vector<Seen> Drain(FileStream& s) {
  std::vector<Seen> out;
  StreamEvent batch[7];  // a small batch: events cross batch boundaries
  for (size_t n; (n = s.Next(batch, 7)) > 0;) {
    for (size_t i = 0; i < n; ++i) {
      const StreamEvent& e = batch[i];
      out.push_back({e.event->start_ns, s.processes()[e.process].info.pid, e.tid, e.process,
                     e.index, e.event->aux});
    }
  }
  return out;
}

Event At(uint64_t start, uint64_t dur, uint64_t id) {
  Event e = MakeEvent(EventKind::Pread64, start, dur);
  e.aux = id;
  return e;
}

// Two processes, blocks whose spans overlap (a long call written late, two
// threads), random times: the stream equals a full sort by
// (start, pid, tid), and each process's indexes count up from 0.
TEST(FileStreamTest, MergesOverlappingBlocksInOrder) {
  ScratchDir dir;
  std::mt19937_64 rng(3);
  std::vector<std::tuple<uint64_t, int32_t, int32_t, uint64_t>> want;
  std::vector<std::string> files;
  uint64_t id = 0;
  for (int32_t pid : {200, 100}) {
    format::ProcessInfo info = testing::DefaultProcess();
    info.pid = pid;
    TraceBuilder b(info);
    uint64_t t = 1000;
    for (int block = 0; block < 12; ++block) {
      b.Block();
      for (int32_t tid : {pid, pid + 1}) {
        std::vector<Event> events;
        for (int i = 0; i < 40; ++i) {
          // Mostly moving forward; now and then a call that started long ago.
          const uint64_t start = rng() % 10 == 0 ? t - std::min<uint64_t>(t - 1, rng() % 3000)
                                                 : t + rng() % 50;
          events.push_back(At(start, rng() % 100, ++id));
          want.emplace_back(start, pid, tid, id);
          t += 20;
        }
        b.Events(tid, events);
      }
    }
    files.push_back(b.Write(dir.File("p" + std::to_string(pid) + ".dlprof")));
  }
  // Ties keep file order: stable sort of the events as written.
  std::stable_sort(want.begin(), want.end(), [](const auto& a, const auto& b) {
    return std::make_tuple(std::get<0>(a), std::get<1>(a), std::get<2>(a)) <
           std::make_tuple(std::get<0>(b), std::get<1>(b), std::get<2>(b));
  });

  FileStream stream(files);
  std::vector<Seen> got = Drain(stream);
  ASSERT_EQ(got.size(), want.size());
  std::vector<uint32_t> next_index(2, 0);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].start, std::get<0>(want[i])) << i;
    EXPECT_EQ(got[i].pid, std::get<1>(want[i])) << i;
    EXPECT_EQ(got[i].tid, std::get<2>(want[i])) << i;
    EXPECT_EQ(got[i].aux, std::get<3>(want[i])) << i;
    EXPECT_EQ(got[i].index, next_index[got[i].process]++);
  }
  for (const auto& p : stream.processes()) {
    EXPECT_EQ(p.blocks, 12u);
    EXPECT_TRUE(p.clean());
  }
}

// A call that lasted the whole run is written in the last block: that block
// is decoded early and kept, the others come and go. The strings the last
// block's events use were written in the first block.
TEST(FileStreamTest, LongCallInLastBlockKeepsMemoryBounded) {
  ScratchDir dir;
  TraceBuilder b;
  b.Block().String(5, "/data/shard");
  const int kBlocks = 50, kPerBlock = 100;
  uint64_t t = 1000, id = 0;
  for (int block = 0; block < kBlocks; ++block) {
    if (block > 0) b.Block();
    std::vector<Event> events;
    for (int i = 0; i < kPerBlock; ++i, t += 10) events.push_back(At(t, 5, ++id));
    if (block == kBlocks - 1) {
      Event whole = At(500, t - 500, 0);
      whole.file = 5;
      events.push_back(whole);
    }
    b.Events(1234, events);
  }
  const std::string file = b.Write(dir.File("t.dlprof"));
  FileStream stream({file});
  std::vector<Seen> got = Drain(stream);
  ASSERT_EQ(got.size(), static_cast<size_t>(kBlocks * kPerBlock + 1));
  EXPECT_EQ(got.front().start, 500u);
  for (size_t i = 1; i < got.size(); ++i) EXPECT_LE(got[i - 1].start, got[i].start);
  // The last block, plus one or two of the others at a time.
  EXPECT_LE(stream.peak_window_events(), static_cast<size_t>(3 * kPerBlock + 1));
  EXPECT_EQ(stream.processes()[0].strings.at(5), "/data/shard");
  for (const auto& m : stream.processes()[0].messages) ADD_FAILURE() << m;
}

// A job of many short processes, one after another (DataLoader workers
// respawned each epoch, ranks of an array job): each file is decoded when
// the merge reaches its first event and freed after its last, so that few
// are held at once, not every one of them. Where all overlap, all are held.
TEST(FileStreamTest, DecodesEachFileOnlyWhileTheMergeIsInIt) {
  ScratchDir dir;
  const int kFiles = 300, kPerFile = 20;
  std::vector<std::string> apart, together;
  for (int f = 0; f < kFiles; ++f) {
    for (bool overlap : {false, true}) {
      format::ProcessInfo info = testing::DefaultProcess();
      info.pid = 1000 + f;
      TraceBuilder b(info);
      b.Block();
      std::vector<Event> events;
      const uint64_t t0 = overlap ? 1000 + f : 1000 + uint64_t{10000} * f;
      for (int i = 0; i < kPerFile; ++i) events.push_back(At(t0 + 100 * i, 50, f * kPerFile + i));
      b.Events(info.pid, events);
      const std::string name = (overlap ? "t" : "a") + std::to_string(f) + ".dlprof";
      (overlap ? together : apart).push_back(b.Write(dir.File(name)));
    }
  }
  for (bool overlap : {false, true}) {
    // In an order of their own: the merge, not the input, orders them.
    std::vector<std::string> files = overlap ? together : apart;
    std::reverse(files.begin(), files.end());
    FileStream stream(files);
    std::vector<Seen> got = Drain(stream);
    ASSERT_EQ(got.size(), static_cast<size_t>(kFiles * kPerFile));
    for (size_t i = 1; i < got.size(); ++i) {
      ASSERT_LE(std::tie(got[i - 1].start, got[i - 1].pid), std::tie(got[i].start, got[i].pid));
    }
    if (overlap) {
      EXPECT_EQ(stream.peak_files_decoded(), static_cast<size_t>(kFiles));
    } else {
      EXPECT_LE(stream.peak_files_decoded(), 2u);  // one, and the one before it
    }
    for (const auto& p : stream.processes()) EXPECT_TRUE(p.clean()) << p.path;
  }
}

// Spans that all overlap (as a hostile file could claim): the window stops
// at its limit, every event still comes out once, and the user is told.
TEST(FileStreamTest, WindowLimitWarnsAndLosesNothing) {
  ScratchDir dir;
  TraceBuilder b;
  uint64_t id = 0;
  for (int block = 0; block < 10; ++block) {
    b.Block();
    std::vector<Event> events;
    for (int i = 0; i < 20; ++i) events.push_back(At(1000 + static_cast<uint64_t>(i), 0, ++id));
    b.Events(1234, events);
  }
  const std::string file = b.Write(dir.File("t.dlprof"));
  FileStream stream({file}, /*threads=*/0, /*window_events=*/50);
  std::vector<Seen> got = Drain(stream);
  ASSERT_EQ(got.size(), 200u);
  std::vector<uint64_t> ids;
  for (const Seen& s : got) ids.push_back(s.aux);
  std::sort(ids.begin(), ids.end());
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(ids[i], i + 1);
  EXPECT_LE(stream.peak_window_events(), 50u + 20u);
  ASSERT_FALSE(stream.processes()[0].messages.empty());
  EXPECT_TRUE(Contains(stream.processes()[0].messages[0], "merged out of order"));
}

// Records of minor faults the kernel's buffers could not hold
// (map_waits_lost, two threads'): counted, and the reader told how many,
// once (waits for pages read ahead among them are no map_wait events).
TEST(FileStreamTest, LostMinorFaultRecordsAreSaid) {
  ScratchDir dir;
  TraceBuilder b;
  b.Block();
  Event lost = MakeEvent(EventKind::MapWaitsLost, 1000);
  lost.ret = 700;
  Event more = MakeEvent(EventKind::MapWaitsLost, 2000);
  more.ret = 300;
  b.Events(1234, {lost});
  b.Events(1235, {more});
  const std::string file = b.Write(dir.File("t.dlprof"));
  FileStream stream({file});
  EXPECT_EQ(Drain(stream).size(), 2u);
  EXPECT_EQ(stream.processes()[0].map_waits_lost, 1000u);
  int said = 0;
  for (const auto& m : stream.processes()[0].messages) {
    said += Contains(m, "1000 minor-fault records did not fit") ? 1 : 0;
  }
  EXPECT_EQ(said, 1);
}

// A damaged block is reported once and skipped; the others are merged.
TEST(FileStreamTest, DamagedBlockIsSkipped) {
  ScratchDir dir;
  TraceBuilder b;
  for (int block = 0; block < 3; ++block) {
    b.Block().Events(1234, {At(1000 + 100 * static_cast<uint64_t>(block), 1, 1),
                            At(1050 + 100 * static_cast<uint64_t>(block), 1, 2)});
  }
  testing::TraceBytes t = b.Build();
  testing::FlipBit(&t.bytes, t.block_offsets[1] + sizeof(BlockHeader) + 3);
  ASSERT_TRUE(testing::WriteFile(dir.File("t.dlprof"), t.bytes));
  FileStream stream({dir.File("t.dlprof")});
  EXPECT_EQ(Drain(stream).size(), 4u);
  const ProcessTrace& p = stream.processes()[0];
  EXPECT_EQ(p.damaged_blocks, 1u);
  ASSERT_EQ(p.messages.size(), 1u);
  EXPECT_TRUE(Contains(p.messages[0], "block checksum mismatch"));
}

// A file whose header the catalog read, deleted before the stream opens it
// (a bounded trace's sweep removes old segments while the job runs), is a
// note, not an error; the other files decode whole. One never read before
// (named, missing) is still an error.
TEST(FileStreamTest, AFileDeletedAfterTheCatalogReadItIsANote) {
  ScratchDir dir;
  TraceBuilder b;
  b.Block().Events(1234, {At(1000, 1, 1), At(1050, 1, 2)});
  ASSERT_TRUE(testing::WriteFile(dir.File("t.dlprof"), b.Build().bytes));
  const std::vector<std::string> files = {dir.File("gone.k0.dlprof"), dir.File("t.dlprof")};
  FileStream stream(files, 0, kMaxWindowEvents, {}, {}, {true, true});
  EXPECT_EQ(Drain(stream).size(), 2u);
  const ProcessTrace& gone = stream.processes()[0];
  EXPECT_FALSE(gone.opened);
  EXPECT_TRUE(gone.vanished);
  ASSERT_EQ(gone.messages.size(), 1u);
  EXPECT_TRUE(Contains(gone.messages[0], "note: ")) << gone.messages[0];
  EXPECT_TRUE(Contains(gone.messages[0], "deleted after it was listed")) << gone.messages[0];
  EXPECT_TRUE(stream.processes()[1].opened);
  FileStream named(files, 0);
  EXPECT_FALSE(named.processes()[0].vanished);
  ASSERT_EQ(named.processes()[0].messages.size(), 1u);
  EXPECT_TRUE(Contains(named.processes()[0].messages[0], "error: "));
}

// Descriptors this process holds open (those of /proc/self/fd, less the
// one that lists them).
int OpenDescriptors() {
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  int n = 0;
  while (const dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n - 1;
}

// Processes one after another, `n` of them, each one block of two events
// from `pid`'s start; their files.
std::vector<std::string> OneAfterAnother(const ScratchDir& dir, int n) {
  std::vector<std::string> files;
  for (int i = 0; i < n; ++i) {
    format::ProcessInfo info = testing::DefaultProcess();
    info.pid = 100 + i;
    TraceBuilder b(info);
    const uint64_t t = 1000 * static_cast<uint64_t>(i + 1);
    b.Block().Events(info.pid, {At(t, 10, 2 * i), At(t + 100, 10, 2 * i + 1)});
    files.push_back(b.Write(dir.File("p" + std::to_string(i) + ".dlprof")));
  }
  return files;
}

// A file is open while the merge is among its blocks, not from the
// stream's start to its end: a job of thousands of short processes would
// hold a descriptor each (over the usual limit of 1,024; before, 40 here).
TEST(FileStreamTest, AFileIsOpenOnlyWhileItsBlocksAreMerged) {
  ScratchDir dir;
  const std::vector<std::string> files = OneAfterAnother(dir, 40);
  const int before = OpenDescriptors();
  ASSERT_GT(before, 0);
  FileStream stream(files, 0);
  EXPECT_EQ(OpenDescriptors(), before);
  StreamEvent e;
  int most = 0;
  size_t events = 0;
  for (; stream.Next(&e, 1) == 1; ++events) most = std::max(most, OpenDescriptors() - before);
  EXPECT_EQ(events, 80u);
  EXPECT_EQ(most, 1);  // the processes do not overlap in time
  EXPECT_EQ(OpenDescriptors(), before);
  for (const ProcessTrace& p : stream.processes()) {
    EXPECT_TRUE(p.clean() && p.saw_final && p.messages.empty()) << p.path;
  }
}

// Listed, then deleted before the merge reaches its blocks (a bounded
// trace's sweep, while the job runs): a note, as one deleted before it was
// listed; one replaced by another trace at its path is an error, and one
// appended to since (a live trace) decodes what was listed.
TEST(FileStreamTest, AFileGoneOrReplacedBeforeItsBlocksAreDue) {
  ScratchDir dir;
  const std::vector<std::string> files = OneAfterAnother(dir, 4);
  const std::vector<uint8_t> first = testing::ReadFile(files[0]);
  FileStream stream(files, 0);
  ASSERT_EQ(unlink(files[1].c_str()), 0);
  ASSERT_TRUE(testing::WriteFile(files[2] + ".new", first));
  ASSERT_EQ(rename((files[2] + ".new").c_str(), files[2].c_str()), 0);
  std::vector<uint8_t> grown = testing::ReadFile(files[3]);
  grown.resize(grown.size() + 100, 0);
  ASSERT_TRUE(testing::WriteFile(files[3], grown));
  std::vector<uint64_t> got;
  for (const Seen& s : Drain(stream)) got.push_back(s.aux);
  EXPECT_EQ(got, (std::vector<uint64_t>{0, 1, 6, 7}));
  const std::vector<ProcessTrace>& p = stream.processes();
  EXPECT_TRUE(p[0].clean() && p[0].messages.empty());
  EXPECT_FALSE(p[1].opened);
  EXPECT_TRUE(p[1].vanished);
  ASSERT_EQ(p[1].messages.size(), 1u);
  EXPECT_EQ(p[1].messages[0], "note: " + files[1] +
                                  ": deleted after it was listed (a bounded trace drops old "
                                  "segments as the job runs)");
  EXPECT_FALSE(p[2].opened);
  EXPECT_FALSE(p[2].vanished);
  ASSERT_EQ(p[2].messages.size(), 1u);
  EXPECT_EQ(p[2].messages[0], "error: " + files[2] +
                                  ": replaced or cut short after its blocks were listed; not read");
  EXPECT_TRUE(p[3].clean() && p[3].saw_final && p[3].messages.empty()) << p[3].messages.size();
}

// Events that name a file whose path string never came are counted, each
// one, in runs across blocks: the path is defined in block 2, after
// three events named it in block 1.
TEST(FileStreamTest, CountsEventsThatNameAMissingString) {
  ScratchDir dir;
  auto on = [](uint32_t file, uint64_t start) {
    Event e = At(start, 1, start);
    e.file = file;
    return e;
  };
  TraceBuilder b;
  b.Block().String(1, "/data/a").Events(7, {on(9, 10), on(9, 11), on(1, 12), on(9, 13), on(0, 14)});
  b.Block().String(9, "/data/late").Events(7, {on(9, 20), on(2, 21), on(2, 22), on(1, 23)});
  const std::string file = b.Write(dir.File("t.dlprof"));
  FileStream stream({file});
  EXPECT_EQ(Drain(stream).size(), 9u);
  const ProcessTrace& p = stream.processes()[0];
  ASSERT_EQ(p.messages.size(), 1u);
  EXPECT_TRUE(Contains(p.messages[0], ": 5 events name a path whose string is missing"));
  // Which paths, and whether the writer's order or the string was lost.
  const std::string kind = LookupKind(on(9, 10).kind)->name;
  EXPECT_TRUE(Contains(p.messages[0], "(file 2: 2 events, the first a " + kind +
                                          " in block 2 of 2, no string; file 9: 3 events, "
                                          "the first a " + kind +
                                          " in block 1 of 2, its string in a later block)"))
      << p.messages[0];
}

// LoadTraceSet holds exactly what the stream hands out, in the same order.
TEST(FileStreamTest, TraceSetMatchesStream) {
  ScratchDir dir;
  TraceBuilder b;
  b.Block().Events(7, {At(300, 1, 1), At(100, 500, 2)}).Events(8, {At(200, 1, 3)});
  b.Block().Events(7, {At(50, 1000, 4)});
  const std::string file = b.Write(dir.File("t.dlprof"));
  TraceSet set = LoadTraceSet({file});
  FileStream stream({file});
  std::vector<Seen> got = Drain(stream);
  ASSERT_EQ(set.merged.size(), got.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(set.event(set.merged[i]).aux, got[i].aux);
    EXPECT_EQ(set.merged[i].index, got[i].index);
  }
  EXPECT_EQ(got[0].aux, 4u);  // start 50, from the second block
}

// The in-memory set stops at its limit and says so.
TEST(FileStreamTest, TraceSetStopsAtItsLimit) {
  ScratchDir dir;
  TraceBuilder b;
  b.Block().Events(7, {At(100, 1, 1), At(200, 1, 2), At(300, 1, 3), At(400, 1, 4)});
  const std::string file = b.Write(dir.File("t.dlprof"));
  TraceSet set = LoadTraceSet({file}, 3);
  EXPECT_TRUE(set.truncated);
  EXPECT_EQ(set.merged.size(), 3u);
  EXPECT_FALSE(LoadTraceSet({file}, 4).truncated);
}

}  // namespace
}  // namespace dlprof::read
