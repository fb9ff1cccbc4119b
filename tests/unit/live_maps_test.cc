// The loop's time with a data file's map live, on the flusher
// (lib/core/live_maps.h): maps made and torn down by several threads,
// drained a ring at a time (out of time order across threads), are swept
// in time order at the interval's end; each moment of the loop is credited
// once; a process that never steps keeps nothing.
#include "lib/core/live_maps.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace dlprof::core {
namespace {

constexpr uint64_t kMs = 1000000;

// Thread A's map made at 10 ms is drained before thread B's made at 5 ms;
// A's torn down at 11 ms, B's at 30 ms, drained a pass later: live from 5
// to 30 ms (a count kept as drained lost 5 to 10 ms).
TEST(LiveMapsTest, MapsOfThreadsDrainedOutOfOrderAreLiveAsTheyWere) {
  LiveMaps maps;
  maps.Step(1 * kMs, 2 * kMs);
  maps.Map(true, 10 * kMs);   // A
  maps.Map(true, 5 * kMs);    // B
  maps.Map(false, 11 * kMs);  // A, the next pass
  maps.Map(false, 30 * kMs);  // B
  maps.Step(40 * kMs, 42 * kMs);
  EXPECT_EQ(maps.Take(), 25 * kMs);
  EXPECT_EQ(maps.Take(), 0u);  // credited once
}

// Credited up to the latest step's end only; the rest, a later interval's
// once a step passes it. A map torn down after its moment was credited
// (drained late) moves the count on without crediting again.
TEST(LiveMapsTest, TimePastTheLatestStepWaitsForALaterOne) {
  LiveMaps maps;
  maps.Step(1 * kMs, 2 * kMs);
  maps.Map(true, 4 * kMs);
  maps.Step(10 * kMs, 12 * kMs);
  EXPECT_EQ(maps.Take(), 8 * kMs);  // [4, 12)
  maps.Map(false, 20 * kMs);
  maps.Step(30 * kMs, 32 * kMs);
  EXPECT_EQ(maps.Take(), 8 * kMs);  // [12, 20)
  maps.Map(true, 25 * kMs);         // drained after 32 ms was swept: live from now on
  maps.Step(40 * kMs, 42 * kMs);
  EXPECT_EQ(maps.Take(), 10 * kMs);  // [32, 42)
}

// Maps before the first step are the start-up's: one still live at the
// first step counts from its start; a process that never steps (a loader
// worker mapping a sample at a time) holds no change past an interval.
TEST(LiveMapsTest, BeforeTheFirstStepNothingIsCredited) {
  LiveMaps maps;
  for (uint64_t t = 0; t < 100000; t += 2) {
    maps.Map(true, t * kMs);
    maps.Map(false, (t + 1) * kMs);
  }
  EXPECT_EQ(maps.Take(), 0u);
  maps.Map(true, 200000 * kMs);
  EXPECT_EQ(maps.Take(), 0u);
  maps.Step(200010 * kMs, 200012 * kMs);
  EXPECT_EQ(maps.Take(), 2 * kMs);  // [200010, 200012)
}

}  // namespace
}  // namespace dlprof::core
