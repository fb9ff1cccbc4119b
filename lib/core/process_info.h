// What the trace header says about the process.
#ifndef DLPROF_LIB_CORE_PROCESS_INFO_H_
#define DLPROF_LIB_CORE_PROCESS_INFO_H_

#include <cstdint>

#include "lib/format/trace_file.h"

namespace dlprof::core {

class Runtime;

format::ProcessInfo CollectProcessInfo(bool forked, uint64_t start_ns);

// This process's clock domain: its boot id and time namespace offsets, the
// header's boot_id and time_ns joined by a space (the reader's DomainKey).
std::string ClockDomainId();

// Names every fd the process already had when tracing started (stdin/out/err,
// inherited files) so their events carry a path.
void ScanInheritedFds(Runtime& rt);

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_PROCESS_INFO_H_
