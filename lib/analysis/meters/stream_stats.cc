// Rolling a stream's counters up into the run, rank, process and file levels.
#include "lib/analysis/meters/stream_stats.h"

#include <algorithm>

namespace dlprof::analysis {

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
