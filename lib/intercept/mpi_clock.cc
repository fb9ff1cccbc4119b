// Clock offsets between hosts, measured through MPI at MPI_Init and MPI_Finalize.
//
// The reader puts hosts on one time base through their wall clocks, which
// NTP keeps about a millisecond apart, and a node whose wall clock is off by
// seconds would be off by seconds. An MPI job can do better: its ranks can
// talk. Right after MPI_Init and right before MPI_Finalize every rank learns
// which ranks share its clock domain (an allgather of a hash of its boot id
// and time namespace: those ranks read the same CLOCK_MONOTONIC_RAW); the
// lowest rank of each domain other than rank 0's then measures its clock
// against rank 0's by ping-pong, and keeps the round trip that was shortest:
//
//   measuring rank m                     rank 0
//   t0 = now  ----- ping ------------->
//             <---- T (rank 0's now) --
//   t1 = now
//
// At m's instant (t0 + t1) / 2 rank 0's clock read T, within +-(t1 - t0) / 2
// (whatever the split of the round trip between the two directions). Rank 0
// serves the measuring ranks one after another, kRoundTrips each: a job of
// a thousand hosts costs a thousand times a few round trips, well under a
// second; the other ranks only take part in the allgather. Each measurement
// becomes a clock_offset event in the measuring rank's trace (catalogue.h);
// the two of a run (init and finalize) also give the drift between the two
// clocks. The messages travel on a duplicate of MPI_COMM_WORLD, so they can
// never match a receive of the program's.
//
// Like everything the tracer asks MPI (mpiio.cc), this runs with the thread
// marked as in tracer code, and gives up quietly where a call fails.
// DLPROF_MPI_CLOCK=0 turns it off.
#include "lib/intercept/mpi_clock.h"

#include <dlfcn.h>

#include <cstdint>
#include <string>
#include <vector>

#include "lib/core/process_info.h"
#include "lib/core/real_symbol.h"
#include "lib/intercept/describe.h"
#include "lib/intercept/wrapper.h"

using dlprof::Event;
using dlprof::EventKind;

namespace {
using Handle = void*;  // MPI_Comm, MPI_Datatype: pointer-sized in both families (mpiio.cc)
}  // namespace

DLPROF_REAL_AS(PMPI_Comm_dup, int (*)(Handle, Handle*), nullptr)
DLPROF_REAL_AS(PMPI_Comm_free, int (*)(Handle*), nullptr)
DLPROF_REAL_AS(PMPI_Allgather, int (*)(const void*, int, Handle, void*, int, Handle, Handle),
               nullptr)
DLPROF_REAL_AS(PMPI_Send, int (*)(const void*, int, Handle, int, int, Handle), nullptr)
DLPROF_REAL_AS(PMPI_Recv, int (*)(void*, int, Handle, int, int, Handle, void*), nullptr)

