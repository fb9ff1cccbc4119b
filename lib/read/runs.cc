// The runs of a set of traces, and keeping one of them (runs.h).
#include "lib/read/runs.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <string_view>

namespace dlprof::read {
namespace {

// The wall-clock end of a trace's events: its header pairs the monotonic
// clock the events carry with the wall clock.
uint64_t EndReal(const CatalogEntry& t) {
  const uint64_t start = t.info.clock_real_ns;
  if (t.last_end_ns == 0 || t.last_end_ns < t.info.clock_mono_ns) return start;
  return start + (t.last_end_ns - t.info.clock_mono_ns);
}

bool Overlap(const RunInfo& a, const RunInfo& b) {
  return a.start_real_ns <= b.end_real_ns && b.start_real_ns <= a.end_real_ns;
}

// Which run each run id joins: a run that some trace names as its parent
// run (a traced launcher's, whose ranks took the job's id) joins the run
// that names it, when exactly one does. Followed to its end, so that a
// launcher of a launcher joins too; a loop (forged headers) stops.
class RunJoins {
 public:
  explicit RunJoins(const TraceCatalog& catalog) {
    std::map<std::string, std::string> claimant;  // parent run -> the run naming it
    std::map<std::string, bool> contested;
    for (const CatalogEntry& t : catalog.traces) {
      const std::string& parent = t.info.parent_run_id;
      if (!t.opened || parent.empty() || parent == t.info.run_id) continue;
      auto [it, first] = claimant.try_emplace(parent, t.info.run_id);
      if (!first && it->second != t.info.run_id) contested[parent] = true;
    }
    for (const auto& [parent, run] : claimant) {
      if (!contested.count(parent)) joins_[parent] = run;
    }
  }
  // The run `id` belongs to.
  std::string Of(const std::string& id) const {
    std::string run = id;
    for (size_t hops = 0; hops <= joins_.size(); ++hops) {
      auto next = joins_.find(run);
      if (next == joins_.end()) return run;
      run = next->second;
    }
    return id;
  }

