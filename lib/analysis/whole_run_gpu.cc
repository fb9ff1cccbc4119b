// The whole run's GPU busy time and data stall from the counters
// (whole_run_gpu.h).
#include "lib/analysis/whole_run_gpu.h"

#include <algorithm>

namespace dlprof::analysis {

uint64_t ProratedNs(uint64_t ns, uint64_t from, uint64_t to, uint64_t lo, uint64_t hi) {
  const uint64_t a = std::max(from, lo);
  const uint64_t b = std::min(to, hi);
  if (b <= a || to <= from) return 0;
  // (A month of busy time times a month of span overflows 64 bits.)
  return static_cast<uint64_t>(static_cast<unsigned __int128>(ns) * (b - a) / (to - from));
}

void GpuWindow::Add(uint64_t first, uint64_t last) {
  first_ns = any ? std::min(first_ns, first) : first;
  last_ns = any ? std::max(last_ns, last) : last;
  any = true;
}

void GpuWindow::Add(const GpuWindow& o) {
  if (o.any) Add(o.first_ns, o.last_ns);
}

void GpuSums::Add(const format::GpuRecord& g) {
  if (!gpu_) {
    gpu_ = true;
    first_ = g.first_ns;
  }
  first_ = std::min(first_, g.first_ns);
  last_ = std::max(last_, g.last_ns);
  busy_ += to_ <= from_ ? g.busy_ns : ProratedNs(g.busy_ns, g.first_ns, g.last_ns, from_, to_);
}

void GpuSums::Put(WholeRunLoop* loop) const {
  loop->gpu = gpu_;
  loop->gpu_busy_ns = busy_;
  loop->gpu_first_ns = first_;
  loop->gpu_last_ns = last_;
}

void StallSums::SetWindow(const WholeRunLoop& loop, const GpuWindow& gpu) {
  from_ = 0;
  to_ = UINT64_MAX;
  if (loop.loop_end_ns > loop.loop_start_ns) {
    from_ = loop.loop_start_ns;
    to_ = loop.loop_end_ns;
  }
  if (gpu.any) {
    from_ = std::max(from_, gpu.first_ns);
    to_ = std::min(to_, gpu.last_ns);
  }
}

void StallSums::Add(const format::DataStallRecord& r) {
  any_ = true;
  stall_ += ProratedNs(r.stall_ns, r.from_ns, r.to_ns, from_, to_);
}

void StallSums::Put(WholeRunLoop* loop) const {
  loop->data_stall = any_;
  loop->data_stall_ns = stall_;
}

}  // namespace dlprof::analysis
