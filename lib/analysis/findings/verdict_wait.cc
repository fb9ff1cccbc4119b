// The verdict's parts about where the batch wait went (verdict.h;
// docs/ANALYSIS.md, "Where the wait goes"): the causes' names, the
// batch_wait finding that names the cause and advises for it, and which
// findings explain a cause.
#include <algorithm>
#include <cinttypes>
#include <set>
#include <string>

#include "lib/analysis/findings/verdict.h"
#include "lib/text/text.h"

namespace dlprof::analysis {
using namespace dlprof::text;

const char* WaitCauseName(WaitCause c) {
  switch (c) {
    case WaitCause::kReading: return "reading";
    case WaitCause::kPreprocessing: return "preprocessing";
    case WaitCause::kHandover: break;
  }
  return "handover";
}

const char* WaitCauseText(WaitCause c) {
  return c == WaitCause::kHandover ? "hand-over" : WaitCauseName(c);
}

WaitCause LargestCause(uint64_t reading_ns, uint64_t preprocessing_ns, uint64_t handover_ns) {
  if (handover_ns > std::max(reading_ns, preprocessing_ns)) return WaitCause::kHandover;
  return preprocessing_ns > reading_ns ? WaitCause::kPreprocessing : WaitCause::kReading;
}

Finding BatchWaitFinding(const Verdict& v, uint64_t share) {
  Finding f{"batch_wait",
            Fmt("The training loop waited for data %s of the loop (%s over %" PRIu64
                " batch requests).",
                PerMilleText(share).c_str(), DurationText(v.batch_wait_ns).c_str(), v.steps),
            "more DataLoader workers, a larger prefetch_factor, or faster storage for the data set",
            v.batch_wait_ns};
  if (!v.split) return f;
  f.what.pop_back();
  f.what += Fmt("; of that wait, %s %s (%s).", WaitCauseText(v.cause),
                PerMilleText(PerMille(v.cause_ns(), v.batch_wait_ns)).c_str(),
                DurationText(v.cause_ns()).c_str());
  switch (v.cause) {
    case WaitCause::kReading:
      f.advice = "the loader was reading data files: faster storage for the data set, or "
                 "fewer, larger reads (the findings on the data files below)";
      break;
    case WaitCause::kPreprocessing:
      f.advice = "the loader was busy on the CPU (decoding, augmenting, collating) or starting "
                 "its workers: more DataLoader workers where cores are free, persistent_workers, "
                 "cheaper transforms, or caching decoded samples";
      break;
    case WaitCause::kHandover:
      f.advice = "the batches were ready but slow to arrive: smaller batches or more compact "
                 "tensors, pin_memory (its thread copies every batch), and room in the shared "
                 "memory (/dev/shm) that batches cross";
      break;
  }
  return f;
}

bool ExplainsCause(const std::string& rule, WaitCause c) {
  // Reading: the storage and the access pattern; reading and preprocessing:
  // the workers (more of them hide reads and share the CPU work).
  static const std::set<std::string> kReading = {"small_reads", "reread", "few_files",
                                                 "metadata", "data_stall", "few_workers"};
  switch (c) {
    case WaitCause::kReading: return kReading.count(rule) != 0;
    case WaitCause::kPreprocessing: return rule == "few_workers";
    case WaitCause::kHandover: break;
  }
  return false;
}

}  // namespace dlprof::analysis
