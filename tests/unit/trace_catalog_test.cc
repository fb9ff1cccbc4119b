// Which traces are images of one process (lib/read/trace_catalog.h): the
// same host, boot, time namespace, pid namespace, pid and kernel start tick.
// Two ranks in containers of their own on one host are both pid 1, and
// start in one 10 ms tick about one run in four: only the pid namespace
// tells them apart (they were read as one process that exec'ed itself, with
// both ranks' I/O in one row).
#include "lib/read/trace_catalog.h"

#include <gtest/gtest.h>

namespace dlprof::read {
namespace {

format::ProcessInfo Rank(const std::string& pid_ns, uint64_t process_start_ns) {
  format::ProcessInfo p;
  p.pid = 1;
  p.host = "node1";
  p.boot_id = "b0";
  p.time_ns = "monotonic 0 0;boottime 0 0";
  p.kernel_start = "4242";
  p.pid_ns = pid_ns;
  p.process_start_ns = process_start_ns;
  return p;
}

TEST(TraceCatalog, PidOneOfTwoPidNamespacesIsTwoProcesses) {
  const format::ProcessInfo a = Rank("pid:[4026532201]", 100);
  const format::ProcessInfo b = Rank("pid:[4026532205]", 101);
  EXPECT_FALSE(SameProcess(a, b));
  EXPECT_EQ(FirstImages({&a, &b}), (std::vector<size_t>{0, 1}));
}

TEST(TraceCatalog, ImagesOfOneProcessAreOne) {
  const format::ProcessInfo first = Rank("pid:[4026532201]", 100);
  const format::ProcessInfo exec = Rank("pid:[4026532201]", 300);
  EXPECT_TRUE(SameProcess(first, exec));
  EXPECT_EQ(FirstImages({&exec, &first}), (std::vector<size_t>{1, 1}));
  // Older writers' traces have no pid namespace: as before, by the rest.
  const format::ProcessInfo old_first = Rank("", 100), old_exec = Rank("", 300);
  EXPECT_TRUE(SameProcess(old_first, old_exec));
}

}  // namespace
}  // namespace dlprof::read
