// MapFaults (map_faults.h): per-thread perf_event_open major-fault events,
// read by the flusher and resolved against the process's file mappings.
#include "lib/core/map_faults.h"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "lib/core/clock.h"
#include "lib/core/map_faults_stream.h"
#include "lib/core/own_fd.h"
#include "lib/core/path_filter.h"
#include "lib/core/proc_dir.h"
#include "lib/core/raw_log.h"
#include "lib/core/raw_map.h"

namespace dlprof::core {

std::atomic<bool> g_map_faults_on{false};

namespace {

int32_t Gettid() { return static_cast<int32_t>(syscall(SYS_gettid)); }

// The calling thread has an event of its own (set by the thread itself).
__thread bool tls_covered __attribute__((tls_model("initial-exec"))) = false;

perf_event_attr FaultAttr(uint64_t config, bool switches, uint64_t more_sample) {
  perf_event_attr a;
  std::memset(&a, 0, sizeof(a));
  // The fields used here are all in version 5 of the structure (Linux 4.1):
  // a kernel older than the headers does not refuse a larger size it
  // does not know.
  a.size = PERF_ATTR_SIZE_VER5;
  a.type = PERF_TYPE_SOFTWARE;
  a.config = config;
  a.sample_period = 1;
  a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | more_sample;
  a.sample_id_all = 1;
  // User-space faults only: what perf_event_paranoid 2 allows everyone.
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  a.use_clockid = 1;
  a.clockid = CLOCK_MONOTONIC_RAW;  // the trace's clock
  a.context_switch = switches ? 1 : 0;
  return a;
}

int OpenEvent(int32_t tid, bool switches, uint64_t config = PERF_COUNT_SW_PAGE_FAULTS_MAJ,
              uint64_t more_sample = 0) {
  perf_event_attr a = FaultAttr(config, switches, more_sample);
  return static_cast<int>(syscall(SYS_perf_event_open, &a, tid, -1, -1,
                                  static_cast<unsigned long>(PERF_FLAG_FD_CLOEXEC)));
}

// Events are kept at descriptors from here up, out of the way of a program
// that expects the lowest free ones (as the tracer's own trace once was).
constexpr int kHighFd = 100;

// `fd` moved to kHighFd or above where the limit allows (close-on-exec).
int MoveHigh(int fd) {
  const int high = static_cast<int>(syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, kHighFd));
  if (high < 0) return fd;
  syscall(SYS_close, fd);
  return high;
}

// /proc/sys/kernel/perf_event_paranoid, or -99 when it cannot be read.
int Paranoid() {
  char buf[16];
  return ReadSmallFile("/proc/sys/kernel/perf_event_paranoid", buf, sizeof(buf)) > 0 ? atoi(buf)
                                                                                      : -99;
}

// Whether the process runs under a seccomp filter ("Seccomp: 2" in
// /proc/self/status), where a system call the filter refuses may kill the
// process (SECCOMP_RET_KILL: systemd's SystemCallFilter=) rather than fail.
bool UnderSeccompFilter() {
  char buf[4096];
  if (ReadSmallFile("/proc/self/status", buf, sizeof(buf)) <= 0) return false;
  const char* line = strstr(buf, "\nSeccomp:");
  return line != nullptr && atoi(line + strlen("\nSeccomp:")) == 2;
}

// Whether asking for a fault event could kill the process: under a seccomp
// filter the probe is made first in a child of ours (a copy, bound by the
// same filter; no exit signal, so the program's SIGCHLD never hears of it),
// and only a child that exited on its own says it is safe.
bool PerfProbeMayKill() {
  if (!UnderSeccompFilter()) return false;
  const long pid = syscall(SYS_clone, 0L, nullptr, nullptr, nullptr, 0L);
  if (pid == 0) {
    int fd = OpenEvent(0, true);
    if (fd < 0) fd = OpenEvent(0, false);
    syscall(SYS_exit_group, 0);
  }
  if (pid < 0) return true;
  int status = 0;
  while (syscall(SYS_wait4, pid, &status, __WCLONE, nullptr) < 0) {
    if (errno != EINTR) return true;
  }
  return !WIFEXITED(status);
}

}  // namespace

int OpenFaultEvent(int32_t tid, uint64_t config, bool switches, uint64_t more_sample) {
  const int fd = OpenEvent(tid, switches, config, more_sample);
  return fd >= 0 ? MoveHigh(fd) : fd;
}

