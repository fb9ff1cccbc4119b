// Two runs side by side (compare.h): each run's figures taken from its own
// summary and verdict, matched (ranks by their key in the summary's
// "ranks", hosts by name, findings by rule), and nothing else.
#include "lib/analysis/compare/compare.h"

#include <algorithm>
#include <set>
#include <utility>

#include "lib/analysis/summary/file_classes.h"

namespace dlprof::analysis {
namespace {

// The figures of one side of a group: (key, label, unit, present, value).
struct Figure {
  const char* key;
  const char* label;
  FigureUnit unit;
  bool present;
  uint64_t value;
};
using Figures = std::vector<Figure>;

// Puts one side's figures into `g`: a figure the group does not have yet
// is added in the order this side lists it.
void Fill(FigureGroup* g, const Figures& figures, bool after) {
  (after ? g->in_after : g->in_before) = true;
  for (const Figure& f : figures) {
    auto it = std::find_if(g->figures.begin(), g->figures.end(),
                           [&](const FigureChange& c) { return c.key == f.key; });
    if (it == g->figures.end()) {
      g->figures.push_back({f.key, f.label, f.unit});
      it = g->figures.end() - 1;
    }
    if (!f.present) continue;
    (after ? it->in_after : it->in_before) = true;
    (after ? it->after : it->before) = f.value;
  }
}

Figures VerdictFigures(const Verdict& v) {
  using U = FigureUnit;
  const bool wait = v.has_batch_wait, split = v.has_batch_wait && v.split, gpu = v.has_gpu;
  return {
      {"step_ns", "time per step", U::kNs, v.loop_steps > 0, StepNs(v)},
      {"loop_ns", "training loop", U::kNs, true, v.loop_ns},
      {"loop_steps", "steps", U::kCount, true, v.loop_steps},
      {"startup_ns", "start-up", U::kNs, true, v.startup_ns},
      {"batch_wait_ns", "batch wait", U::kNs, wait, v.batch_wait_ns},
      {"batch_wait_per_mille", "batch wait, of the loop", U::kPerMille, wait,
       PerMille(v.batch_wait_ns, v.wait_loop_ns)},
      // The share the verdict judges: the ranks' sums, or for ranks in
      // lockstep the critical path's (Verdict::lockstep), where the sums
      // read one rank's wait at 1/N.
      {"judged_wait_per_mille", "batch wait, judged", U::kPerMille, wait,
       v.wait_per_mille()},
      {"reading_ns", "  reading", U::kNs, split, v.reading_ns},
      {"preprocessing_ns", "  preprocessing", U::kNs, split, v.preprocessing_ns},
      {"handover_ns", "  hand-over", U::kNs, split, v.handover_ns},
      {"worker_startup_ns", "  worker start-up", U::kNs, split, v.worker_startup_ns},
      {"checkpoint_ns", "checkpoints, the loop stopped", U::kNs, v.has_checkpoint,
       v.checkpoint.blocking_ns},
      {"judged_checkpoint_per_mille", "checkpoints, judged", U::kPerMille,
       v.has_checkpoint, v.save_per_mille()},
      {"data_stall_ns", "data stall", U::kNs, gpu, v.data_stall_ns},
      {"data_stall_per_mille", "data stall, of the loop", U::kPerMille, gpu,
       PerMille(v.data_stall_ns, v.loop_ns)},
      {"gpu_busy_ns", "GPU busy", U::kNs, gpu, v.gpu_busy_ns},
      {"gpu_busy_per_mille", "GPU busy, of the loop", U::kPerMille, gpu,
       PerMille(v.gpu_busy_ns, v.loop_ns)},
  };
}

Figures DataSetFigures(const Summary& s) {
  using U = FigureUnit;
  const FileClassTotals data = TotalsByClass(s)[static_cast<int>(FileClass::kData)];
  const AccessStats& r = data.io.read;
  return {
      {"files", "files", U::kCount, true, data.files},
      {"read_bytes", "read", U::kBytes, true, r.bytes},
      {"read_ops", "read calls", U::kCount, true, r.ops},
      {"read_time_ns", "time in read calls", U::kNs, true, r.time_ns},
      {"read_bytes_per_s", "read bandwidth (in calls)", U::kBytesPerSecond, r.time_ns > 0,
       BytesPerSecond(r.bytes, r.time_ns)},
  };
}

Figures RankFigureList(const RankFigures& r) {
  using U = FigureUnit;
  const uint64_t steps = r.loop_steps();
  return {
      {"step_ns", "time per step", U::kNs, r.loop && steps > 0, steps ? r.loop_ns() / steps : 0},
      {"loop_ns", "training loop", U::kNs, r.loop, r.loop_ns()},
      {"batch_wait_ns", "batch wait", U::kNs, true, r.batch_wait_ns},
      {"reading_ns", "  reading", U::kNs, true, r.reading_ns},
      {"preprocessing_ns", "  preprocessing", U::kNs, true, r.preprocessing_ns},
      {"handover_ns", "  hand-over", U::kNs, true, r.handover_ns},
      {"worker_startup_ns", "  worker start-up", U::kNs, true, r.worker_startup_ns},
      {"data_stall_ns", "data stall", U::kNs, r.gpu, r.data_stall_ns},
      {"gpu_busy_ns", "GPU busy", U::kNs, r.gpu, r.gpu_busy_ns},
      {"io_ns", "time in I/O calls", U::kNs, true, r.io_ns},
      {"read_bytes", "read", U::kBytes, true, r.read_bytes},
  };
}

Figures HostFigureList(const HostRanks& h, bool gpu) {
  using U = FigureUnit;
  return {
      {"ranks", "ranks", U::kCount, true, h.ranks},
      {"batch_wait_ns", "batch wait", U::kNs, true, h.batch_wait_ns},
      {"data_stall_ns", "data stall", U::kNs, gpu, h.data_stall_ns},
      {"gpu_busy_ns", "GPU busy", U::kNs, gpu, h.gpu_busy_ns},
      {"io_ns", "time in I/O calls", U::kNs, true, h.io_ns},
      {"read_bytes", "read", U::kBytes, true, h.read_bytes},
  };
}

FigureGroup* GroupOf(std::vector<FigureGroup>* groups, const std::string& key) {
  for (FigureGroup& g : *groups) {
    if (g.key == key) return &g;
  }
  groups->emplace_back();
  groups->back().key = key;
  return &groups->back();
}

// Each rank group of `s` under its key in the summary's "ranks": its rank,
// and " host" after it for a rank seen again on a second host.
void AddRanks(const Summary& s, bool after, std::vector<FigureGroup>* ranks) {
  std::set<int32_t> keyed;
  for (const RankFigures& r : s.rank_figures) {
    const bool again = !keyed.insert(r.rank).second;
    FigureGroup* g = GroupOf(ranks, std::to_string(r.rank) + (again ? " " + r.host : ""));
    g->rank = r.rank;
    g->host = r.host;
    Fill(g, RankFigureList(r), after);
  }
}

void AddHosts(const Summary& s, bool after, std::vector<FigureGroup>* hosts) {
  for (const HostRanks& h : s.rank_job.hosts) {
    FigureGroup* g = GroupOf(hosts, h.host);
    g->host = h.host;
    Fill(g, HostFigureList(h, s.rank_job.gpu), after);
  }
}

// Appeared, went away, stayed; each in its run's order.
std::vector<FindingChange> FindingChanges(const Verdict& before, const Verdict& after) {
  std::vector<FindingChange> appeared, gone, stayed;
  auto in = [](const Verdict& v, const std::string& rule) -> const Finding* {
    for (const Finding& f : v.findings) {
      if (f.rule == rule) return &f;
    }
    return nullptr;
  };
  for (const Finding& f : after.findings) {
    const Finding* b = in(before, f.rule);
    FindingChange c{f.rule, b != nullptr, true, b ? b->what : "", f.what,
                    b ? b->cost_ns : 0, f.cost_ns};
    (b ? stayed : appeared).push_back(std::move(c));
  }
  for (const Finding& f : before.findings) {
    if (!in(after, f.rule)) gone.push_back({f.rule, true, false, f.what, "", f.cost_ns, 0});
  }
  std::vector<FindingChange> out = std::move(appeared);
  out.insert(out.end(), gone.begin(), gone.end());
  out.insert(out.end(), stayed.begin(), stayed.end());
  return out;
}

}  // namespace

const FigureChange* FigureGroup::Find(const std::string& k) const {
  for (const FigureChange& f : figures) {
    if (f.key == k) return &f;
  }
  return nullptr;
}

uint64_t StepNs(const Verdict& v) { return v.loop_steps == 0 ? 0 : v.loop_ns / v.loop_steps; }


Comparison Compare(const Summary& before, const Summary& after) {
  Comparison c;
  c.before = ComputeVerdict(before);
  c.after = ComputeVerdict(after);
  c.verdict.key = "verdict";
  Fill(&c.verdict, VerdictFigures(c.before), false);
  Fill(&c.verdict, VerdictFigures(c.after), true);
  c.data_set.key = "data_set";
  Fill(&c.data_set, DataSetFigures(before), false);
  Fill(&c.data_set, DataSetFigures(after), true);
  AddRanks(before, false, &c.ranks);
  AddRanks(after, true, &c.ranks);
  // By rank, then host: the after-only ranks among the others.
  std::stable_sort(c.ranks.begin(), c.ranks.end(), [](const FigureGroup& a, const FigureGroup& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.host < b.host;
  });
  AddHosts(before, false, &c.hosts);
  AddHosts(after, true, &c.hosts);
  std::stable_sort(c.hosts.begin(), c.hosts.end(),
                   [](const FigureGroup& a, const FigureGroup& b) { return a.host < b.host; });
  c.findings = FindingChanges(c.before, c.after);
  return c;
}

}  // namespace dlprof::analysis
