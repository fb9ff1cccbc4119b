// Ring buffers recycled from one thread to the next while the flusher runs
// (issue 51): the runtime's own ThreadRegistry, EventRing and TraceSink,
// driven as a traced program drives them -- threads that start in waves,
// each claiming a buffer (one a thread before it retired), filling its
// 64-event ring many times over, waiting for the flusher or draining it
// themselves when it is full, and retiring it as they exit -- with the
// flusher draining, writing and freeing the retired buffers meanwhile. The
// trace must hold every event exactly once, each thread's in order, and
// the threads of each wave must have run in buffers the waves before them
// left. Under TSan (scripts/sanitize.sh thread) this is the check of the
// happens-before chain a recycled buffer passes through: the last owner's
// stores (the slots, head, its cached tail) -> kRetired (release) ->
// flusher's acquire, drain, tail (release) -> kFree (release) -> the next
// owner's claim (acq_rel) -> its reads of head and the cached tail.
//
// Runs with DLPROF_ENABLE=0 (tests/unit/CMakeLists.txt): the test links
// the runtime, whose constructor must leave this process alone.
#include <gtest/gtest.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "dlprof/format.h"
#include "lib/core/clock.h"
#include "lib/core/config.h"
#include "lib/core/sidecar.h"
#include "lib/core/string_table.h"
#include "lib/core/thread_registry.h"
#include "lib/core/trace_sink.h"
#include "lib/format/trace_file.h"

namespace dlprof::core {
namespace {

constexpr uint64_t kRingEvents = 64;
constexpr int kWaves = 40;
constexpr int kThreadsPerWave = 8;
constexpr uint64_t kEventsPerThread = 40 * kRingEvents;  // each ring wraps 40 times

// One traced thread's life, as Runtime::AttachThread, Record, OnRingFull and
// OnThreadExit live it.
void Producer(ThreadRegistry* registry, TraceSink* sink, int32_t tid) {
  ThreadBuffer* b = registry->Acquire(tid);
  ASSERT_NE(b, nullptr);
  for (uint64_t i = 0; i < kEventsPerThread; ++i) {
    Event e{};
    e.kind = static_cast<uint16_t>(EventKind::Pread);
    e.start_ns = NowNs();
    e.dur_ns = 1;
    e.fd = 3;
    e.offset = static_cast<int64_t>(i);
    e.size = 1;
    e.ret = 1;
    for (int attempt = 0; !b->ring.TryPush(e); ++attempt) {
      if (sink->flusher_running() && attempt < 8) {
        sink->Wake();
        sched_yield();
      } else if (!sink->TryDrainFromProducer()) {
        sched_yield();
      }
    }
  }
  ThreadRegistry::Retire(b);
}

// Rings in anonymous memory (freed as they are drained), or regions of the
// rings sidecar (freed once the trace holds their events, and claimed by a
// new thread only then).
class RingRecycleTest : public ::testing::TestWithParam<bool> {};

TEST_P(RingRecycleTest, EveryEventOnceWhileBuffersPassFromThreadToThread) {
  const bool in_sidecar = GetParam();
  char tmpl[] = "/tmp/dlprof-recycle-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  Config config;
  config.dir = dir;
  config.flush_ms = 1;
  config.quiet = true;
  ThreadRegistry registry;
  registry.Configure(kRingEvents);
  StringTable strings;
  ASSERT_TRUE(strings.Init());
  TraceSink sink(&registry, &strings, config);
  format::ProcessInfo info;
  info.pid = getpid();
  info.ppid = getppid();
  info.host = "recycle";
  info.exe = "ring_recycle_test";
  info.run_id = "recycle";
  info.clock_mono_ns = NowNs();
  info.clock_real_ns = RealtimeNs();
  info.process_start_ns = info.clock_mono_ns;
  std::string error;
  ASSERT_TRUE(sink.Open(info, &error)) << error;
  Sidecar sidecar;
  if (in_sidecar) {
    ASSERT_TRUE(sidecar.Create(sink.path(), info.pid, -1, registry.ring_capacity(),
                               sizeof(ThreadBuffer), registry.RegionBytes()));
    registry.UseSidecar(&sidecar);
    strings.UseLog(&sidecar);
    sink.UseSidecar(&sidecar);
  }
  ASSERT_TRUE(sink.StartFlusher());

  // A wave's threads start together; the next wave waits until the
  // flusher has freed every buffer the last one retired, so that it runs
  // in those (threads of one wave may also take a buffer one of their own
  // retired: a wave holds at most as many as it has threads).
  int32_t next_tid = 1000;
  auto buffers = [&registry] {
    size_t n = 0, free = 0;
    registry.ForEach([&](ThreadBuffer* b) {
      ++n;
      free += b->state.load(std::memory_order_acquire) == ThreadBuffer::kFree;
    });
    return std::make_pair(n, free);
  };
  for (int wave = 0; wave < kWaves; ++wave) {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreadsPerWave; ++t) {
      threads.emplace_back(Producer, &registry, &sink, next_tid++);
    }
    for (std::thread& t : threads) t.join();
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (buffers().second != buffers().first && std::chrono::steady_clock::now() < deadline) {
      sink.Wake();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(buffers().second, buffers().first) << "wave " << wave << ": retired buffers not freed";
    ASSERT_LE(buffers().first, static_cast<size_t>(kThreadsPerWave)) << "wave " << wave;
  }
  sink.Close(kBlockFlagFinal);

  // Every thread's events, exactly once and in order.
  std::map<int32_t, std::vector<int64_t>> offsets;
  format::TraceReader reader;
  ASSERT_TRUE(reader.Open(sink.path(), &error)) << error;
  format::DecodedBlock block;
  for (;;) {
    auto status = reader.Next(&block, &error);
    if (status == format::TraceReader::Status::kEnd) break;
    ASSERT_NE(status, format::TraceReader::Status::kDamaged) << error;
    EXPECT_EQ(block.info.dropped_events, 0u);
    for (size_t i = 0; i < block.events.size(); ++i) {
      offsets[block.tids[i]].push_back(block.events[i].offset);
    }
  }
  EXPECT_TRUE(reader.saw_final_block());
  ASSERT_EQ(offsets.size(), static_cast<size_t>(kWaves * kThreadsPerWave));
  for (const auto& [tid, seen] : offsets) {
    ASSERT_EQ(seen.size(), kEventsPerThread) << "thread " << tid;
    for (uint64_t i = 0; i < kEventsPerThread; ++i) {
      ASSERT_EQ(seen[i], static_cast<int64_t>(i)) << "thread " << tid;
    }
  }
  if (in_sidecar) {
    registry.ForEach([](ThreadBuffer* b) { EXPECT_TRUE(b->shared); });
    sidecar.Remove();
  }
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Rings, RingRecycleTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& p) {
                           return p.param ? "InTheSidecar" : "Anonymous";
                         });

}  // namespace
}  // namespace dlprof::core
