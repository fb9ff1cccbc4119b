// A partial summary as bytes and back, so that partials computed in other
// processes (Dask workers, dlprof.dask.summary) can be merged by MergeInto:
// the C ABI's dlprof_summary_encode / dlprof_summary_decode.
//
// The bytes are for processes of one build talking to each other, not a file
// format: they start with a magic and the size of every struct they hold,
// and Decode refuses bytes of another layout (a different build) with a
// message rather than misreading them. Every field of PartialSummary is in
// them; a field added to the summary must be added to summary_codec.cc too
// (tests/python's Dask test compares the merged result with the native
// summary, whole, and fails when one is missing).
#ifndef DLPROF_LIB_ANALYSIS_SUMMARY_CODEC_H_
#define DLPROF_LIB_ANALYSIS_SUMMARY_CODEC_H_

#include <string>

#include "lib/analysis/summary/partial_summary.h"

namespace dlprof::analysis {

std::string EncodePartialSummary(const PartialSummary& p);

// False, with the reason in `error`, when `bytes` are not what Encode made
// in a build of this layout.
bool DecodePartialSummary(const std::string& bytes, PartialSummary* out, std::string* error);

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_SUMMARY_CODEC_H_
