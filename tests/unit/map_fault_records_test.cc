// A thread's perf records made into major_fault events (lib/core/
// map_fault_records.cc), from a ring written here as the kernel writes it:
// a fault that waited for its page is timed from its wait; a wait the
// thread came back from and ran on from (a waitpid before a fault that
// took no context switch: its page read before it had to wait) is not
// the fault's. A fault taken, waited in and served minor (its page read
// ahead, still in flight) is a map_wait, from taken to served; one that
// did not wait in it is none, however close a wait before it. And which threads' streams a look at the
// process's threads finds gone.
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
    m->Read(s, maps, faults, &lost, UINT64_MAX);
  }
  static void ReadUpTo(MapFaults* m, MapFaults::Stream& s, const std::vector<FileMapping>& maps,
                       ThreadFaults* faults, uint64_t cut) {
    m->switches_ = true;
    uint64_t lost = 0;
    m->Read(s, maps, faults, &lost, cut);
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
  // A sample of an event with PERF_SAMPLE_IDENTIFIER (map_waits.cc).
  void Sample(uint64_t id, uint64_t t, uint64_t addr) {
    Add(PERF_RECORD_SAMPLE, 0, {id, Ids(), t, addr});
  }
  // `n` records the buffer, full, could not take.
  void Lost(uint64_t id, uint64_t n) { Add(PERF_RECORD_LOST, 0, {id, n}); }

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
  uint16_t kind = 0;
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

// A thread whose faults taken and minor faults served are read as well
// (map_waits.cc): its major faults' and switches' buffer, and theirs.
class Thread {
 public:
  explicit Thread(MapFaults* m)
      : m_(m), ring(MapFaultsTestPeer::Page(*m)), waits_(MapFaultsTestPeer::Page(*m)) {
    s_.ring = ring.data();
    s_.waits_ring = waits_.data();
    s_.waits_id = kTakenId;
    s_.served_id = kServedId;
    s_.tid.store(static_cast<int32_t>(syscall(SYS_gettid)));
    map_.start = kBase;
    map_.end = kBase + (1u << 20);
    map_.file = 7;
  }
  ~Thread() { s_.waits_ring = nullptr; }
  void Taken(uint64_t t, uint64_t addr) { waits_.Sample(kTakenId, t, addr); }
  void Served(uint64_t t, uint64_t addr) { waits_.Sample(kServedId, t, addr); }
  void WaitsLost(uint64_t n) { waits_.Lost(kTakenId, n); }
  // The traced calls' ends drained so far (NoteCalls).
  void CallEnded(uint64_t t) { s_.call_ends.push_back(t); }
  std::vector<Timed> Read(uint64_t cut = UINT64_MAX) {
    ThreadFaults out;
    MapFaultsTestPeer::ReadUpTo(m_, s_, {map_}, &out, cut);
    std::vector<Timed> timed;
    for (const Event& e : out.events) {
      if (e.kind == static_cast<uint16_t>(EventKind::MapWait)) {
        EXPECT_EQ(e.ret, 0);
      }
      if (e.kind == static_cast<uint16_t>(EventKind::MapWaitsLost)) lost_ += e.ret;
      timed.push_back({e.start_ns, e.dur_ns, e.kind});
    }
    return timed;
  }
  int64_t lost() const { return lost_; }

 private:
  static constexpr uint64_t kTakenId = 11, kServedId = 12;
  int64_t lost_ = 0;  // map_waits_lost records' counts read
  MapFaults* m_;
  MapFaults::Stream s_;
  FileMapping map_;

 public:
  Ring ring;

 private:
  Ring waits_;
};

constexpr auto kWait = static_cast<uint16_t>(EventKind::MapWait);
constexpr auto kMajor = static_cast<uint16_t>(EventKind::MajorFault);

TEST(MapWaits, AMinorFaultThatWaitedForItsPageIsAWait) {
  // Its page was being read ahead: the kernel counts the fault minor, and
  // the thread waited 2 ms in it.
  MapFaults m;
  Thread t(&m);
  t.ring.In(1000 * kUs);
  t.Taken(1005 * kUs, kBase + 4096);
  t.ring.Out(1010 * kUs);
  t.ring.In(3000 * kUs);
  t.Served(3012 * kUs, kBase + 4096);
  const std::vector<Timed> f = t.Read();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, kWait);
  EXPECT_EQ(f[0].start, 1005 * kUs);  // taken
  EXPECT_EQ(f[0].dur, 2007 * kUs);    // to served
}

