// A thread's perf records made into major_fault events (lib/core/
// map_fault_records.cc), from a ring written here as the kernel writes it:
// a fault that waited for its page is timed from its wait; a wait the
// thread came back from and ran on from (a waitpid before a fault that
// took no context switch: its page read before it had to wait) is not
// the fault's. And which threads' streams a look at the process's threads
// finds gone.
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "lib/core/map_faults.h"
#include "lib/core/map_faults_stream.h"

namespace dlprof::core {

// Reaches MapFaults' buffer reader (a friend).
class MapFaultsTestPeer {
 public:
  static void Read(MapFaults* m, MapFaults::Stream& s, const std::vector<FileMapping>& maps,
                   ThreadFaults* faults) {
    m->switches_ = true;
    uint64_t lost = 0;
    m->Read(s, maps, faults, &lost);
  }
  static uint64_t Page(const MapFaults& m) { return m.page_; }
  static void MarkGone(MapFaults* m, MapFaults::Stream* streams, const std::vector<int32_t>& tids,
                       uint64_t listed_ns) {
    m->streams_ = streams;
    m->MarkGone(tids, listed_ns);
    m->streams_ = nullptr;
  }
};

namespace {

constexpr uint64_t kUs = 1000;
constexpr uint64_t kBase = 0x700000000000ull;

// One thread's buffer, records appended as the kernel appends them.
class Ring {
 public:
  explicit Ring(uint64_t page) : page_(page), bytes_((kDataPages + 1) * page) {}
  uint8_t* data() { return bytes_.data(); }
  void Switch(uint64_t t, uint16_t misc) { Add(PERF_RECORD_SWITCH, misc, {Ids(), t}); }
  void Out(uint64_t t) { Switch(t, PERF_RECORD_MISC_SWITCH_OUT); }
  void In(uint64_t t) { Switch(t, 0); }
  void Fault(uint64_t t, uint64_t addr) { Add(PERF_RECORD_SAMPLE, 0, {Ids(), t, addr}); }

 private:
  static uint64_t Ids() {
    const uint64_t pid = static_cast<uint64_t>(getpid());
    return pid | (static_cast<uint64_t>(syscall(SYS_gettid)) << 32);
  }
  void Add(uint32_t type, uint16_t misc, std::vector<uint64_t> body) {
    auto* meta = reinterpret_cast<perf_event_mmap_page*>(bytes_.data());
    perf_event_header h{type, misc, static_cast<uint16_t>(sizeof(h) + 8 * body.size())};
    uint8_t* at = bytes_.data() + page_ + meta->data_head;
    std::memcpy(at, &h, sizeof(h));
    std::memcpy(at + sizeof(h), body.data(), 8 * body.size());
    meta->data_head += h.size;
  }
  const uint64_t page_;
  std::vector<uint8_t> bytes_;
};

struct Timed {
  uint64_t start, dur;
};

std::vector<Timed> Faults(Ring* ring, MapFaults* m) {
  MapFaults::Stream s;
  s.ring = ring->data();
  s.tid.store(static_cast<int32_t>(syscall(SYS_gettid)));
  FileMapping map;
  map.start = kBase;
  map.end = kBase + (1u << 20);
  map.file = 7;
  ThreadFaults out;
  MapFaultsTestPeer::Read(m, s, {map}, &out);
  std::vector<Timed> timed;
  for (const Event& e : out.events) timed.push_back({e.start_ns, e.dur_ns});
  return timed;
}

TEST(MapFaultRecords, AFaultIsTimedFromItsWaitForThePage) {
  MapFaults m;
  Ring ring(MapFaultsTestPeer::Page(m));
  ring.In(1000 * kUs);
  ring.Out(1010 * kUs);  // stops for the page, 10 us after it came back
  ring.In(1200 * kUs);
  ring.Fault(1203 * kUs, kBase + 4096);
  const std::vector<Timed> f = Faults(&ring, &m);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].start, 1000 * kUs);  // its entry, back to when it came back
  EXPECT_EQ(f[0].dur, 203 * kUs);
}

TEST(MapFaultRecords, AWaitTheThreadRanOnFromIsNotTheFaults) {
  // A parent blocks in waitpid for 4 ms, runs on for 300 us, then faults
  // without a context switch (its page read before it had to wait).
  MapFaults m;
  Ring ring(MapFaultsTestPeer::Page(m));
  ring.In(900 * kUs);
  ring.Out(1000 * kUs);  // waitpid
  ring.In(5000 * kUs);
  ring.Switch(5100 * kUs, PERF_RECORD_MISC_SWITCH_OUT | PERF_RECORD_MISC_SWITCH_OUT_PREEMPT);
  ring.In(5150 * kUs);
  ring.Fault(5350 * kUs, kBase + 8192);
  const std::vector<Timed> f = Faults(&ring, &m);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].start, 5350 * kUs);  // untimed: not the waitpid's 4.35 ms
  EXPECT_EQ(f[0].dur, 0u);
}

TEST(MapFaultRecords, AWaitJustBeforeAFaultIsItsWait) {
  // Back from a wait 20 us before the fault's sample: within a fault's
  // entry, so the wait is taken for the page's, as for any fault that
  // waited (the records cannot tell a waitpid just before apart).
  MapFaults m;
  Ring ring(MapFaultsTestPeer::Page(m));
  ring.In(900 * kUs);
  ring.Out(1000 * kUs);
  ring.In(3000 * kUs);
  ring.Fault(3020 * kUs, kBase);
  const std::vector<Timed> f = Faults(&ring, &m);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].start, 1000 * kUs);
  EXPECT_EQ(f[0].dur, 2020 * kUs);
}

TEST(MapFaultThreads, AStreamOpenedAfterTheListWasBegunIsNotGone) {
  // The flusher lists the threads at 200 us; a pool's new thread opens its
  // own stream at 300 us, before the flusher looks at the streams: not in
  // the list, and not gone (closed as gone, its faults were lost). One
  // opened before the list was begun and missing from it has ended.
  MapFaults m;
  std::vector<MapFaults::Stream> streams(MapFaults::kStreams);
  const struct {
    int32_t tid;
    uint64_t opened_ns;
  } open[] = {{101, 100 * kUs}, {102, 100 * kUs}, {103, 300 * kUs}};
  for (size_t i = 0; i < 3; ++i) {
    streams[i].state.store(kOpen);
    streams[i].tid.store(open[i].tid);
    streams[i].opened_ns = open[i].opened_ns;
  }
  MapFaultsTestPeer::MarkGone(&m, streams.data(), {101}, 200 * kUs);
  EXPECT_FALSE(streams[0].gone);  // listed
  EXPECT_TRUE(streams[1].gone);   // ended before the list
  EXPECT_FALSE(streams[2].gone);  // started after it
}

}  // namespace
}  // namespace dlprof::core
