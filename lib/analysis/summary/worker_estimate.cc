// The loader workers' what-if (worker_estimate.h; the model is in
// docs/ANALYSIS_LOADER.md, "Loader workers: what more would give").
#include "lib/analysis/summary/worker_estimate.h"

#include <algorithm>

#include "lib/text/text.h"

namespace dlprof::analysis {
namespace {

// A number of reads in flight counts for the storage's scaling only with
// this many reads started at it: a few reads say little about time per byte.
constexpr uint64_t kMinLevelOps = 16;
// The reads "did not speed up with concurrency" when a read's time per byte
// grew by 0.4 or more of the alone time per extra read in flight: a storage
// that serves one read at a time gives 0.5 with two readers (a read that
// arrives finds the other half served, on average) and more with more, one
// that serves any number at once gives 0.
constexpr uint64_t kSaturatedSlowdownPerMille = 400;

uint64_t MulDiv(uint64_t a, uint64_t b, uint64_t c) {
  if (c == 0) return 0;
  const unsigned __int128 r = static_cast<unsigned __int128>(a) * b / c;
  return r > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(r);
}

void AddVector(std::vector<uint64_t>* into, const std::vector<uint64_t>& from) {
  if (into->size() < from.size()) into->resize(from.size(), 0);
  for (size_t i = 0; i < from.size(); ++i) (*into)[i] += from[i];
}

// The reads' time per byte relative to one reader in flight, in millionths,
// at a mean concurrency of `c` per mille: 1 + slowdown x (c - 1).
uint64_t ReadFactor(const WorkerModel& m, uint64_t c_per_mille) {
  const uint64_t extra = c_per_mille > 1000 ? c_per_mille - 1000 : 0;
  return 1000000 + m.slowdown_per_mille * extra;
}

// The wait per step the loader and the CPUs allow with `workers` workers,
// and what sets it.
uint64_t WaitPerStep(const WorkerModel& m, uint64_t workers, WorkerLimit* bound) {
  // The reads slow down as more of them are in flight: today's mean
  // concurrency grows with the workers (at most one read per worker).
  uint64_t c = MulDiv(m.concurrency_per_mille, workers, m.workers);
  c = std::clamp<uint64_t>(c, 1000, workers * 1000);
  const uint64_t io = MulDiv(m.io_ns, ReadFactor(m, c), ReadFactor(m, m.concurrency_per_mille));
  const uint64_t fetch = m.cpu_ns + io + m.idle_ns;
  // The loader hands out `workers` batches per fetch time; the loop takes
  // one per compute time.
  const uint64_t per_batch = fetch / workers;
  const uint64_t loader = per_batch > m.compute_ns ? per_batch - m.compute_ns : 0;
  // The CPUs: each batch costs the workers its CPU part, each step the main
  // process its compute (one CPU busy meanwhile); `cpus` of them share it.
  uint64_t cpu = 0;
  if (m.cpus > 0) {
    const uint64_t step = (m.cpu_ns + m.compute_ns) / m.cpus;
    cpu = step > m.compute_ns ? step - m.compute_ns : 0;
  }
  if (cpu > 0 && cpu >= loader) {
    *bound = WorkerLimit::kCpu;
    return cpu;
  }
  *bound = m.storage_saturated && io >= m.cpu_ns ? WorkerLimit::kStorage : WorkerLimit::kNone;
  return loader;
}

}  // namespace

uint64_t WorkersAtOnce(const WorkerFigures& w) {
  // Fetching at once undercounts workers that sit idle, their batches made,
  // behind a slow one (4 workers counted 1, and were told 2 would halve a
  // wait that 16 did not change); the flows count them.
  if (w.workers_per_pass > 0) return std::min(w.workers_per_pass, std::max<uint64_t>(w.workers, 1));
  // The time with k + 1 or more fetching, from the top level down: the
  // highest level held a tenth of the time any fetched, not a moment's
  // overlap of an old pass's last fetch and a new pass's first.
  uint64_t any = 0;
  for (uint64_t ns : w.busy_ns) any += ns;
  if (any == 0) return w.workers;  // (no sweep: figures from elsewhere)
  uint64_t at_least = 0;
  for (size_t k = w.busy_ns.size(); k-- > 0;) {
    at_least += w.busy_ns[k];
    if (at_least * 10 >= any) return std::min<uint64_t>(k + 1, std::max<uint64_t>(w.workers, 1));
  }
  return 1;
}

void MergeWorkerFigures(WorkerFigures* into, const WorkerFigures& from) {
  into->workers += from.workers;
  into->fetches += from.fetches;
  into->fetch_ns += from.fetch_ns;
  into->fetch_io_ns += from.fetch_io_ns;
  into->read_ops += from.read_ops;
  into->read_bytes += from.read_bytes;
  into->read_ns += from.read_ns;
  AddVector(&into->busy_ns, from.busy_ns);
  into->workers_per_pass = std::max(into->workers_per_pass, from.workers_per_pass);
  AddVector(&into->level_ops, from.level_ops);
  AddVector(&into->level_bytes, from.level_bytes);
  AddVector(&into->level_ns, from.level_ns);
  into->fetch_cpu_ns += from.fetch_cpu_ns;
  into->cpu_fetches += from.cpu_fetches;
  into->cpus = std::max(into->cpus, from.cpus);
}

const char* WorkerLimitName(WorkerLimit l) {
  switch (l) {
    case WorkerLimit::kStorage: return "storage";
    case WorkerLimit::kCpu: return "cpu";
    case WorkerLimit::kNone: break;
  }
  return "";
}

WorkerModel MakeWorkerModel(const WorkerFigures& w, uint64_t loop_ns, uint64_t batch_wait_ns,
                            uint64_t steps, uint64_t worker_startup_ns,
                            uint64_t resumed_startup_ns) {
  WorkerModel m;
  if (w.workers == 0 || w.fetches == 0 || steps == 0 || loop_ns == 0) return m;
  m.valid = true;
  // W: the workers fetching at once, not every process that ever fetched:
  // 2 non-persistent workers over 3 passes are 6 processes, and taken as 6
  // the 88 % they fetched read 29 %, under the finding's threshold.
  m.workers = WorkersAtOnce(w);
  m.steps = steps;
  m.cpus = w.cpus;
  m.wait_ns = batch_wait_ns;
  m.fetch_ns = w.fetch_ns / w.fetches;
  m.io_ns = std::min(w.fetch_io_ns / w.fetches, m.fetch_ns);
  const uint64_t rest = m.fetch_ns - m.io_ns;
  m.cpu_ns = w.fetches > 0 && w.cpu_fetches == w.fetches
                 ? std::min(rest, w.fetch_cpu_ns / w.fetches)
                 : rest;
  m.idle_ns = rest - m.cpu_ns;
  m.compute_ns = (loop_ns - std::min(loop_ns, batch_wait_ns)) / steps;
  m.busy_per_mille = MulDiv(w.fetch_ns, 1000, m.workers * loop_ns);

  // The storage: a read's time per byte at the lowest and highest number
  // of reads in flight at its start with enough reads, and the concurrency
  // a read saw on average (weighted by the reads' time).
  uint64_t weighted = 0, total_ns = 0;
  for (size_t k = 0; k < w.level_ns.size(); ++k) {
    weighted += (k + 1) * w.level_ns[k];
    total_ns += w.level_ns[k];
    const bool enough = k < w.level_ops.size() && w.level_ops[k] >= kMinLevelOps &&
                        k < w.level_bytes.size() && w.level_bytes[k] > 0;
    if (!enough) continue;
    const uint64_t ps = MulDiv(w.level_ns[k], 1000, w.level_bytes[k]);
    if (m.read_levels++ == 0) {
      m.low_level = k + 1;
      m.low_ps_per_byte = ps;
    }
    m.high_level = k + 1;
    m.high_ps_per_byte = ps;
  }
  if (total_ns > 0) m.concurrency_per_mille = MulDiv(weighted, 1000, total_ns);
  if (m.read_levels >= 2 && m.low_ps_per_byte > 0) {
    const uint64_t ratio = MulDiv(m.high_ps_per_byte, 1000, m.low_ps_per_byte);
    m.slowdown_per_mille = ratio > 1000 ? (ratio - 1000) / (m.high_level - m.low_level) : 0;
    m.storage_saturated = m.slowdown_per_mille >= kSaturatedSlowdownPerMille;
  }
  // What the model says of today. The loop waited for the workers to start
  // besides (measured, not modelled); the rest of the measured wait
  // (hand-over, the model's error) stays as it is with more.
  WorkerLimit bound;
  const uint64_t per_step = WaitPerStep(m, m.workers, &bound);
  m.model_wait_ns = per_step * steps;
  m.startup_ns = std::min(worker_startup_ns,
                          batch_wait_ns > m.model_wait_ns ? batch_wait_ns - m.model_wait_ns : 0);
  m.resumed_startup_ns = std::min(resumed_startup_ns, m.startup_ns);
  return m;
}

WorkerPoint EstimateWait(const WorkerModel& m, uint64_t workers) {
  WorkerPoint p;
  p.workers = workers;
  if (!m.valid || workers == 0) return p;
  const uint64_t explained = m.model_wait_ns + m.startup_ns;
  const uint64_t rest = m.wait_ns > explained ? m.wait_ns - explained : 0;
  // The workers' starts grow with their number; persistent workers that
  // resume start nothing (a loop of them was told 202 ms would "still be"
  // 280 ms with 4 times as many, its resumes multiplied too).
  const uint64_t started = m.startup_ns - m.resumed_startup_ns;
  p.batch_wait_ns = WaitPerStep(m, workers, &p.bound) * m.steps +
                    MulDiv(started, workers, m.workers) + m.resumed_startup_ns + rest;
  return p;
}

std::vector<WorkerPoint> EstimateWorkers(const WorkerModel& m,
                                         const std::vector<uint64_t>& factors) {
  std::vector<WorkerPoint> out;
  if (!m.valid) return out;
  for (uint64_t f : factors) out.push_back(EstimateWait(m, f * m.workers));
  return out;
}

const WorkerPoint& LeastWait(const std::vector<WorkerPoint>& points) {
  return *std::min_element(points.begin(), points.end(), [](const auto& a, const auto& b) {
    return a.batch_wait_ns < b.batch_wait_ns;
  });
}

std::string EstimateText(const std::vector<WorkerPoint>& points, uint64_t wait_ns,
                         const std::string& per) {
  std::string text;
  const char* said = nullptr;
  bool grows = false;
  for (const WorkerPoint& p : points) {
    const uint64_t w = p.batch_wait_ns;
    const char* way = w < wait_ns ? "fall to " : w > wait_ns ? "grow to " : "be ";
    grows |= w > wait_ns;
    if (said == nullptr) {
      text += std::to_string(p.workers) + " workers" + per + " the wait would " + way;
    } else {
      text += ", with " + std::to_string(p.workers) + " " + (way == said ? "to " : way);
    }
    text += "about " + text::DurationText(w);
    said = way;
  }
  return text + (grows ? " (their start-up grows with their number)." : ".");
}

}  // namespace dlprof::analysis
