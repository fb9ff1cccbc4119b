// Clock domains of a job and their mapping onto one time base.
//
// Processes with the same boot id and time namespace read the same
// CLOCK_MONOTONIC_RAW (one domain) and need no alignment between them. Each
// other domain is mapped onto the reference domain's monotonic clock through
// the wall clock: every trace holds (monotonic, realtime) pairs taken
// together (its header's and one per block), and
//
//   real = mono + offset(mono),  offset(mono) = offset + drift * (mono - anchor)
//
// is fitted per domain: the drift (tens of microseconds per second between
// nodes) as the median of the slopes between pairs (Theil-Sen), so a step of
// the wall clock in under half of them does not bend it, and the offset as
// the median of the pairs' offsets at the anchor. A time t of domain d then
// lies on the reference clock at  t + offset_d(t) - offset_ref(...)  (the
// same wall-clock instant). The error bound is what the pairs themselves say
// (the spread of their offsets around the fit, and how precisely each was
// taken); how far the hosts' wall clocks disagree (NTP: about a millisecond)
// is not known from the traces, and the summary says so.
//
// MPI jobs do better: their ranks measure each domain's clock against rank
// 0's by ping-pong at MPI_Init and MPI_Finalize (lib/intercept/mpi_clock.cc)
// and write what they measured into their traces (clock_offset events). A
// domain with such measurements is mapped by them (two give the drift), and
// its wall clock does not matter; the others go through the wall clock.
//
// A job of one domain maps nothing: its times are as recorded.
#ifndef DLPROF_LIB_READ_CLOCK_DOMAINS_H_
#define DLPROF_LIB_READ_CLOCK_DOMAINS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "lib/read/trace_catalog.h"

namespace dlprof::read {

// A (monotonic, realtime) pair taken together; `error_ns` how precisely (0:
// unknown).
struct ClockPair {
  uint64_t mono_ns = 0;
  uint64_t real_ns = 0;
  uint64_t error_ns = 0;
};

// The mapping of one domain's monotonic clock onto the reference domain's.
struct DomainMap {
  std::string key;    // boot id and time namespace offsets ("" for traces that lack them)
  std::string host;   // of its first trace
  size_t traces = 0;
  bool reference = false;
  // How it was put on the reference's clock: "reference", "mpi" (offsets
  // measured through MPI), "wall clock".
  std::string method;
  // mapped(t) = t + shift_ns + drift_ppb * (t - anchor_ns) / 1e9
  int64_t shift_ns = 0;
  int64_t drift_ppb = 0;
  uint64_t anchor_ns = 0;
  uint64_t error_ns = 0;  // bound of the alignment, from the pairs
  size_t pairs = 0;       // pairs the fit used
  size_t measurements = 0;  // MPI measurements that mapped it (method "mpi")

  uint64_t Map(uint64_t t) const;
};

// The fit of `pairs` (one domain): real = mono + offset + drift * (mono - anchor).
struct ClockFit {
  int64_t offset_ns = 0;
  int64_t drift_ppb = 0;
  uint64_t anchor_ns = 0;
  uint64_t error_ns = 0;
};
ClockFit FitClock(std::vector<ClockPair> pairs);

// The domain of a trace: boot id and time namespace.
std::string DomainKey(const CatalogEntry& trace);

struct ClockAlignment {
  std::vector<DomainMap> domains;     // the reference first
  std::vector<size_t> domain_of;      // per catalog trace: index into domains
  bool identity() const { return domains.size() <= 1; }
  const DomainMap& of(size_t trace) const { return domains[domain_of[trace]]; }
};

// The pairs of a domain beyond the headers' come from the first and last
// blocks of its longest trace, read by `block_pairs(trace)`.
using BlockPairReader = std::vector<ClockPair> (*)(const CatalogEntry& trace);
std::vector<ClockPair> FirstAndLastBlockPairs(const CatalogEntry& trace);

// A measurement of a trace's clock against rank `peer_rank`'s, through MPI:
// at `local_ns` the peer's clock read `peer_ns`, within +-error_ns.
struct ClockOffset {
  uint64_t local_ns = 0;
  uint64_t peer_ns = 0;
  uint64_t error_ns = 0;
  int32_t peer_rank = 0;
};
// The measurements a trace holds (its clock_offset events), read by
// `offsets(trace)` for the traces whose blocks say they have some.
using ClockOffsetReader = std::vector<ClockOffset> (*)(const CatalogEntry& trace);
std::vector<ClockOffset> MeasuredClockOffsets(const CatalogEntry& trace);

// The mapping that measurements give (one: an offset; two or more: the
// first and last also give the drift). `mapped` false when there are none.
struct OffsetFit {
  bool mapped = false;
  int64_t shift_ns = 0;
  int64_t drift_ppb = 0;
  uint64_t anchor_ns = 0;
  uint64_t error_ns = 0;
  size_t measurements = 0;
};
OffsetFit FitOffsets(std::vector<ClockOffset> offsets);

// Aligns the domains of `catalog`. The reference is the domain of the
// lowest rank (else of the first trace).
ClockAlignment AlignClocks(const TraceCatalog& catalog,
                           BlockPairReader block_pairs = FirstAndLastBlockPairs,
                           ClockOffsetReader offsets = MeasuredClockOffsets);

// How the job's domains were aligned, in one word: "mpi" or "wall clock"
// when every domain but the reference went one way, else "mpi and wall clock".
std::string ClockMethod(const std::vector<DomainMap>& domains);

// Puts the catalog's first starts on the job's time base.
void MapCatalog(const ClockAlignment& clocks, TraceCatalog* catalog);

}  // namespace dlprof::read

#endif  // DLPROF_LIB_READ_CLOCK_DOMAINS_H_
