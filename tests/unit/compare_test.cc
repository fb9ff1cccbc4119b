// Two runs side by side (lib/analysis/compare/compare.h) on summaries made
// by hand: ranks and hosts matched by key and name, those of one run only
// marked so with no change, GPU figures only where both runs had GPU work,
// a rank seen on a second host keyed as the summary's JSON keys it, and the
// findings that appeared, went away or stayed. The integration test
// (tests/integration/test_compare.py) checks real runs against their
// summaries; this covers the shapes those runs do not have.
#include "lib/analysis/compare/compare.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dlprof::analysis {
namespace {

constexpr uint64_t kMs = 1000000;

RankFigures Rank(int32_t rank, const std::string& host, uint64_t wait_ns, bool gpu) {
  RankFigures r;
  r.rank = rank;
  r.host = host;
  r.loop = true;
  r.loop_start_ns = 100 * kMs;
  r.loop_end_ns = 1100 * kMs;
  r.first_ns = 0;
  r.batch_wait_ns = r.reading_ns = wait_ns;
  for (uint64_t i = 0; i < 10; ++i) r.steps.push_back({i + 1, r.loop_start_ns + i * 100 * kMs, wait_ns / 10});
  r.gpu = gpu;
  if (gpu) {
    r.gpu_first_ns = r.loop_start_ns;
    r.gpu_last_ns = r.loop_end_ns;
    r.gpu_busy_ns = 1000 * kMs - wait_ns;
    r.devices = {0};
  }
  return r;
}

Summary RunOf(std::vector<RankFigures> ranks) {
  Summary s;
  s.run_start_ns = 0;
  s.run_end_ns = 1200 * kMs;
  s.rank_figures = std::move(ranks);
  for (const RankFigures& r : s.rank_figures) {
    HostRanks* h = nullptr;
    for (HostRanks& x : s.rank_job.hosts) h = x.host == r.host ? &x : h;
    if (h == nullptr) {
      s.rank_job.hosts.push_back({r.host});
      h = &s.rank_job.hosts.back();
    }
    ++h->ranks;
    h->batch_wait_ns += r.batch_wait_ns;
    s.rank_job.gpu |= r.gpu;
  }
  return s;
}

const FigureGroup* RankGroup(const Comparison& c, const std::string& key) {
  for (const FigureGroup& g : c.ranks) {
    if (g.key == key) return &g;
  }
  return nullptr;
}

TEST(CompareTest, RanksAndHostsMatchedByKey) {
  // Rank 1 only before (on host a), rank 2 only after (on host b); rank 0
  // in both. Rank 0 is on a second host after: keyed "0 b".
  const Summary before = RunOf({Rank(0, "a", 600 * kMs, false), Rank(1, "a", 400 * kMs, false)});
  const Summary after = RunOf({Rank(0, "a", 200 * kMs, false), Rank(0, "b", 100 * kMs, false),
                             Rank(2, "b", 300 * kMs, false)});
  const Comparison c = Compare(before, after);
  std::vector<std::string> keys;
  for (const FigureGroup& g : c.ranks) keys.push_back(g.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"0", "0 b", "1", "2"}));
  const FigureGroup* r0 = RankGroup(c, "0");
  ASSERT_NE(r0, nullptr);
  EXPECT_TRUE(r0->in_before && r0->in_after);
  EXPECT_EQ(r0->Find("batch_wait_ns")->change(), -400 * static_cast<int64_t>(kMs));
  EXPECT_EQ(r0->Find("step_ns")->before, 100 * kMs);  // 1 s over 10 batches
  const FigureGroup* r1 = RankGroup(c, "1");
  EXPECT_TRUE(r1->in_before && !r1->in_after);
  EXPECT_FALSE(r1->Find("batch_wait_ns")->both());
  EXPECT_TRUE(RankGroup(c, "2")->in_after && !RankGroup(c, "2")->in_before);
  // No GPU work in either run: no GPU figure in either.
  EXPECT_FALSE(r0->Find("gpu_busy_ns")->in_before || r0->Find("gpu_busy_ns")->in_after);
  // Hosts by name: a in both, b after only.
  ASSERT_EQ(c.hosts.size(), 2u);
  EXPECT_EQ(c.hosts[0].host, "a");
  EXPECT_EQ(c.hosts[0].Find("ranks")->change(), -1);
  EXPECT_EQ(c.hosts[0].Find("batch_wait_ns")->change(), -800 * static_cast<int64_t>(kMs));
  EXPECT_TRUE(c.hosts[1].in_after && !c.hosts[1].in_before);
  // The job's wait: the ranks' summed.
  EXPECT_EQ(c.verdict.Find("batch_wait_ns")->change(), -400 * static_cast<int64_t>(kMs));
  const std::string json = ChangeJson(c);
  EXPECT_NE(json.find("\"key\":\"1\",\"rank\":1,\"host\":\"a\",\"in\":\"before\""), std::string::npos);
  EXPECT_NE(json.find("\"before\":400000000,\"after\":null,\"change\":null"), std::string::npos);
}

TEST(CompareTest, GpuFiguresWhereBothRunsHadGpuWork) {
  const Comparison c = Compare(RunOf({Rank(0, "a", 600 * kMs, false)}), RunOf({Rank(0, "a", 100 * kMs, true)}));
  const FigureChange* busy = c.verdict.Find("gpu_busy_ns");
  EXPECT_FALSE(busy->in_before);
  EXPECT_TRUE(busy->in_after);
  EXPECT_EQ(busy->after, 900 * kMs);
  EXPECT_NE(ChangeJson(c).find("\"gpu_busy_ns\":{\"label\":\"GPU busy\",\"unit\":\"ns\",\"before\":null,"
                               "\"after\":900000000,\"change\":null}"),
            std::string::npos);
}

TEST(CompareTest, FindingsAppearGoAwayAndStay) {
  // 60 % of the loop waiting, against 10 % and 5 %: the batch_wait finding
  // (10 % and more) stays from 60 to 10, and goes from 60 to 5.
  const Summary high = RunOf({Rank(0, "a", 600 * kMs, false)});
  const Summary edge = RunOf({Rank(0, "a", 100 * kMs, false)});
  const Summary low = RunOf({Rank(0, "a", 50 * kMs, false)});
  auto rules = [](const Comparison& c, bool before, bool after) {
    std::vector<std::string> out;
    for (const FindingChange& f : c.findings) {
      if (f.in_before == before && f.in_after == after) out.push_back(f.rule);
    }
    return out;
  };
  const Comparison gone = Compare(high, low);
  EXPECT_EQ(rules(gone, true, false), std::vector<std::string>{"batch_wait"});
  EXPECT_TRUE(rules(gone, false, true).empty());
  const Comparison back = Compare(low, high);
  EXPECT_EQ(rules(back, false, true), std::vector<std::string>{"batch_wait"});
  const Comparison stayed = Compare(high, edge);
  ASSERT_EQ(rules(stayed, true, true), std::vector<std::string>{"batch_wait"});
  EXPECT_EQ(stayed.findings[0].cost_before_ns, 600 * kMs);
  EXPECT_EQ(stayed.findings[0].cost_after_ns, 100 * kMs);
  const std::string json = ChangeJson(back);
  EXPECT_NE(json.find("\"appeared\":[{\"rule\":\"batch_wait\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"went_away\":[],\"stayed\":[]"), std::string::npos) << json;
}

}  // namespace
}  // namespace dlprof::analysis
