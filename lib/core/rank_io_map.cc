// The rank's I/O map: marks and reads (rank_io_map.h).
#include "lib/core/rank_io_map.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "lib/core/child_env.h"
#include "lib/core/raw_map.h"

namespace dlprof::core {
namespace {

constexpr uint64_t kMagic = 0x314d4f4952504c44ull;  // "DLPRIOM1"
constexpr uint64_t kHalfBinNs = uint64_t{1} << (RankIoMap::kBinShift - 1);
constexpr unsigned kLapWordShift = RankIoMap::kLapShift - 5;  // words a lap: 2^18

// Constant-initialised: no constructor runs, in whatever order libraries
// start; a forked child has its parent's (the mapping is shared).
RankIoMap g_map;

// Anonymous and shared: a forked child shares it, nothing else can.
void* MapShared(size_t bytes) {
  void* p = RawMmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                    MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

// The bins [first, first + n) of a word (n from 1 to 32, first + n <= 32).
uint32_t BinMask(unsigned first, unsigned n) {
  return (n == 32 ? ~0u : (1u << n) - 1) << first;
}

}  // namespace

RankIoMap& RankIoMap::Get() { return g_map; }

bool RankIoMap::Join(int32_t rank) { return JoinFrom(rank, InheritedIoMap()); }

bool RankIoMap::JoinFrom(int32_t rank, const char* inherited) {
  const int32_t pid = static_cast<int32_t>(syscall(SYS_getpid));
  const bool joined = shared_.load(std::memory_order_relaxed) != nullptr;
  if (joined && pid != pid_) {
    // A forked child: its parent's map, whatever rank its environment gave
    // it (a parent's rank from MPI_Init is not in it). It hands its
    // parent's file on to its own exec'd children; the parent removes it.
    pid_ = pid;
    rank_ = rank;
    file_made_ = false;
    return true;
  }
  if (joined && rank == rank_) return true;
  pid_ = pid;
  if (!joined && inherited != nullptr && *inherited) {
    // Exec'd by a process of the rank that measures: its file map.
    auto* s = static_cast<Shared*>(OpenShmFile(inherited, sizeof(Shared)));
    if (s != nullptr && s->magic == kMagic && s->rank == rank) {
      rank_ = rank;
      shared_.store(s, std::memory_order_release);
      file_made_ = false;
      SetFile(s, inherited);  // its own exec'd children join it too
      return true;
    }
    if (s != nullptr) RawMunmap(s, sizeof(Shared));
  }
  return MakeNew(rank);
}

bool RankIoMap::MakeNew(int32_t rank) {
  auto* fresh = static_cast<Shared*>(MapShared(sizeof(Shared)));
  if (fresh == nullptr) return false;
  // The kernel gives zeroed pages: every word empty, nothing measuring.
  fresh->magic = kMagic;
  fresh->rank = rank;
  rank_ = rank;
  // The file of the map left is no longer ours to hand on.
  if (file_made_) RemoveShmFile(file_path_);
  SetFile(nullptr, "");
  file_tried_ = false;
  shared_.store(fresh, std::memory_order_release);
  return true;
}

void RankIoMap::SetFile(Shared* file, const char* path) {
  file_.store(file, std::memory_order_release);
  if (file == nullptr) file_made_ = false;
  snprintf(file_path_, sizeof(file_path_), "%s", path);
  SetChildIoMap(*path ? path : nullptr);
}

void RankIoMap::ShareWithExecChildren() {
  Shared* s = shared_.load(std::memory_order_relaxed);
  if (s == nullptr || file_tried_ || file_.load(std::memory_order_relaxed) != nullptr ||
      s->measurer.load(std::memory_order_relaxed) != pid_) {
    return;
  }
  file_tried_ = true;  // once: a failure is not retried each pass
  const ShmFile f = CreateShmFile("io", sizeof(Shared));
  auto* file = static_cast<Shared*>(f.map);
  if (file == nullptr) return;
  file->magic = kMagic;
  file->rank = rank_;
  file->measurer.store(pid_, std::memory_order_relaxed);
  file->since_ns.store(s->since_ns.load(std::memory_order_relaxed), std::memory_order_relaxed);
  SetFile(file, f.path);
  file_made_ = true;
}

void RankIoMap::Leave() {
  if (!file_made_ || pid_ != static_cast<int32_t>(syscall(SYS_getpid))) return;
  RemoveShmFile(file_path_);
  file_made_ = false;
}

// Whether `s` is measured by this process, after trying to make it so.
bool RankIoMap::TakeMeasuring(Shared* s, uint64_t now_ns) {
  // (Read first: a line the other processes read, left clean.)
  int32_t measurer = s->measurer.load(std::memory_order_relaxed);
  if (measurer == pid_) return true;
  if (measurer != 0 || !s->measurer.compare_exchange_strong(measurer, pid_)) return false;
  s->since_ns.store(now_ns, std::memory_order_relaxed);
  return true;
}

void RankIoMap::GpuAttached(uint64_t now_ns) {
  Shared* s = shared_.load(std::memory_order_acquire);
  if (s != nullptr) TakeMeasuring(s, now_ns);
}

void RankIoMap::StartMeasuring(uint64_t now_ns) {
  Shared* s = shared_.load(std::memory_order_relaxed);
  if (s == nullptr || TakeMeasuring(s, now_ns)) return;
  // Another process of the map has GPU work: a map of our own.
  if (!MakeNew(rank_)) {
    shared_.store(nullptr, std::memory_order_release);
    return;
  }
  TakeMeasuring(shared_.load(std::memory_order_relaxed), now_ns);
}

void RankIoMap::Mark(uint64_t start_ns, uint64_t end_ns) {
  Shared* s = shared_.load(std::memory_order_relaxed);
  if (s == nullptr) return;
  uint64_t bin = (start_ns + kHalfBinNs) >> kBinShift;
  const uint64_t end_bin = (end_ns + kHalfBinNs) >> kBinShift;
  if (end_bin <= bin) return;  // under a bin, rounded away: as often rounded up
  if (end_bin - bin > (uint64_t{1} << kLapShift)) bin = end_bin - (uint64_t{1} << kLapShift);
  while (bin < end_bin) {
    const uint64_t word_index = bin >> 5;
    const uint64_t next = std::min(end_bin, (word_index + 1) << 5);
    const uint32_t mask =
        BinMask(static_cast<unsigned>(bin & 31), static_cast<unsigned>(next - bin));
    const uint32_t lap = static_cast<uint32_t>(word_index >> kLapWordShift);
    std::atomic<uint64_t>& word = s->words[word_index & (kWords - 1)];
    uint64_t old = word.load(std::memory_order_relaxed);
    for (;;) {
      const uint32_t old_lap = static_cast<uint32_t>(old >> 32);
      uint64_t marked;
      if (old_lap == lap) {
        if ((static_cast<uint32_t>(old) & mask) == mask) break;  // marked already
        marked = old | mask;
      } else if (old_lap < lap) {
        marked = (uint64_t{lap} << 32) | mask;  // an earlier lap's word: ours now
      } else {
        break;  // a later lap has the word: this call is over a lap old
      }
      if (word.compare_exchange_weak(old, marked, std::memory_order_relaxed)) break;
    }
    bin = next;
  }
}

RankIoMap::Measure RankIoMap::Read(uint64_t from_ns, uint64_t to_ns,
                                   const std::vector<std::pair<uint64_t, uint64_t>>& busy) const {
  Measure m;
  const Shared* s = shared_.load(std::memory_order_relaxed);
  if (s == nullptr || to_ns <= from_ns) return m;
  const Shared* file = file_.load(std::memory_order_acquire);  // its exec'd children's
  if (file == s) file = nullptr;
  from_ns = std::max(from_ns, to_ns - std::min(to_ns, kLapNs));
  size_t b = 0;  // the first busy span that may overlap what comes
  // A stretch of marked bins, [start, end) in ns: clipped to the stretch
  // read, then its part outside the busy spans.
  auto add = [&](uint64_t start, uint64_t end) {
    start = std::max(start, from_ns);
    end = std::min(end, to_ns);
    if (end <= start) return;
    m.io_ns += end - start;
    while (b < busy.size() && busy[b].second <= start) ++b;
    uint64_t covered = 0;
    for (size_t k = b; k < busy.size() && busy[k].first < end; ++k) {
      covered += std::min(end, busy[k].second) - std::max(start, busy[k].first);
    }
    m.stall_ns += end - start - covered;
  };
  const uint64_t first_bin = from_ns >> kBinShift, last_bin = (to_ns - 1) >> kBinShift;
  uint64_t run_start = 0, run_end = 0;  // marked bins not yet added, [start, end)
  for (uint64_t w = first_bin >> 5; w <= last_bin >> 5; ++w) {
    // The bins of word `w`'s lap a map holds (none where it holds another's).
    auto marked = [w](const Shared* map) -> uint32_t {
      const uint64_t v = map->words[w & (kWords - 1)].load(std::memory_order_relaxed);
      return static_cast<uint32_t>(v >> 32) == static_cast<uint32_t>(w >> kLapWordShift)
                 ? static_cast<uint32_t>(v)
                 : 0;
    };
    uint32_t bits = marked(s) | (file != nullptr ? marked(file) : 0);
    if (w == first_bin >> 5) bits &= ~0u << (first_bin & 31);
    if (w == last_bin >> 5) bits &= BinMask(0, static_cast<unsigned>(last_bin & 31) + 1);
    while (bits != 0) {
      const unsigned low = static_cast<unsigned>(__builtin_ctz(bits));
      const uint32_t rest = ~(bits >> low);  // its first 0 ends the run
      const unsigned n = rest == 0 ? 32 - low : static_cast<unsigned>(__builtin_ctz(rest));
      const uint64_t start = (w << 5) + low;
      if (run_end == start && run_end != 0) {
        run_end = start + n;  // the run goes on from the word before
      } else {
        if (run_end != 0) add(run_start << kBinShift, run_end << kBinShift);
        run_start = start;
        run_end = start + n;
      }
      bits &= ~BinMask(low, n);
    }
  }
  if (run_end != 0) add(run_start << kBinShift, run_end << kBinShift);
  return m;
}

void RankIoMap::ResetForTest() {
  Leave();
  Shared* file = file_.load();
  if (Shared* s = shared_.load()) RawMunmap(s, sizeof(Shared));
  if (file != nullptr && file != shared_.load()) RawMunmap(file, sizeof(Shared));
  shared_.store(nullptr);
  SetFile(nullptr, "");
  file_tried_ = false;
  rank_ = pid_ = 0;
}

}  // namespace dlprof::core