 private:
  std::map<std::string, std::string> joins_;
};

// Whether run `run` is the job a user names by its batch system's id alone
// (`--run 101` for slurm-101): the run ids lib/core/run_id.cc makes from a
// job id are the id after its batch system's prefix; PBS's may go on with
// its server (pbs-101.server), an LSF job array's with the element
// (lsf-101_2: "101" names every element).
bool NamesJob(const std::string& run, const std::string& job) {
  static const char* const kPrefixes[] = {"slurm-", "pbs-", "cobalt-", "flux-", "lsf-"};
  for (const char* prefix : kPrefixes) {
    const size_t n = strlen(prefix);
    if (job.empty() || run.compare(0, n, prefix) != 0) continue;
    const std::string_view rest = std::string_view(run).substr(n);
    return rest == job || (rest.size() > job.size() && rest.substr(0, job.size()) == job &&
                           (rest[job.size()] == '.' || rest[job.size()] == '_'));
  }
  return false;
}

}  // namespace

std::string RunName(const std::string& id) { return id.empty() ? "(no run id)" : id; }

std::vector<RunInfo> ListRuns(const TraceCatalog& catalog) {
  std::map<std::string, RunInfo> by_id;
  const RunJoins joins(catalog);
  for (const CatalogEntry& t : catalog.traces) {
    if (!t.opened) continue;
    const std::string id = joins.Of(t.info.run_id);
    RunInfo& r = by_id[id];
    const uint64_t end = EndReal(t);
    if (r.traces == 0 || t.info.clock_real_ns < r.start_real_ns) {
      r.start_real_ns = t.info.clock_real_ns;
    }
    r.end_real_ns = std::max(r.end_real_ns, end);
    r.id = id;
    r.events += t.events;
    ++r.traces;
  }
  std::vector<RunInfo> runs;
  for (auto& [id, r] : by_id) {
    r.end_real_ns = std::max(r.end_real_ns, r.start_real_ns);
    runs.push_back(std::move(r));
  }
  std::sort(runs.begin(), runs.end(), [](const RunInfo& a, const RunInfo& b) {
    return a.start_real_ns != b.start_real_ns ? a.start_real_ns > b.start_real_ns : a.id < b.id;
  });
  return runs;
}

size_t DefaultRun(const std::vector<RunInfo>& runs) {
  size_t best = 0;
  for (size_t i = 1; i < runs.size(); ++i) {
    if (!Overlap(runs[i], runs[0])) continue;
    const RunInfo& r = runs[i];
    const RunInfo& b = runs[best];
    // Later ones come first: on a tie the one kept so far started later.
    if (r.events > b.events || (r.events == b.events && r.traces > b.traces)) best = i;
  }
  return best;
}

bool SelectRun(TraceCatalog* catalog, const std::string& id, std::string* note,
               std::string* error) {
  note->clear();
  const std::vector<RunInfo> runs = ListRuns(*catalog);
  if (runs.empty()) return true;  // nothing readable: the decoder says why
  const RunJoins joins(*catalog);
  const std::string wanted = joins.Of(id);  // a launcher's id names its job
  auto chosen = id.empty() ? runs.begin() + static_cast<std::ptrdiff_t>(DefaultRun(runs))
                           : std::find_if(runs.begin(), runs.end(),
                                          [&](const RunInfo& r) { return r.id == wanted; });
  if (chosen == runs.end()) {
    // A bare job id ("101" for slurm-101) where it names one run.
    std::vector<const RunInfo*> jobs;
    for (const RunInfo& r : runs) {
      if (NamesJob(r.id, id)) jobs.push_back(&r);
    }
    if (jobs.size() == 1) return SelectRun(catalog, jobs[0]->id, note, error);
    if (jobs.size() > 1) {
      *error = "no single run '" + id + "' in the input: it could be";
      for (const RunInfo* r : jobs) *error += " " + r->id;
      *error += " (--run takes the whole run id)";
      return false;
    }
    *error = "no run '" + id + "' in the input (runs:";
    for (const RunInfo& r : runs) *error += " " + RunName(r.id);
    *error += ")";
    return false;
  }
  if (runs.size() > 1) {
    std::string why;
    if (id.empty()) {
      why = chosen == runs.begin()
                ? ", the latest"
                : ", the largest of the runs that overlap the latest (" + RunName(runs[0].id) +
                      ", " + std::to_string(runs[0].events) + " events)";
    }
    *note = "note: the input holds " + std::to_string(runs.size()) + " runs; this is run " +
            RunName(chosen->id) + " (" + std::to_string(chosen->traces) + " traces, " +
            std::to_string(chosen->events) + " events)" + why + "; the others:";
    for (const RunInfo& r : runs) {
      if (r.id != chosen->id) {
        *note += " " + RunName(r.id) + " (" + std::to_string(r.traces) + " traces)";
      }
    }
    *note += "; --run ID picks one";
  }
  // A trace that did not open says no run of its own; where it lies in
  // another run's directory (DLPROF_DIR/<run id>/<host>/), it is that run's
  // and stays out (the summary's "input" said the chosen run was not whole).
  auto run_of_directory = [](const std::string& path) {
    const size_t host = path.rfind('/');
    const size_t run = host == std::string::npos || host == 0 ? std::string::npos
                                                              : path.rfind('/', host - 1);
    if (run == std::string::npos) return std::string();
    const size_t start = run == 0 ? 0 : path.rfind('/', run - 1);
    return path.substr(start == std::string::npos ? 0 : start + 1,
                       run - (start == std::string::npos ? 0 : start + 1));
  };
  std::set<std::string> other_runs;
  for (const RunInfo& r : runs) {
    if (r.id != chosen->id) other_runs.insert(r.id);
  }
  TraceCatalog kept;
  for (CatalogEntry& t : catalog->traces) {
    const bool mine = t.opened ? joins.Of(t.info.run_id) == chosen->id
                               : other_runs.count(run_of_directory(t.path)) == 0;
    if (mine) kept.Add(std::move(t));
  }
  *catalog = std::move(kept);
  return true;
}

}  // namespace dlprof::read
