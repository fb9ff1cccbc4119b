// The rings sidecar, both ends: rings and strings written by the runtime's
// own Sidecar, ThreadRegistry and StringTable, read back by the decoder's
// RecoverFromSidecar -- which events it takes (by the positions the trace
// holds), what it counts as lost, which strings it finds.
#include "lib/format/sidecar.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "lib/core/sidecar.h"
#include "lib/core/string_table.h"
#include "lib/core/thread_registry.h"

namespace dlprof {
namespace {

using core::Sidecar;
using core::StringTable;
using core::ThreadBuffer;
using core::ThreadRegistry;
using format::DecodedBlock;
using format::Recovery;

class SidecarTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dlprof-sidecar-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    trace_ = dir_ + "/p.dlprof";
    registry_.Configure(64);
    ASSERT_TRUE(sidecar_.Create(trace_, 42, 3, 64, sizeof(ThreadBuffer), registry_.RegionBytes()));
    registry_.UseSidecar(&sidecar_);
  }
  void TearDown() override {
    unlink((trace_ + ".rings").c_str());
    rmdir(dir_.c_str());
  }

  // Records events start_ns = first, first+1, ... on `b`, as the producer.
  static void Record(ThreadBuffer* b, uint64_t first, uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) {
      Event e{};
      e.kind = 15;
      e.start_ns = first + i;
      e.file = 1;
      ASSERT_TRUE(b->ring.TryPush(e));
    }
  }
  // Takes every ready event, as the flusher; returns how many.
  static uint64_t Drain(ThreadBuffer* b) {
    uint64_t n = b->ring.Drain([](const Event*, size_t) {});
    b->drained += n;
    return n;
  }

  bool Recover(uint64_t trace_size, DecodedBlock* out, Recovery* r) {
    std::string why;
    bool ok = format::RecoverFromSidecar(trace_, trace_size, out, r, &why);
    EXPECT_EQ(why, "");
    return ok;
  }

  std::string dir_, trace_;
  ThreadRegistry registry_;
  Sidecar sidecar_;
};

TEST_F(SidecarTest, TakesWhatTheTraceLacks) {
  ThreadBuffer* b = registry_.Acquire(7);
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(b->shared);
  Record(b, 100, 10);
  b->written.store(4);  // events 0..3 are in the trace
  DecodedBlock out;
  Recovery r;
  ASSERT_TRUE(Recover(1000, &out, &r));
  EXPECT_TRUE(r.found);
  EXPECT_EQ(r.events, 6u);
  EXPECT_EQ(r.lost, 0u);
  ASSERT_EQ(out.events.size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(out.events[i].start_ns, 104 + i);
    EXPECT_EQ(out.tids[i], 7);
  }
  EXPECT_EQ(out.info.rank, 3);
  EXPECT_EQ(out.min_start_ns, 104u);
  EXPECT_EQ(out.max_end_ns, 109u);
}

TEST_F(SidecarTest, TheBlockInFlightCountsOnlyIfWhole) {
  ThreadBuffer* b = registry_.Acquire(7);
  Record(b, 0, 10);
  b->written.store(2);
  b->pending = 7;
  sidecar_.header()->inflight_end.store(5000);
  DecodedBlock out;
  Recovery r;
  ASSERT_TRUE(Recover(4999, &out, &r));  // torn: events 2.. are not in the trace
  EXPECT_EQ(r.events, 8u);
  ASSERT_TRUE(Recover(5000, &out, &r));  // whole: events 2..6 are
  EXPECT_EQ(r.events, 3u);
  EXPECT_EQ(out.events.front().start_ns, 7u);
}

TEST_F(SidecarTest, OverwrittenEventsAreCountedLost) {
  ThreadBuffer* b = registry_.Acquire(9);
  Record(b, 0, 60);
  Drain(b);  // taken by the flusher, never written
  Record(b, 60, 40);
  DecodedBlock out;
  Recovery r;
  ASSERT_TRUE(Recover(1000, &out, &r));
  // The ring holds the newest 64 slots; the oldest of them may be half
  // overwritten by an event being recorded.
  EXPECT_EQ(r.events, 63u);
  EXPECT_EQ(r.lost, 37u);
  EXPECT_EQ(out.events.front().start_ns, 37u);
  EXPECT_EQ(out.events.back().start_ns, 99u);
}

