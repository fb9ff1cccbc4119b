// Waiting for other ranks in collective MPI-IO calls (collective_waits.h):
// which calls are one operation, and what of each call is taken out where.
#include "lib/analysis/summary/collective_waits.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "lib/analysis/summary/partial_summary.h"
#include "lib/analysis/summary/summary.h"
#include "lib/analysis/summary/summary_codec.h"

namespace dlprof::analysis {
namespace {

constexpr int kRead = static_cast<int>(OpGroup::Read);
constexpr uint64_t kMs = 1000000;

// A partial of one rank's process ("pid <100+rank>"), whose figures hold
// the calls' time as the builder counts it (all of it reading).
struct Rank {
  PartialSummary p;
  explicit Rank(int32_t rank) {
    key = "pid " + std::to_string(100 + rank) + " (python3)";
    p.collective.files = {"/d/shared.bin"};
    p.collective.processes = {key};
    Summary::ProcessId id;
    id.host = "vm";
    id.pid = 100 + rank;
    id.rank = rank;
    p.s.process_ids[key] = id;
    RankFigures f;
    f.rank = rank;
    f.host = "vm";
    p.s.rank_figures.push_back(f);
    this->rank = rank;
  }
  // The k-th collective read on the file, on a communicator of `size`.
  void Call(uint32_t k, uint64_t entry, uint64_t dur, uint32_t size = 3) {
    CollectiveCall c;
    c.entry_ns = entry, c.dur_ns = dur, c.k = k, c.comm_size = size, c.rank = rank;
    c.group = kRead, c.counted = true;
    p.collective.calls.push_back(c);
    for (IoStats* io : {&p.s.run, &p.s.files["/d/shared.bin"], &p.s.processes_stats[key],
                        &p.s.ranks[rank]}) {
      io->time_ns[kRead] += dur;
      io->read.time_ns += dur;
    }
    p.s.rank_figures[0].io_ns += dur;
  }
  std::string key;
  int32_t rank;
};

Summary Finish(Rank* a, Rank* b, Rank* c) {
  PartialSummary total;
  for (Rank* r : {a, b, c}) {
    if (r != nullptr) MergeInto(&total, std::move(r->p));
  }
  return FinishSummary(std::move(total));
}

const RankFigures& RankOf(const Summary& s, int32_t rank) {
  for (const RankFigures& f : s.rank_figures) {
    if (f.rank == rank) return f;
  }
  static const RankFigures none;
  return none;
}

TEST(CollectiveWaits, EachRankWaitsFromItsEntryUntilTheLastRankEntered) {
  Rank r0(0), r1(1), r2(2);
  // Rank 1 enters 50 ms after rank 0 and 40 ms after rank 2; each call
  // then takes 2 ms.
  r0.Call(0, 100 * kMs, 52 * kMs);
  r1.Call(0, 150 * kMs, 2 * kMs);
  r2.Call(0, 110 * kMs, 42 * kMs);
  const Summary s = Finish(&r0, &r1, &r2);
  EXPECT_EQ(s.collective_waits.calls, 3u);
  EXPECT_EQ(s.collective_waits.matched, 3u);
  EXPECT_EQ(s.collective_waits.wait_ns, 90 * kMs);
  EXPECT_EQ(s.files.at("/d/shared.bin").time_ns[kRead], 6 * kMs);
  EXPECT_EQ(s.files.at("/d/shared.bin").read.time_ns, 6 * kMs);
  EXPECT_EQ(s.files.at("/d/shared.bin").mpi_collective_wait_ns, 90 * kMs);
  EXPECT_EQ(s.run.time_ns[kRead], 6 * kMs);
  EXPECT_EQ(s.ranks.at(0).time_ns[kRead], 2 * kMs);
  EXPECT_EQ(s.processes_stats.at(r2.key).mpi_collective_wait_ns, 40 * kMs);
  EXPECT_EQ(RankOf(s, 0).io_ns, 2 * kMs);
  EXPECT_EQ(RankOf(s, 0).collective_wait_ns, 50 * kMs);
  EXPECT_EQ(RankOf(s, 1).collective_wait_ns, 0u);
  // The rank they waited for is the one that entered last.
  ASSERT_EQ(s.collective_waits.late_ranks.size(), 1u);
  EXPECT_EQ(s.collective_waits.late_ranks[0], std::make_pair(int32_t{1}, 90 * kMs));
  EXPECT_EQ(RankOf(s, 1).collective_late_ns, 90 * kMs);
}

TEST(CollectiveWaits, TheKthCallsOfEachRankAreOneOperation) {
  Rank r0(0), r1(1), r2(2);
  // Two operations: rank 0 late in the first, rank 2 late in the second.
  r0.Call(0, 30 * kMs, 1 * kMs);
  r1.Call(0, 10 * kMs, 21 * kMs);
  r2.Call(0, 20 * kMs, 11 * kMs);
  r0.Call(1, 100 * kMs, 8 * kMs);
  r1.Call(1, 105 * kMs, 3 * kMs);
  r2.Call(1, 107 * kMs, 1 * kMs);
  const Summary s = Finish(&r0, &r1, &r2);
  EXPECT_EQ(s.collective_waits.wait_ns, (20 + 10 + 7 + 2) * kMs);
  ASSERT_EQ(s.collective_waits.late_ranks.size(), 2u);
  EXPECT_EQ(s.collective_waits.late_ranks[0], std::make_pair(int32_t{0}, 30 * kMs));
  EXPECT_EQ(s.collective_waits.late_ranks[1], std::make_pair(int32_t{2}, 9 * kMs));
}

TEST(CollectiveWaits, AMissingRankLeavesTheCallsAsTheyWere) {
  // A communicator of three with one rank's trace missing: no operation is
  // whole, and nothing is taken out.
  Rank r0(0), r1(1);
  r0.Call(0, 100 * kMs, 52 * kMs);
  r1.Call(0, 150 * kMs, 2 * kMs);
  const Summary s = Finish(&r0, &r1, nullptr);
  EXPECT_EQ(s.collective_waits.calls, 2u);
  EXPECT_EQ(s.collective_waits.matched, 0u);
  EXPECT_EQ(s.collective_waits.wait_ns, 0u);
  EXPECT_EQ(s.files.at("/d/shared.bin").time_ns[kRead], 54 * kMs);
  EXPECT_EQ(RankOf(s, 0).io_ns, 52 * kMs);
}

TEST(CollectiveWaits, UnequalCountsMatchOnlyTheCallsEveryRankMade) {
  // Rank 2 made one call fewer (its trace cut short): the first operation is
  // whole, the second is not and stays as it was.
  Rank r0(0), r1(1), r2(2);
  r0.Call(0, 10 * kMs, 11 * kMs);
  r1.Call(0, 20 * kMs, 1 * kMs);
  r2.Call(0, 15 * kMs, 6 * kMs);
  r0.Call(1, 100 * kMs, 30 * kMs);
  r1.Call(1, 120 * kMs, 10 * kMs);
  const Summary s = Finish(&r0, &r1, &r2);
  EXPECT_EQ(s.collective_waits.matched, 3u);
  EXPECT_EQ(s.collective_waits.wait_ns, 15 * kMs);
  EXPECT_EQ(RankOf(s, 0).io_ns, 1 * kMs + 30 * kMs);
}

TEST(CollectiveWaits, ACommunicatorOfAnotherSizeIsAnotherOperation) {
  // Four calls on the file recorded with a communicator of three: two
  // communicators (or a rank counted twice), matched with nothing.
  Rank r0(0), r1(1), r2(2), r3(3);
  r0.Call(0, 10 * kMs, 10 * kMs);
  r1.Call(0, 20 * kMs, 1 * kMs);
  r2.Call(0, 10 * kMs, 10 * kMs);
  r3.Call(0, 20 * kMs, 1 * kMs);
  PartialSummary total;
  for (Rank* r : {&r0, &r1, &r2, &r3}) MergeInto(&total, std::move(r->p));
  const Summary s = FinishSummary(std::move(total));
  EXPECT_EQ(s.collective_waits.matched, 0u);
  EXPECT_EQ(s.collective_waits.wait_ns, 0u);
}

TEST(CollectiveWaits, ALoopOfStepsWaitsNoLongerForData) {
  // A rank whose loop is its optimizer steps, its step's batch wait the
  // collective read: its waiting is taken out of the step's reading.
  Rank r0(0), r1(1), r2(2);
  RankFigures& f = r0.p.s.rank_figures[0];
  f.loop = f.loop_of_steps = true;
  f.loop_start_ns = 90 * kMs, f.loop_end_ns = 300 * kMs;
  RankStep step;
  step.step = 1, step.start_ns = 90 * kMs;
  step.batch_wait_ns = step.reading_ns = 52 * kMs;
  f.steps.push_back(step);
  f.batch_wait_ns = f.reading_ns = 52 * kMs;
  r0.Call(0, 100 * kMs, 52 * kMs);
  r1.Call(0, 150 * kMs, 2 * kMs);
  r2.Call(0, 149 * kMs, 3 * kMs);
  const Summary s = Finish(&r0, &r1, &r2);
  const RankFigures& r = RankOf(s, 0);
  EXPECT_EQ(r.batch_wait_ns, 2 * kMs);
  EXPECT_EQ(r.reading_ns, 2 * kMs);
  EXPECT_EQ(r.collective_wait_loop_ns, 50 * kMs);
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].batch_wait_ns, 2 * kMs);
  EXPECT_EQ(r.steps[0].collective_wait_ns, 50 * kMs);
  EXPECT_EQ(s.collective_waits.loop_wait_ns, 50 * kMs);
}

TEST(CollectiveWaits, TheCallsTravelInTheEncodedPartial) {
  Rank r0(0);
  r0.Call(0, 100 * kMs, 52 * kMs);
  r0.p.collective.not_kept = 7;
  r0.p.collective.kept_per_process = 1;
  PartialSummary back;
  std::string error;
  ASSERT_TRUE(DecodePartialSummary(EncodePartialSummary(r0.p), &back, &error)) << error;
  ASSERT_EQ(back.collective.calls.size(), 1u);
  EXPECT_EQ(back.collective.calls[0].entry_ns, 100 * kMs);
  EXPECT_EQ(back.collective.calls[0].comm_size, 3u);
  EXPECT_EQ(back.collective.processes, r0.p.collective.processes);
  EXPECT_EQ(back.collective.not_kept, 7u);
}

}  // namespace
}  // namespace dlprof::analysis
