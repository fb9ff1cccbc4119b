// The comparison as JSON (compare.h): `--compare --format json`, the C
// ABI's dlprof_compare_json, Python's dlprof.compare.
//
//   {"before": <summary JSON>, "after": <summary JSON>,
//    "change": {"bound": {"before", "after"}, "cause": {"before", "after"},
//               "verdict": {KEY: FIGURE, ...}, "data_set": {KEY: FIGURE, ...},
//               "ranks": [{"key", "rank", "host", "in", KEY: FIGURE, ...}],
//               "hosts": [{"host", "in", KEY: FIGURE, ...}],
//               "findings": {"appeared": [FINDING], "went_away": [FINDING],
//                            "stayed": [FINDING]}}}
//
// where FIGURE is {"label", "unit" ("ns", "bytes", "count", "per_mille",
// "bytes_per_s"), "before", "after", "change": after - before}: each run's
// value as its summary has it (null where it lacks the figure), and the
// change (null unless both have it); FINDING is {"rule", "what" (the
// text of after's, else before's), "cost_ns": FIGURE}; "in" is "both",
// "before" or "after"; "cause" is the batch wait's largest part (null in a
// run without the split). docs/ANALYSIS_RUNS.md ("Two runs side by side") names every key.
#include <cinttypes>

#include "lib/analysis/compare/compare.h"
#include "lib/text/text.h"

namespace dlprof::analysis {
using namespace dlprof::text;
namespace {

const char* UnitName(FigureUnit u) {
  switch (u) {
    case FigureUnit::kNs: return "ns";
    case FigureUnit::kBytes: return "bytes";
    case FigureUnit::kPerMille: return "per_mille";
    case FigureUnit::kBytesPerSecond: return "bytes_per_s";
    case FigureUnit::kCount: break;
  }
  return "count";
}

// `"key":{"label","unit","before","after","change"},...` of a group's
// figures, without braces.
std::string Changes(const FigureGroup& g) {
  std::string j;
  auto value = [](bool in, uint64_t v) { return in ? Fmt("%" PRIu64, v) : std::string("null"); };
  for (const FigureChange& f : g.figures) {
    size_t label = f.label.find_first_not_of(' ');  // a cause's indent is the text's
    j += (j.empty() ? "" : ",") + JsonString(f.key) + ":{\"label\":" +
         JsonString(f.label.substr(label == std::string::npos ? 0 : label)) +
         ",\"unit\":\"" + UnitName(f.unit) + "\",\"before\":" + value(f.in_before, f.before) +
         ",\"after\":" + value(f.in_after, f.after) + ",\"change\":" +
         (f.both() ? Fmt("%" PRId64, f.change()) : std::string("null")) + "}";
  }
  return j;
}

const char* In(bool before, bool after) {
  return before && after ? "both" : before ? "before" : "after";
}

std::string BeforeAfter(const std::string& before, const std::string& after) {
  return "{\"before\":" + before + ",\"after\":" + after + "}";
}

std::string CauseOf(const Verdict& v) {
  return v.has_batch_wait && v.split ? JsonString(WaitCauseName(v.cause)) : "null";
}

// Each finding: its rule, its text (after's where it has one) and its time
// in each run, as a FIGURE.
std::string FindingsJson(const Comparison& c) {
  std::string lists[3];  // appeared, went away, stayed
  for (const FindingChange& f : c.findings) {
    const int list = f.in_before && f.in_after ? 2 : f.in_after ? 0 : 1;
    FigureGroup cost;
    cost.figures.push_back({"cost_ns", "time it stands for", FigureUnit::kNs, f.in_before,
                            f.in_after, f.cost_before_ns, f.cost_after_ns});
    lists[list] += (lists[list].empty() ? "" : ",") + std::string("{\"rule\":") +
                   JsonString(f.rule) +
                   ",\"what\":" + JsonString(f.in_after ? f.what_after : f.what_before) + "," +
                   Changes(cost) + "}";
  }
  return "{\"appeared\":[" + lists[0] + "],\"went_away\":[" + lists[1] + "],\"stayed\":[" +
         lists[2] + "]}";
}

}  // namespace

std::string ChangeJson(const Comparison& c) {
  std::string j = "{\"bound\":" + BeforeAfter(JsonString(BoundName(c.before.bound)),
                                               JsonString(BoundName(c.after.bound)));
  j += ",\"cause\":" + BeforeAfter(CauseOf(c.before), CauseOf(c.after));
  j += ",\"verdict\":{" + Changes(c.verdict) + "}";
  j += ",\"data_set\":{" + Changes(c.data_set) + "}";
  j += ",\"ranks\":[";
  for (size_t i = 0; i < c.ranks.size(); ++i) {
    const FigureGroup& g = c.ranks[i];
    const std::string figures = Changes(g);
    j += Fmt("%s{\"key\":%s,\"rank\":%d,\"host\":%s,\"in\":\"%s\"", i ? "," : "",
             JsonString(g.key).c_str(), g.rank, JsonString(g.host).c_str(),
             In(g.in_before, g.in_after)) +
         (figures.empty() ? "" : ",") + figures + "}";
  }
  j += "],\"hosts\":[";
  for (size_t i = 0; i < c.hosts.size(); ++i) {
    const FigureGroup& g = c.hosts[i];
    const std::string figures = Changes(g);
    j += Fmt("%s{\"host\":%s,\"in\":\"%s\"", i ? "," : "", JsonString(g.host).c_str(),
             In(g.in_before, g.in_after)) +
         (figures.empty() ? "" : ",") + figures + "}";
  }
  return j + "],\"findings\":" + FindingsJson(c) + "}";
}

std::string ComparisonJson(const Summary& before, const Summary& after, const Comparison& c,
                           const SummaryJsonOptions& lists) {
  return "{\"before\":" + SummaryJson(before, lists) + ",\"after\":" + SummaryJson(after, lists) +
         ",\"change\":" + ChangeJson(c) + "}";
}

}  // namespace dlprof::analysis