namespace {
// read_bytes of an io accounting file, UINT64_MAX when it cannot be read.
uint64_t IoReadBytes(const char* path) {
  char buf[512];
  if (ReadSmallFile(path, buf, sizeof(buf)) <= 0) return UINT64_MAX;
  const char* at = strstr(buf, "\nread_bytes: ");
  return at != nullptr ? strtoull(at + 13, nullptr, 10) : UINT64_MAX;
}
}  // namespace

uint64_t ThreadReadBytes(int32_t tid) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/task/%d/io", tid);
  return IoReadBytes(path);
}

uint64_t ProcessReadBytes() { return IoReadBytes("/proc/self/io"); }

MapFaults& MapFaults::Get() {
  // Built on first use (the runtime's start), never destroyed: no static
  // initialiser of ours runs before the program's (reliability.static_init).
  alignas(MapFaults) static unsigned char storage[sizeof(MapFaults)];
  alignas(Stream) static unsigned char streams[sizeof(Stream) * kStreams];
  static MapFaults* self = [] {
    auto* m = new (storage) MapFaults();
    auto* s = reinterpret_cast<Stream*>(streams);
    for (int i = 0; i < kStreams; ++i) new (&s[i]) Stream();
    m->streams_ = s;
    return m;
  }();
  return *self;
}

void MapFaults::Decide(MapFaultsSetting setting, bool posix) {
  if (decided_) return;  // a forked child keeps its parent's
  decided_ = true;
  for (const char* name : {"PMIX_SERVER_TMPDIR", "OMPI_MCA_orte_top_session_dir"}) {
    const char* dir = getenv(name);
    if (dir != nullptr && dir[0] == '/') session_dirs_.emplace_back(dir);
  }
  const unsigned long page = getauxval(AT_PAGESZ);
  if (page != 0) page_ = page;
  if (!posix) {
    mode_ = FaultMode::kOff;
    description_ = "off; posix is not in DLPROF_TRACE";
    return;
  }
  if (setting == MapFaultsSetting::kOff) {
    mode_ = FaultMode::kOff;
    description_ = "off; DLPROF_MAP_FAULTS=off";
    return;
  }
  if (setting == MapFaultsSetting::kCounts) {
    mode_ = FaultMode::kCounts;
    description_ = "counts; DLPROF_MAP_FAULTS=counts";
    return;
  }
  if (PerfProbeMayKill()) {
    mode_ = FaultMode::kCounts;
    description_ = "counts; under a seccomp filter that kills on perf_event_open";
    return;
  }
  // One probe on this thread, closed at once: what every thread will ask.
  int fd = OpenEvent(0, true);
  if (fd >= 0) {
    syscall(SYS_close, fd);
    mode_ = FaultMode::kEvents;
    switches_ = true;
    description_ = "events; major faults and context switches of each thread (perf_event_open)";
    return;
  }
  const int with_switches = errno;
  fd = OpenEvent(0, false);
  if (fd >= 0) {
    syscall(SYS_close, fd);
    mode_ = FaultMode::kEvents;
    description_ = std::string("events; major faults of each thread (perf_event_open), untimed: "
                               "context switches refused (") + strerror(with_switches) + ")";
    return;
  }
  const int err = errno;
  mode_ = FaultMode::kCounts;
  description_ = std::string("counts; perf_event_open refused (") + strerror(err);
  const int paranoid = Paranoid();
  if (paranoid != -99) description_ += "; kernel.perf_event_paranoid " + std::to_string(paranoid);
  description_ += ")";
}

bool MapFaults::Open(int32_t tid, bool wanted) {
  if (tid <= 0 || tid == flusher_tid_.load(std::memory_order_relaxed) ||
      (!wanted && refused_.load(std::memory_order_relaxed))) {
    return false;
  }
  int err = 0;
  if (OpenOnce(tid, !wanted, &err)) return true;
  if (err == 0) return false;  // no room, or perf_event_open itself refused
  // Locked memory spent: the other threads would be refused too, and a
  // thread watched in case gives its buffer to one known to read (a few
  // tries: another process of the user may take what one gave back).
  refused_.store(true, std::memory_order_relaxed);
  for (int tries = 0; wanted && tries < 4 && EvictIdle(); ++tries) {
    err = 0;
    if (OpenOnce(tid, false, &err)) return true;
    if (err == 0) return false;
  }
  NoteUnwatched(tid, wanted, err);
  return false;
}

