// Two runs side by side (`dlprof-dump --compare BEFORE AFTER`, the C ABI's
// dlprof_compare_json, Python's dlprof.compare): what changed in the answer
// between a run and the same job run again with a change (more loader
// workers, another batch size, another file format).
//
// Nothing is measured here: each run's figures are those its own summary
// has (Summary, its verdict, its file classes), and each change is after
// minus before of one of them. The figures compared (docs/ANALYSIS_RUNS.md,
// "Two runs side by side"): the verdict's loop, time per step, batch wait
// and its causes, data stall and GPU busy; each rank's and each host's; the
// data set's I/O; and the verdict's findings that appeared, went away or
// stayed.
#ifndef DLPROF_LIB_ANALYSIS_COMPARE_COMPARE_H_
#define DLPROF_LIB_ANALYSIS_COMPARE_COMPARE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "lib/analysis/findings/verdict.h"
#include "lib/analysis/json/summary_json.h"
#include "lib/analysis/summary/summary.h"

namespace dlprof::analysis {

// How a figure is shown.
enum class FigureUnit : uint8_t { kNs, kBytes, kCount, kPerMille, kBytesPerSecond };

// One figure of both runs. A run without it (no batch wait, no GPU work,
// a rank it did not have) has `in_before` or `in_after` false: its change is
// then null in the JSON and "-" in the text.
struct FigureChange {
  std::string key;    // its key in the JSON's "change" ("batch_wait_ns")
  std::string label;  // for people ("batch wait")
  FigureUnit unit = FigureUnit::kNs;
  bool in_before = false, in_after = false;
  uint64_t before = 0, after = 0;
  bool both() const { return in_before && in_after; }
  // after - before (both() only).
  int64_t change() const { return static_cast<int64_t>(after) - static_cast<int64_t>(before); }
};

// The figures of one thing that both runs may have: the job's verdict, a
// rank, a host, the data set.
struct FigureGroup {
  std::string key;    // a rank's key as the summary's "ranks" has it ("3", "3 host"), a host name
  int32_t rank = -1;  // ranks only
  std::string host;   // ranks and hosts
  bool in_before = false, in_after = false;
  std::vector<FigureChange> figures;
  const FigureChange* Find(const std::string& key) const;
};

// A finding (verdict.h) of either run, by rule.
struct FindingChange {
  std::string rule;
  bool in_before = false, in_after = false;
  std::string what_before, what_after;  // its text in each run that has it
  uint64_t cost_before_ns = 0, cost_after_ns = 0;
};

struct Comparison {
  Verdict before, after;  // each run's verdict, as its summary computes it
  // Time per step, loop, batch wait (per mille of the loop too) and its
  // three causes, data stall and GPU busy (per mille of the loop), start-up.
  FigureGroup verdict;
  FigureGroup data_set;  // the data set's files and reads (file_classes.h)
  std::vector<FigureGroup> ranks;  // by rank, then host (the summary's order)
  std::vector<FigureGroup> hosts;  // by host name
  // Appeared (after only), went away (before only), stayed: in that order,
  // each in its run's order of findings (most costly first).
  std::vector<FindingChange> findings;
};

Comparison Compare(const Summary& before, const Summary& after);

// Time per step: the loop's length over its steps, both summed over the
// ranks (an average rank's step); 0 without steps.
uint64_t StepNs(const Verdict& v);


// The "change" object of the comparison's JSON (compare_json.cc; its keys
// in docs/ANALYSIS.md).
std::string ChangeJson(const Comparison& c);

// {"before": <before's summary JSON>, "after": <after's>, "change": ...}:
// what `--compare --format json` prints; each run's summary is exactly what
// `--summary --format json` prints for it (`lists`: --top, --details).
std::string ComparisonJson(const Summary& before, const Summary& after, const Comparison& c,
                           const SummaryJsonOptions& lists = {});

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_COMPARE_COMPARE_H_
