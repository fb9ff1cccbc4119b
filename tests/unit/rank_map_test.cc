// The ranks of a large job in the summary's JSON (lib/analysis/json/
// rank_map_json.h) on constructed rank figures with known answers: rows of
// several ranks hold the most a rank of the row waited per column of steps,
// the timelines add the row's ranks up, the histograms count every rank,
// and the document lists the `top` ranks that waited the longest. The
// integration test (test_html_report.py) checks a map of a rank a row
// against the full listing of real traces.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lib/analysis/json/rank_map_json.h"
#include "lib/analysis/json/summary_json.h"

namespace dlprof::analysis {
namespace {

// Rank r: 250 steps, step k waiting (r + 1) * k ns, and read (r + 1) bytes in
// each of its 300 seconds; rank 7 waits 1,000 times longer.
std::vector<RankFigures> Ranks(int n) {
  std::vector<RankFigures> ranks;
  for (int r = 0; r < n; ++r) {
    RankFigures f;
    f.rank = r;
    f.host = "node" + std::to_string(r / 4);
    const uint64_t slow = r == 7 ? 1000 : 1;
    for (uint64_t k = 1; k <= 250; ++k) {
      RankStep s;
      s.step = k;
      s.batch_wait_ns = slow * (r + 1) * k;
      f.batch_wait_ns += s.batch_wait_ns;
      f.steps.push_back(s);
    }
    f.read_per_second.assign(300, static_cast<uint64_t>(r + 1));
    f.read_bytes = 300 * static_cast<uint64_t>(r + 1);
    ranks.push_back(f);
  }
  return ranks;
}

// The text of `key`'s value: from after `"key":` to its bracket's close.
std::string Value(const std::string& json, const std::string& key) {
  size_t at = json.find("\"" + key + "\":");
  EXPECT_NE(at, std::string::npos) << key;
  at += key.size() + 3;
  int depth = 0;
  for (size_t i = at; i < json.size(); ++i) {
    if (json[i] == '[' || json[i] == '{') ++depth;
    if (json[i] == ']' || json[i] == '}') --depth;
    if (depth == 0 && (json[i] == ',' || json[i] == ']' || json[i] == '}')) {
      return json.substr(at, i - at + (json[i] == ',' ? 0 : 1));
    }
  }
  return "";
}

TEST(RankMapTest, RowsOfRanksAndColumnsOfSteps) {
  const std::string j = "{" + RankMapJson(Ranks(10), 4) + "}";
  // 10 ranks in at most 4 rows: 3 a row, the last row rank 9 alone.
  EXPECT_EQ(Value(j, "ranks"), "10");
  EXPECT_EQ(Value(j, "rows"), "[[0,2,3],[3,5,3],[6,8,3],[9,9,1]]");
  // 250 steps in at most 100 columns: 3 a column, the last steps 250-250.
  const std::string columns = Value(j, "step_columns");
  EXPECT_EQ(columns.substr(0, 20), "[[1,3],[4,6],[7,9],[");
  EXPECT_NE(columns.find(",[250,250]]"), std::string::npos);
  // Row 0's first cell: the most of ranks 0-2 in steps 1-3, rank 2's
  // 3 * (1 + 2 + 3); row 2's: rank 7's 1000 * 8 * 6.
  const std::string wait = Value(j, "batch_wait_ns");
  EXPECT_EQ(wait.substr(0, 5), "[[18,");
  EXPECT_NE(wait.find("],[48000,"), std::string::npos) << wait.substr(0, 2000);
  // 300 seconds in at most 120 bins: 3 s a bin; row 1 reads (4+5+6) * 3 a bin.
  EXPECT_NE(j.find("\"timeline\":{\"bin_s\":3,\"read_bytes\":[[18,"), std::string::npos);
  EXPECT_NE(j.find("],[45,45,"), std::string::npos);
  // Histograms: every rank counted once; rank 7 alone in the last bin.
  const std::string hist = Value(j, "histograms");
  EXPECT_NE(hist.find("\"batch_wait_ns\":{\"bin\":"), std::string::npos);
  const std::string counts = Value(Value(hist, "batch_wait_ns"), "counts");
  EXPECT_EQ(counts.front(), '[');
  EXPECT_EQ(counts.substr(counts.size() - 3), ",1]") << counts;
  EXPECT_EQ(counts.substr(0, 3), "[9,") << counts;
}

TEST(RankMapTest, ListsTheRanksThatWaitedLongest) {
  const std::vector<RankFigures> ranks = Ranks(10);
  const std::vector<size_t> top = ListedRanks(ranks, 3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(ranks[top[0]].rank, 7);
  EXPECT_EQ(ranks[top[1]].rank, 9);
  EXPECT_EQ(ranks[top[2]].rank, 8);
  EXPECT_EQ(ListedRanks(ranks, 20).size(), 10u);
}

TEST(RankMapTest, TheSummaryListsTopRanksAndMapsEvery) {
  Summary s;
  s.rank_figures = Ranks(10);
  SummaryJsonOptions o;
  o.top = 3;
  const std::string cut = SummaryJson(s, o);
  EXPECT_EQ(Value(cut, "ranks").substr(0, 6), "{\"7\":{") ;
  EXPECT_NE(cut.find("\"rank_map\":{\"ranks\":10,"), std::string::npos);
  EXPECT_NE(cut.find(",\"ranks\":7}"), std::string::npos);  // left_out
  EXPECT_EQ(Value(cut, "ranks").find("\"steps\""), std::string::npos);
  // Every rank with --details, or when they are no more than --top.
  o.details = true;
  const std::string all = SummaryJson(s, o);
  EXPECT_EQ(all.find("rank_map"), std::string::npos);
  EXPECT_NE(all.find(",\"ranks\":0}"), std::string::npos);
  o.details = false;
  o.top = 10;
  EXPECT_EQ(SummaryJson(s, o), all);
}

}  // namespace
}  // namespace dlprof::analysis