TEST_F(SidecarTest, ThreadsAreMergedInTimeOrder) {
  ThreadBuffer* a = registry_.Acquire(1);
  ThreadBuffer* b = registry_.Acquire(2);
  Record(a, 10, 3);  // 10 11 12
  Record(b, 11, 3);  // 11 12 13
  DecodedBlock out;
  Recovery r;
  ASSERT_TRUE(Recover(1000, &out, &r));
  ASSERT_EQ(out.events.size(), 6u);
  std::vector<std::pair<uint64_t, int32_t>> got;
  for (size_t i = 0; i < 6; ++i) got.emplace_back(out.events[i].start_ns, out.tids[i]);
  EXPECT_EQ(got, (std::vector<std::pair<uint64_t, int32_t>>{
                     {10, 1}, {11, 1}, {11, 2}, {12, 1}, {12, 2}, {13, 2}}));
  EXPECT_TRUE(out.in_start_order);
}

TEST_F(SidecarTest, StringsComeFromTheLog) {
  StringTable t;
  ASSERT_TRUE(t.Init());
  t.UseLog(&sidecar_);
  const uint32_t a = t.Intern("/data/a", 7);
  const uint32_t b = t.Intern("/data/b", 7);
  EXPECT_EQ(t.Intern("/data/a", 7), a);  // logged once
  DecodedBlock out;
  Recovery r;
  ASSERT_TRUE(Recover(1000, &out, &r));
  std::map<uint32_t, std::string> got;
  for (const auto& s : out.strings) got[s.id] = s.text;
  EXPECT_EQ(got, (std::map<uint32_t, std::string>{{a, "/data/a"}, {b, "/data/b"}}));
}

TEST_F(SidecarTest, TheLogKeepsTheNewestAndSkipsDamage) {
  StringTable t;
  ASSERT_TRUE(t.Init());
  t.UseLog(&sidecar_);
  // 3 MiB of 1000-byte strings: three laps of the 1 MiB log.
  std::string s(1000, 'x');
  uint32_t last = 0;
  for (int i = 0; i < 3000; ++i) {
    snprintf(&s[0], 16, "/%08d", i);
    last = t.Intern(s.data(), s.size());
  }
  DecodedBlock out;
  Recovery r;
  ASSERT_TRUE(Recover(1000, &out, &r));
  std::map<uint32_t, std::string> got;
  for (const auto& e : out.strings) got[e.id] = e.text;
  EXPECT_GT(got.size(), 900u);
  EXPECT_LT(got.size(), 1050u);
  ASSERT_TRUE(got.count(last));
  EXPECT_EQ(got[last].substr(0, 9), "/00002999");
  EXPECT_EQ(got.count(1), 0u);  // overwritten
  // Damage one record's bytes: it is skipped, the others stay.
  const size_t before = got.size();
  uint8_t* log = reinterpret_cast<uint8_t*>(sidecar_.header()) + format::kSidecarHeaderBytes;
  log[format::kStringRecordHeader + 3] ^= 1;
  ASSERT_TRUE(Recover(1000, &out, &r));
  EXPECT_EQ(out.strings.size(), before - 1);
}

TEST_F(SidecarTest, NoSidecarOrNotOne) {
  DecodedBlock out;
  Recovery r;
  std::string why;
  EXPECT_FALSE(format::RecoverFromSidecar(dir_ + "/none.dlprof", 0, &out, &r, &why));
  EXPECT_FALSE(r.found);
  EXPECT_EQ(why, "");
  std::string other = dir_ + "/x.dlprof";
  FILE* f = fopen((other + ".rings").c_str(), "w");
  ASSERT_NE(f, nullptr);
  fputs(std::string(8192, 'z').c_str(), f);
  fclose(f);
  EXPECT_FALSE(format::RecoverFromSidecar(other, 0, &out, &r, &why));
  EXPECT_EQ(why, "not a rings sidecar");
  unlink((other + ".rings").c_str());
}

}  // namespace
}  // namespace dlprof