bool MapFaults::OpenOnce(int32_t tid, bool speculative, int* refused_errno) {
  Stream* s = nullptr;
  int index = -1;
  for (int i = 0; i < kStreams; ++i) {
    uint32_t expected = kFree;
    if (streams_[i].state.load(std::memory_order_relaxed) == kFree &&
        streams_[i].state.compare_exchange_strong(expected, kOpening, std::memory_order_acquire)) {
      s = &streams_[i];
      index = i;
      break;
    }
  }
  if (s == nullptr) return false;
  s->tid.store(tid, std::memory_order_release);
  // The thread and the flusher may both open it: the lower slot wins, and
  // the other waits until it is open (the caller goes on to fault on the
  // map as soon as this returns).
  for (int i = 0; i < index; ++i) {
    Stream& other = streams_[i];
    if (other.state.load(std::memory_order_acquire) == kFree ||
        other.tid.load(std::memory_order_acquire) != tid) {
      continue;
    }
    s->state.store(kFree, std::memory_order_release);
    for (int spin = 0; spin < 100000 && other.state.load(std::memory_order_acquire) == kOpening &&
                       other.tid.load(std::memory_order_acquire) == tid;
         ++spin) {
      syscall(SYS_sched_yield);
    }
    return Covers(tid);
  }
  bool ok = false;
  {
    OwnFdScope scope;  // fork waits: no child inherits it half set up
    const int saved = errno;
    const int fd = OpenFaultEvent(tid, PERF_COUNT_SW_PAGE_FAULTS_MAJ, switches_);
    if (fd >= 0) {
      const uint64_t bytes = (kDataPages + 1) * page_;
      void* ring = RawMmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      if (ring == MAP_FAILED) {
        // RLIMIT_MEMLOCK or perf_event_mlock_kb spent (Open).
        *refused_errno = errno != 0 ? errno : EPERM;
        syscall(SYS_close, fd);
      } else {
        s->fd = fd;
        s->id = EventId(fd);
        s->ring = static_cast<uint8_t*>(ring);
        s->block_start = 0;
        s->block_out = 0;
        s->block_ran = 0;
        s->waiting = false;
        s->mark = 0;
        s->call_ends.clear();
        s->call_bytes = 0;
        s->reader.store(false, std::memory_order_relaxed);
        s->inherited = false;
        s->call_reads = false;
        s->process_bytes = UINT64_MAX;
        s->exit_read_bytes.store(UINT64_MAX, std::memory_order_relaxed);
        s->last_file = 0;
        s->last_fault_ns = 0;
        s->mapped_file.store(0, std::memory_order_relaxed);
        s->mapped_ns.store(0, std::memory_order_relaxed);
        s->last_look_ns = NowNs();
        s->opened_ns = s->last_look_ns.load(std::memory_order_relaxed);
        s->gone = false;
        s->speculative = speculative;
        s->faulted.store(false, std::memory_order_relaxed);
        s->read_bytes = ThreadReadBytes(tid);
        s->read_bytes_known = s->read_bytes != UINT64_MAX;
        ok = true;
      }
    }
    errno = saved;
  }
  s->state.store(ok ? kOpen : kFree, std::memory_order_release);
  return ok;
}

void MapFaults::Close(Stream& s) {
  uint32_t open = kOpen;
  if (!s.state.compare_exchange_strong(open, kClosing, std::memory_order_acq_rel)) return;
  RawMunmap(s.ring, (kDataPages + 1) * page_);
  CloseWaits(s, page_);
  // A program may have closed it and got the number back for a file of its
  // own: that one is not ours to close.
  if (EventId(s.fd) == s.id) syscall(SYS_close, s.fd);
  s.ring = nullptr;
  s.fd = -1;
  s.state.store(kFree, std::memory_order_release);
}

bool MapFaults::InSessionDir(int fd) const {
  if (session_dirs_.empty() || fd < 0) return false;
  char link[32] = "/proc/self/fd/";
  char digits[16];
  int n = 0;
  for (unsigned v = static_cast<unsigned>(fd); n == 0 || v > 0; v /= 10) digits[n++] = '0' + v % 10;
  size_t at = strlen(link);
  while (n > 0) link[at++] = digits[--n];
  link[at] = '\0';
  char path[4096];
  const long len = syscall(SYS_readlinkat, AT_FDCWD, link, path, sizeof(path));
  if (len <= 0 || len >= static_cast<long>(sizeof(path))) return false;
  for (const std::string& dir : session_dirs_) {
    if (HasPathPrefix(path, static_cast<size_t>(len), dir)) return true;
  }
  return false;
}

