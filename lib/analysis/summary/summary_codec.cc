// PartialSummary to bytes and back (summary_codec.h). One field list per
// struct (Fields below) serves both directions: a Writer appends each field,
// a Reader fills it, so the two cannot drift apart.
#include "lib/analysis/summary/summary_codec.h"

#include <array>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dlprof::analysis {
namespace {

// 02: a rank's steps carry their data stall. 03: the loop (a rank's loop
// and start-up, the job's unranked group) and what each process did. 04:
// the fine timeline of bytes (timeline_base_ns, fine_bin_ns, fine_bins).
// 05: a rank's loader workers (WorkerFigures). 06: the batch wait split by
// cause, per rank and step. 07: issue 48's figures (a process's exec, the
// workers' start-up, loops of steps, checkpoints). 08: reading through
// memory maps (MapReads). 09: the batch wait by loader (LoaderWait). 10:
// what held a late batch up, where not a sample (LateBatch::held_by). 11:
// the loops of a job without ranks, a process at a time (RankFigures::loops).
// 12: the workers' shut-down at the passes' ends (pass_end_shutdown_ns).
// 13: the start-up of persistent workers' later passes (resumed_startup_ns).
// 14: what of the input could not be decoded (Summary::input).
// 15: where each loader was made (LoaderWait::site). 16: a slow sample's
// loader (SlowSample::loader). 17: the loop's time with no event on disk
// (RankFigures::loop_unkept_ns). 18: what tells a step loop's wait is not
// measured (RankFigures::steps_unjoined_ns, other_threads_io_ns). 19: a
// file's reads that were copies out of it (IoStats::copied_out_ops). 20:
// what persistent workers would save of each loader
// (LoaderWait::persistent_save_ns). 21: what a persistent loader made anew
// each pass cost (RankFigures::rebuilt_persistent_ns, LoaderWait::rebuilt_ns).
// 22: the start-ups of a non-persistent loader made anew each pass
// (LoaderWait::made_anew_ns). 23: the tracer's dropped events
// (InputLoss::events_dropped). 24: the shut-downs that waited for a pass
// left early's fetches (RankFigures::pass_end_leftover_ns). 25: the
// workers that sent one pass's batches (WorkerFigures::workers_per_pass).
// 26: how each process ended (Summary::ProcessId::exit_status, end_signal).
// 27: the collective MPI-IO calls (PartialSummary::collective) and the
// waiting for other ranks taken out of the figures (collective_waits.h).
// 28: the small reads' time and the calls that moved nothing
// (AccessStats::small_time_ns, empty_ops). 29: a process's trace without
// its end marker (Summary::ProcessId::trace_unfinished); a loop of steps'
// time with a data map live (RankFigures::steps_map_live_ns). 30: the
// waits for pages read ahead (MapReads::waits).
constexpr char kMagic[8] = {'D', 'L', 'P', 'S', 'U', 'M', '3', '0'};

// The fields of each struct, in one order for both directions.
template <typename Io>
void Fields(Io& io, AccessStats& a) {
  io(a.ops), io(a.bytes), io(a.time_ns), io(a.small_ops), io(a.histogram), io(a.sizes);
  io(a.small_time_ns), io(a.empty_ops);
  io(a.consecutive), io(a.sequential), io(a.first), io(a.strides);
}
template <typename Io>
void Fields(Io& io, IoStats& s) {
  io(s.ops), io(s.time_ns), io(s.read), io(s.write), io(s.first_ns), io(s.last_ns);
  io(s.errors), io(s.mpi_collective_ops), io(s.mpi_collective_bytes);
  io(s.mpi_independent_ops), io(s.mpi_independent_bytes), io(s.opens), io(s.read_extent);
  io(s.maps), io(s.copied_out_ops), io(s.mpi_collective_wait_ns);
}
template <typename Io>
void Fields(Io& io, MapReads& m) {
  io(m.faults), io(m.bytes), io(m.time_ns), io(m.sequential), io(m.first), io(m.waits);
}
template <typename Io>
void Fields(Io& io, SlowOp& o) {
  io(o.dur_ns), io(o.start_ns), io(o.offset), io(o.size), io(o.pid), io(o.tid), io(o.name);
  io(o.path);
}
template <typename Io>
void Fields(Io& io, GpuDevice& g) {
  io(g.host), io(g.device), io(g.kernels), io(g.copies), io(g.memsets), io(g.copy_bytes);
  io(g.first_ns), io(g.last_ns), io(g.busy_ns), io(g.stall_ns);
}
template <typename Io>
void Fields(Io& io, StallShare& s) { io(s.what), io(s.stall_ns); }
template <typename Io>
void Fields(Io& io, RegionStats& r) {
  io(r.name), io(r.outside), io(r.instances), io(r.region_ns), io(r.io_ops), io(r.io_ns);
  io(r.read_ops), io(r.write_ops), io(r.read_bytes), io(r.write_bytes), io(r.io_busy_ns);
  io(r.stall_ns);
}
template <typename Io>
void Fields(Io& io, CallSiteStats& c) {
  io(c.site), io(c.ops), io(c.bytes), io(c.time_ns), io(c.read_bytes), io(c.write_bytes);
}
template <typename Io>
void Fields(Io& io, DomainMap& d) {
  io(d.key), io(d.host), io(d.traces), io(d.reference), io(d.method), io(d.shift_ns);
  io(d.drift_ppb), io(d.anchor_ns), io(d.error_ns), io(d.pairs), io(d.measurements);
}
template <typename Io>
void Fields(Io& io, Summary::ProcessId& p) {
  io(p.host), io(p.pid), io(p.ppid), io(p.rank), io(p.exe), io(p.forked), io(p.execed);
  io(p.batch_waits), io(p.batch_fetches), io(p.optimizer_steps), io(p.gpu_records);
  io(p.python_isolated), io(p.exit_seen), io(p.exit_status), io(p.end_signal);
  io(p.signal_sender), io(p.trace_unfinished);
}
template <typename Io>
void Fields(Io& io, RankStep& s) {
  io(s.step), io(s.start_ns), io(s.batch_wait_ns), io(s.batch_wait_gpu_idle_ns);
  io(s.straggler_loss_ns), io(s.data_stall_ns), io(s.reading_ns), io(s.preprocessing_ns);
  io(s.handover_ns), io(s.worker_startup_ns), io(s.pass), io(s.request), io(s.head_of_line_ns);
  io(s.collective_wait_ns);
}
template <typename Io>
void Fields(Io& io, SlowSample& s) {
  io(s.index), io(s.ns), io(s.pass), io(s.pid), io(s.files), io(s.slow_passes), io(s.loader);
}
template <typename Io>
void Fields(Io& io, LateBatch& b) {
  io(b.head_of_line_ns), io(b.slowest), io(b.held_by), io(b.held_by_ns);
}
template <typename Io>
void Fields(Io& io, LoaderWait& w) {
  io(w.loader), io(w.ns), io(w.batches), io(w.site), io(w.persistent_save_ns);
  io(w.rebuilt_ns), io(w.made_anew_ns);
}
template <typename Io>
void Fields(Io& io, WorkerFigures& w) {
  io(w.workers), io(w.fetches), io(w.fetch_ns), io(w.fetch_io_ns), io(w.read_ops);
  io(w.read_bytes), io(w.read_ns), io(w.busy_ns), io(w.workers_per_pass), io(w.level_ops);
  io(w.level_bytes), io(w.level_ns), io(w.cpus), io(w.fetch_cpu_ns), io(w.cpu_fetches);
}
template <typename Io>
void Fields(Io& io, CheckpointFigures& c) {
  io(c.saves), io(c.bytes), io(c.ns), io(c.blocking_ns), io(c.background_ns), io(c.write_ns);
  io(c.restore_ns), io(c.restore_bytes);
}
template <typename Io>
void Fields(Io& io, RankFigures& r) {
  io(r.collective_wait_ns), io(r.collective_wait_loop_ns), io(r.collective_late_ns);
  io(r.rank), io(r.host), io(r.processes), io(r.loop), io(r.loop_of_steps), io(r.loop_start_ns);
  io(r.steps_unjoined_ns), io(r.other_threads_io_ns), io(r.steps_map_live_ns);
  io(r.loop_end_ns), io(r.loops), io(r.loops_ns), io(r.loops_startup_ns), io(r.loop_unkept_ns);
  io(r.optimizer_steps), io(r.first_ns), io(r.startup_io_ns), io(r.startup_io_ops);
  io(r.startup_read_bytes), io(r.gpu_busy_before_loop_ns), io(r.devices), io(r.batch_wait_ns);
  io(r.batch_wait_gpu_idle_ns), io(r.reading_ns), io(r.preprocessing_ns), io(r.handover_ns);
  io(r.worker_startup_ns), io(r.pass_worker_startup_ns), io(r.startup_after_first_pass_ns);
  io(r.pass_end_shutdown_ns), io(r.pass_end_leftover_ns), io(r.resumed_startup_ns),
      io(r.loader_waits);
  io(r.rebuilt_persistent_ns);
  io(r.head_of_line_ns), io(r.out_of_order_wait_ns), io(r.passes), io(r.preprocessing_parts),
      io(r.slowest_samples);
  io(r.handover_in_worker_ns), io(r.handover_in_transit_ns), io(r.handover_rebuild_ns);
  io(r.handover_cause_ns);
  io(r.late_batches);
  io(r.startup_map_ns), io(r.startup_map_bytes), io(r.reading_faults_ns), io(r.handover_faults_ns);
  io(r.data_stall_ns), io(r.gpu), io(r.gpu_first_ns);
  io(r.gpu_last_ns), io(r.gpu_busy_ns), io(r.gpu_compute_ns), io(r.gpu_communication_ns);
  io(r.gpu_memory_ns), io(r.io_ns), io(r.io_ops), io(r.read_bytes), io(r.straggler_loss_ns);
  io(r.workers), io(r.checkpoint), io(r.steps), io(r.read_per_second), io(r.gpu_busy_per_second),
      io(r.waiting), io(r.communication);
}
template <typename Io>
void Fields(Io& io, RankDistribution& d) {
  io(d.total_ns), io(d.min_ns), io(d.median_ns), io(d.max_ns), io(d.top);
}
template <typename Io>
void Fields(Io& io, SlowestLoader& s) {
  io(s.step), io(s.rank), io(s.host), io(s.batch_wait_ns), io(s.median_batch_wait_ns);
}
template <typename Io>
void Fields(Io& io, HostRanks& h) {
  io(h.host), io(h.ranks), io(h.batch_wait_ns), io(h.data_stall_ns), io(h.straggler_loss_ns);
  io(h.gpu_busy_ns), io(h.gpu_compute_ns), io(h.gpu_communication_ns), io(h.gpu_memory_ns);
  io(h.gpu_idle_ns), io(h.io_ns), io(h.read_bytes);
}
template <typename Io>
void Fields(Io& io, RankJobFigures& j) {
  io(j.batch_wait), io(j.data_stall), io(j.straggler_loss), io(j.hosts), io(j.gpu);
  io(j.slowest_loader_per_step), io(j.slowest_loader_rank);
}
template <typename Io>
void Fields(Io& io, InputLoss& l) {
  io(l.inputs_without_traces), io(l.unreadable_traces), io(l.damaged_blocks), io(l.events_lost);
  io(l.uncounted_blocks), io(l.events_dropped);
}
template <typename Io>
void Fields(Io& io, Summary& s) {
  io(s.processes), io(s.events), io(s.nested_events), io(s.run_start_ns), io(s.run_end_ns);
  io(s.run), io(s.ranks), io(s.processes_stats), io(s.process_ids), io(s.files);
  io(s.slowest), io(s.per_second), io(s.gpu_busy_per_second), io(s.gpus), io(s.gpu_first_ns),
      io(s.gpu_last_ns);
  io(s.gpu_busy_ns), io(s.io_outstanding_ns), io(s.data_stall_ns), io(s.stall_by_file);
  io(s.stall_by_process), io(s.stall_files), io(s.stall_processes), io(s.regions);
  io(s.region_pick), io(s.sites_by_time), io(s.sites_by_bytes), io(s.sites_by_module);
  io(s.site_functions), io(s.site_modules), io(s.clock_domains), io(s.rank_figures);
  io(s.rank_job), io(s.has_unranked_group), io(s.unranked_group);
  io(s.timeline_base_ns), io(s.fine_bin_ns), io(s.fine_bins), io(s.input);
  io(s.collective_waits);
}
template <typename Io>
void Fields(Io& io, CollectiveWaitFigures& c) {
  io(c.calls), io(c.matched), io(c.wait_ns), io(c.loop_wait_ns), io(c.startup_wait_ns);
  io(c.not_kept), io(c.kept_per_process), io(c.late_ranks);
}
template <typename Io>
void Fields(Io& io, CollectiveCall& c) {
  io(c.entry_ns), io(c.dur_ns), io(c.k), io(c.comm_size), io(c.file), io(c.process), io(c.rank);
  io(c.group), io(c.counted);
}
template <typename Io>
void Fields(Io& io, CollectiveCalls& c) {
  io(c.files), io(c.processes), io(c.calls), io(c.not_kept), io(c.kept_per_process);
}
template <typename Io>
void Fields(Io& io, PartialSummary& p) {
  io(p.s), io(p.slowest_count), io(p.stall_by_file), io(p.stall_by_process), io(p.has_sites);
  io(p.sites_by_function), io(p.sites_by_module), io(p.collective);
}

class Writer {
 public:
  std::string out;
  template <typename T>
  void operator()(const T& v) { Put(v); }

