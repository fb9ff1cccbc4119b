// The C ABI of include/dlprof/reader.h: the summaries (a group's or all
// traces', merged, as JSON, compared, carried between processes as bytes)
// and a bounded run's whole run. The traces and their events:
// reader_c_api.cc.
#include <memory>
#include <string>
#include <vector>

#include "dlprof/reader.h"
#include "lib/analysis/compare/compare.h"
#include "lib/analysis/json/summary_json.h"
#include "lib/analysis/json/whole_run_json.h"
#include "lib/analysis/summarize.h"
#include "lib/analysis/summary/partial_summary.h"
#include "lib/analysis/summary/summary_codec.h"
#include "lib/analysis/whole_run.h"
#include "lib/analysis/whole_run_notes.h"
#include "lib/capi/reader_handles.h"

using dlprof::analysis::PartialSummary;
using dlprof::capi::DecodeStatus;
using dlprof::capi::Fail;
using dlprof::capi::GiveText;
using dlprof::capi::Guarded;
using dlprof::capi::OpenTrace;

namespace {

// The partial summary of the handle's traces (of one group of them, or all)
// into *out, with the handle's time base and the status of what it decoded.
dlprof_status Summarise(dlprof_traces* traces, const std::vector<size_t>* group,
                        dlprof_summary** out) {
  *out = nullptr;
  return Guarded([&] {
    dlprof::analysis::SummarizeOptions options =
        dlprof::analysis::JobSummarizeOptions(traces->job);
    options.group = group;
    options.partial = true;
    options.facts = &traces->facts;
    dlprof::analysis::SummarizeResult r =
        dlprof::analysis::Summarize(traces->catalog, options);
    auto s = std::make_unique<dlprof_summary>();
    s->partial = std::move(r.partial);
    *out = s.release();
    return DecodeStatus(r.traces);
  });
}

}  // namespace

extern "C" {

dlprof_status dlprof_summarize_group(dlprof_traces* traces, size_t group, dlprof_summary** out) {
  if (traces == nullptr || out == nullptr || group >= traces->groups.size()) {
    return Fail(DLPROF_ERROR_ARGUMENT, "no such group");
  }
  return Summarise(traces, &traces->groups[group], out);
}

dlprof_status dlprof_summarize(dlprof_traces* traces, dlprof_summary** out) {
  if (traces == nullptr || out == nullptr) return Fail(DLPROF_ERROR_ARGUMENT, "null argument");
  return Summarise(traces, nullptr, out);
}

dlprof_status dlprof_summary_merge(dlprof_summary* into, dlprof_summary* from) {
  std::unique_ptr<dlprof_summary> owned(from);
  if (into == nullptr || from == nullptr) return Fail(DLPROF_ERROR_ARGUMENT, "null summary");
  return Guarded([&] {
    dlprof::analysis::MergeInto(&into->partial, std::move(owned->partial));
    return DLPROF_OK;
  });
}

dlprof_status dlprof_summary_json(const dlprof_summary* summary, char** json, size_t* length) {
  if (summary == nullptr || json == nullptr) return Fail(DLPROF_ERROR_ARGUMENT, "null argument");
  *json = nullptr;
  return Guarded([&] {
    PartialSummary copy = summary->partial;  // FinishSummary consumes its partial
    return GiveText(dlprof::analysis::SummaryJson(dlprof::analysis::FinishSummary(std::move(copy))),
                    json, length);
  });
}

dlprof_status dlprof_compare_json(const dlprof_summary* before, const dlprof_summary* after,
                                  char** json, size_t* length) {
  if (before == nullptr || after == nullptr || json == nullptr) {
    return Fail(DLPROF_ERROR_ARGUMENT, "null argument");
  }
  *json = nullptr;
  return Guarded([&] {
    PartialSummary b = before->partial, a = after->partial;  // FinishSummary consumes them
    const dlprof::analysis::Summary sb = dlprof::analysis::FinishSummary(std::move(b));
    const dlprof::analysis::Summary sa = dlprof::analysis::FinishSummary(std::move(a));
    return GiveText(
        dlprof::analysis::ComparisonJson(sb, sa, dlprof::analysis::Compare(sb, sa)), json, length);
  });
}

void dlprof_summary_free(dlprof_summary* summary) { delete summary; }

dlprof_status dlprof_whole_run_json(dlprof_traces* traces, char** json, size_t* length) {
  if (traces == nullptr || json == nullptr) return Fail(DLPROF_ERROR_ARGUMENT, "null argument");
  *json = nullptr;
  return Guarded([&] {
    dlprof::analysis::WholeRun w = dlprof::analysis::ReadWholeRun(
        traces->catalog, traces->clocks,
        dlprof::analysis::JobSummarizeOptions(traces->job).batch_region);
    dlprof::analysis::AddCountersNotes(
        dlprof::analysis::ReadCountersNotes(traces->catalog, traces->clocks), &w);
    return GiveText(w.present ? dlprof::analysis::WholeRunJson(w) : "null", json, length);
  });
}

dlprof_status dlprof_summary_encode(const dlprof_summary* summary, char** bytes,
                                    size_t* length) {
  if (summary == nullptr || bytes == nullptr || length == nullptr) {
    return Fail(DLPROF_ERROR_ARGUMENT, "null argument");
  }
  *bytes = nullptr;
  return Guarded([&] {
    return GiveText(dlprof::analysis::EncodePartialSummary(summary->partial), bytes, length);
  });
}

dlprof_status dlprof_summary_decode(const char* bytes, size_t length, dlprof_summary** out) {
  if ((bytes == nullptr && length > 0) || out == nullptr) {
    return Fail(DLPROF_ERROR_ARGUMENT, "null argument");
  }
  *out = nullptr;
  return Guarded([&] {
    auto s = std::make_unique<dlprof_summary>();
    std::string error;
    if (!dlprof::analysis::DecodePartialSummary(std::string(bytes, length), &s->partial, &error)) {
      return Fail(DLPROF_ERROR_INPUT, error);
    }
    *out = s.release();
    return DLPROF_OK;
  });
}

}  // extern "C"
