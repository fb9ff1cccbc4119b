// The fixture of the flusher's counters' tests (lib/core/interval_counters.h):
// counters writing to a file of their own, events added to them as one
// thread's (7), and the file read back.
#ifndef DLPROF_TESTS_HELPERS_INTERVAL_COUNTERS_FIXTURE_H_
#define DLPROF_TESTS_HELPERS_INTERVAL_COUNTERS_FIXTURE_H_

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "lib/core/interval_counters.h"
#include "lib/core/string_table.h"
#include "lib/format/counters.h"
#include "lib/format/trace_file.h"

namespace dlprof::core {

inline constexpr uint64_t kMs = 1000000;

inline Event Gpu(EventKind kind, uint64_t start, uint64_t end) {
  Event e{};
  e.kind = static_cast<uint16_t>(kind);
  e.start_ns = start;
  e.dur_ns = end - start;
  e.offset = -1;
  return e;
}

class IntervalCountersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(strings_.Init());
    char dir[] = "/tmp/interval_countersXXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    dir_ = dir;
    path_ = dir_ + "/p.dlcount";
    format::ProcessInfo info;
    info.pid = 1;
    info.host = "h";
    info.flags = kHeaderFlagSegment;
    std::string error;
    ASSERT_TRUE(counters_.Open(path_, format::EncodeFileHeader(info), 0, &error)) << error;
  }
  void TearDown() override {
    unlink(path_.c_str());
    rmdir(dir_.c_str());
  }
  format::CountersFile Read() {
    format::CountersFile c;
    std::string error;
    EXPECT_TRUE(format::ReadCountersFile(path_, &c, &error)) << error;
    EXPECT_EQ(c.damaged, 0u);
    return c;
  }

  uint32_t Intern(const std::string& text) { return strings_.Intern(text.data(), text.size()); }
  // A call on `file` of [start_ms, end_ms) returning `ret`, counted.
  void AddCall(EventKind kind, uint64_t start_ms, uint64_t end_ms, uint32_t file, int64_t ret) {
    Event e = Gpu(kind, start_ms * kMs, end_ms * kMs);
    e.file = file;
    e.ret = ret;
    counters_.Add(7, &e, 1, format::TickScale{});
  }

  // Ends the pass and the run at `end_ms`: one wait of the thread's own,
  // `reading_ns` of reading in it.
  void ExpectOneWaitReading(uint64_t end_ms, uint64_t reading_ns) {
    counters_.EndPass();
    ASSERT_TRUE(counters_.MaybeEmit(end_ms * kMs, -1, true));
    const format::CountersFile c = Read();
    ASSERT_EQ(c.batches.size(), 1u);
    EXPECT_EQ(c.batches[0].read.count, 1u);
    EXPECT_EQ(c.batches[0].read.reading_ns, reading_ns);
  }

  StringTable strings_;
  IntervalCounters counters_{&strings_, 1000 * kMs};
  std::string dir_, path_;
};

}  // namespace dlprof::core

#endif  // DLPROF_TESTS_HELPERS_INTERVAL_COUNTERS_FIXTURE_H_
