// Clock domains: fitting (monotonic, realtime) pairs, mapping domains onto one clock.
#include "lib/read/clock_domains.h"

#include <algorithm>
#include <map>

#include "lib/format/trace_file.h"

namespace dlprof::read {
namespace {

constexpr int64_t kPpb = 1000000000;
// Slopes between pairs closer than this are noise, not drift.
constexpr uint64_t kMinSlopeSpanNs = 100 * 1000 * 1000;
// A fitted drift beyond this is a wall-clock step, not a crystal's drift.
constexpr int64_t kMaxDriftPpb = 1000 * 1000;  // 1,000 ppm
// Header pairs taken per domain at most (evenly spread), so that a domain of
// thousands of processes costs a bounded fit.
constexpr size_t kMaxPairsPerDomain = 256;

int64_t Scaled(int64_t ppb, int64_t span) {
  return static_cast<int64_t>(static_cast<__int128>(ppb) * span / kPpb);
}

template <typename T>
T Median(std::vector<T> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

}  // namespace

uint64_t DomainMap::Map(uint64_t t) const {
  const int64_t span = static_cast<int64_t>(t - anchor_ns);
  return t + static_cast<uint64_t>(shift_ns + Scaled(drift_ppb, span));
}

ClockFit FitClock(std::vector<ClockPair> pairs) {
  ClockFit fit;
  if (pairs.empty()) return fit;
  std::sort(pairs.begin(), pairs.end(),
            [](const ClockPair& a, const ClockPair& b) { return a.mono_ns < b.mono_ns; });
  auto offset = [](const ClockPair& p) {
    return static_cast<int64_t>(p.real_ns - p.mono_ns);
  };
  // Drift: the median slope between pairs far enough apart (Theil-Sen).
  std::vector<int64_t> slopes;
  for (size_t i = 0; i < pairs.size(); ++i) {
    for (size_t j = i + 1; j < pairs.size(); ++j) {
      const uint64_t span = pairs[j].mono_ns - pairs[i].mono_ns;
      if (span < kMinSlopeSpanNs) continue;
      slopes.push_back(static_cast<int64_t>(
          static_cast<__int128>(offset(pairs[j]) - offset(pairs[i])) * kPpb /
          static_cast<int64_t>(span)));
    }
  }
  fit.drift_ppb = slopes.empty() ? 0 : Median(slopes);
  if (fit.drift_ppb > kMaxDriftPpb || fit.drift_ppb < -kMaxDriftPpb) fit.drift_ppb = 0;
  fit.anchor_ns = pairs[pairs.size() / 2].mono_ns;
  // Offset: the median of the pairs' offsets carried to the anchor.
  std::vector<int64_t> at_anchor;
  for (const ClockPair& p : pairs) {
    at_anchor.push_back(offset(p) -
                        Scaled(fit.drift_ppb, static_cast<int64_t>(p.mono_ns - fit.anchor_ns)));
  }
  fit.offset_ns = Median(at_anchor);
  // Error: how far the pairs lie from the fit, as the median of the
  // residuals' sizes plus how precisely the pairs were taken. A pair off by
  // a wall-clock step that the median set aside does not count.
  std::vector<uint64_t> residuals;
  uint64_t taken = 0;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const int64_t r = at_anchor[i] - fit.offset_ns;
    residuals.push_back(static_cast<uint64_t>(r < 0 ? -r : r));
    taken = std::max(taken, pairs[i].error_ns);
  }
  fit.error_ns = Median(residuals) + taken;
  return fit;
}

std::string DomainKey(const CatalogEntry& trace) {
  if (trace.info.boot_id.empty() && trace.info.time_ns.empty()) return "";
  return trace.info.boot_id + " " + trace.info.time_ns;
}

std::vector<ClockPair> FirstAndLastBlockPairs(const CatalogEntry& trace) {
  std::vector<ClockPair> pairs;
  format::TraceReader reader;
  std::string error;
  if (!reader.Open(trace.path, &error)) return pairs;
  const std::vector<format::BlockLocation> blocks = format::ListBlocks(&reader).blocks;
  if (blocks.empty()) return pairs;
  std::vector<size_t> which = {0};
  if (blocks.size() > 1) which.push_back(blocks.size() - 1);
  format::DecodedBlock block;
  for (size_t i : which) {
    if (reader.DecodeAt(blocks[i], &block, &error) && block.info.clock_mono_ns != 0) {
      pairs.push_back({block.info.clock_mono_ns, block.info.clock_real_ns, 0});
    }
  }
  return pairs;
}

std::vector<ClockOffset> MeasuredClockOffsets(const CatalogEntry& trace) {
  std::vector<ClockOffset> offsets;
  format::TraceReader reader;
  std::string error;
  if (!reader.Open(trace.path, &error)) return offsets;
  format::DecodedBlock block;
  for (const format::BlockLocation& where : format::ListBlocks(&reader).blocks) {
    if ((where.flags & kBlockFlagClockOffset) == 0 || !reader.DecodeAt(where, &block, &error)) {
      continue;
    }
    for (const Event& e : block.events) {
      if (e.kind != static_cast<uint16_t>(EventKind::ClockOffset)) continue;
      offsets.push_back({e.start_ns, e.aux, e.size, e.fd});
    }
  }
  return offsets;
}

OffsetFit FitOffsets(std::vector<ClockOffset> offsets) {
  OffsetFit fit;
  if (offsets.empty()) return fit;
  std::sort(offsets.begin(), offsets.end(),
            [](const ClockOffset& a, const ClockOffset& b) { return a.local_ns < b.local_ns; });
  const ClockOffset& first = offsets.front();
  const ClockOffset& last = offsets.back();
  auto shift = [](const ClockOffset& o) { return static_cast<int64_t>(o.peer_ns - o.local_ns); };
  fit.mapped = true;
  fit.measurements = offsets.size();
  fit.anchor_ns = first.local_ns;
  fit.shift_ns = shift(first);
  const uint64_t span = last.local_ns - first.local_ns;
  if (span >= kMinSlopeSpanNs) {
    fit.drift_ppb = static_cast<int64_t>(static_cast<__int128>(shift(last) - shift(first)) * kPpb /
                                         static_cast<int64_t>(span));
    if (fit.drift_ppb > kMaxDriftPpb || fit.drift_ppb < -kMaxDriftPpb) fit.drift_ppb = 0;
  }
  // The bound: the worst measurement's, and how far the others lie from
  // the line through the first and last.
  for (const ClockOffset& o : offsets) {
    const int64_t predicted =
        fit.shift_ns + Scaled(fit.drift_ppb, static_cast<int64_t>(o.local_ns - fit.anchor_ns));
    const int64_t off = shift(o) - predicted;
    fit.error_ns = std::max(fit.error_ns, o.error_ns + static_cast<uint64_t>(off < 0 ? -off : off));
  }
  return fit;
}

std::string ClockMethod(const std::vector<DomainMap>& domains) {
  bool mpi = false, wall = false;
  for (const DomainMap& d : domains) {
    mpi |= d.method == "mpi";
    wall |= d.method == "wall clock";
  }
  return mpi && wall ? "mpi and wall clock" : mpi ? "mpi" : "wall clock";
}

void MapCatalog(const ClockAlignment& clocks, TraceCatalog* catalog) {
  if (clocks.identity()) return;
  catalog->first_start_ns = UINT64_MAX;
  for (size_t i = 0; i < catalog->traces.size(); ++i) {
    CatalogEntry& t = catalog->traces[i];
    if (t.first_start_ns != UINT64_MAX) t.first_start_ns = clocks.of(i).Map(t.first_start_ns);
    catalog->first_start_ns = std::min(catalog->first_start_ns, t.first_start_ns);
  }
}

namespace {

// A domain's fit (its traces' `members`): its headers' pairs and its
// longest trace's blocks'; how many pairs it had into `pair_count`.
ClockFit FitDomain(const TraceCatalog& catalog, const std::vector<size_t>& m,
                   BlockPairReader block_pairs, size_t* pair_count) {
  std::vector<ClockPair> pairs;
  const size_t step = m.size() / kMaxPairsPerDomain + 1;
  size_t longest = m.front();
  for (size_t k = 0; k < m.size(); ++k) {
    const CatalogEntry& t = catalog.traces[m[k]];
    if (!t.opened) continue;
    if (k % step == 0) pairs.push_back({t.info.clock_mono_ns, t.info.clock_real_ns, 0});
    if (t.events > catalog.traces[longest].events) longest = m[k];
  }
  for (const ClockPair& p : block_pairs(catalog.traces[longest])) pairs.push_back(p);
  *pair_count = pairs.size();
  return FitClock(std::move(pairs));
}

// A domain's clock as its traces measured it against rank 0's through MPI.
OffsetFit FitAgainstRankZero(const TraceCatalog& catalog, const std::vector<size_t>& m,
                             ClockOffsetReader offsets) {
  std::vector<ClockOffset> points;
  for (size_t i : m) {
    const CatalogEntry& t = catalog.traces[i];
    if (!t.opened || (t.block_flags & kBlockFlagClockOffset) == 0) continue;
    for (const ClockOffset& o : offsets(t)) {
      if (o.peer_rank == 0) points.push_back(o);
    }
  }
  return FitOffsets(std::move(points));
}

}  // namespace

ClockAlignment AlignClocks(const TraceCatalog& catalog, BlockPairReader block_pairs,
                           ClockOffsetReader offsets) {
  ClockAlignment a;
  a.domain_of.assign(catalog.traces.size(), 0);
  std::map<std::string, size_t> index;
  std::vector<std::vector<size_t>> members;
  for (size_t i = 0; i < catalog.traces.size(); ++i) {
    const CatalogEntry& t = catalog.traces[i];
    // A trace whose header did not open (an empty file, not a trace, a
    // damaged header) says nothing of its clock: it is no domain, and can
    // be no reference (it would put every time on a made-up clock). It
    // holds no event either; it is put with the reference below.
    if (!t.opened) continue;
    const std::string key = DomainKey(t);
    auto [it, added] = index.try_emplace(key, a.domains.size());
    if (added) {
      a.domains.emplace_back();
      a.domains.back().key = key;
      a.domains.back().host = t.info.host;
      members.emplace_back();
    }
    a.domain_of[i] = it->second;
    ++a.domains[it->second].traces;
    members[it->second].push_back(i);
  }
  if (a.domains.size() <= 1) {
    if (!a.domains.empty()) {
      a.domains[0].reference = true;
      a.domains[0].method = "reference";
    }
    return a;
  }
  // The reference: the domain of the lowest rank, else of the first trace.
  size_t ref = 0;
  int32_t lowest = INT32_MAX;
  for (size_t i = 0; i < catalog.traces.size(); ++i) {
    const CatalogEntry& t = catalog.traces[i];
    if (t.opened && t.info.rank >= 0 && t.info.rank < lowest) {
      lowest = t.info.rank;
      ref = a.domain_of[i];
    }
  }
  // Each domain's fit: its headers' pairs and its longest trace's blocks'.
  std::vector<ClockFit> fits(a.domains.size());
  for (size_t d = 0; d < a.domains.size(); ++d) {
    fits[d] = FitDomain(catalog, members[d], block_pairs, &a.domains[d].pairs);
  }
  // The domains that measured their clock against the reference's through
  // MPI: the measurements are against rank 0, whose domain must be the
  // reference (it is, when rank 0's trace is there: the lowest rank).
  std::vector<OffsetFit> measured(a.domains.size());
  if (lowest == 0) {
    for (size_t d = 0; d < a.domains.size(); ++d) {
      if (d == ref) continue;
      measured[d] = FitAgainstRankZero(catalog, members[d], offsets);
    }
  }
  // Domain d onto the reference: by its measurements, else the same
  // wall-clock instant, to first order in the drifts.
  const ClockFit& r = fits[ref];
  for (size_t d = 0; d < a.domains.size(); ++d) {
    DomainMap& map = a.domains[d];
    map.reference = d == ref;
    if (map.reference) {
      map.method = "reference";
      continue;
    }
    if (measured[d].mapped) {
      map.method = "mpi";
      map.shift_ns = measured[d].shift_ns;
      map.drift_ppb = measured[d].drift_ppb;
      map.anchor_ns = measured[d].anchor_ns;
      map.error_ns = measured[d].error_ns;
      map.measurements = measured[d].measurements;
      continue;
    }
    map.method = "wall clock";
    const ClockFit& f = fits[d];
    map.anchor_ns = f.anchor_ns;
    const int64_t to_ref_anchor = static_cast<int64_t>(f.anchor_ns - r.anchor_ns) + f.offset_ns -
                                  r.offset_ns;
    map.shift_ns = f.offset_ns - r.offset_ns - Scaled(r.drift_ppb, to_ref_anchor);
    map.drift_ppb = f.drift_ppb - r.drift_ppb;
    map.error_ns = f.error_ns + r.error_ns;
  }
  // The reference first.
  if (ref != 0) {
    std::swap(a.domains[0], a.domains[ref]);
    for (size_t i = 0; i < a.domain_of.size(); ++i) {
      if (!catalog.traces[i].opened) continue;
      size_t& d = a.domain_of[i];
      d = d == 0 ? ref : d == ref ? 0 : d;
    }
  }
  return a;
}

}  // namespace dlprof::read
