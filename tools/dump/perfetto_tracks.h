// The tracks of the Perfetto exporter (perfetto_output.cc), in Perfetto's
// own model of processes, threads and machines, so that its trace processor
// fills its `process`, `thread` and `machine` tables (SQL by pid, the UI's
// process groups and search, thread_slice):
// - a machine per host (TracePacket.machine_id; the first host by name is
//   machine 0, whose packets carry none), named after the host (SystemInfo
//   machine_name): pids that collide across hosts stay apart;
// - a process track per process (ProcessDescriptor: pid, process_name
//   "cmd [rank R]", cmdline), in job order (host, rank, pid: explicit
//   process ordering on each machine's root descriptor); the images of a
//   process that exec'ed are one process, named after its first, of the
//   rank any of them has; a later process of a host's pid gets a pid no
//   process has, and its own in its name ("cmd (pid 10#2)");
// - under it a thread track per thread (ThreadDescriptor: pid, tid; the main
//   thread named after the executable), its GPU streams ("GPU D stream S"),
//   its bandwidth counters and its app counters (dlprof_counter, by name);
// - a global track per host, under it a track per rank holding what is the
//   rank's rather than a process's (its bandwidth, its "data stall"), and
//   the host's GPU busy counters.
// Perfetto nests no process under another track (a process track's parent
// is ignored), so the rank of a process is in its name and its place in the
// order, its loader workers right after it, and a ProcessTree packet per
// machine gives each worker its parent (the trace processor's
// process.parent_upid); the track names are the Chrome exporter's ("cmd [rank R] (pid P)",
// with "host: " before it when the job spans hosts; "thread T").
//
// Each TrackDescriptor is written (as a packet into `out`) before the first
// event on its track: machines, hosts, ranks and processes at the start,
// threads, streams and counters when first used. Track uuids are unique in
// the file, and each track is described on its host's machine.
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
#include "tools/dump/output.h"
#include "tools/dump/perfetto_wire.h"

namespace dlprof::dump {
using namespace dlprof::read;

class PerfettoTracks {
 public:
  PerfettoTracks(const std::vector<ProcessTrace>& processes, ProtoWriter* out)
      : processes_(processes), out_(out), known_(processes) {}

  // Describes the machines, hosts, ranks and processes.
  void DescribeProcesses();

  // The machine of a process (its host's); of a track.
  uint32_t machine_of(uint32_t process) const { return machine_[process]; }
  uint32_t MachineOfTrack(uint64_t uuid) const { return track_machine_[uuid]; }
  size_t machines() const { return machine_hosts_.size(); }

  // The track of a thread (`tid`), GPU stream (GpuStreamTrack) or cuFile
  // CUstream (CufileStreamTrack) of a process, described on first use, with
  // its lanes (below).
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
  // The counter of an app counter (dlprof_counter) of a process, by its
  // name: a counter track under the process's, after its bandwidth.
  size_t AppCounter(uint32_t process, const std::string& name);
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
    uint32_t machine;
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

  // A track of `machine`; a process track if `process` is given (its
  // index), a thread track of it if `tid` >= 0 too.
  struct Track {
    uint32_t machine;
    uint64_t parent;
    const std::string& name;
    int64_t sibling_rank;
    bool ordered_children = false;
    bool counter = false;
    const ProcessTrace* process = nullptr;
    int64_t tid = -1;
  };
  uint64_t Describe(const Track& t);
  void DescribeMachine(uint32_t machine, const std::string& host);
  void DescribeParents(uint32_t machine, const std::vector<size_t>& order, size_t from,
                       const std::vector<size_t>& parent);
  size_t AddCounter(uint64_t parent, const std::string& name, int32_t sibling_rank,
                    bool percent = false);

  const std::vector<ProcessTrace>& processes_;
  ProtoWriter* const out_;
  const TimelineProcesses known_;  // per process: first image, rank, earlier same pids
  // Per process, its pid in the trace: its own, but for a later process of a
  // host's pid (DescribeProcesses).
  std::vector<int32_t> pid_;
  uint64_t next_uuid_ = 1;
  std::vector<uint32_t> first_image_;                 // per process: exec'ed: one
  std::vector<uint32_t> machine_;                     // per process
  std::vector<std::string> machine_hosts_;            // per machine
  std::vector<uint32_t> track_machine_{0};            // per uuid
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
  std::map<std::pair<uint32_t, std::string>, size_t> app_counters_;  // (first image, name)
};

}  // namespace dlprof::dump

#endif  // DLPROF_TOOLS_DUMP_PERFETTO_TRACKS_H_
