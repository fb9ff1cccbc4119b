// Which stretch of a bounded run its kept segments cover
// (lib/read/kept_stretches.h), and how dlprof-dump words it
// (tools/dump/bounded_note.h), from catalogs built by hand.
#include "lib/read/kept_stretches.h"

#include <gtest/gtest.h>

#include <string>

#include "dlprof/format.h"
#include "tools/dump/bounded_note.h"

namespace dlprof::read {
namespace {

constexpr uint64_t kS = 1000000000ull;

// A segment of process `pid` (stem /d/p-PID-1), number `n`, with events
// from `from` to `to` (from MAX: none), the process started at `start`.
CatalogEntry Segment(int pid, int n, uint64_t from, uint64_t to, uint64_t start = 10 * kS) {
  CatalogEntry e;
  const std::string stem = "/d/p-h-" + std::to_string(pid) + "-1";
  e.path = n == 0 ? stem + ".dlprof" : stem + ".k" + std::to_string(n) + ".dlprof";
  e.opened = true;
  e.info.flags = kHeaderFlagSegment;
  e.info.pid = pid;
  e.info.host = "h";
  e.info.process_start_ns = start;
  e.first_start_ns = from;
  e.last_end_ns = from == UINT64_MAX ? 0 : to;
  return e;
}

TEST(KeptStretches, ProcessesKeptWindowsAndEndedProcesses) {
  TraceCatalog c;
  // Process 1: segments 2 and 3 follow one another, 4 was deleted, 5 is a
  // window's; an empty segment between two kept does not split them.
  c.Add(Segment(1, 2, 20 * kS, 21 * kS));
  c.Add(Segment(1, 3, UINT64_MAX, 0));
  c.Add(Segment(1, 4, 22 * kS, 23 * kS));
  c.Add(Segment(1, 6, 30 * kS, 31 * kS));
  // Process 2, ended long ago: its end segment alone.
  c.Add(Segment(2, 1, UINT64_MAX, 0, 11 * kS));
  // Process 3 started first.
  c.Add(Segment(3, 0, 30 * kS + kS / 2, 31 * kS, 9 * kS));
  // A trace that keeps every event is no part of it.
  CatalogEntry plain = Segment(4, 0, 1 * kS, 2 * kS, 1 * kS);
  plain.info.flags = 0;
  c.Add(plain);
  const KeptStretches k = FindKeptStretches(c, ClockAlignment{});
  EXPECT_TRUE(k.bounded);
  EXPECT_EQ(k.run_start_ns, 9 * kS);
  EXPECT_EQ(k.processes, 3u);
  EXPECT_EQ(k.counters_only, 1u);
  ASSERT_EQ(k.stretches.size(), 3u);
  EXPECT_EQ(k.stretches[0].pid, 1);
  EXPECT_EQ(k.stretches[0].from_ns, 20 * kS);
  EXPECT_EQ(k.stretches[0].to_ns, 23 * kS);
  EXPECT_EQ(k.stretches[1].from_ns, 30 * kS);
  EXPECT_EQ(k.stretches[2].pid, 3);
  EXPECT_EQ(k.from_ns, 20 * kS);
  EXPECT_EQ(k.to_ns, 31 * kS);
  EXPECT_TRUE(k.several());
  EXPECT_EQ(dump::BoundedSummaryLine(k),
            "a bounded trace (DLPROF_KEEP): the events cover 11.00 s - 22.00 s of the run "
            "(seconds from its first process's start; each process's below); the whole run's "
            "figures: --summary");
  EXPECT_EQ(dump::StretchLines(k, k.run_start_ns, "  ", 2),
            "  pid 1 on h: 11.00 s - 14.00 s\n"
            "  pid 1 on h: 21.00 s - 22.00 s\n"
            "  (and 1 more, the last ending at 22.00 s)\n"
            "  1 ended process has no event left, only its counters (the whole run's figures)\n");
}

TEST(KeptStretches, OneProcessOrNoneBounded) {
  TraceCatalog c;
  c.Add(Segment(1, 3, 20 * kS, 21 * kS));
  c.Add(Segment(1, 4, 21 * kS, 22 * kS));
  KeptStretches k = FindKeptStretches(c, ClockAlignment{});
  ASSERT_EQ(k.stretches.size(), 1u);
  EXPECT_FALSE(k.several());
  EXPECT_EQ(dump::StretchLines(k, k.run_start_ns, "  ", 8), "");
  TraceCatalog plain;
  CatalogEntry e = Segment(1, 0, 1 * kS, 2 * kS);
  e.info.flags = 0;
  plain.Add(e);
  k = FindKeptStretches(plain, ClockAlignment{});
  EXPECT_FALSE(k.bounded);
  EXPECT_EQ(dump::BoundedSummaryLine(k), "");
}

}  // namespace
}  // namespace dlprof::read
