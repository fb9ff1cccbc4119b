// The Perfetto exporter's pending slice ENDs (tools/dump/perfetto_pending_ends.h)
// against a plain priority queue: the same ENDs come out in the same order,
// whether few are pending (the small sorted array) or many (the heap it
// falls back to), with ties in end time broken as the exporter needs.
#include "tools/dump/perfetto_pending_ends.h"

#include <gtest/gtest.h>

#include <random>

namespace dlprof::dump {
namespace {

TEST(PerfettoPendingEnds, SameOrderAsAHeap) {
  std::mt19937_64 rng(42);
  for (int round = 0; round < 200; ++round) {
    SCOPED_TRACE(round);
    PendingEnds ends;
    std::priority_queue<PendingEnd, std::vector<PendingEnd>, std::greater<PendingEnd>> reference;
    // Some rounds keep few open (the array only), others many (the heap).
    const size_t most_open = round % 2 == 0 ? 6 : 40;
    uint64_t order = 0, now = 0;
    for (int step = 0; step < 500; ++step) {
      const bool push = reference.empty() || (reference.size() < most_open && rng() % 3 != 0);
      if (push) {
        now += rng() % 3;  // starts go forward, often tied
        const PendingEnd end{now + rng() % 8, now, order++, rng() % 4};
        ends.push(end);
        reference.push(end);
      } else {
        ASSERT_FALSE(ends.empty());
        const PendingEnd got = ends.top(), want = reference.top();
        EXPECT_EQ(got.end_ns, want.end_ns);
        EXPECT_EQ(got.order, want.order);  // the same slice
        ends.pop();
        reference.pop();
      }
      EXPECT_EQ(ends.empty(), reference.empty());
    }
  }
}

TEST(PerfettoPendingEnds, InnerSliceEndsFirstAtEqualTimes) {
  PendingEnds ends;
  ends.push({100, 10, 0, 1});  // outer: began first
  ends.push({100, 20, 1, 1});  // inner: later start
  ends.push({100, 20, 2, 1});  // innermost: same start, begun later
  EXPECT_EQ(ends.top().order, 2u);
  ends.pop();
  EXPECT_EQ(ends.top().order, 1u);
  ends.pop();
  EXPECT_EQ(ends.top().order, 0u);
  ends.pop();
  EXPECT_TRUE(ends.empty());
}

}  // namespace
}  // namespace dlprof::dump
