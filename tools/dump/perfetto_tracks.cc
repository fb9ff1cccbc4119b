// The track tree of the Perfetto exporter (perfetto_tracks.h).
#include "tools/dump/perfetto_tracks.h"

#include <algorithm>

#include "lib/read/trace_catalog.h"
#include "tools/dump/output.h"
#include "tools/dump/perfetto_fields.h"

namespace dlprof::dump {
using namespace dlprof::read;
namespace {

namespace pf = perfetto_fields;

// Counters come after a process's threads and streams, in this order.
constexpr int32_t kReadRank = 1 << 30, kWriteRank = kReadRank + 1, kGpuBusyRank = kReadRank + 2;
// A process's app counters come after its bandwidth (the GPU busy counters
// are the host's).
constexpr int32_t kAppCounterRank = kWriteRank + 1;
// A rank's data stall comes after its processes, before its counters.
constexpr int32_t kStallRank = kReadRank - 1;

// What Perfetto names a process: the Chrome exporter's name less its pid,
// which Perfetto shows beside it ("cmd [rank R]"); but a later process of
// a host's pid, whose pid in the trace is not its own (DescribeProcesses),
// keeps it: "cmd [rank R] (pid 4711#2)".
std::string ProcessName(const TimelineProcesses& known, size_t process) {
  const std::string name = known.Name(process, false);
  if (known.earlier_same_pid[process] > 0) return name;
  return name.substr(0, name.rfind(" (pid "));
}

// Where a later process of a host's pid gets its pid in the trace: past
// every pid Linux gives (pid_max is at most 2^22).
constexpr int32_t kFirstUnusedPid = 1 << 22;

// The executable's file name: what Linux names a process's main thread.
std::string MainThreadName(const ProcessTrace& p) {
  std::string exe = p.info.exe.empty() ? p.info.cmdline.substr(0, p.info.cmdline.find('\0'))
                                       : p.info.exe;
  return exe.substr(exe.rfind('/') + 1);
}

}  // namespace

uint64_t PerfettoTracks::Describe(const Track& t) {
  const uint64_t uuid = next_uuid_++;
  track_machine_.push_back(t.machine);
  size_t packet = out_->BeginNested(pf::kTracePacket);
  if (t.machine != 0) out_->Varint(pf::kPacketMachineId, t.machine);
  size_t track = out_->BeginNested(pf::kTrackDescriptor);
  out_->Varint(pf::kTrackUuid, uuid);
  if (t.parent != 0) out_->Varint(pf::kTrackParentUuid, t.parent);
  out_->Bytes(pf::kTrackName, t.name);
  if (t.ordered_children) out_->Varint(pf::kTrackChildOrdering, pf::kChildOrderingExplicit);
  out_->Int(pf::kTrackSiblingOrderRank, t.sibling_rank);
  if (t.counter) out_->EndNested(out_->BeginNested(pf::kTrackCounter));
  if (t.process != nullptr) {
    const format::ProcessInfo& info = t.process->info;
    const size_t index = static_cast<size_t>(t.process - processes_.data());
    if (t.tid >= 0) {
      size_t thread = out_->BeginNested(pf::kTrackThread);
      out_->Int(pf::kThreadPid, pid_[index]);
      out_->Int(pf::kThreadTid, t.tid);
      if (t.tid == info.pid) out_->Bytes(pf::kThreadName, MainThreadName(*t.process));
      out_->EndNested(thread);
    } else {
      size_t process = out_->BeginNested(pf::kTrackProcess);
      out_->Int(pf::kProcessPid, pid_[index]);
      for (size_t at = 0; at < info.cmdline.size();) {
        size_t end = info.cmdline.find('\0', at);
        if (end == std::string::npos) end = info.cmdline.size();
        out_->Bytes(pf::kProcessCmdline, std::string_view(info.cmdline).substr(at, end - at));
        at = end + 1;
      }
      out_->Bytes(pf::kProcessName, ProcessName(known_, index));
      out_->EndNested(process);
    }
  }
  out_->EndNested(track);
  out_->EndNested(packet);
  return uuid;
}

// A machine: named after its host; its processes and threads in the order
// of their sibling_order_rank (set on the root descriptor, uuid 0).
void PerfettoTracks::DescribeMachine(uint32_t machine, const std::string& host) {
  size_t packet = out_->BeginNested(pf::kTracePacket);
  if (machine != 0) out_->Varint(pf::kPacketMachineId, machine);
  size_t system = out_->BeginNested(pf::kPacketSystemInfo);
  out_->Bytes(pf::kSystemInfoMachineName, host);
  out_->EndNested(system);
  out_->EndNested(packet);
  packet = out_->BeginNested(pf::kTracePacket);
  if (machine != 0) out_->Varint(pf::kPacketMachineId, machine);
  size_t track = out_->BeginNested(pf::kTrackDescriptor);
  out_->Varint(pf::kTrackUuid, 0);
  out_->Varint(pf::kTrackProcessOrdering, pf::kOrderingExplicit);
  out_->Varint(pf::kTrackThreadOrdering, pf::kOrderingExplicit);
  out_->EndNested(track);
  out_->EndNested(packet);
}

// The parents of a machine's processes (those of order[from...] on its
// host), in one ProcessTree packet written before their descriptors: the
// trace processor links each worker to its rank's process (parent_upid).
// Each entry's command line is the process's name alone (see below); the
// descriptor has the real one.
void PerfettoTracks::DescribeParents(uint32_t machine, const std::vector<size_t>& order,
                                     size_t from, const std::vector<size_t>& parent) {
  const std::string& host = processes_[order[from]].info.host;
  size_t packet = out_->BeginNested(pf::kTracePacket);
  if (machine != 0) out_->Varint(pf::kPacketMachineId, machine);
  size_t tree = out_->BeginNested(pf::kPacketProcessTree);
  for (size_t n = from; n < order.size() && processes_[order[n]].info.host == host; ++n) {
    const size_t i = order[n];
    size_t process = out_->BeginNested(pf::kTreeProcesses);
    out_->Int(pf::kTreeProcessPid, pid_[i]);
    // Only a parent that is in the job (by its pid in the trace): the others
    // are no process here.
    if (parent[i] != SIZE_MAX) out_->Int(pf::kTreeProcessPpid, pid_[parent[i]]);
    // The trace processor reads an entry only with a command line, names
    // the process after its first word, and then keeps that name over the
    // descriptor's: the one word is the descriptor's name ("cmd [rank R]").
    out_->Bytes(pf::kTreeProcessCmdline, ProcessName(known_, i));
    out_->EndNested(process);
  }
  out_->EndNested(tree);
  out_->EndNested(packet);
}

// Hosts by name, ranks by number, then a rank's processes: each by pid,
// followed by its loader workers (its children in the job) by pid; the
// processes without a rank after the ranks, likewise.
void PerfettoTracks::DescribeProcesses() {
  const std::string* host = nullptr;
  bool several_hosts = false;
  std::vector<size_t> order;
  // The images of a process that exec'ed share the first image's tracks, as
  // in the Chrome JSON.
  first_image_.assign(known_.first_image.begin(), known_.first_image.end());
  // The trace processor looks a process up by its pid on its machine (a
  // thread's too, by its descriptor's pid): a later process of a host's pid
  // (a pid reused, or pid namespaces) would be the earlier one, its threads
  // and slices in it. It gets a pid no process has; its name says its own.
  pid_.assign(processes_.size(), 0);
  int32_t unused_pid = kFirstUnusedPid;
  for (size_t i = 0; i < processes_.size(); ++i) {
    const bool later = known_.earlier_same_pid[i] > 0 && first_image_[i] == i;
    pid_[i] = later ? unused_pid++ : processes_[i].info.pid;
  }
  for (size_t i = 0; i < processes_.size(); ++i) pid_[i] = pid_[first_image_[i]];
  for (size_t i = 0; i < processes_.size(); ++i) {
    const ProcessTrace& p = processes_[i];
    if (!p.opened || first_image_[i] != i) continue;
    several_hosts |= host != nullptr && *host != p.info.host;
    host = &p.info.host;
    order.push_back(i);
  }
  // A loader worker (a process whose parent is a process of the job on its
  // host) goes right after its parent, in its parent's rank when it lost
  // its own (a worker whose environment was cleared). A process's rank is
  // its process's: that an image it exec'd gained, too.
  std::map<std::pair<std::string, int32_t>, size_t> by_pid;  // (host, pid)
  for (size_t i : order) {
    by_pid.emplace(std::make_pair(processes_[i].info.host, processes_[i].info.pid), i);
  }
  std::vector<size_t> parent(processes_.size(), SIZE_MAX);
  for (size_t i : order) {
    const format::ProcessInfo& info = processes_[i].info;
    auto it = by_pid.find({info.host, info.ppid});
    if (it != by_pid.end() && it->second != i) parent[i] = it->second;
  }
  auto rank_of = [&](size_t i) {
    const int32_t own = known_.rank[i];
    return own < 0 && parent[i] != SIZE_MAX ? known_.rank[parent[i]] : own;
  };
  std::vector<int32_t> rank(processes_.size(), -1);
  std::vector<int32_t> leader(processes_.size(), 0);  // the pid its group sorts by
  for (size_t i : order) {
    rank[i] = rank_of(i);
    const bool worker = parent[i] != SIZE_MAX && rank_of(parent[i]) == rank[i];
    leader[i] = worker ? processes_[parent[i]].info.pid : processes_[i].info.pid;
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const format::ProcessInfo &x = processes_[a].info, &y = processes_[b].info;
    const uint32_t rx = static_cast<uint32_t>(rank[a]), ry = static_cast<uint32_t>(rank[b]);
    const bool wx = leader[a] != x.pid, wy = leader[b] != y.pid;
    return std::tie(x.host, rx, leader[a], wx, x.pid, a) <
           std::tie(y.host, ry, leader[b], wy, y.pid, b);
  });
  process_track_.assign(processes_.size(), 0);
  host_track_.assign(processes_.size(), 0);
  process_counter_.assign(processes_.size(), 0);
  rank_counter_.assign(processes_.size(), -1);
  machine_.assign(processes_.size(), 0);
  uint64_t host_uuid = 0, rank_uuid = 0;
  int64_t rank_read = -1;
  int32_t in_host = 0, in_machine = 0;
  uint32_t machine = 0;
  for (size_t n = 0; n < order.size(); ++n) {
    const size_t i = order[n];
    const format::ProcessInfo& info = processes_[i].info;
    const format::ProcessInfo* prev = n ? &processes_[order[n - 1]].info : nullptr;
    if (prev == nullptr || prev->host != info.host) {
      machine = static_cast<uint32_t>(machine_hosts_.size());
      const std::string name = info.host.empty() ? "host" : info.host;
      machine_hosts_.push_back(name);
      DescribeMachine(machine, name);
      host_uuid = Describe({machine, 0, name, machine, true});
      in_host = in_machine = 0;
      prev = nullptr;
    }
    if (prev == nullptr) DescribeParents(machine, order, n, parent);
    // A worker without a rank of its own counts in its parent's.
    const int32_t r = rank[i];
    if (r >= 0 && (prev == nullptr || rank[order[n - 1]] != r)) {
      rank_uuid = Describe({machine, host_uuid, "rank " + std::to_string(r), in_host++, true});
      rank_track_[{info.host, r}] = rank_uuid;
      rank_read = static_cast<int64_t>(AddCounter(rank_uuid, "read (B/s)", kReadRank));
      AddCounter(rank_uuid, "write (B/s)", kWriteRank);
    }
    if (r >= 0) rank_counter_[i] = rank_read;
    process_track_[i] = Describe({machine, 0, known_.Name(i, several_hosts),
                                  ++in_machine, false, false, &processes_[i]});
    host_track_[i] = host_uuid;
    machine_[i] = machine;
    process_counter_[i] = AddCounter(process_track_[i], "read (B/s)", kReadRank);
    AddCounter(process_track_[i], "write (B/s)", kWriteRank);
  }
  for (size_t i = 0; i < processes_.size(); ++i) {
    const size_t first = first_image_[i];
    process_track_[i] = process_track_[first];
    host_track_[i] = host_track_[first];
    process_counter_[i] = process_counter_[first];
    rank_counter_[i] = rank_counter_[first];
    machine_[i] = machine_[first];
  }
}

