// LoaderPasses (loader_passes.h): the slowest samples by loader and pass.
#include "lib/analysis/meters/loader_passes.h"

#include <algorithm>
#include <map>
#include <utility>

namespace dlprof::analysis {

void LoaderPasses::MarkPass(unsigned loader, unsigned pass) {
  if (passes_.empty()) return;
  passes_.back().loader = loader;
  passes_.back().pass = pass;
}

std::pair<int64_t, uint64_t> LoaderPasses::Of(int32_t pid, uint64_t rank_pass) const {
  const size_t process = std::find(pids_.begin(), pids_.end(), pid) - pids_.begin();
  const uint64_t born = process < first_ns_.size() ? first_ns_[process] : UINT64_MAX;
  int64_t loader = -1;
  for (const Pass& p : passes_) {
    if (p.start > born) break;
    loader = p.loader;
  }
  // The rank's pass r began with the r-th loader_iter: the loader's latest
  // pass among the first r is the sample's.
  uint64_t pass = 0;
  for (size_t i = 0; loader >= 0 && i < passes_.size() && i < rank_pass; ++i) {
    if (passes_[i].loader == loader) pass = passes_[i].pass + 1;
  }
  if (pass == 0) return {-1, rank_pass};
  return {loader, pass};
}

std::vector<SlowSample> LoaderPasses::Slowest(const std::vector<SampleRecord>& samples,
                                              size_t kept, std::vector<LateBatch>* late) const {
  using Key = std::pair<int64_t, int64_t>;  // (loader, index)
  std::vector<std::pair<int64_t, uint64_t>> of;  // each sample's (loader, pass)
  of.reserve(samples.size());
  for (const SampleRecord& s : samples) of.push_back(Of(s.pid, s.pass));
  // An index slow in several passes of its loader (half its slowest time or
  // more, among the kept) is slow every time: its size, its content; one
  // slow in a single pass met a slow read.
  std::map<Key, uint64_t> slowest_of;  // its slowest time (samples come slowest first)
  std::map<Key, std::vector<uint64_t>> slow_passes;
  for (size_t i = 0; i < samples.size(); ++i) {
    const Key key(of[i].first, samples[i].index);
    const uint64_t slowest = slowest_of.emplace(key, samples[i].ns).first->second;
    std::vector<uint64_t>& p = slow_passes[key];
    if (samples[i].ns * 2 >= slowest && std::find(p.begin(), p.end(), of[i].second) == p.end()) {
      p.push_back(of[i].second);
    }
  }
  auto passes_slow = [&](const Key& key) -> uint64_t {
    auto p = slow_passes.find(key);
    return key.second >= 0 && p != slow_passes.end() ? p->second.size() : 1;
  };
  std::vector<SlowSample> out;
  for (size_t i = 0; i < samples.size() && out.size() < kept; ++i) {
    const SampleRecord& s = samples[i];
    out.push_back({s.index, s.ns, of[i].second, s.pid, s.files,
                   passes_slow(Key(of[i].first, s.index)), of[i].first});
  }
  for (LateBatch& b : *late) {
    const std::pair<int64_t, uint64_t> at = Of(b.slowest.pid, b.slowest.pass);
    b.slowest.pass = at.second;
    b.slowest.loader = at.first;
    b.slowest.slow_passes = passes_slow(Key(at.first, b.slowest.index));
  }
  return out;
}

}  // namespace dlprof::analysis