 private:
  template <typename T>
  std::enable_if_t<std::is_arithmetic_v<T> || std::is_enum_v<T>> Put(const T& v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void Put(const std::string& s) {
    Put(uint64_t{s.size()});
    out += s;
  }
  template <typename A, typename B>
  void Put(const std::pair<A, B>& p) {
    Put(p.first);
    Put(p.second);
  }
  template <typename T, size_t N>
  void Put(const std::array<T, N>& a) {
    for (const T& v : a) Put(v);
  }
  template <typename T>
  void Put(const std::vector<T>& v) {
    Put(uint64_t{v.size()});
    for (const T& x : v) Put(x);
  }
  template <typename K, typename V>
  void Put(const std::map<K, V>& m) {
    Put(uint64_t{m.size()});
    for (const auto& [k, v] : m) Put(k), Put(v);
  }
  template <typename K, typename V>
  void Put(const std::unordered_map<K, V>& m) {
    Put(uint64_t{m.size()});
    for (const auto& [k, v] : m) Put(k), Put(v);
  }
  template <typename T>
  auto Put(const T& v) -> decltype(Fields(std::declval<Writer&>(), const_cast<T&>(v))) {
    Fields(*this, const_cast<T&>(v));  // Fields only reads through a Writer
  }
};

class Reader {
 public:
  explicit Reader(const std::string& bytes) : p_(bytes.data()), end_(p_ + bytes.size()) {}
  template <typename T>
  void operator()(T& v) { Get(&v); }
  bool done() const { return p_ == end_; }