PerfettoTracks::Lanes* PerfettoTracks::SliceTrack(uint32_t process, int64_t tid) {
  const uint32_t image = process;
  process = first_image_[process];  // one process's images share its threads
  if (last_key_ == std::make_pair(process, tid)) return last_track_;
  last_key_ = {process, tid};
  auto [it, added] = slice_tracks_.try_emplace({process, tid});
  last_track_ = &it->second;
  if (!added) return last_track_;
  std::string name;
  int64_t rank;
  const uint32_t machine = machine_[process];
  uint64_t uuid;
  if (tid >= kCufileStreamTrack) {
    // A CUstream that cuFile I/O was queued on: a plain track of the
    // process too, after its GPU streams.
    name = CufileStreamName(tid);
    rank = (int64_t{1} << 30) + ((tid - kCufileStreamTrack) & 0xfffff);
    uuid = Describe({machine, process_track_[process], name, rank});
    it->second = Lanes{machine, process_track_[process], name, rank, {Lane{uuid, {}}}};
  } else if (IsAsyncFileTrack(tid)) {
    // A file's asynchronous requests (its lanes: those in flight together).
    const auto file = static_cast<uint32_t>((tid - kAsyncFileTrack) / kAsyncLanes);
    auto path = processes_[image].strings.find(file);
    name = AsyncFileTrackName(path != processes_[image].strings.end() ? path->second : "", 0);
    rank = (int64_t{1} << 31) + (file & 0x3fffffff);  // after the cuFile streams
    uuid = Describe({machine, process_track_[process], name, rank});
    it->second = Lanes{machine, process_track_[process], name, rank, {Lane{uuid, {}}}};
  } else if (tid >= GpuStreamTrack(0, 0)) {
    // A plain track of the process: Perfetto shows it in the process's group.
    const int64_t device = (tid - GpuStreamTrack(0, 0)) >> 24, stream = tid & 0xffffff;
    name = "GPU " + std::to_string(device) + " stream " + std::to_string(stream);
    rank = (int64_t{1} << 29) + (device << 12) + (stream & 0xfff);  // after the threads
    uuid = Describe({machine, process_track_[process], name, rank});
    it->second = Lanes{machine, process_track_[process], name, rank, {Lane{uuid, {}}}};
  } else {
    name = "thread " + std::to_string(tid);
    rank = tid;
    uuid = Describe({machine, process_track_[process], name, rank, false, false,
                     &processes_[process], tid});
    // Its lanes hang under the thread track: Perfetto gives them its thread
    // and shows them beside it.
    it->second = Lanes{machine, uuid, name, rank, {Lane{uuid, {}}}};
  }
  return last_track_;
}