bool MapFaults::OnFileMapped(uint32_t file, int fd) {
  if (mode_ == FaultMode::kOff || InSessionDir(fd)) return false;
  if (mode_ == FaultMode::kEvents) ProcessMaps().KeepEnded();  // before any fault is read
  const bool first = !g_map_faults_on.exchange(true, std::memory_order_acq_rel);
  if (mode_ != FaultMode::kEvents) return first;
  if (first) {
    // The process's threads so far, this one first: any of them may read
    // the map from now on.
    const int32_t self = Gettid();
    if (Open(self, true)) tls_covered = true;
    MarkReader(self, file);
    int32_t tids[kStreams];  // no allocation here, in a wrapper
    const int n = ListThreads(tids, kStreams);
    for (int i = 0; i < n && !refused_.load(std::memory_order_relaxed); ++i) {
      if (tids[i] != self && !Covers(tids[i])) Open(tids[i], false);  // (the flusher: refused)
    }
    return true;
  }
  // (Not from tls_covered alone: a thread watched in case may have given
  // its buffer away since: EvictIdle.)
  const int32_t tid = Gettid();
  tls_covered = Covers(tid) || Open(tid, true);
  MarkReader(tid, file);
  return false;
}

void MapFaults::MarkReader(int32_t tid, uint32_t file) {
  for (int i = 0; i < kStreams; ++i) {
    Stream& s = streams_[i];
    if (s.state.load(std::memory_order_acquire) == kOpen &&
        s.tid.load(std::memory_order_relaxed) == tid) {
      s.mapped_ns.store(NowNs(), std::memory_order_relaxed);
      s.mapped_file.store(file, std::memory_order_relaxed);
      s.reader.store(true, std::memory_order_relaxed);
      return;
    }
  }
}

void MapFaults::OnThreadEnding() {
  if (mode_ != FaultMode::kEvents || !g_map_faults_on.load(std::memory_order_acquire)) return;
  const int saved = errno;
  const int32_t tid = Gettid();
  for (int i = 0; i < kStreams; ++i) {
    Stream& s = streams_[i];
    if (s.state.load(std::memory_order_acquire) == kOpen &&
        s.tid.load(std::memory_order_relaxed) == tid) {
      uint64_t bytes;
      {
        OwnFdScope scope;
        bytes = ThreadReadBytes(tid);
      }
      s.exit_read_bytes.store(bytes, std::memory_order_release);
      break;
    }
  }
  errno = saved;
}

void MapFaults::OnThreadAttached(int32_t tid) {
  if (mode_ != FaultMode::kEvents || !g_map_faults_on.load(std::memory_order_acquire) ||
      tls_covered) {
    return;
  }
  if (Covers(tid) || Open(tid, true)) tls_covered = true;
}

bool MapFaults::Covers(int32_t tid) const {
  for (int i = 0; i < kStreams; ++i) {
    if (streams_[i].state.load(std::memory_order_acquire) == kOpen &&
        streams_[i].tid.load(std::memory_order_relaxed) == tid) {
      return true;
    }
  }
  return false;
}

bool MapFaults::CoversThisThread() const {
  if (tls_covered && evictions_.load(std::memory_order_relaxed) == 0) return true;
  if (mode_ != FaultMode::kEvents) return false;
  tls_covered = Covers(Gettid());
  return tls_covered;
}

void MapFaults::NoteCalls(int32_t tid, uint64_t read_bytes, const std::vector<uint64_t>& ends) {
  InRings busy(&in_rings_);
  for (int i = 0; i < kStreams; ++i) {
    Stream& s = streams_[i];
    if (s.state.load(std::memory_order_acquire) == kOpen &&
        s.tid.load(std::memory_order_relaxed) == tid) {
      s.call_bytes += read_bytes;
      if (read_bytes > 0) s.call_reads = true;
      s.call_ends.insert(s.call_ends.end(), ends.begin(), ends.end());
      // (A signal handler's calls are recorded when it returns.)
      if (!std::is_sorted(s.call_ends.begin(), s.call_ends.end())) {
        std::sort(s.call_ends.begin(), s.call_ends.end());
      }
      return;
    }
  }
}

