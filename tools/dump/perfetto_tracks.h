// The track tree of the Perfetto exporter (perfetto_output.cc): a track per
// host, under it a track per rank, under that the rank's processes (its main
// process first, then its workers, by pid; processes without a rank sit
// under their host after the ranks), and under each process its threads,
// then its GPU streams; counter tracks beside them. Ordering is explicit
// (child_ordering EXPLICIT, sibling_order_rank). The images of a process
// that exec'ed are one process, named after its first. Names are those of the
// Chrome exporter: "cmd [rank R] (pid P)" (with "host: " before it when the
// job spans hosts), "thread T", "GPU D stream S".
//
// Each TrackDescriptor is written (as a packet into `out`) before the first
// event on its track: hosts, ranks and processes at the start, threads,
// streams and counters when first used.
#ifndef DLPROF_TOOLS_DUMP_PERFETTO_TRACKS_H_
#define DLPROF_TOOLS_DUMP_PERFETTO_TRACKS_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "lib/read/trace_set.h"
#include "tools/dump/kinds.h"
#include "tools/dump/perfetto_wire.h"

namespace dlprof::dump {
using namespace dlprof::read;

class PerfettoTracks {
 public:
  PerfettoTracks(const std::vector<ProcessTrace>& processes, ProtoWriter* out)
      : processes_(processes), out_(out) {}

  // Describes the hosts, ranks and processes.
  void DescribeProcesses();

  // The track of a thread (`tid`) or GPU stream (GpuStreamTrack) of a
  // process, described on first use, with its lanes (below).
  struct Lanes;
  Lanes* SliceTrack(uint32_t process, int64_t tid);
  // The lane of `track` a slice goes on: the track itself, or for a slice
  // that overlaps an open one without nesting in it (a timeline can only
  // nest), a sibling "NAME (overlap N)". The ENDs of the slices that ended
  // by `start_ns` must be written.
  uint64_t LaneOf(Lanes* track, uint64_t start_ns, uint64_t end_ns);

  // The "data stall" track of a rank (under its rank track, before its
  // counters), described on first use; 0 when the tree has no such rank.
  uint64_t StallTrack(const std::string& host, int32_t rank);

  // Counters, numbered from 0: the process's read counter (write: + 1), its
  // rank's (-1: none), and a GPU's busy counter on its host (numbered among
  // the GPUs from 0, for BusyTime).
  size_t process_counter(uint32_t process) const { return process_counter_[process]; }
  int64_t rank_counter(uint32_t process) const { return rank_counter_[process]; }
  size_t GpuBusyIndex(uint32_t process, int32_t device);
  size_t GpuCounter(size_t busy_index) const { return gpu_counters_[busy_index]; }
  // A counter's track, described on first use; whether its values are busy
  // nanoseconds per bin, shown as a percentage.
  uint64_t CounterTrack(size_t counter);
  bool CounterPercent(size_t counter) const { return counters_[counter].percent; }

 private:
  struct Counter {
    uint64_t parent;
    std::string name;
    int32_t sibling_rank;
    bool percent;
    uint64_t uuid = 0;  // 0 until described
  };
  struct Lane {
    uint64_t uuid;
    std::vector<uint64_t> open_ends;  // of its open slices, outermost first
  };
 public:
  struct Lanes {
    uint64_t parent;
    std::string name;
    int64_t sibling_rank;
    std::vector<Lane> lanes;
  };

 private:
  struct TrackKeyHash {
    size_t operator()(const std::pair<uint32_t, int64_t>& k) const {
      return std::hash<uint64_t>()(static_cast<uint64_t>(k.second) * 0x9e3779b97f4a7c15ull ^
                                   k.first);
    }
  };

  uint64_t Describe(uint64_t parent, const std::string& name, int64_t sibling_rank,
                    bool ordered_children, bool counter = false);
  size_t AddCounter(uint64_t parent, const std::string& name, int32_t sibling_rank,
                    bool percent = false);

  const std::vector<ProcessTrace>& processes_;
  ProtoWriter* const out_;
  uint64_t next_uuid_ = 1;
  std::vector<uint32_t> first_image_;                 // per process: exec'ed: one
  std::vector<uint64_t> process_track_, host_track_;  // per process
  std::vector<size_t> process_counter_;                // per process
  std::map<std::pair<std::string, int32_t>, uint64_t> rank_track_;   // (host, rank)
  std::map<std::pair<std::string, int32_t>, uint64_t> stall_track_;  // (host, rank)
  std::vector<int64_t> rank_counter_;                  // per process
  // By (process, tid); node-based: a track's Lanes stay where they are.
  std::unordered_map<std::pair<uint32_t, int64_t>, Lanes, TrackKeyHash> slice_tracks_;
  // The last track asked for: most events follow one of the same thread.
  std::pair<uint32_t, int64_t> last_key_{UINT32_MAX, 0};
  Lanes* last_track_ = nullptr;
  std::vector<Counter> counters_;
  std::map<std::tuple<std::string, int32_t>, size_t> gpu_busy_of_;  // (host, device)
  std::unordered_map<uint64_t, size_t> gpu_busy_by_process_;       // (process, device)
  std::vector<size_t> gpu_counters_;
};

}  // namespace dlprof::dump

#endif  // DLPROF_TOOLS_DUMP_PERFETTO_TRACKS_H_