 private:
  const char* Take(size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) throw std::runtime_error("summary bytes cut short");
    const char* at = p_;
    p_ += n;
    return at;
  }
  uint64_t Count() {
    uint64_t n;
    Get(&n);
    // Each element takes a byte at least: a forged count cannot make it allocate.
    if (n > static_cast<uint64_t>(end_ - p_)) throw std::runtime_error("summary bytes damaged");
    return n;
  }
  template <typename T>
  std::enable_if_t<std::is_arithmetic_v<T> || std::is_enum_v<T>> Get(T* v) {
    std::memcpy(v, Take(sizeof *v), sizeof *v);
  }
  void Get(std::string* s) {
    const uint64_t n = Count();
    s->assign(Take(n), n);
  }
  template <typename A, typename B>
  void Get(std::pair<A, B>* p) {
    Get(&p->first);
    Get(&p->second);
  }
  template <typename T, size_t N>
  void Get(std::array<T, N>* a) {
    for (T& v : *a) Get(&v);
  }
  template <typename T>
  void Get(std::vector<T>* v) {
    v->resize(Count());
    for (T& x : *v) Get(&x);
  }
  template <typename Map>
  void GetMap(Map* m) {
    m->clear();
    for (uint64_t n = Count(); n > 0; --n) {
      typename Map::key_type k;
      typename Map::mapped_type v;
      Get(&k);
      Get(&v);
      m->emplace(std::move(k), std::move(v));
    }
  }
  template <typename K, typename V>
  void Get(std::map<K, V>* m) { GetMap(m); }
  template <typename K, typename V>
  void Get(std::unordered_map<K, V>* m) { GetMap(m); }
  template <typename T>
  auto Get(T* v) -> decltype(Fields(std::declval<Reader&>(), *v)) {
    Fields(*this, *v);
  }

