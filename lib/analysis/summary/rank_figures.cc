// The figures that span ranks (rank_figures.h): straggler loss, the
// distributions over ranks and the slowest loader of each step.
#include "lib/analysis/summary/rank_figures.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <tuple>

#include "lib/analysis/summary/intervals.h"

namespace dlprof::analysis {
namespace {

// Times at which the number of waiting ranks changes, and that number from
// there on: a step function over the job, zero outside.
struct WaitCount {
  std::vector<uint64_t> at;
  std::vector<uint32_t> count;  // ranks waiting in [at[i], at[i+1])

  explicit WaitCount(const std::vector<RankFigures>& ranks) {
    std::vector<std::pair<uint64_t, int>> edges;
    for (const RankFigures& r : ranks) {
      for (const auto& [s, e] : r.waiting) {
        edges.emplace_back(s, +1);
        edges.emplace_back(e, -1);
      }
    }
    std::sort(edges.begin(), edges.end());
    int64_t n = 0;
    for (size_t i = 0; i < edges.size();) {
      const uint64_t t = edges[i].first;
      for (; i < edges.size() && edges[i].first == t; ++i) n += edges[i].second;
      at.push_back(t);
      count.push_back(static_cast<uint32_t>(n));
    }
  }
};

bool Inside(const IntervalList& list, uint64_t t) {
  auto it = std::upper_bound(list.begin(), list.end(), t,
                             [](uint64_t x, const std::pair<uint64_t, uint64_t>& iv) {
                               return x < iv.first;
                             });
  return it != list.begin() && t < std::prev(it)->second;
}

// The straggler loss of rank `self`: its communication while the number of
// waiting ranks other than itself was at least one.
void AddStragglerLoss(const WaitCount& waits, RankFigures* self) {
  for (const auto& [cs, ce] : self->communication) {
    // The first change point at or before cs.
    size_t i = static_cast<size_t>(std::upper_bound(waits.at.begin(), waits.at.end(), cs) -
                                   waits.at.begin());
    i = i == 0 ? 0 : i - 1;
    for (; i < waits.at.size() && waits.at[i] < ce; ++i) {
      const uint64_t lo = std::max(cs, waits.at[i]);
      const uint64_t hi = i + 1 < waits.at.size() ? std::min(ce, waits.at[i + 1]) : ce;
      if (lo >= hi || waits.count[i] == 0) continue;
      // Its own waiting changes only at change points: one look per piece.
      const uint32_t others = waits.count[i] - (Inside(self->waiting, lo) ? 1 : 0);
      if (others == 0) continue;
      self->straggler_loss_ns += hi - lo;
      AddToSteps(lo, hi, &RankStep::straggler_loss_ns, &self->steps);
    }
  }
}

RankDistribution Distribution(const std::vector<RankFigures>& ranks,
                              uint64_t RankFigures::*figure) {
  std::vector<std::pair<int32_t, uint64_t>> v;
  for (const RankFigures& r : ranks) v.emplace_back(r.rank, r.*figure);
  return DistributionOf(std::move(v));
}

void SlowestLoaders(const std::vector<RankFigures>& ranks, RankJobFigures* job) {
  size_t steps = 0;
  for (const RankFigures& r : ranks) steps = std::max(steps, r.steps.size());
  std::vector<uint64_t> waits;
  for (size_t n = 0; n < steps; ++n) {
    SlowestLoader s;
    s.step = n + 1;
    waits.clear();
    for (const RankFigures& r : ranks) {
      if (r.steps.size() <= n) continue;
      const uint64_t w = r.steps[n].batch_wait_ns;
      waits.push_back(w);
      if (s.rank < 0 || w > s.batch_wait_ns) {  // ranks come in order: ties keep the lowest
        s.rank = r.rank;
        s.host = r.host;
        s.batch_wait_ns = w;
      }
    }
    std::sort(waits.begin(), waits.end());
    s.median_batch_wait_ns = waits[(waits.size() - 1) / 2];
    job->slowest_loader_per_step.push_back(std::move(s));
  }
}

}  // namespace

RankDistribution DistributionOf(std::vector<std::pair<int32_t, uint64_t>> v) {
  RankDistribution d;
  if (v.empty()) return d;
  for (const auto& [rank, ns] : v) d.total_ns += ns;
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  d.max_ns = v.front().second;
  d.min_ns = v.back().second;
  d.median_ns = v[v.size() / 2].second;  // descending: the lower middle one
  for (size_t i = 0; i < v.size() && d.top.size() < kTopRanks; ++i) {
    if (v[i].second > 0) d.top.push_back(v[i]);
  }
  return d;
}

const char* StepRequestName(StepRequest r) {
  switch (r) {
    case StepRequest::kBatch: return "batch";
    case StepRequest::kIter: return "iter";
    case StepRequest::kRaised: return "raised";
    case StepRequest::kEnd: break;
  }
  return "end";
}

void AddLoaderWait(std::vector<LoaderWait>* waits, int64_t loader, uint64_t ns,
                   uint64_t batches, const std::string& site, uint64_t persistent_save_ns,
                   uint64_t rebuilt_ns, uint64_t made_anew_ns) {
  auto at = std::lower_bound(waits->begin(), waits->end(), loader,
                             [](const LoaderWait& w, int64_t l) { return w.loader < l; });
  if (at == waits->end() || at->loader != loader) at = waits->insert(at, LoaderWait{loader});
  at->ns += ns;
  at->batches += batches;
  at->persistent_save_ns += persistent_save_ns;
  at->rebuilt_ns += rebuilt_ns;
  at->made_anew_ns += made_anew_ns;
  if (at->site.empty()) at->site = site;  // (the ranks run one program: the first rank's)
}

uint64_t RankFigures::batches() const {
  return static_cast<uint64_t>(std::count_if(steps.begin(), steps.end(), [](const RankStep& s) {
    return s.request == StepRequest::kBatch;
  }));
}

uint64_t RankFigures::raised() const {
  return static_cast<uint64_t>(std::count_if(steps.begin(), steps.end(), [](const RankStep& s) {
    return s.request == StepRequest::kRaised;
  }));
}

bool IsCommunicationKernel(const std::string& name) {
  // Lower case without underscores, so that AllReduce, allreduce and
  // all_reduce read alike.
  std::string n;
  n.reserve(name.size());
  for (char c : name) {
    if (c != '_') n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  static const char* const kWords[] = {"nccl",    "rccl",     "allreduce", "broadcast",
                                       "reducescatter", "allgather", "alltoall", "sendrecv"};
  for (const char* w : kWords) {
    if (n.find(w) != std::string::npos) return true;
  }
  return false;
}

void AddPreprocessingParts(const PreprocessingParts& parts, PreprocessingParts* into) {
  for (const auto& named : parts) {
    // (Not a structured binding: clang, which builds the fuzzer, does not
    // let a lambda capture one before C++20.)
    auto part = std::find_if(into->begin(), into->end(),
                             [&](const auto& p) { return p.first == named.first; });
    if (part == into->end()) {
      into->emplace_back(named.first, named.second);
    } else {
      part->second += named.second;
    }
  }
  std::stable_sort(into->begin(), into->end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
}

void AddStepLoopParts(uint64_t preprocessing, uint64_t mapping, uint64_t copies,
                      PreprocessingParts* into) {
  if (mapping + copies == 0) return;
  mapping = std::min(mapping, preprocessing);
  copies = std::min(copies, preprocessing - mapping);
  PreprocessingParts parts;
  for (const auto& [name, ns] : {std::make_pair(RankFigures::kMappingPart, mapping),
                                 std::make_pair(RankFigures::kMapCopiesPart, copies),
                                 std::make_pair(RankFigures::kBetweenReadsPart,
                                                preprocessing - mapping - copies)}) {
    if (ns > 0) parts.emplace_back(name, ns);
  }
  AddPreprocessingParts(parts, into);
}

uint64_t OverlapLength(const IntervalList& a, const IntervalList& b) {
  uint64_t n = 0;
  size_t j = 0;
  for (const auto& [s, e] : a) {
    while (j < b.size() && b[j].second <= s) ++j;
    for (size_t k = j; k < b.size() && b[k].first < e; ++k) {
      const uint64_t lo = std::max(s, b[k].first), hi = std::min(e, b[k].second);
      if (hi > lo) n += hi - lo;
    }
  }
  return n;
}

IntervalList UnionOf(const IntervalList& a, const IntervalList& b) {
  IntervalList all;
  all.reserve(a.size() + b.size());
  std::merge(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(all));
  IntervalList out;
  for (const auto& iv : all) {
    if (!out.empty() && iv.first <= out.back().second) {
      out.back().second = std::max(out.back().second, iv.second);
    } else {
      out.push_back(iv);
    }
  }
  return out;
}

void AddToSteps(uint64_t lo, uint64_t hi, uint64_t RankStep::*field,
                std::vector<RankStep>* steps) {
  while (lo < hi) {
    auto next = std::upper_bound(steps->begin(), steps->end(), lo,
                                 [](uint64_t t, const RankStep& s) { return t < s.start_ns; });
    const uint64_t until = next == steps->end() ? hi : std::min(hi, next->start_ns);
    if (next != steps->begin()) (*std::prev(next)).*field += until - lo;
    lo = until;
  }
}

void MergeRankFigures(std::vector<RankFigures>* into, std::vector<RankFigures>&& from) {
  for (RankFigures& f : from) {
    auto it = std::find_if(into->begin(), into->end(), [&](const RankFigures& r) {
      return r.rank == f.rank && r.host == f.host;
    });
    if (it == into->end()) {
      into->push_back(std::move(f));
      continue;
    }
    it->processes += f.processes;
    it->first_ns = std::min(it->first_ns, f.first_ns);
    it->startup_io_ns += f.startup_io_ns;
    it->startup_io_ops += f.startup_io_ops;
    it->startup_read_bytes += f.startup_read_bytes;
    it->startup_map_ns += f.startup_map_ns;
    it->startup_map_bytes += f.startup_map_bytes;
    it->io_ns += f.io_ns;
    it->io_ops += f.io_ops;
    it->read_bytes += f.read_bytes;
    AddBins(&it->read_per_second, f.read_per_second);
    AddBins(&it->gpu_busy_per_second, f.gpu_busy_per_second);
    // Without GPU work or regions there is nothing else to add; were there
    // any, the group would have held every trace of the rank.
    if (it->steps.empty()) it->steps = std::move(f.steps);
  }
}

void FinishRankFigures(std::vector<RankFigures>* ranks, RankJobFigures* job) {
  std::sort(ranks->begin(), ranks->end(), [](const RankFigures& a, const RankFigures& b) {
    return std::tie(a.rank, a.host) < std::tie(b.rank, b.host);
  });
  const WaitCount waits(*ranks);
  for (RankFigures& r : *ranks) AddStragglerLoss(waits, &r);
  for (RankFigures& r : *ranks) {
    r.waiting = IntervalList();
    r.communication = IntervalList();
  }
  *job = RankJobFigures();
  job->batch_wait = Distribution(*ranks, &RankFigures::batch_wait_ns);
  job->data_stall = Distribution(*ranks, &RankFigures::data_stall_ns);
  job->straggler_loss = Distribution(*ranks, &RankFigures::straggler_loss_ns);
  if (!job->batch_wait.top.empty()) job->slowest_loader_rank = job->batch_wait.top.front().first;
  std::map<std::string, HostRanks> hosts;
  for (const RankFigures& r : *ranks) {
    HostRanks& h = hosts[r.host];
    h.host = r.host;
    ++h.ranks;
    h.batch_wait_ns += r.batch_wait_ns;
    h.data_stall_ns += r.data_stall_ns;
    h.straggler_loss_ns += r.straggler_loss_ns;
    h.gpu_busy_ns += r.gpu_busy_ns;
    h.gpu_compute_ns += r.gpu_compute_ns;
    h.gpu_communication_ns += r.gpu_communication_ns;
    h.gpu_memory_ns += r.gpu_memory_ns;
    h.gpu_idle_ns += r.gpu_idle_ns();
    h.io_ns += r.io_ns;
    h.read_bytes += r.read_bytes;
    job->gpu |= r.gpu;
  }
  for (auto& [name, h] : hosts) job->hosts.push_back(std::move(h));
  SlowestLoaders(*ranks, job);
}

}  // namespace dlprof::analysis
