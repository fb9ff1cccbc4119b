// CollectiveMeter (collective_meter.h).
#include "lib/analysis/meters/collective_meter.h"

#include <cstring>
#include <utility>

#include "lib/analysis/meters/kind_roles.h"
#include "lib/format/event_rules.h"

namespace dlprof::analysis {
namespace {

// A collective MPI-IO call whose call can wait for the other ranks: not the
// non-blocking i..._all forms (MPI_File_iread_all returns at once; the
// request completes later), whatever MPI's rules name them.
bool WaitingCollective(const Event& e) {
  if (!(e.flags & kEventFlagCollective) || (e.flags & kEventFlagNested)) return false;
  const EventKindInfo* k = LookupKind(e.kind);
  if (k == nullptr || k->category != Category::Mpiio) return false;
  if (!RulesFor(e.kind).traced_call) return false;
  return std::strncmp(k->name, "MPI_File_i", 10) != 0;
}

}  // namespace

CollectiveMeter::CollectiveMeter(const std::vector<ProcessTrace>& processes,
                                 uint64_t per_process)
    : processes_(processes), per_process_(per_process), kept_(processes.size(), 0) {}

void CollectiveMeter::Add(const StreamEvent& r, bool counted) {
  const Event& e = *r.event;
  // A communicator of one rank waits for no one; a file with no path (past
  // the tracer's table of open files) has no size recorded either.
  if (e.fd < 2 || e.file == 0 || !WaitingCollective(e)) return;
  const ProcessTrace& p = processes_[r.process];
  auto path = p.strings.find(e.file);
  if (path == p.strings.end()) return;
  auto [f, added] = files_.try_emplace(path->second, static_cast<uint32_t>(calls_.files.size()));
  if (added) calls_.files.push_back(path->second);
  const uint32_t k = next_k_[{r.process, f->second, e.fd}]++;
  if (kept_[r.process] >= per_process_) {
    ++calls_.not_kept;
    calls_.kept_per_process = per_process_;
    return;
  }
  ++kept_[r.process];
  CollectiveCall c;
  c.entry_ns = e.start_ns;
  c.dur_ns = e.dur_ns;
  c.k = k;
  c.comm_size = static_cast<uint32_t>(e.fd);
  c.file = f->second;
  c.process = r.process;
  c.rank = r.rank;
  c.group = static_cast<uint8_t>(summary_kinds::GroupOf(LookupKind(e.kind)->op_class));
  c.counted = counted;
  calls_.calls.push_back(c);
}

CollectiveCalls CollectiveMeter::Finish(const std::vector<std::string>& keys) {
  CollectiveCalls out = std::move(calls_);
  // Processes by key: two images of one process are two rows.
  std::unordered_map<std::string, uint32_t> index;
  std::vector<uint32_t> of(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    auto [it, added] = index.try_emplace(keys[i], static_cast<uint32_t>(out.processes.size()));
    if (added) out.processes.push_back(keys[i]);
    of[i] = it->second;
  }
  for (CollectiveCall& c : out.calls) c.process = of[c.process];
  return out;
}

}  // namespace dlprof::analysis
