// What --rank keeps a process by (lib/analysis/summarize.h, JobTraceFacts):
// its process's rank, which all its images share. A wrapper that execs
// python, whose MPI_Init (a singleton's) gives it rank 0, has a first image
// of no rank: --rank 0 erased that image's row and took the process off the
// count, while the rank-0 image, a later one, was never counted ("0
// processes" beside the process's own row).
#include "lib/analysis/summarize.h"

#include <gtest/gtest.h>

namespace dlprof::analysis {
namespace {

read::CatalogEntry Image(const std::string& exe, int32_t rank, uint64_t start_ns) {
  read::CatalogEntry t;
  t.opened = true;
  t.path = exe + ".dlprof";
  t.info.pid = 4242;
  t.info.host = "node1";
  t.info.boot_id = "b0";
  t.info.kernel_start = "777";
  t.info.exe = "/usr/bin/" + exe;
  t.info.rank = rank;
  t.info.process_start_ns = start_ns;
  return t;
}

TEST(SummarizeSelection, AllImagesOfAProcessHaveTheRankOneOfThemGained) {
  read::TraceCatalog catalog;
  catalog.Add(Image("execpy", -1, 100));
  catalog.Add(Image("python3.11", 0, 200));  // the same process, exec'd
  read::CatalogEntry other = Image("sh", -1, 50);
  other.info.pid = 99;  // another process: keeps its own (none)
  catalog.Add(other);
  const JobTraceFacts facts = TraceFactsOf(catalog);
  EXPECT_EQ(facts.process_ranks, (std::vector<int32_t>{0, 0, -1}));
  EXPECT_FALSE(facts.images[0].later_image);
  EXPECT_TRUE(facts.images[1].later_image);
}

}  // namespace
}  // namespace dlprof::analysis