bool MapFaults::Pending(bool* half) const {
  *half = false;
  if (mode_ != FaultMode::kEvents || !g_map_faults_on.load(std::memory_order_relaxed)) return false;
  InRings busy(&in_rings_);
  bool any = false;
  for (int i = 0; i < kStreams; ++i) {
    const Stream& s = streams_[i];
    if (s.state.load(std::memory_order_acquire) != kOpen) continue;
    auto* meta = reinterpret_cast<perf_event_mmap_page*>(s.ring);
    const uint64_t used = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE) - meta->data_tail;
    const uint64_t waits = WaitsPending(s);
    if (used > 0 || waits > 0) any = true;
    if (std::max(used, waits) * 2 >= kDataPages * page_) *half = true;
  }
  return any;
}

void MapFaults::MarkGone(const std::vector<int32_t>& tids, uint64_t listed_ns) {
  for (int i = 0; i < kStreams; ++i) {
    Stream& s = streams_[i];
    // A stream opened since the list was begun may be a thread started
    // since, which the list cannot hold (a pool's thread that opened its own
    // at its start: closed as gone, its faults were lost).
    if (s.state.load(std::memory_order_acquire) == kOpen && s.opened_ns < listed_ns &&
        !std::binary_search(tids.begin(), tids.end(), s.tid.load(std::memory_order_relaxed))) {
      s.gone = true;  // read what it left, then close
    }
  }
}

int MapFaults::ListThreads(int32_t* tids, int capacity) {
  int count = 0;
  {
    OwnFdScope scope;
    ForEachNumberedEntry("/proc/self/task", [&](int tid, int) {
      if (count < capacity) tids[count++] = tid;
    });
  }
  std::sort(tids, tids + count);
  return count;
}

void MapFaults::ScanThreads() {
  std::vector<int32_t> tids(kStreams);
  const uint64_t listed_ns = NowNs();
  tids.resize(static_cast<size_t>(ListThreads(tids.data(), kStreams)));
  if (tids.empty()) return;
  MarkGone(tids, listed_ns);
  for (int32_t tid : tids) {
    if (refused_.load(std::memory_order_relaxed)) break;
    if (!Covers(tid)) Open(tid, false);
  }
}

void MapFaults::AfterFork(int32_t tid) {
  // The descriptors are copies of the parent's threads' events, and their
  // buffers were not copied (the kernel maps them VM_DONTCOPY).
  for (int i = 0; i < kStreams; ++i) {
    Stream& s = streams_[i];
    if (s.state.load(std::memory_order_relaxed) == kOpen && EventId(s.fd) == s.id) {
      syscall(SYS_close, s.fd);
    }
    if (s.waits_ring != nullptr) {
      if (EventId(s.waits_fd) == s.waits_id) syscall(SYS_close, s.waits_fd);
      if (EventId(s.served_fd) == s.served_id) syscall(SYS_close, s.served_fd);
    }
    s.fd = -1;
    s.ring = nullptr;
    s.waits_ring = nullptr;  // (not copied either)
    CloseWaits(s, page_);
    s.state.store(kFree, std::memory_order_relaxed);
  }
  tls_covered = false;
  refused_.store(false, std::memory_order_relaxed);
  in_rings_.store(0, std::memory_order_relaxed);
  evictions_.store(0, std::memory_order_relaxed);
  // The parent's refusals are in its trace; its untracked maps as well.
  for (auto& u : unwatched_) u.store(0, std::memory_order_relaxed);
  unwatched_n_.store(0, std::memory_order_relaxed);
  unwatched_reported_ = 0;
  untracked_reported_ = ProcessMaps().not_tracked();
  noted_unwatched_ = noted_untracked_ = false;
  last_scan_ns_ = 0;
  const bool inherited = mode_ != FaultMode::kOff && ProcessMaps().AnyLive();
  g_map_faults_on.store(inherited, std::memory_order_release);
  if (inherited && mode_ == FaultMode::kEvents && Open(tid, true)) {
    tls_covered = true;
    for (int i = 0; i < kStreams; ++i) {
      Stream& s = streams_[i];
      if (s.state.load(std::memory_order_relaxed) == kOpen &&
          s.tid.load(std::memory_order_relaxed) == tid) {
        s.inherited = true;
      }
    }
  }
}

}  // namespace dlprof::core
