// WorkerMeter (worker_meter.h): a rank's loader workers in one pass.
#include "lib/analysis/meters/worker_meter.h"

#include <algorithm>
#include <cstdlib>
#include <utility>

#include "dlprof/catalogue.h"
#include "lib/format/event_rules.h"
#include "lib/read/regions.h"  // LoopRegionNamed

namespace dlprof::analysis {
using namespace dlprof::read;
namespace {

// Concurrency levels past this one count as it (bounds the vectors).
constexpr size_t kMaxLevels = 256;
// The bootstrap's flow from a worker's fetch to the load_batch that
// receives its batch (python/dlprof/_torch_worker.py, BATCH_FLOW).
constexpr const char* kBatchFlowName = "batch";

void AddAt(std::vector<uint64_t>* v, size_t k, uint64_t x) {
  k = std::min(k, kMaxLevels - 1);
  if (v->size() <= k) v->resize(k + 1, 0);
  (*v)[k] += x;
}

uint64_t CpusOf(const ProcessTrace& p) {
  return p.info.cpus.empty() ? 0 : std::strtoull(p.info.cpus.c_str(), nullptr, 10);
}

}  // namespace

WorkerMeter::WorkerMeter(const std::vector<ProcessTrace>& processes, std::string batch_region)
    : processes_(processes),
      batch_region_(std::move(batch_region)),
      fetching_until_(processes.size(), 0),
      worker_(processes.size(), false) {}

WorkerMeter::Kind WorkerMeter::KindOf(const StreamEvent& e) {
  const uint64_t key = static_cast<uint64_t>(e.process) << 32 | e.event->file;
  auto [it, added] = names_.try_emplace(key, Kind::kOther);
  if (added) {
    const std::string name = RegionName(*e.event, processes_[e.process]);
    switch (LoopRegionNamed(name, batch_region_)) {
      case LoopRegion::kFetch: it->second = Kind::kFetch; break;
      case LoopRegion::kBatchWait: it->second = Kind::kBatchWait; break;
      default: break;
    }
    if (name == kFetchCpuCounter) it->second = Kind::kFetchCpu;
    if (name == kBatchFlowName) it->second = Kind::kBatchFlow;
  }
  return it->second;
}

void WorkerMeter::Add(const StreamEvent& e, bool counted) {
  if (!counted || e.process >= processes_.size()) return;
  if (fetching_until_.size() < processes_.size()) {
    fetching_until_.resize(processes_.size(), 0);
    worker_.resize(processes_.size(), false);
  }
  const Event& ev = *e.event;
  const EventKindInfo* k = LookupKind(ev.kind);
  if (k == nullptr) return;
  const uint64_t start = ev.start_ns, end = ev.start_ns + ev.dur_ns;
  if (k->op_class == OpClass::Region) {
    switch (KindOf(e)) {
      case Kind::kFetch: AddFetch(e.process, start, end); break;
      case Kind::kBatchWait:
        if (main_ < 0) main_ = e.process;
        break;
      case Kind::kFetchCpu:
      case Kind::kBatchFlow:
      case Kind::kOther: break;
    }
  } else if (k->op_class == OpClass::FlowStart && KindOf(e) == Kind::kBatchFlow) {
    // A batch sent: its pass's tag is the flow id's upper 40 bits.
    std::vector<uint32_t>& senders = pass_senders_[ev.aux >> 24];
    if (std::find(senders.begin(), senders.end(), e.process) == senders.end()) {
      senders.push_back(e.process);
      f_.workers_per_pass = std::max<uint64_t>(f_.workers_per_pass, senders.size());
    }
  } else if (k->op_class == OpClass::Counter && KindOf(e) == Kind::kFetchCpu) {
    // The bootstrap's fetch_cpu: the worker thread's CPU time in its fetch
    // (not its waits for storage, the network or the interpreter lock).
    f_.fetch_cpu_ns += ev.aux;
    ++f_.cpu_fetches;
  } else if ((CountsAsIo(ev) || RulesFor(ev.kind).map_read) && start < fetching_until_[e.process]) {
    // A call inside one of the process's fetches: the worker's I/O; a page
    // fault on a mapped file is a read of its pages, in flight with the
    // others (what the storage's scaling is measured on).
    f_.fetch_io_ns += ev.dur_ns;
    if (k->op_class == OpClass::Read || ev.kind == static_cast<uint16_t>(EventKind::MajorFault)) {
      AddRead(start, end, BytesMoved(ev));
    }
  }
}

void WorkerMeter::AddFetch(uint32_t process, uint64_t start, uint64_t end) {
  if (start < fetching_until_[process]) {
    // Inside a fetch of its own (nested regions of the name): part of it.
    fetching_until_[process] = std::max(fetching_until_[process], end);
    return;
  }
  if (!worker_[process]) {
    worker_[process] = true;
    ++f_.workers;
  }
  fetching_until_[process] = end;
  ++f_.fetches;
  f_.fetch_ns += end - start;
  PassFetches(start);
  fetch_ends_.push(end);
}

void WorkerMeter::PassFetches(uint64_t now) {
  while (!fetch_ends_.empty() && fetch_ends_.top() <= now) {
    const uint64_t t = fetch_ends_.top();
    if (t > swept_to_) AddAt(&f_.busy_ns, fetch_ends_.size() - 1, t - swept_to_);
    swept_to_ = std::max(swept_to_, t);
    fetch_ends_.pop();
  }
  if (!fetch_ends_.empty() && now > swept_to_) {
    AddAt(&f_.busy_ns, fetch_ends_.size() - 1, now - swept_to_);
  }
  swept_to_ = std::max(swept_to_, now);
}

void WorkerMeter::AddRead(uint64_t start, uint64_t end, uint64_t bytes) {
  while (!read_ends_.empty() && read_ends_.top() <= start) read_ends_.pop();
  const size_t level = read_ends_.size();  // the others in flight
  read_ends_.push(end);
  ++f_.read_ops;
  f_.read_bytes += bytes;
  f_.read_ns += end - start;
  AddAt(&f_.level_ops, level, 1);
  AddAt(&f_.level_bytes, level, bytes);
  AddAt(&f_.level_ns, level, end - start);
}

WorkerFigures WorkerMeter::Finish() {
  PassFetches(UINT64_MAX);
  if (main_ >= 0) {
    f_.cpus = CpusOf(processes_[static_cast<size_t>(main_)]);
  } else {
    for (const ProcessTrace& p : processes_) f_.cpus = std::max(f_.cpus, CpusOf(p));
  }
  return std::move(f_);
}

}  // namespace dlprof::analysis