uint64_t PerfettoTracks::LaneOf(Lanes* track, uint64_t start_ns, uint64_t end_ns) {
  Lanes& set = *track;
  for (auto& lane : set.lanes) {
    // Its slices that ended by the start are over; the innermost one left
    // must hold the slice.
    while (!lane.open_ends.empty() && lane.open_ends.back() <= start_ns) lane.open_ends.pop_back();
    if (lane.open_ends.empty() || lane.open_ends.back() >= end_ns) {
      lane.open_ends.push_back(end_ns);
      return lane.uuid;
    }
  }
  const std::string name = set.name + " (overlap " + std::to_string(set.lanes.size()) + ")";
  const uint64_t uuid = Describe({set.machine, set.parent, name, set.sibling_rank});
  set.lanes.push_back({uuid, {end_ns}});
  return uuid;
}

uint64_t PerfettoTracks::StallTrack(const std::string& host, int32_t rank) {
  auto rank_track = rank_track_.find({host, rank});
  if (rank_track == rank_track_.end()) return 0;
  auto [it, added] = stall_track_.try_emplace({host, rank}, 0);
  if (added) {
    it->second = Describe({MachineOfTrack(rank_track->second), rank_track->second, "data stall",
                           kStallRank});
  }
  return it->second;
}

size_t PerfettoTracks::AddCounter(uint64_t parent, const std::string& name,
                                  int32_t sibling_rank, bool percent) {
  counters_.push_back({parent, name, sibling_rank, percent});
  return counters_.size() - 1;
}

