// Rolling a stream's counters up into the run, rank, process and file levels.
#include "lib/analysis/meters/stream_stats.h"

#include "lib/analysis/summary/partial_summary.h"

#include <algorithm>

namespace dlprof::analysis {

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
}

namespace {

void FillAccessTotals(IoStats* s) {
  s->read.ops = s->ops[static_cast<int>(OpGroup::Read)];
  s->read.time_ns = s->time_ns[static_cast<int>(OpGroup::Read)];
  s->write.ops = s->ops[static_cast<int>(OpGroup::Write)];
  s->write.time_ns = s->time_ns[static_cast<int>(OpGroup::Write)];
}

}  // namespace

void RollUp(Stream& st) {
  FillAccessTotals(&st.stats);
  for (int i = 0; i < st.level_count; ++i) {
    IoStats* level = st.levels[i];
    MergeIoStats(level, st.stats);
    st.read.sizes.MergeInto(&level->read.sizes);
    st.write.sizes.MergeInto(&level->write.sizes);
    st.read.strides.MergeInto(&level->read.strides);
    st.write.strides.MergeInto(&level->write.strides);
  }
}

}  // namespace dlprof::analysis
