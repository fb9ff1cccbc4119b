// Handovers (handover.h): a made batch's way to the loop, in parts.
#include "lib/analysis/meters/handover.h"

#include <algorithm>
#include <cstdlib>

namespace dlprof::analysis {
namespace {

constexpr const char* kSentCounter = "batch_sent";
constexpr const char* kReceivedCounter = "batch_received";

uint64_t Clamp(uint64_t t, uint64_t lo, uint64_t hi) { return std::min(std::max(t, lo), hi); }

}  // namespace

const char* HandoverCauseName(HandoverCause c) {
  switch (c) {
    case HandoverCause::kNone: break;
    case HandoverCause::kWorkerBusy: return "worker_busy";
    case HandoverCause::kCpusOversubscribed: return "cpus_oversubscribed";
    case HandoverCause::kBatchSize: return "batch_size";
    case HandoverCause::kPinMemory: return "pin_memory";
  }
  return "";
}

Handovers::Handovers(const std::vector<ProcessTrace>& processes, uint64_t cpus)
    : processes_(processes), cpus_(cpus) {}

Handovers::Counter Handovers::CounterOf(const StreamEvent& e) {
  auto [it, added] =
      names_.try_emplace(ProcessStringKey(e.process, e.event->file), Counter::kOther);
  if (added && e.process < processes_.size()) {
    const auto& strings = processes_[e.process].strings;
    auto s = strings.find(e.event->file);
    if (s != strings.end() && s->second == kSentCounter) it->second = Counter::kSent;
    if (s != strings.end() && s->second == kReceivedCounter) it->second = Counter::kReceived;
  }
  return it->second;
}

void Handovers::AddCounter(const StreamEvent& e) {
  switch (CounterOf(e)) {
    case Counter::kSent:
      if (sent_.emplace(e.event->aux, e.event->start_ns).second) {
        sent_order_.push_back(e.event->aux);
      }
      while (sent_order_.size() > kKeptSends) {
        sent_.erase(sent_order_.front());
        sent_order_.pop_front();
      }
      return;
    case Counter::kReceived: {
      auto& last = received_[e.process];
      last.emplace_back(e.event->start_ns, e.tid);
      if (last.size() > kKeptReceives) last.pop_front();
      return;
    }
    case Counter::kOther: return;
  }
}

uint64_t Handovers::Busy(uint32_t worker, uint64_t from, uint64_t to,
                         const std::vector<Fetching>& fetching) {
  uint64_t busy = 0;
  for (const Fetching& f : fetching) {
    const uint64_t lo = std::max(f.start, from), hi = std::min(f.end, to);
    if (f.process == worker && hi > lo) busy += hi - lo;
  }
  return busy;
}

uint64_t Handovers::CpusOf(uint32_t process) const {
  // The waiting process's own count: a launcher's image before it exec'd
  // the job (taskset -c 0, numactl --physcpubind) recorded its CPUs before
  // it restricted them, and is no measure of what the job may use.
  if (process < processes_.size()) {
    const uint64_t own = std::strtoull(processes_[process].info.cpus.c_str(), nullptr, 10);
    if (own > 0) return own;
  }
  return cpus_;
}

uint64_t Handovers::Oversubscribed(uint64_t from, uint64_t to, uint64_t cpus,
                                   const std::vector<Fetching>& fetching) {
  if (cpus == 0 || to <= from) return 0;
  std::vector<std::pair<uint64_t, int>> points;
  for (const Fetching& f : fetching) {
    const uint64_t s = std::max(f.start, from), e = std::min(f.end, to);
    if (e > s) points.insert(points.end(), {{s, +1}, {e, -1}});
  }
  std::sort(points.begin(), points.end());
  uint64_t over = 0, at = from;
  int64_t busy = 1;  // the waiting process, unpickling or about to
  for (const auto& [t, step] : points) {
    if (static_cast<uint64_t>(busy) > cpus) over += t - at;
    at = t;
    busy += step;
  }
  if (static_cast<uint64_t>(busy) > cpus) over += to - at;
  return over;
}

HandoverSplit Handovers::Split(uint64_t from, uint64_t to, uint32_t worker, bool has_flow,
                               uint64_t flow, uint32_t waiting, int32_t waiting_tid,
                               uint64_t batch_bytes, const std::vector<Fetching>& fetching) {
  HandoverSplit s;
  if (to <= from) return s;
  uint64_t sent_at = from;
  if (has_flow) {
    auto it = sent_.find(flow);
    if (it != sent_.end()) {
      sent_at = Clamp(it->second, from, to);
      sent_.erase(it);  // (its id stays in sent_order_ until it ages out)
    }
  }
  // The last message the waiting process read by the wait's end: the batch
  // it waited for (in order, the loop returns right after it).
  uint64_t received_at = to;
  int32_t reader = waiting_tid;
  auto found = received_.find(waiting);
  if (found != received_.end()) {
    for (auto r = found->second.rbegin(); r != found->second.rend(); ++r) {
      if (r->first <= to) {
        received_at = Clamp(r->first, sent_at, to);
        reader = r->second;
        break;
      }
    }
  }
  s.in_worker_ns = sent_at - from;
  s.in_transit_ns = received_at - sent_at;
  s.rebuild_ns = to - received_at;
  const bool large = batch_bytes >= kLargeBatchBytes;
  const uint64_t cpus = CpusOf(waiting);
  auto crowded = [&](uint64_t lo, uint64_t hi) {
    return 2 * Oversubscribed(lo, hi, cpus, fetching) >= hi - lo;
  };
  if (s.in_worker_ns >= s.in_transit_ns && s.in_worker_ns >= s.rebuild_ns) {
    // The worker's main thread on its next batch holds the interpreter lock
    // its queue's feeder thread needs.
    // The CPUs first: even the lock's holder needs one; then the batch's
    // size (pickling it into shared memory), then the worker's next batch.
    s.cause = crowded(from, sent_at) ? HandoverCause::kCpusOversubscribed
              : large                ? HandoverCause::kBatchSize
              : 2 * Busy(worker, from, sent_at, fetching) >= s.in_worker_ns
                  ? HandoverCause::kWorkerBusy
                  : HandoverCause::kNone;
  } else if (reader != waiting_tid) {
    // The pin-memory thread read the batch: before, it was pinning the
    // batches ahead (transit); after, it rebuilt and pinned this one before
    // the loop's own queue had it (rebuild).
    s.cause = HandoverCause::kPinMemory;
  } else if (s.in_transit_ns >= s.rebuild_ns) {
    s.cause = crowded(sent_at, received_at) ? HandoverCause::kCpusOversubscribed
              : large                         ? HandoverCause::kBatchSize
                                              : HandoverCause::kNone;
  } else {
    // Rebuilding a batch's tensors takes their shared memory's descriptors
    // from the worker's resource-sharing thread: it too needs the worker's
    // interpreter lock.
    s.cause = crowded(received_at, to) ? HandoverCause::kCpusOversubscribed
              : large                  ? HandoverCause::kBatchSize
              : 2 * Busy(worker, received_at, to, fetching) >= s.rebuild_ns
                  ? HandoverCause::kWorkerBusy
                  : HandoverCause::kNone;
  }
  return s;
}

}  // namespace dlprof::analysis
