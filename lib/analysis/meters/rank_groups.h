// Which traces form a rank group: a rank's processes on its host (the rank
// process and the workers that inherited its rank) are read together as one
// stream, so that the rank's figures (rank_meter.h) can be unions over time
// across its processes and devices, while memory stays bounded by one
// group at a time however many ranks the job has.
#ifndef DLPROF_LIB_ANALYSIS_RANK_GROUPS_H_
#define DLPROF_LIB_ANALYSIS_RANK_GROUPS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "lib/read/trace_catalog.h"

namespace dlprof::analysis {
using namespace dlprof::read;

// Whether the traces' events interact (GPU work, regions): then they are
// read together, a rank group at a time where there are ranks.
bool ReadTogether(const TraceCatalog& catalog);

// Each trace's rank, in catalog order: its header's (MPI or the launcher's
// environment, inherited by forked and spawned workers), else the rank of
// its nearest ancestor on the same host that has one (a worker whose
// environment lost the rank), else -1.
std::vector<int32_t> TraceRanks(const TraceCatalog& catalog);

// Whether any trace has a rank.
bool AnyRank(const std::vector<int32_t>& ranks);

// A group per (rank, host), ordered by rank then host, then one group of
// the traces without a rank (a launcher, say) when there are any. Indices
// into catalog.traces, in catalog order within a group.
std::vector<std::vector<size_t>> RankGroups(const TraceCatalog& catalog,
                                            const std::vector<int32_t>& ranks);

// Of the traces of one group (`group`, indices into catalog.traces): which
// are its main processes, the ones whose parent is not in the group (the
// rank process itself; its workers have it as parent).
std::vector<bool> MainProcesses(const TraceCatalog& catalog, const std::vector<size_t>& group);

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_RANK_GROUPS_H_