namespace dlprof::intercept {
namespace {

constexpr int kRoundTrips = 10;
constexpr int kTag = 0x646c;  // on our own communicator: any value will do

// MPI_BYTE: Open MPI's is the address of ompi_mpi_byte, the MPICH family's
// the constant 0x4c00010d.
Handle ByteType() {
  void* ompi = dlsym(RTLD_DEFAULT, "ompi_mpi_byte");
  if (ompi == nullptr) ompi = core::FindLoadedSymbol("ompi_mpi_byte");  // mpi4py
  return ompi ? ompi : reinterpret_cast<Handle>(static_cast<intptr_t>(0x4c00010d));
}

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// The communicator the measurements use, made at MPI_Init, freed at
// MPI_Finalize (null when there is none), and this rank's place in it.
Handle g_comm = nullptr;
int g_rank = -1, g_size = 0;

struct Measurement {
  uint64_t local_ns = 0;  // the middle of the best round trip, on this clock
  uint64_t peer_ns = 0;   // rank 0's clock then
  uint64_t error_ns = 0;  // half that round trip
};

// One side of the ping-pong: measuring rank against rank 0.
bool MeasureAgainstRankZero(Handle comm, Handle byte, Measurement* best) {
  alignas(16) unsigned char status[64];  // larger than either family's MPI_Status
  best->error_ns = UINT64_MAX;
  for (int i = 0; i < kRoundTrips; ++i) {
    uint64_t peer = 0;
    const uint64_t t0 = core::NowNs();
    if (real_PMPI_Send(&peer, 0, byte, 0, kTag, comm) != 0 ||
        real_PMPI_Recv(&peer, sizeof(peer), byte, 0, kTag, comm, status) != 0) {
      return false;
    }
    const uint64_t t1 = core::NowNs();
    if ((t1 - t0) / 2 < best->error_ns) *best = {t0 + (t1 - t0) / 2, peer, (t1 - t0) / 2};
  }
  return true;
}

// Rank 0's side: answers each measuring rank's pings with its clock.
bool ServeRank(Handle comm, Handle byte, int rank) {
  alignas(16) unsigned char status[64];
  for (int i = 0; i < kRoundTrips; ++i) {
    uint64_t ping = 0;
    if (real_PMPI_Recv(&ping, 0, byte, rank, kTag, comm, status) != 0) return false;
    const uint64_t now = core::NowNs();
    if (real_PMPI_Send(&now, sizeof(now), byte, rank, kTag, comm) != 0) return false;
  }
  return true;
}

void RecordOffset(const Measurement& m, int phase) {
  Event e{};
  e.kind = static_cast<uint16_t>(EventKind::ClockOffset);
  e.start_ns = m.local_ns;
  e.aux = m.peer_ns;
  e.size = m.error_ns;
  e.fd = 0;  // the peer rank
  e.offset = kRoundTrips;
  e.ret = phase;
  RecordMade(e);
}

// Both phases: which ranks measure, then the ping-pongs. What this rank
// measured, if it measured.
struct Measured {
  Measurement m;
  bool valid = false;
};
Measured Measure(Handle comm, int rank, int size) {
  Measured measured;
  const Handle byte = ByteType();
  std::vector<uint64_t> domains(static_cast<size_t>(size));
  const uint64_t mine = Fnv1a(core::ClockDomainId());
  if (real_PMPI_Allgather(&mine, sizeof(mine), byte, domains.data(), sizeof(mine), byte, comm) !=
      0) {
    return measured;
  }
  // The measuring ranks: the lowest of each domain that is not rank 0's.
  std::vector<int> measuring;
  for (int r = 1; r < size; ++r) {
    bool first = domains[r] != domains[0];
    for (int q = 1; first && q < r; ++q) first = domains[q] != domains[r];
    if (first) measuring.push_back(r);
  }
  if (rank == 0) {
    for (int r : measuring) {
      if (!ServeRank(comm, byte, r)) break;
    }
    return measured;
  }
  for (int r : measuring) {
    if (r != rank) continue;
    Measurement m;
    if (MeasureAgainstRankZero(comm, byte, &m)) measured = {m, true};
  }
  return measured;
}

bool Enabled() { return Rt().config().mpi_clock; }

}  // namespace

void MeasureClocksAtInit(Handle world, int rank, int size) {
  if (!Enabled() || size < 2 || rank < 0 || rank >= size || g_comm != nullptr) return;
  if (real_PMPI_Comm_dup.get() == nullptr || real_PMPI_Allgather.get() == nullptr ||
      real_PMPI_Send.get() == nullptr || real_PMPI_Recv.get() == nullptr) {
    return;
  }
  Measured measured;
  {
    InTracerCode guard;
    Handle comm = nullptr;  // MPICH writes an int into its low half
    if (real_PMPI_Comm_dup(world, &comm) != 0) return;
    g_comm = comm;
    g_rank = rank;
    g_size = size;
    measured = Measure(g_comm, rank, size);
  }
  if (measured.valid) RecordOffset(measured.m, /*phase=*/0);
}

void MeasureClocksAtFinalize() {
  if (g_comm == nullptr) return;
  Measured measured;
  {
    InTracerCode guard;
    measured = Measure(g_comm, g_rank, g_size);
    if (real_PMPI_Comm_free.get() != nullptr) real_PMPI_Comm_free(&g_comm);
    g_comm = nullptr;
  }
  if (measured.valid) RecordOffset(measured.m, /*phase=*/1);
}

}  // namespace dlprof::intercept
