// KeptSpans (kept_spans.h): a bounded trace's stretches of events on disk.
#include "lib/analysis/meters/kept_spans.h"

#include <algorithm>
#include <map>
#include <utility>

#include "dlprof/format.h"
#include "lib/format/trace_layout.h"
#include "lib/read/kept_stretches.h"

namespace dlprof::analysis {

KeptSpans::KeptSpans(const std::vector<read::ProcessTrace>& processes)
    : traces_(processes.size()) {
  // A process image's segments share the stem of their paths (NAME.kN.dlprof).
  std::map<std::string, uint32_t> images;
  for (uint32_t i = 0; i < processes.size(); ++i) {
    const read::ProcessTrace& p = processes[i];
    Trace& t = traces_[i];
    t.segment = (p.info.flags & kHeaderFlagSegment) != 0;
    t.number = t.segment ? read::SegmentNumberOf(p.path) : 0;
    t.image = t.segment ? images.emplace(format::TraceStemOf(p.path), i).first->second : i;
  }
}

void KeptSpans::See(uint32_t process, uint64_t start, uint64_t end) {
  if (process >= traces_.size()) return;
  Trace& t = traces_[process];
  t.first = std::min(t.first, start);
  t.last = std::max(t.last, std::max(start, end));
}

uint64_t KeptSpans::Kept(const std::vector<uint32_t>& processes, uint64_t from,
                         uint64_t to) const {
  if (to <= from) return 0;
  std::vector<uint32_t> images;
  for (uint32_t p : processes) {
    if (p >= traces_.size() || !traces_[p].segment) return to - from;  // whole
    images.push_back(traces_[p].image);
  }
  if (images.empty()) return to - from;
  std::sort(images.begin(), images.end());
  images.erase(std::unique(images.begin(), images.end()), images.end());
  // Each image's segments by number; a number skipped ends a stretch.
  std::vector<std::pair<uint64_t, uint64_t>> stretches;
  for (uint32_t image : images) {
    std::vector<std::pair<uint32_t, const Trace*>> segments;
    for (const Trace& t : traces_) {
      if (t.segment && t.image == image) segments.emplace_back(t.number, &t);
    }
    std::sort(segments.begin(), segments.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    bool open = false;
    std::pair<uint64_t, uint64_t> s;
    for (size_t j = 0; j < segments.size(); ++j) {
      if (j > 0 && segments[j].first != segments[j - 1].first + 1 && open) {
        stretches.push_back(s);
        open = false;
      }
      const Trace& t = *segments[j].second;
      if (t.first == UINT64_MAX) continue;  // no event (an idle span, an end segment)
      s = open ? std::make_pair(std::min(s.first, t.first), std::max(s.second, t.last))
               : std::make_pair(t.first, t.last);
      open = true;
    }
    if (open) stretches.push_back(s);
  }
  // Their union inside [from, to).
  std::sort(stretches.begin(), stretches.end());
  uint64_t kept = 0, at = from;
  for (const auto& [a, b] : stretches) {
    const uint64_t lo = std::max(a, at), hi = std::min(b, to);
    if (hi > lo) kept += hi - lo;
    at = std::max(at, hi);
  }
  return kept;
}

}  // namespace dlprof::analysis
