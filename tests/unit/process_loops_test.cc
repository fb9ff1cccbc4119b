// The loops of a job without ranks, a process at a time
// (lib/analysis/meters/process_loops.h; docs/ANALYSIS.md, "Verdict"): on
// constructed traces with answers worked out by hand, two trainers (one
// forked by the other, the second with a helper of its own) are two loops
// whose windows, start-ups and start-up I/O add up as ranks' do, and a
// single trainer keeps the one window from the group's first event; two
// loops without a DataLoader (their steps) likewise; a bounded trace's
// loop leaves out the segments deleted between its kept windows.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "lib/analysis/findings/verdict.h"
#include "lib/analysis/summarize.h"
#include "tests/helpers/trace_builder.h"

namespace dlprof::analysis {
namespace {

using testing::MakeEvent;

constexpr uint64_t kBase = 1000000;
constexpr uint32_t kPath = 1, kLoad = 2, kFetch = 3, kStepName = 4;

Event At(EventKind kind, uint32_t file, uint64_t start, uint64_t dur) {
  Event e = MakeEvent(kind, kBase + start, dur);
  e.file = file;
  return e;
}

Event Read(uint64_t start, uint64_t dur) {
  Event e = At(EventKind::Pread64, kPath, start, dur);
  e.fd = 5;
  e.size = 4096;
  e.ret = 4096;
  return e;
}

// `segment` > 0: that segment of a bounded trace (DLPROF_KEEP), whose
// segments share the header.
void Write(int32_t pid, int32_t ppid, std::vector<Event> events, testing::ScratchDir& dir,
           std::vector<std::string>* files, int segment = 0) {
  format::ProcessInfo info = testing::DefaultProcess();
  info.pid = pid;
  info.ppid = ppid;
  info.flags = kHeaderFlagGpuMarked | (segment > 0 ? kHeaderFlagSegment : 0);
  std::sort(events.begin(), events.end(),
            [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; });
  testing::TraceBuilder b(info);
  b.Block()
      .String(kPath, "/data/shard.bin")
      .String(kLoad, "load_batch")
      .String(kFetch, "fetch_batch")
      .String(kStepName, "optimizer_step")
      .Events(pid, std::move(events));
  const std::string k = segment > 1 ? ".k" + std::to_string(segment - 1) : "";
  files->push_back(b.Write(dir.File(std::to_string(pid) + k + ".dlprof")));
}

// A launcher (pid 5) reads at 0 for 10. Its child, trainer A (pid 10),
// reads at 100 for 20, then waits [200, 300) and [310, 400), stepping
// [300, 310) and [400, 420): its loop [200, 420). With `second`, A's child
// trainer B (pid 11) reads at 250 for 30 (A's loop has begun, B's not),
// waits [600, 700) and [710, 800), stepping [700, 710) and [800, 805): its
// loop [600, 805); B's child (pid 12) reads at 500 for 5 before B's loop,
// then fetches [600, 690) reading [610, 680) in it.
Verdict TwoTrainers(bool second, Summary* summary = nullptr) {
  testing::ScratchDir dir;
  std::vector<std::string> files;
  Write(5, 1, {Read(0, 10)}, dir, &files);
  Write(10, 5,
        {Read(100, 20), At(EventKind::AppRegion, kLoad, 200, 100),
         At(EventKind::AppRegion, kStepName, 300, 10), At(EventKind::AppRegion, kLoad, 310, 90),
         At(EventKind::AppRegion, kStepName, 400, 20)},
        dir, &files);
  if (second) {
    Write(11, 10,
          {Read(250, 30), At(EventKind::AppRegion, kLoad, 600, 100),
           At(EventKind::AppRegion, kStepName, 700, 10), At(EventKind::AppRegion, kLoad, 710, 90),
           At(EventKind::AppRegion, kStepName, 800, 5)},
          dir, &files);
    Write(12, 11, {Read(500, 5), At(EventKind::AppRegion, kFetch, 600, 90), Read(610, 70)}, dir,
          &files);
  }
  const TraceCatalog catalog = CatalogTraces(files);
  SummarizeOptions o;
  o.selection.base_ns = catalog.base_ns();
  Summary s = Summarize(catalog, o).summary;
  EXPECT_TRUE(s.has_unranked_group);
  const Verdict v = ComputeVerdict(s);
  if (summary != nullptr) *summary = std::move(s);
  return v;
}

TEST(ProcessLoopsTest, TwoTrainersWithoutRanksAreTwoLoops) {
  Summary s;
  const Verdict v = TwoTrainers(true, &s);
  // 220 + 205, not one window [200, 805) of 605 against both loops' waits.
  EXPECT_EQ(v.loop_ns, 425u);
  EXPECT_EQ(v.wait_loop_ns, 425u);
  EXPECT_EQ(v.batch_wait_ns, 380u);
  EXPECT_EQ(v.loop_steps, 4u);
  // Each from its own first event: A's 100 before its loop, B's 350.
  EXPECT_EQ(v.startup_ns, 450u);
  // A's read, and B's and its helper's before B's loop (after A's began);
  // not the launcher's, which is no loop's, nor the helper's in its fetch.
  EXPECT_EQ(v.startup_io_ns, 55u);
  EXPECT_EQ(v.startup_io_ops, 3u);
  EXPECT_EQ(s.unranked_group.loops, 2u);
  EXPECT_EQ(s.unranked_group.loop_start_ns, kBase + 200);
  EXPECT_EQ(s.unranked_group.loop_end_ns, kBase + 805);
}

TEST(ProcessLoopsTest, OneTrainerKeepsTheGroupsWindow) {
  Summary s;
  const Verdict v = TwoTrainers(false, &s);
  EXPECT_EQ(v.loop_ns, 220u);
  EXPECT_EQ(v.batch_wait_ns, 190u);
  EXPECT_EQ(v.loop_steps, 2u);
  // From the group's first event (the launcher's read), its I/O with it.
  EXPECT_EQ(v.startup_ns, 200u);
  EXPECT_EQ(v.startup_io_ns, 30u);
  EXPECT_EQ(v.startup_io_ops, 2u);
  EXPECT_LE(s.unranked_group.loops, 1u);
}

// A's loop as one trainer's in a bounded trace: its first segment ends
// after its first wait, the second holds the step after it and the rest.
TEST(ProcessLoopsTest, SegmentsOfABoundedTraceAreOneLoop) {
  testing::ScratchDir dir;
  std::vector<std::string> files;
  Write(5, 1, {Read(0, 10)}, dir, &files);
  Write(10, 5, {Read(100, 20), At(EventKind::AppRegion, kLoad, 200, 100)}, dir, &files, 1);
  Write(10, 5,
        {At(EventKind::AppRegion, kStepName, 300, 10), At(EventKind::AppRegion, kLoad, 310, 90),
         At(EventKind::AppRegion, kStepName, 400, 20)},
        dir, &files, 2);
  const TraceCatalog catalog = CatalogTraces(files);
  SummarizeOptions o;
  o.selection.base_ns = catalog.base_ns();
  const Summary s = Summarize(catalog, o).summary;
  const Verdict v = ComputeVerdict(s);
  // As OneTrainerKeepsTheGroupsWindow: not two loops of [200, 300) and
  // [310, 420) with the step at 300 taken for the second one's start-up.
  EXPECT_LE(s.unranked_group.loops, 1u);
  EXPECT_EQ(v.loop_ns, 220u);
  EXPECT_EQ(v.batch_wait_ns, 190u);
  EXPECT_EQ(v.loop_steps, 2u);
  EXPECT_EQ(v.startup_ns, 200u);
}

// Two trainers without a DataLoader (nanoGPT-style, no rank): each reads,
// then steps. A (pid 10): a read at 50 (start-up), steps [200, 300),
// [400, 500), [600, 700) with reads [150, 180), [320, 350), [520, 540)
// before them: its first window a period (200) back from its first step's
// end, its loop [100, 700). B (pid 11) the same 800 later, reads of 40, 30
// and 10: its loop [900, 1500).
TEST(ProcessLoopsTest, TwoStepLoopsWithoutRanksAreTwoLoops) {
  testing::ScratchDir dir;
  std::vector<std::string> files;
  auto step = [](uint64_t start) { return At(EventKind::AppRegion, kStepName, start, 100); };
  Write(10, 5,
        {Read(50, 10), Read(150, 30), step(200), Read(320, 30), step(400), Read(520, 20),
         step(600)},
        dir, &files);
  Write(11, 5,
        {Read(850, 10), Read(950, 40), step(1000), Read(1120, 30), step(1200), Read(1310, 10),
         step(1400)},
        dir, &files);
  const TraceCatalog catalog = CatalogTraces(files);
  SummarizeOptions o;
  o.selection.base_ns = catalog.base_ns();
  const Summary s = Summarize(catalog, o).summary;
  const Verdict v = ComputeVerdict(s);
  // 600 + 600, not one window [100, 1500) of 1400 against both waits.
  EXPECT_EQ(s.unranked_group.loops, 2u);
  EXPECT_TRUE(s.unranked_group.loop_of_steps);
  EXPECT_EQ(v.loop_ns, 1200u);
  EXPECT_EQ(v.batch_wait_ns, 160u);
  EXPECT_EQ(v.loop_steps, 6u);
  EXPECT_EQ(v.startup_ns, 100u);  // each from its first event: 50 each
}

// A bounded trace whose segments between two kept windows were deleted
// (DLPROF_KEEP_WHEN): trainer A's first segment holds a read at 100, a wait
// [200, 300) and a step [300, 310); its third (".k2"; the second deleted)
// a wait [1000, 1090) and a step [1090, 1100). With `second`, trainer B
// (pid 11) waits [600, 700) and steps [700, 710) in its first segment, and
// in its third waits [2000, 2090) and steps [2090, 2095).
Verdict KeptWindows(bool second, Summary* summary) {
  testing::ScratchDir dir;
  std::vector<std::string> files;
  Write(10, 5,
        {Read(100, 20), At(EventKind::AppRegion, kLoad, 200, 100),
         At(EventKind::AppRegion, kStepName, 300, 10)},
        dir, &files, 1);
  Write(10, 5,
        {At(EventKind::AppRegion, kLoad, 1000, 90), At(EventKind::AppRegion, kStepName, 1090, 10)},
        dir, &files, 3);
  if (second) {
    Write(11, 5,
          {At(EventKind::AppRegion, kLoad, 600, 100), At(EventKind::AppRegion, kStepName, 700, 10)},
          dir, &files, 1);
    Write(11, 5,
          {At(EventKind::AppRegion, kLoad, 2000, 90),
           At(EventKind::AppRegion, kStepName, 2090, 5)},
          dir, &files, 3);
  }
  const TraceCatalog catalog = CatalogTraces(files);
  SummarizeOptions o;
  o.selection.base_ns = catalog.base_ns();
  *summary = Summarize(catalog, o).summary;
  return ComputeVerdict(*summary);
}

TEST(ProcessLoopsTest, TheKeptWindowsLoopLeavesTheDeletedStretchOut) {
  Summary s;
  const Verdict v = KeptWindows(false, &s);
  // [200, 310) and [1000, 1100) of the window [200, 1100): the stretch
  // [310, 1000) has no segment on disk.
  EXPECT_EQ(v.loop_ns, 210u);
  EXPECT_EQ(v.batch_wait_ns, 190u);
  EXPECT_EQ(s.unranked_group.loop_unkept_ns, 690u);
  EXPECT_EQ(s.unranked_group.loop_end_ns - s.unranked_group.loop_start_ns, 900u);
}

TEST(ProcessLoopsTest, EachLoopLeavesItsOwnDeletedStretchOut) {
  Summary s;
  const Verdict v = KeptWindows(true, &s);
  // A's 210 of [200, 1100), B's 110 + 95 of [600, 2095).
  EXPECT_EQ(s.unranked_group.loops, 2u);
  EXPECT_EQ(v.loop_ns, 415u);
  EXPECT_EQ(v.batch_wait_ns, 380u);
}

}  // namespace
}  // namespace dlprof::analysis
