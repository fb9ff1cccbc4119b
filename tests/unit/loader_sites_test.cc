// Where each loader was made (docs/ANALYSIS.md, "batch wait": `loaders`'
// `site`): the bootstrap's mark `loader L site=FILE:LINE` at each pass names
// L in the rank's figures, through the summary's codec, in the verdict's
// JSON and in the text's `by loader:` line; a loader without the mark
// stays unnamed. Built by hand: a training loader made anew for a second
// epoch (the same L, as the bootstrap numbers it) and a validation loader.
#include <gtest/gtest.h>

#include <string>

#include "lib/analysis/findings/verdict.h"
#include "lib/analysis/summary/summary_codec.h"
#include "tests/helpers/rank_group.h"
#include "tools/dump/summary_output.h"

namespace dlprof::analysis {
namespace {

using Group = testing::RankGroup;
constexpr uint32_t kTrainSite = 40, kValSite = 41, kTrainPass = 42, kValPass = 43,
                   kTrainBatch = 44, kValBatch = 45, kUnnamedPass = 46, kUnnamedBatch = 47;

void NameTheMarks(Group* g) {
  g->Name(kTrainSite, "loader 0 site=train.py:42");
  g->Name(kValSite, "loader 1 site=train.py:43");
  g->Name(kTrainPass, "epoch loader=0 pass=0");
  g->Name(kValPass, "epoch loader=1 pass=0");
  g->Name(kTrainBatch, "batch loader=0");
  g->Name(kValBatch, "batch loader=1");
  g->Name(kUnnamedPass, "epoch loader=2 pass=0");
  g->Name(kUnnamedBatch, "batch loader=2");
}

// A pass: iter() [start, start + 100) holding `site` (none: 0) and `pass`,
// then `batches` waits of 200, each holding `batch`.
void Pass(Group* g, uint64_t start, uint32_t site, uint32_t pass, uint32_t batch, int batches) {
  g->Iter(start, start + 100, pass);
  if (site != 0) g->Call(0, EventKind::AppMark, start + 2, start + 2, site);
  for (int i = 0; i < batches; ++i) {
    const uint64_t at = start + 200 + 300 * static_cast<uint64_t>(i);
    g->Wait(at, at + 200);
    g->Call(0, EventKind::AppMark, at + 1, at + 1, batch);
  }
}

RankFigures Epochs() {
  Group g(0);
  NameTheMarks(&g);
  for (uint64_t epoch = 0; epoch < 2; ++epoch) {  // loaders made anew: one L each
    Pass(&g, 10000 * epoch + 1000, kTrainSite, kTrainPass, kTrainBatch, 3);
    Pass(&g, 10000 * epoch + 5000, kValSite, kValPass, kValBatch, 1);
  }
  Pass(&g, 30000, 0, kUnnamedPass, kUnnamedBatch, 1);  // annotate_loader's: no site
  return g.Measure();
}

TEST(LoaderSitesTest, EachLoaderIsNamedWhereItWasMade) {
  const RankFigures f = Epochs();
  ASSERT_EQ(f.loader_waits.size(), 3u);
  const LoaderWait& train = f.loader_waits[0];
  const LoaderWait& val = f.loader_waits[1];
  EXPECT_EQ(train.loader, 0);
  EXPECT_EQ(train.site, "train.py:42");
  EXPECT_EQ(train.batches, 6u);                  // 3 a pass, 2 passes
  EXPECT_EQ(train.ns, 2 * (100 + 3 * 200));      // its iter()s and its waits
  EXPECT_EQ(val.site, "train.py:43");
  EXPECT_EQ(val.ns, 2 * (100 + 200));
  EXPECT_EQ(f.loader_waits[2].site, "");

  // Through the partial summary's bytes (the summary of several traces).
  PartialSummary p;
  p.s.rank_figures.push_back(f);
  PartialSummary back;
  std::string error;
  ASSERT_TRUE(DecodePartialSummary(EncodePartialSummary(p), &back, &error)) << error;
  ASSERT_EQ(back.s.rank_figures.size(), 1u);
  EXPECT_EQ(back.s.rank_figures[0].loader_waits[1].site, "train.py:43");

  Summary s;
  s.run_end_ns = 40000;
  s.rank_figures.push_back(back.s.rank_figures[0]);
  const Verdict v = ComputeVerdict(s);
  const std::string json = VerdictJson(v);
  EXPECT_NE(json.find("\"loaders\":[{\"loader\":0,\"site\":\"train.py:42\",\"ns\":1400,"
                      "\"steps\":6,"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("{\"loader\":2,\"site\":null,"), std::string::npos) << json;
  const std::string text = dump::VerdictText(s);
  EXPECT_NE(text.find("by loader: loader 0 at train.py:42 "), std::string::npos) << text;
  EXPECT_NE(text.find(", loader 1 at train.py:43 "), std::string::npos) << text;
  EXPECT_NE(text.find(", loader 2 "), std::string::npos) << text;
}

}  // namespace
}  // namespace dlprof::analysis
