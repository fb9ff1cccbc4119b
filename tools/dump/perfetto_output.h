// --format perfetto: Perfetto's native protobuf trace format, streamed
// (perfetto_output.cc describes the tracks and packets).
#ifndef DLPROF_TOOLS_DUMP_PERFETTO_OUTPUT_H_
#define DLPROF_TOOLS_DUMP_PERFETTO_OUTPUT_H_

#include "lib/analysis/meters/job_rank_meters.h"
#include "tools/dump/output.h"
#include "tools/dump/perfetto_compress.h"

namespace dlprof::dump {
using namespace dlprof::analysis;

// Writes `source`'s events as a Perfetto trace (a .pftrace file): memory
// stays bounded however many events there are. `ranks`, when given, is an
// observer of the same stream (the EventFilter's): each rank's data-stall
// pieces go on a "data stall" track under the rank, once the stream ends.
void WritePerfetto(EventSource& source, OutBuffer* out, const EventContext& context = {},
                   PerfettoCompression compression = PerfettoCompression::kDeflate,
                   JobRankMeters* ranks = nullptr);

}  // namespace dlprof::dump

#endif  // DLPROF_TOOLS_DUMP_PERFETTO_OUTPUT_H_
