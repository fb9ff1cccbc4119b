// A set of traces read from their headers alone.
#include "lib/read/trace_catalog.h"

#include <algorithm>

namespace dlprof::dump {

bool CatalogEntry::MayHoldGpu() const {
  return opened && ((block_flags & kBlockFlagGpu) != 0 || (info.flags & kHeaderFlagGpuMarked) == 0);
}

void TraceCatalog::Add(CatalogEntry entry) {
  first_start_ns = std::min(first_start_ns, entry.first_start_ns);
  block_flags |= entry.block_flags;
  events += entry.events;
  bytes += entry.bytes;
  traces.push_back(std::move(entry));
}

TraceCatalog CatalogTraces(const std::vector<std::string>& files) {
  TraceCatalog catalog;
  catalog.traces.reserve(files.size());
  for (const std::string& path : files) {
    CatalogEntry entry;
    entry.path = path;
    format::TraceReader reader;
    if (!reader.Open(path, &entry.error)) {
      // Reported by the decoder when it reads; kept for callers that only plan.
    } else {
      entry.opened = true;
      entry.info = reader.process();
      entry.bytes = reader.file_size();
      for (const format::BlockLocation& where : format::ListBlocks(&reader).blocks) {
        entry.block_flags |= where.flags;
        ++entry.blocks;
        entry.events += where.event_count;
        if (where.event_count > 0) {
          entry.first_start_ns = std::min(entry.first_start_ns, where.first_start_ns);
        }
      }
    }
    catalog.Add(std::move(entry));
  }
  return catalog;
}

}  // namespace dlprof::dump
