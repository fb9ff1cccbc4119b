// When a rank's processes had I/O outstanding, shared between them, for the
// data stall in the counters (DLPROF_KEEP; docs/FORMAT_BOUNDED.md, record
// 8). The data stall is the time the GPU is idle while the rank's I/O is
// outstanding (docs/ANALYSIS.md); its I/O is mostly its loader workers',
// and its GPU work the main process's, so no one process knows both. Each
// process's flusher marks here the I/O calls it drains; the flusher of a
// process with GPU work reads the marks back, one interval later, against
// its own GPU spans.
//
// The map is memory shared with the process's forked children (an
// anonymous MAP_SHARED mapping: no file, no descriptor held): a DataLoader's
// workers, forked, mark the map of the process that forked them, whatever
// rank their environment names. A process whose rank changes (MPI_Init)
// makes a map of its own, as does one that has GPU work where another
// process of its map measures already (trainers forked by one launcher):
// its own workers, forked later, share its new map.
//
// Workers started by exec (multiprocessing's `spawn`, and `forkserver`,
// Python 3.14's default) cannot reach an anonymous map. Once a process
// measures, its flusher also makes a map in a file of /dev/shm
// (shm_file.h) and hands its name to the children it execs
// (child_env.h, DLPROF_INHERITED_IO_MAP); one of the same rank maps it
// at its start instead of making its own, and so do the children it forks
// (a forkserver's). The measurer reads the two maps as one. A child exec'd
// before the file was made (before the GPU process measured) has a map of
// its own.
//
// Time is cut into bins of 2.048 us (2^11 ns, nearest-bin rounding of each
// call's start and end: the error is unbiased, under a microsecond a call
// end), 2^23 bins a lap (17.2 s), a 64-bit word per 32 bins:
//
//   word:  63                       32 31                        0
//         +---------------------------+---------------------------+
//         | lap (absolute bin >> 23)  | bins marked, bit i: bin i |
//         +---------------------------+---------------------------+
//
// A word of another lap is empty: a mark of a later lap takes the word over
// (compare-and-swap), a mark of an earlier one (a call drained over a lap
// late) is dropped. So nothing is ever cleared, and any process may read
// any stretch of the last lap. The marks are made and read on flushers
// only, never where events are recorded.
#ifndef DLPROF_LIB_CORE_RANK_IO_MAP_H_
#define DLPROF_LIB_CORE_RANK_IO_MAP_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "lib/core/shm_file.h"

namespace dlprof::core {

class RankIoMap {
 public:
  static constexpr unsigned kBinShift = 11;  // 2.048 us a bin
  static constexpr unsigned kLapShift = 23;  // bins a lap: 17.2 s
  static constexpr size_t kWords = size_t{1} << (kLapShift - 5);
  static constexpr uint64_t kLapNs = uint64_t{1} << (kLapShift + kBinShift);

  // The process's map (made on the first Join).
  static RankIoMap& Get();

  // Uses the map of `rank`: the one this process has where it joined it
  // for that rank, or the one it has from its parent across fork (whatever
  // its rank); else a new one. False where no memory could be mapped
  // (nothing is marked then). A map left is never unmapped: a child forked
  // meanwhile may hold it, and its pages are those marked only.
  bool Join(int32_t rank);
  // As Join, where this process was handed the file map `inherited` by the
  // process that exec'd it (null: none): on its first join, it uses that
  // map where its rank is `rank`.
  bool JoinFrom(int32_t rank, const char* inherited);
  bool joined() const { return shared_.load(std::memory_order_relaxed) != nullptr; }

  // This process has GPU work (CUPTI attached to it, or it drained GPU
  // work) and measures its rank's data stall from `now_ns` on: from then on
  // every process of the map marks the I/O it drains. A call that ended
  // before may be unmarked (drained before); one that ends after is marked
  // (drained after), so the marks are whole from measuring_since_ns() on.
  // Where another process measures the map already, this one takes a new
  // map and measures that.
  void StartMeasuring(uint64_t now_ns);
  // CUPTI attached, on the program's thread (the plugin, during CUDA's
  // start): measures the map from `now_ns` on where no other process does,
  // earlier than the flusher would notice it; else leaves the map of our
  // own to StartMeasuring, on the flusher.
  void GpuAttached(uint64_t now_ns);
  bool measuring() const { return measuring_since_ns() != 0; }
  uint64_t measuring_since_ns() const {
    const Shared* s = shared_.load(std::memory_order_acquire);
    return s == nullptr ? 0 : s->since_ns.load(std::memory_order_relaxed);
  }

  // On the flusher of a process that measures: makes the map's file for
  // the children it execs (once; where it cannot, they go without).
  void ShareWithExecChildren();
  // The process finishes: the file it made goes (its children's mappings
  // stay valid; a child exec'd later makes its own).
  void Leave();
  // The file map's name (empty: none); for tests.
  const char* file_path() const { return file_path_; }

  // Marks [start_ns, end_ns) as I/O outstanding (on the CLOCK_MONOTONIC_RAW
  // time base of the trace; a call longer than a lap marks its last lap).
  void Mark(uint64_t start_ns, uint64_t end_ns);

  // Of [from_ns, to_ns) (within the last lap), the time marked (`io_ns`),
  // and of it the time outside `busy` (sorted, disjoint spans): `stall_ns`.
  struct Measure {
    uint64_t io_ns = 0, stall_ns = 0;
  };
  Measure Read(uint64_t from_ns, uint64_t to_ns,
               const std::vector<std::pair<uint64_t, uint64_t>>& busy) const;

  // For tests: a map of its own, as a freshly started process has none.
  void ResetForTest();

 private:
  struct Shared {
    uint64_t magic;
    int32_t rank;                      // of the process that made it
    std::atomic<int32_t> measurer;     // the pid measuring it; 0: none yet
    std::atomic<uint64_t> since_ns;    // measuring from; 0: not
    uint64_t reserved[5];
    std::atomic<uint64_t> words[kWords];
  };
  static_assert(std::atomic<uint64_t>::is_always_lock_free &&
                    std::atomic<int32_t>::is_always_lock_free,
                "lock-free atomics in shared memory");
  static_assert(offsetof(Shared, words) == 64, "the words start at byte 64");

  // A new map of `rank`, the old one left mapped (Join says why).
  bool MakeNew(int32_t rank);
  bool TakeMeasuring(Shared* s, uint64_t now_ns);
  // The file map handed on to exec'd children, and its name.
  void SetFile(Shared* file, const char* path);

  // Set on the flusher (and where the sink is made: before it runs), read
  // on the program's thread too (GpuAttached).
  std::atomic<Shared*> shared_{nullptr};
  // The measurer's file map, marked by its exec'd children (null: none),
  // read with shared_. Where shared_ is a file itself (this process was
  // exec'd and measures the map it was handed), the two are the same.
  std::atomic<Shared*> file_{nullptr};
  char file_path_[kShmPathBytes] = {};
  bool file_made_ = false;  // file_ is this process's to remove
  bool file_tried_ = false;  // ShareWithExecChildren made it, or tried
  int32_t rank_ = 0;  // this process's rank when it joined
  int32_t pid_ = 0;   // the process that joined: another pid is a forked child
};

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_RANK_IO_MAP_H_