TEST(MapWaits, RecordsTheBufferCouldNotHoldAreSaid) {
  // The thread touched fresh memory faster than the flusher read its
  // buffer: the kernel dropped 700 records, and a wait among them would go
  // unseen. A map_waits_lost record says how many, at the pass's cut; the
  // wait read before them is still a map_wait.
  MapFaults m;
  Thread t(&m);
  t.ring.In(1000 * kUs);
  t.Taken(1005 * kUs, kBase + 4096);
  t.ring.Out(1010 * kUs);
  t.ring.In(3000 * kUs);
  t.Served(3012 * kUs, kBase + 4096);
  t.WaitsLost(700);
  const std::vector<Timed> f = t.Read(5000 * kUs);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].kind, kWait);
  EXPECT_EQ(f[1].kind, static_cast<uint16_t>(EventKind::MapWaitsLost));
  EXPECT_EQ(f[1].start, 5000 * kUs);
  EXPECT_EQ(t.lost(), 700);
}

TEST(MapWaits, MinorFaultsThatDidNotWaitAreNone) {
  // One with no switch at all; one taken 10 us after the thread came back
  // from a wait (a sleep's, a futex's) and served at once: not the
  // fault's wait, however close.
  MapFaults m;
  Thread t(&m);
  t.ring.In(1000 * kUs);
  t.Taken(1500 * kUs, kBase);
  t.Served(1501 * kUs, kBase);
  t.ring.Out(2000 * kUs);
  t.ring.In(2100 * kUs);
  t.Taken(2110 * kUs, kBase + 4096);
  t.Served(2111 * kUs, kBase + 4096);
  EXPECT_TRUE(t.Read().empty());
}

TEST(MapWaits, AWaitInsideACallIsNotAMajorFaults) {
  // The thread blocked inside a read() (its end after the switch back in),
  // then took a major fault with no switch of its own (its page read before
  // it had to wait) within a fault's entry of its return: not given the
  // call's wait.
  MapFaults m;
  Thread t(&m);
  t.ring.In(1000 * kUs);
  t.ring.Out(1100 * kUs);  // in the read()
  t.ring.In(3000 * kUs);
  t.CallEnded(3005 * kUs);
  t.ring.Fault(3040 * kUs, kBase + 8192);
  const std::vector<Timed> f = t.Read();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, kMajor);
  EXPECT_EQ(f[0].start, 3005 * kUs);  // after the call, not at the wait in it
  EXPECT_EQ(f[0].dur, 35 * kUs);
}

TEST(MapWaits, RecordsAfterTheCutWaitForTheNextPass) {
  // The pass began draining calls at 3 ms: the switch back in at 4 ms and
  // the fault served after it are read at the next pass, in order.
  MapFaults m;
  Thread t(&m);
  t.ring.In(1000 * kUs);
  t.Taken(1990 * kUs, kBase);
  t.ring.Out(2000 * kUs);
  t.ring.In(4000 * kUs);
  t.Served(4010 * kUs, kBase);
  EXPECT_TRUE(t.Read(3000 * kUs).empty());
  const std::vector<Timed> f = t.Read(5000 * kUs);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, kWait);
  EXPECT_EQ(f[0].start, 1990 * kUs);
  EXPECT_EQ(f[0].dur, 2020 * kUs);
}

TEST(MapWaits, AWaitForAnotherFilesPageIsNotTheNextFaults) {
  // The wait was in a fault on a page of no traced file (a library's): a
  // major fault on the map just after, with no switch of its own, is not
  // given it.
  MapFaults m;
  Thread t(&m);
  t.ring.In(1000 * kUs);
  t.Taken(1995 * kUs, kBase + (8u << 20));  // outside the map
  t.ring.Out(2000 * kUs);
  t.ring.In(4000 * kUs);
  t.Served(4005 * kUs, kBase + (8u << 20));
  t.ring.Fault(4020 * kUs, kBase);
  const std::vector<Timed> f = t.Read();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, kMajor);
  EXPECT_EQ(f[0].start, 4005 * kUs);
  EXPECT_EQ(f[0].dur, 15 * kUs);
}

TEST(MapWaits, AFaultServedMajorIsNoWait) {
  // Taken, waited for and served as a major fault: one major_fault, from
  // its wait, and no map_wait of it.
  MapFaults m;
  Thread t(&m);
  t.ring.In(1000 * kUs);
  t.Taken(1005 * kUs, kBase);
  t.ring.Out(1010 * kUs);
  t.ring.In(3000 * kUs);
  t.ring.Fault(3010 * kUs, kBase);
  const std::vector<Timed> f = t.Read();
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].kind, kMajor);
  EXPECT_EQ(f[0].start, 1000 * kUs);
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