size_t PerfettoTracks::GpuBusyIndex(uint32_t process, int32_t device) {
  // Asked once per kernel or copy: by (process, device) first, which spares
  // building the (host, device) key each time.
  const uint64_t key = (uint64_t{process} << 32) | static_cast<uint32_t>(device);
  auto cached = gpu_busy_by_process_.find(key);
  if (cached != gpu_busy_by_process_.end()) return cached->second;
  const ProcessTrace& p = processes_[process];
  auto [it, added] = gpu_busy_of_.try_emplace({p.info.host, device}, gpu_counters_.size());
  if (added) {
    gpu_counters_.push_back(AddCounter(host_track_[process],
                                       "GPU " + std::to_string(device) + " busy (%)",
                                       kGpuBusyRank + device, true));
  }
  gpu_busy_by_process_.emplace(key, it->second);
  return it->second;
}

size_t PerfettoTracks::AppCounter(uint32_t process, const std::string& name) {
  process = first_image_[process];  // one process's images share its tracks
  auto it = app_counters_.find({process, name});
  if (it != app_counters_.end()) return it->second;
  const size_t counter = AddCounter(process_track_[process], name, kAppCounterRank);
  app_counters_.emplace(std::make_pair(process, name), counter);
  return counter;
}

uint64_t PerfettoTracks::CounterTrack(size_t counter) {
  Counter& c = counters_[counter];
  if (c.uuid == 0) {
    c.uuid = Describe({MachineOfTrack(c.parent), c.parent, c.name, c.sibling_rank, false, true});
  }
  return c.uuid;
}

}  // namespace dlprof::dump
