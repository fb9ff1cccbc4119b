// The summary's model: names of its bins and groups, and the merge of one
// level's I/O figures into another's.
#include "lib/analysis/summary/summary.h"

#include <algorithm>

namespace dlprof::analysis {

int SizeBin(uint64_t bytes) { return SizeBinOf(bytes); }

const char* SizeBinName(int bin) {
  static const char* const kNames[kSizeBins] = {"0-100",   "100-1K",   "1K-10K",  "10K-100K",
                                                "100K-1M", "1M-4M",    "4M-10M",  "10M-100M",
                                                "100M-1G", "1G+"};
  return bin >= 0 && bin < kSizeBins ? kNames[bin] : "?";
}

const char* OpGroupName(OpGroup g) {
  static const char* const kNames[kOpGroups] = {"open", "read", "write", "seek",
                                                "meta", "sync", "mmap", "other"};
  return kNames[static_cast<int>(g)];
}

void AccessStats::Merge(const AccessStats& o) {
  ops += o.ops;
  bytes += o.bytes;
  time_ns += o.time_ns;
  small_ops += o.small_ops;
  small_time_ns += o.small_time_ns;
  empty_ops += o.empty_ops;
  for (int i = 0; i < kSizeBins; ++i) histogram[i] += o.histogram[i];
  consecutive += o.consecutive;
  sequential += o.sequential;
  first += o.first;
  // The tables stay bounded: a key not yet there joins while there is room.
  auto merge = [](auto* into, const auto& from) {
    for (const auto& [k, v] : from) {
      auto it = into->find(k);
      if (it != into->end()) {
        it->second += v;
      } else if (into->size() < kMaxDistinctSizes) {
        into->emplace(k, v);
      }
    }
  };
  merge(&sizes, o.sizes);
  merge(&strides, o.strides);
}

uint64_t IoStats::io_time_ns() const {
  uint64_t t = 0;
  for (uint64_t x : time_ns) t += x;
  return t;
}

void MergeIoStats(IoStats* into, const IoStats& from) {
  for (int g = 0; g < kOpGroups; ++g) {
    into->ops[g] += from.ops[g];
    into->time_ns[g] += from.time_ns[g];
  }
  into->read.Merge(from.read);
  into->write.Merge(from.write);
  into->first_ns = std::min(into->first_ns, from.first_ns);
  into->last_ns = std::max(into->last_ns, from.last_ns);
  into->errors += from.errors;
  into->mpi_collective_ops += from.mpi_collective_ops;
  into->mpi_collective_bytes += from.mpi_collective_bytes;
  into->mpi_independent_ops += from.mpi_independent_ops;
  into->mpi_independent_bytes += from.mpi_independent_bytes;
  into->opens += from.opens;
  into->read_extent = std::max(into->read_extent, from.read_extent);
  into->maps.Merge(from.maps);
  into->copied_out_ops += from.copied_out_ops;
  into->mpi_collective_wait_ns += from.mpi_collective_wait_ns;
}

}  // namespace dlprof::analysis
