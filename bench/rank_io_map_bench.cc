// What the data stall in the counters costs the flushers (lib/core/
// rank_io_map.h; issue 53): in a rank with GPU work, every process's
// flusher marks each I/O call it drains, and the GPU process's flusher
// reads an interval's marks back once an interval.
//
//   BM_Mark/<gap_us>      one call of 1-5 us every <gap_us> us (a cached
//                         4 KiB read, a loader worker's pace): time a mark.
//   BM_MarkLong           one 10 ms call (a read from slow storage): 4883
//                         bins, 153 words.
//   BM_Read5s/<busy_spans> a 5 s interval of 100,000 marked calls against
//                         <busy_spans> GPU spans: time a read of it.
//
// Run: build/bench/rank_io_map_bench (see bench/README.md). Results in
// bench/RESULTS_DATA.md.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "lib/core/rank_io_map.h"

namespace {

using dlprof::core::RankIoMap;
constexpr uint64_t kUs = 1000, kMs = 1000000;
constexpr uint64_t kBase = uint64_t{1} << 40;  // a clock a few minutes after boot

RankIoMap& Fresh() {
  RankIoMap& map = RankIoMap::Get();
  map.ResetForTest();
  map.Join(-1);
  map.StartMeasuring(1);
  return map;
}

void BM_Mark(benchmark::State& state) {
  RankIoMap& map = Fresh();
  const uint64_t gap = static_cast<uint64_t>(state.range(0)) * kUs;
  uint64_t t = kBase, i = 0;
  for (auto _ : state) {
    const uint64_t len = kUs + (i++ * 7919) % (4 * kUs);
    map.Mark(t, t + len);
    t += gap;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Mark)->Arg(5)->Arg(50)->Arg(500);

void BM_MarkLong(benchmark::State& state) {
  RankIoMap& map = Fresh();
  uint64_t t = kBase;
  for (auto _ : state) {
    map.Mark(t, t + 10 * kMs);
    t += 20 * kMs;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_MarkLong);

void BM_Read5s(benchmark::State& state) {
  RankIoMap& map = Fresh();
  for (uint64_t i = 0; i < 100000; ++i) {
    const uint64_t t = kBase + i * 50 * kUs;
    map.Mark(t, t + kUs + (i * 7919) % (4 * kUs));
  }
  std::vector<std::pair<uint64_t, uint64_t>> busy;
  const uint64_t spans = static_cast<uint64_t>(state.range(0));
  for (uint64_t i = 0; i < spans; ++i) {
    const uint64_t t = kBase + i * (5000 * kMs / spans);
    busy.emplace_back(t, t + (5000 * kMs / spans) / 2);
  }
  uint64_t stall = 0;
  for (auto _ : state) {
    stall += map.Read(kBase, kBase + 5000 * kMs, busy).stall_ns;
  }
  benchmark::DoNotOptimize(stall);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Read5s)->Arg(1000)->Arg(100000);

}  // namespace

BENCHMARK_MAIN();
