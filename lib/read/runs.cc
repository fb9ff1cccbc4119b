// The runs of a set of traces, and keeping one of them.
#include "lib/read/runs.h"

#include <algorithm>
#include <map>

namespace dlprof::dump {

std::string RunName(const std::string& id) { return id.empty() ? "(no run id)" : id; }

std::vector<RunInfo> ListRuns(const TraceCatalog& catalog) {
  std::map<std::string, RunInfo> by_id;
  for (const CatalogEntry& t : catalog.traces) {
    if (!t.opened) continue;
    RunInfo& r = by_id[t.info.run_id];
    if (r.traces == 0 || t.info.clock_real_ns < r.start_real_ns) {
      r.start_real_ns = t.info.clock_real_ns;
    }
    r.id = t.info.run_id;
    ++r.traces;
  }
  std::vector<RunInfo> runs;
  for (auto& [id, r] : by_id) runs.push_back(std::move(r));
  std::sort(runs.begin(), runs.end(), [](const RunInfo& a, const RunInfo& b) {
    return a.start_real_ns != b.start_real_ns ? a.start_real_ns > b.start_real_ns : a.id < b.id;
  });
  return runs;
}

bool SelectRun(TraceCatalog* catalog, const std::string& id, std::string* note,
               std::string* error) {
  note->clear();
  const std::vector<RunInfo> runs = ListRuns(*catalog);
  if (runs.empty()) return true;  // nothing readable: the decoder says why
  auto chosen = id.empty() ? runs.begin()
                           : std::find_if(runs.begin(), runs.end(),
                                          [&](const RunInfo& r) { return r.id == id; });
  if (chosen == runs.end()) {
    *error = "no run '" + id + "' in the input (runs:";
    for (const RunInfo& r : runs) *error += " " + RunName(r.id);
    *error += ")";
    return false;
  }
  if (runs.size() > 1) {
    *note = "note: the input holds " + std::to_string(runs.size()) + " runs; this is run " +
            RunName(chosen->id) + " (" + std::to_string(chosen->traces) + " traces)" +
            (id.empty() ? ", the latest" : "") + "; the others:";
    for (const RunInfo& r : runs) {
      if (r.id != chosen->id) {
        *note += " " + RunName(r.id) + " (" + std::to_string(r.traces) + " traces)";
      }
    }
    *note += "; --run ID picks one";
  }
  TraceCatalog kept;
  for (CatalogEntry& t : catalog->traces) {
    if (!t.opened || t.info.run_id == chosen->id) kept.Add(std::move(t));
  }
  *catalog = std::move(kept);
  return true;
}

}  // namespace dlprof::dump
