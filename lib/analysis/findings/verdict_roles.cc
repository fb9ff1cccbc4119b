// The verdict's roles (verdict.h; docs/ANALYSIS.md, "Roles"): what each
// process of the job was to it (main, loader workers, launcher, other), by
// what it did where anything tells, else by how it was started, and the
// I/O time of each role.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "lib/analysis/findings/verdict.h"

namespace dlprof::analysis {
namespace {

// The launchers and shells a job starts its processes through.
bool IsLauncher(const std::string& exe) {
  static const std::set<std::string> kLaunchers = {
      "mpirun", "mpiexec", "orterun", "prterun", "prted", "orted", "hydra_pmi_proxy",
      "mpiexec.hydra", "mpiexec.mpich", "mpirun.openmpi", "mpirun.mpich", "torchrun", "srun",
      "flux", "aprun", "jsrun", "dlprof", "sh", "bash", "dash", "env", "timeout"};
  return kLaunchers.count(exe) != 0;
}

// The processes by (host, pid): a process's possible parents, looked up
// rather than searched for (a job of ten thousand processes searched them
// all for each: seconds).
using ProcessesByPid =
    std::map<std::pair<std::string, int32_t>,
             std::vector<std::pair<const std::string*, const Summary::ProcessId*>>>;

// The old rule, for jobs in which no process did anything the roles tell
// by (no batches, steps or GPU work recorded): by fork and program name.
std::string StructuralRole(const ProcessesByPid& by_pid, const std::string& key,
                           const Summary::ProcessId& me) {
  static const std::vector<std::pair<const std::string*, const Summary::ProcessId*>> kNone;
  auto found = by_pid.find({me.host, me.ppid});
  const auto& parents = found == by_pid.end() ? kNone : found->second;
  // A launcher's fork children are what it launched (the ranks of a traced
  // mpirun), not loader workers.
  bool launched = false;
  for (const auto& [other, parent] : parents) {
    if (*other != key && IsLauncher(parent->exe)) launched = true;
  }
  if (IsLauncher(me.exe)) return "launcher";
  if (me.forked && !me.execed && !launched) return "loader workers";
  // A process another traced (non-launcher) process of its rank started is
  // "other" (a helper it spawned); the rest are the job's main processes.
  for (const auto& [other, parent] : parents) {
    if (*other != key && !IsLauncher(parent->exe) && parent->rank == me.rank) return "other";
  }
  return "main";
}

// The most intervals open at once, from their (start, +1) and (end, -1)
// points; one that ends where another starts does not overlap it.
uint64_t MostAtOnce(std::vector<std::pair<uint64_t, int>>* points) {
  std::sort(points->begin(), points->end());  // at one instant, ends (-1) first
  int64_t open = 0, most = 0;
  for (const auto& [at, step] : *points) most = std::max(most, open += step);
  return static_cast<uint64_t>(most);
}

bool DoesMainWork(const Summary::ProcessId& p) {
  return p.batch_waits > 0 || p.optimizer_steps > 0 || p.gpu_records > 0;
}

}  // namespace

std::map<std::string, std::string> ProcessRoles(const Summary& s) {
  std::map<std::string, std::string> roles;
  bool by_work = false;
  for (const auto& [key, p] : s.process_ids) by_work |= DoesMainWork(p) || p.batch_fetches > 0;
  if (!by_work) {
    ProcessesByPid by_pid;
    for (const auto& [key, p] : s.process_ids) by_pid[{p.host, p.pid}].push_back({&key, &p});
    for (const auto& [key, p] : s.process_ids) roles[key] = StructuralRole(by_pid, key, p);
    return roles;
  }
  // By what they did: the processes that wait for batches, step an
  // optimizer or launch GPU work are main, whatever started them; those that
  // fetch batches, or that a main process forked, are loader workers; the
  // ancestors of a main process that are neither are its launchers.
  std::multimap<std::pair<std::string, int32_t>, const Summary::ProcessId*> by_pid;
  for (const auto& [key, p] : s.process_ids) by_pid.emplace(std::make_pair(p.host, p.pid), &p);
  auto parent_of = [&](const Summary::ProcessId& p) -> const Summary::ProcessId* {
    auto it = by_pid.find(std::make_pair(p.host, p.ppid));
    return it == by_pid.end() || it->second == &p ? nullptr : it->second;
  };
  std::set<const Summary::ProcessId*> launchers;
  for (const auto& [key, p] : s.process_ids) {
    if (!DoesMainWork(p)) continue;
    const Summary::ProcessId* up = parent_of(p);
    for (size_t depth = 0; up != nullptr && depth < s.process_ids.size(); ++depth) {
      if (!DoesMainWork(*up) && up->batch_fetches == 0) launchers.insert(up);
      up = parent_of(*up);
    }
  }
  for (const auto& [key, p] : s.process_ids) {
    const Summary::ProcessId* parent = parent_of(p);
    if (DoesMainWork(p)) {
      roles[key] = "main";
    } else if (p.batch_fetches > 0 ||
               (p.forked && !p.execed && parent != nullptr && DoesMainWork(*parent))) {
      roles[key] = "loader workers";
    } else if (launchers.count(&p) != 0 || IsLauncher(p.exe)) {
      // An ancestor of a main process, or an MPI launcher's daemon wherever
      // it sits: Open MPI's singleton MPI_Init forks orted from the rank.
      roles[key] = "launcher";
    } else {
      roles[key] = "other";
    }
  }
  return roles;
}

std::string ProcessRole(const Summary& s, const std::string& key) {
  const std::map<std::string, std::string> roles = ProcessRoles(s);
  auto it = roles.find(key);
  return it == roles.end() ? "main" : it->second;
}

std::vector<RoleShare> RoleShares(const Summary& s) {
  std::vector<RoleShare> shares;
  for (const char* role : {"main", "loader workers", "launcher", "other"}) {
    shares.push_back({role, 0, 0, 0});
  }
  const std::map<std::string, std::string> roles = ProcessRoles(s);
  std::map<std::string, std::vector<std::pair<uint64_t, int>>> lives;  // role -> (time, +1/-1)
  for (const auto& [key, st] : s.processes_stats) {
    auto role = roles.find(key);
    const std::string& name = role == roles.end() ? shares.front().role : role->second;
    for (RoleShare& r : shares) {
      if (r.role != name) continue;
      ++r.processes;
      r.io_ns += st.io_time_ns() + st.maps.time_ns;  // calls, and faults on mapped files
      r.read_bytes += st.read.bytes + st.maps.bytes;
      // A process seen at one instant only (a launcher's exec) was alive
      // then; one with no timed event at all (first past last) at some
      // instant nobody knows: it is alone, at least.
      if (st.first_ns > st.last_ns) continue;
      lives[name].push_back({st.first_ns, +1});
      lives[name].push_back({std::max(st.first_ns + 1, st.last_ns), -1});
    }
  }
  for (RoleShare& r : shares) {
    r.at_once = std::max<uint64_t>(MostAtOnce(&lives[r.role]), r.processes > 0 ? 1 : 0);
  }
  return shares;
}

}  // namespace dlprof::analysis