  const char* p_;
  const char* end_;
};

// The sizes of the structs the bytes hold: another build's layout (a field
// added or removed) shows as a different list.
std::string Layout() {
  const uint64_t sizes[] = {sizeof(PartialSummary), sizeof(Summary), sizeof(IoStats),
                            sizeof(AccessStats), sizeof(SlowOp), sizeof(GpuDevice),
                            sizeof(RegionStats), sizeof(CallSiteStats), sizeof(DomainMap),
                            sizeof(RankFigures), sizeof(RankJobFigures), sizeof(RankStep),
                            sizeof(HostRanks), sizeof(WorkerFigures)};
  return std::string(kMagic, sizeof kMagic) +
         std::string(reinterpret_cast<const char*>(sizes), sizeof sizes);
}

}  // namespace

std::string EncodePartialSummary(const PartialSummary& p) {
  Writer w;
  w.out = Layout();
  Fields(w, const_cast<PartialSummary&>(p));  // a Writer only reads
  return std::move(w.out);
}

bool DecodePartialSummary(const std::string& bytes, PartialSummary* out, std::string* error) {
  const std::string layout = Layout();
  if (bytes.compare(0, layout.size(), layout) != 0) {
    *error = bytes.compare(0, sizeof kMagic, std::string(kMagic, sizeof kMagic)) != 0
                 ? "not an encoded dlprof summary"
                 : "an encoded dlprof summary of another build (its layout differs)";
    return false;
  }
  try {
    const std::string body = bytes.substr(layout.size());  // the Reader points into it
    Reader r(body);
    PartialSummary p;
    Fields(r, p);
    if (!r.done()) {
      *error = "encoded dlprof summary: bytes left over";
      return false;
    }
    *out = std::move(p);
    return true;
  } catch (const std::runtime_error& e) {
    *error = std::string("encoded dlprof summary: ") + e.what();
    return false;
  }
}

}  // namespace dlprof::analysis
