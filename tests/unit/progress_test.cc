// dlprof-dump's progress line (tools/dump/progress.h): its text, and a
// display that stops within its delay draws nothing.
#include "tools/dump/progress.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace dlprof::dump {
namespace {

TEST(ProgressTest, LineSaysDoneRateAndTimeLeft) {
  // 1 GiB of 4 GiB in 2 s: 512 MiB/s, 3 GiB left = 6 s.
  EXPECT_EQ(ProgressLine(3, 64, uint64_t{1} << 30, uint64_t{4} << 30, 2'000'000'000),
            "dlprof-dump: 3/64 traces, 1.0 GiB of 4.0 GiB (25 %), 512.0 MiB/s, 6 s left");
  // Nothing done yet: no rate, no estimate.
  EXPECT_EQ(ProgressLine(0, 2, 0, 1000, 5'000'000), "dlprof-dump: 0/2 traces, 0 B of 1000 B (0 %)");
  // All done: no time left to tell; a part second rounds up.
  EXPECT_EQ(ProgressLine(2, 2, 1000, 1000, 1'000'000'000),
            "dlprof-dump: 2/2 traces, 1000 B of 1000 B (100 %), 1000 B/s");
  EXPECT_EQ(ProgressLine(0, 1, 100, 1000, 1'000'000'000),
            "dlprof-dump: 0/1 traces, 100 B of 1000 B (10 %), 100 B/s, 9 s left");
  EXPECT_EQ(ProgressLine(0, 1, 300, 1000, 1'000'000'000),
            "dlprof-dump: 0/1 traces, 300 B of 1000 B (30 %), 300 B/s, 3 s left");
}

TEST(ProgressTest, NothingDrawnWithinTheDelayNorOffATerminal) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  EXPECT_FALSE(ShowProgressOn(fds[1], false));  // a pipe is no terminal
  ReadProgress progress;
  {
    ProgressDisplay display(&progress, 1, 100, fds[1], /*delay_ms=*/60000);
    display.Stop();
    display.Stop();  // twice is fine
  }
  close(fds[1]);
  char buf[16];
  EXPECT_EQ(::read(fds[0], buf, sizeof(buf)), 0);
  close(fds[0]);
}

TEST(ProgressTest, DrawsAfterTheDelayAndClearsAtTheEnd) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  ReadProgress progress;
  progress.bytes_done = 50;
  {
    ProgressDisplay display(&progress, 1, 100, fds[1], /*delay_ms=*/0);
    usleep(50 * 1000);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof(buf))) > 0;) out.append(buf, n);
  close(fds[0]);
  EXPECT_EQ(out.rfind("\rdlprof-dump: 0/1 traces, 50 B of 100 B (50 %)", 0), 0u) << out;
  EXPECT_EQ(out.substr(out.size() - 4), "\r\033[K");
}

}  // namespace
}  // namespace dlprof::dump
