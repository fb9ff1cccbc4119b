// Waiting for other ranks in collective MPI-IO calls (collective_waits.h).
#include "lib/analysis/summary/collective_waits.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "lib/analysis/summary/summary.h"

namespace dlprof::analysis {

uint64_t CollectiveCallsPerProcess(size_t traces) {
  // Each process's share of the job's bound, but never so few that a small
  // job's loop is cut: a thousand ranks keep 2,048 calls each.
  return std::max<uint64_t>(1024, kMaxCollectiveCalls / std::max<size_t>(1, traces));
}

namespace {

// Index of `name` in `table`, added where missing (`index` caches it).
uint32_t Intern(const std::string& name, std::vector<std::string>* table,
                std::unordered_map<std::string, uint32_t>* index) {
  auto [it, added] = index->try_emplace(name, static_cast<uint32_t>(table->size()));
  if (added) table->push_back(name);
  return it->second;
}

// Takes up to `ns` out of `*from` and returns what it took.
uint64_t TakeOut(uint64_t ns, uint64_t* from) {
  const uint64_t taken = std::min(ns, *from);
  *from -= taken;
  return taken;
}

// The waiting `w` of a call of op group `g`, out of an IoStats' time.
void TakeOutOfIo(uint64_t w, int g, IoStats* io) {
  const uint64_t taken = TakeOut(w, &io->time_ns[g]);
  io->mpi_collective_wait_ns += taken;
  // The read and write figures' time is their group's (stream_stats.cc).
  if (g == static_cast<int>(OpGroup::Read)) io->read.time_ns = io->time_ns[g];
  if (g == static_cast<int>(OpGroup::Write)) io->write.time_ns = io->time_ns[g];
}

// The waiting `w` of a call entered at `entry`, out of its rank's figures:
// its I/O time, and the loop's batch wait (a loop of steps: its waits are
// its data calls) or the start-up's I/O, whichever counted the call.
void TakeOutOfRank(uint64_t w, uint64_t entry, RankFigures* f, CollectiveWaitFigures* job) {
  f->io_ns -= std::min(w, f->io_ns);
  f->collective_wait_ns += w;
  if (!f->loop || entry < f->loop_start_ns) {
    job->startup_wait_ns += TakeOut(w, &f->startup_io_ns);
    return;
  }
  if (!f->loop_of_steps || f->loops > 1 || entry >= f->loop_end_ns) return;
  // The step whose window holds the entry (a step's window runs from its
  // start to the next one's; a call inside the optimizer step itself was
  // in no wait, and its reading is that of its own window at most).
  auto it = std::upper_bound(f->steps.begin(), f->steps.end(), entry,
                             [](uint64_t at, const RankStep& s) { return at < s.start_ns; });
  if (it == f->steps.begin()) return;
  RankStep& step = *(it - 1);
  const uint64_t taken = TakeOut(w, &step.reading_ns);
  step.batch_wait_ns -= taken;
  step.batch_wait_gpu_idle_ns = std::min(step.batch_wait_gpu_idle_ns, step.batch_wait_ns);
  step.collective_wait_ns += taken;
  f->reading_ns -= taken;
  f->batch_wait_ns -= taken;
  f->batch_wait_gpu_idle_ns = std::min(f->batch_wait_gpu_idle_ns, f->batch_wait_ns);
  f->collective_wait_loop_ns += taken;
  job->loop_wait_ns += taken;
}

}  // namespace

void MergeCollectiveCalls(CollectiveCalls* into, CollectiveCalls&& from) {
  if (from.not_kept > 0) {
    into->kept_per_process = into->not_kept > 0
                                 ? std::min(into->kept_per_process, from.kept_per_process)
                                 : from.kept_per_process;
  }
  into->not_kept += from.not_kept;
  if (from.calls.empty()) return;
  if (into->calls.empty() && into->files.empty() && into->processes.empty()) {
    into->files = std::move(from.files);
    into->processes = std::move(from.processes);
    into->calls = std::move(from.calls);
    return;
  }
  std::unordered_map<std::string, uint32_t> files, processes;
  for (uint32_t i = 0; i < into->files.size(); ++i) files.emplace(into->files[i], i);
  for (uint32_t i = 0; i < into->processes.size(); ++i) processes.emplace(into->processes[i], i);
  std::vector<uint32_t> file_of, process_of;
  for (const std::string& f : from.files) file_of.push_back(Intern(f, &into->files, &files));
  for (const std::string& p : from.processes) {
    process_of.push_back(Intern(p, &into->processes, &processes));
  }
  into->calls.reserve(into->calls.size() + from.calls.size());
  for (CollectiveCall c : from.calls) {
    c.file = file_of[c.file];
    c.process = process_of[c.process];
    into->calls.push_back(c);
  }
}

void ApplyCollectiveWaits(CollectiveCalls&& in, Summary* s) {
  CollectiveWaitFigures& job = s->collective_waits;
  job = CollectiveWaitFigures();
  job.not_kept = in.not_kept;
  job.kept_per_process = in.not_kept > 0 ? in.kept_per_process : 0;
  std::vector<CollectiveCall>& calls = in.calls;
  for (const CollectiveCall& c : calls) job.calls += c.counted;
  // One operation a run of equal (file, size, k); the process breaks ties
  // so that the order does not depend on the merge's.
  std::sort(calls.begin(), calls.end(), [](const CollectiveCall& a, const CollectiveCall& b) {
    return std::tie(a.file, a.comm_size, a.k, a.process) <
           std::tie(b.file, b.comm_size, b.k, b.process);
  });
  // Where each call's figures are: its rank's (by rank and host), its
  // process's, its file's.
  std::map<std::pair<int32_t, std::string>, RankFigures*> rank_of;
  for (RankFigures& f : s->rank_figures) rank_of[{f.rank, f.host}] = &f;
  std::vector<IoStats*> process_io(in.processes.size(), nullptr);
  std::vector<RankFigures*> process_rank(in.processes.size(), nullptr);
  for (size_t i = 0; i < in.processes.size(); ++i) {
    auto io = s->processes_stats.find(in.processes[i]);
    if (io != s->processes_stats.end()) process_io[i] = &io->second;
    auto id = s->process_ids.find(in.processes[i]);
    if (id == s->process_ids.end()) continue;
    auto r = rank_of.find({id->second.rank, id->second.host});
    if (r != rank_of.end()) process_rank[i] = r->second;
  }
  std::vector<IoStats*> file_io(in.files.size(), nullptr);
  for (size_t i = 0; i < in.files.size(); ++i) {
    auto io = s->files.find(in.files[i]);
    if (io != s->files.end()) file_io[i] = &io->second;
  }
  std::map<int32_t, uint64_t> late;
  for (size_t lo = 0, hi; lo < calls.size(); lo = hi) {
    const CollectiveCall& head = calls[lo];
    for (hi = lo + 1; hi < calls.size() && calls[hi].file == head.file &&
                      calls[hi].comm_size == head.comm_size && calls[hi].k == head.k;
         ++hi) {
    }
    // Every rank's part once: as many calls as the communicator has ranks,
    // of as many processes (sorted by process within the run).
    bool whole = hi - lo == head.comm_size;
    for (size_t i = lo + 1; whole && i < hi; ++i) whole = calls[i].process != calls[i - 1].process;
    if (!whole) continue;
    size_t last = lo;
    for (size_t i = lo + 1; i < hi; ++i) {
      const CollectiveCall& c = calls[i];
      if (c.entry_ns > calls[last].entry_ns ||
          (c.entry_ns == calls[last].entry_ns && c.rank < calls[last].rank)) {
        last = i;
      }
    }
    const uint64_t last_entry = calls[last].entry_ns;
    for (size_t i = lo; i < hi; ++i) {
      const CollectiveCall& c = calls[i];
      job.matched += c.counted;
      const uint64_t w = std::min(last_entry - c.entry_ns, c.dur_ns);
      if (w == 0 || !c.counted) continue;
      late[calls[last].rank] += w;
      job.wait_ns += w;
      const int g = c.group;
      TakeOutOfIo(w, g, &s->run);
      auto r = s->ranks.find(c.rank);
      if (r != s->ranks.end()) TakeOutOfIo(w, g, &r->second);
      if (process_io[c.process] != nullptr) TakeOutOfIo(w, g, process_io[c.process]);
      if (file_io[c.file] != nullptr) TakeOutOfIo(w, g, file_io[c.file]);
      if (process_rank[c.process] != nullptr) {
        TakeOutOfRank(w, c.entry_ns, process_rank[c.process], &job);
      }
    }
  }
  // (Each rank's first figures: one pass, not a search per late rank, which
  // at ten thousand ranks was a hundred million compares.)
  std::set<int32_t> credited;
  for (RankFigures& f : s->rank_figures) {
    auto l = late.find(f.rank);
    if (l != late.end() && credited.insert(f.rank).second) f.collective_late_ns += l->second;
  }
  for (const auto& [rank, ns] : late) job.late_ranks.emplace_back(rank, ns);
  std::sort(job.late_ranks.begin(), job.late_ranks.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  if (job.late_ranks.size() > CollectiveWaitFigures::kTopLateRanks) {
    job.late_ranks.resize(CollectiveWaitFigures::kTopLateRanks);
  }
}

}  // namespace dlprof::analysis
