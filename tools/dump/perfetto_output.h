// --format perfetto: Perfetto's native protobuf trace format, streamed
// (perfetto_output.cc describes the tracks and packets).
#ifndef DLPROF_TOOLS_DUMP_PERFETTO_OUTPUT_H_
#define DLPROF_TOOLS_DUMP_PERFETTO_OUTPUT_H_

#include "tools/dump/output.h"
#include "tools/dump/perfetto_compress.h"

namespace dlprof::dump {

// Writes `source`'s events as a Perfetto trace (a .pftrace file): memory
// stays bounded however many events there are.
void WritePerfetto(EventSource& source, OutBuffer* out, const EventContext& context = {},
                   PerfettoCompression compression = PerfettoCompression::kDeflate);

}  // namespace dlprof::dump

#endif  // DLPROF_TOOLS_DUMP_PERFETTO_OUTPUT_H_
