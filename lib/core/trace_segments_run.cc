// The run's bound on a bounded trace: a live process deletes the ended
// processes' segments that lie before its horizon (trace_segments_run.h).
//
// Everything here goes through system calls, not the C library: the
// library's open, read and readdir are the calls this tracer interposes,
// and the tracer's own looks at files are not the program's. Each
// descriptor is ours for a moment only, in an OwnFdScope.
#include "lib/core/trace_segments_run.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "dlprof/format.h"
#include "lib/core/clock.h"
#include "lib/core/own_fd.h"
#include "lib/core/trace_sink.h"
#include "lib/format/block_codec.h"
#include "lib/format/counters.h"
#include "lib/format/crc32c.h"
#include "lib/format/trace_file.h"
#include "lib/format/trace_layout.h"

namespace dlprof::core {
namespace {

constexpr char kRingsSuffix[] = ".rings";  // the rings sidecar beside a segment (sidecar.h)
constexpr char kAsideSuffix[] = ".tmp";    // a file written aside, before its rename
// HOST_DIR/.ended/DUE.STEM_NAME: a process of the run that ended cleanly
// and may still have segments a sweep deletes (NoteEnded). The sweeps list
// this directory, not the host's: their cost follows the processes not yet
// settled (those that ended within about DURATION), not every process the
// run ever had.
constexpr char kEndedDir[] = "/.ended";
constexpr size_t kDueDigits = 16;  // a note's name: DUE (hex ns), '.', STEM_NAME

// What a header says that decides whether its file is the run's and on
// this clock.
struct Header {
  std::vector<uint8_t> bytes;  // the whole header, as read
  int32_t pid = 0;
  int32_t rank = -1;
  uint32_t flags = 0;
  std::string host, run_id, boot_id, time_ns, kernel_start, pid_ns;
};

bool ParseHeader(std::vector<uint8_t> bytes, Header* h) {
  FileHeader fixed;
  if (bytes.size() < sizeof(fixed)) return false;
  std::memcpy(&fixed, bytes.data(), sizeof(fixed));
  if (std::memcmp(fixed.magic, kFileMagic, sizeof(kFileMagic)) != 0 ||
      fixed.header_size != bytes.size()) {
    return false;
  }
  FileHeader zeroed = fixed;
  zeroed.header_crc = 0;
  std::vector<uint8_t> check = bytes;
  std::memcpy(check.data(), &zeroed, sizeof(zeroed));
  if (format::Crc32c(check.data(), check.size()) != fixed.header_crc) return false;
  std::string exe, cmdline, parent_run_id, cpus, clock, faults;
  std::string* fields[] = {&h->host,         &exe,        &cmdline,      &h->run_id,
                           &h->boot_id,      &h->time_ns, &h->kernel_start, &parent_run_id,
                           &cpus,            &clock,      &faults,       &h->pid_ns};
  size_t pos = sizeof(fixed);
  for (std::string* f : fields) {
    uint32_t n;
    if (pos + 4 > bytes.size()) break;  // an older writer's: the later strings empty
    std::memcpy(&n, bytes.data() + pos, 4);
    pos += 4;
    if (n > bytes.size() - pos) return false;
    f->assign(reinterpret_cast<const char*>(bytes.data() + pos), n);
    pos += n;
  }
  h->pid = fixed.pid;
  h->rank = fixed.rank;
  h->flags = fixed.flags;
  h->bytes = std::move(bytes);
  return true;
}

bool ReadAt(int fd, uint64_t at, void* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    const long r = syscall(SYS_pread64, fd, static_cast<char*>(buf) + got, n - got, at + got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    got += static_cast<size_t>(r);
  }
  return true;
}

// One of our descriptors on `path`, read-only; -1 where it cannot be opened.
// Moved high at once: the program's opens do not wait for a directory's
// listing or a segment's scan (own_fd.h).
int OpenRead(const std::string& path, int flags = 0) {
  const int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, path.c_str(),
                                          O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | flags));
  return fd >= 0 ? MoveOwnFdHigh(fd) : fd;
}

bool ReadHeader(int fd, uint64_t size, Header* h) {
  FileHeader fixed;
  if (size < sizeof(fixed) || !ReadAt(fd, 0, &fixed, sizeof(fixed)) ||
      fixed.header_size < sizeof(fixed) || fixed.header_size > kMaxHeaderBytes ||
      fixed.header_size > size) {
    return false;
  }
  std::vector<uint8_t> bytes(fixed.header_size);
  return ReadAt(fd, 0, bytes.data(), bytes.size()) && ParseHeader(std::move(bytes), h);
}

// Whether the process `h` names is running: /proc/PID/stat is of a process
// that started when it did (field 22). A pid reused, or one of another pid
// namespace, names another process, or none.
bool Running(const Header& h) {
  if (h.kernel_start.empty()) return true;  // an older writer's: cannot tell
  char buf[1024];
  long n;
  {
    OwnFdScope scope;
    const int fd = OpenRead("/proc/" + std::to_string(h.pid) + "/stat");
    if (fd < 0) return errno != ENOENT && errno != ESRCH;
    n = syscall(SYS_read, fd, buf, sizeof(buf) - 1);
    syscall(SYS_close, fd);
  }
  if (n <= 0) return n < 0 ? errno != ESRCH : false;
  buf[n] = '\0';
  const char* p = std::strrchr(buf, ')');  // the command may hold spaces and ')'
  if (p == nullptr) return true;
  for (int field = 2; field < 22 && p != nullptr; ++field) p = std::strchr(p + 1, ' ');
  if (p == nullptr) return true;
  const char* end = std::strchr(p + 1, ' ');
  const std::string start(p + 1, end != nullptr ? end : p + 1 + std::strlen(p + 1));
  return start == h.kernel_start;
}

// A segment read from its block headers alone.
struct SegmentScan {
  uint32_t n = 0;  // its number: STEM.kN.dlprof (0: STEM.dlprof)
  std::string path;
  bool read = false;      // header and every block header whole, to the file's end
  bool gone = false;      // (read with `own`) a process of its run and clock that is gone
  Header header;
  uint32_t last_flags = 0;  // its last block's
  uint64_t first_ns = UINT64_MAX, last_ns = 0;  // its events' span (MAX/0: none)
  bool events() const { return first_ns != UINT64_MAX; }
};

// Whether `h` is a segment's header of the run and clock of `own`, and of its
// pid namespace: a process of another (a container of its own on this host)
// is not in this one's /proc, so whether it ended cannot be told here.
bool SameRunAndClock(const Header& h, const Header& own) {
  return (h.flags & kHeaderFlagSegment) != 0 && h.run_id == own.run_id && h.host == own.host &&
         h.boot_id == own.boot_id && h.time_ns == own.time_ns && h.pid_ns == own.pid_ns;
}

// Reads segment `s`; with `own`, only as far as its header where it is not
// of an ended process of that run and clock (most of what a directory
// holds, the running processes' segments, then costs a header's read).
void Scan(SegmentScan* s, const Header* own = nullptr) {
  OwnFdScope scope;
  const int fd = OpenRead(s->path);
  if (fd < 0) return;
  struct stat st;
  uint64_t at = 0, size = 0;
  bool whole = syscall(SYS_fstat, fd, &st) == 0 && S_ISREG(st.st_mode);
  if (whole) size = static_cast<uint64_t>(st.st_size);
  whole = whole && ReadHeader(fd, size, &s->header);
  if (whole) at = s->header.bytes.size();
  if (whole && own != nullptr) {
    s->gone = SameRunAndClock(s->header, *own) && !Running(s->header);
    whole = s->gone;  // else not read on: left alone
  }
  while (whole && at < size) {
    BlockHeader b;
    whole = at + sizeof(b) <= size && ReadAt(fd, at, &b, sizeof(b)) && b.magic == kBlockMagic &&
            format::Crc32c(&b, offsetof(BlockHeader, header_crc)) == b.header_crc &&
            b.compressed_size <= size - at - sizeof(b);
    if (!whole) break;
    at += sizeof(b) + b.compressed_size;
    s->last_flags = b.flags;
    if (b.event_count > 0) {
      s->first_ns = std::min(s->first_ns, b.first_start_ns);
      s->last_ns = std::max(s->last_ns, b.last_end_ns);
    }
  }
  syscall(SYS_close, fd);
  s->read = whole;
}

// The windows kept whole ([from, to]) that the counters file at `path`
// records (docs/FORMAT_BOUNDED.md, keep records). False where it cannot be
// read to its end: then nothing of the process is deleted.
bool KeptWindows(const std::string& path, std::vector<std::pair<uint64_t, uint64_t>>* windows) {
  OwnFdScope scope;
  const int fd = OpenRead(path);
  if (fd < 0) return false;
  struct stat st;
  Header h;
  bool ok = syscall(SYS_fstat, fd, &st) == 0 && ReadHeader(fd, st.st_size, &h);
  const uint64_t size = ok ? static_cast<uint64_t>(st.st_size) : 0;
  uint64_t at = ok ? h.bytes.size() : 0;
  std::vector<uint8_t> payload;
  while (ok && at + sizeof(format::CounterRecordHeader) <= size) {
    format::CounterRecordHeader r;
    ok = ReadAt(fd, at, &r, sizeof(r)) && r.magic == format::kCounterMagic &&
         r.payload_bytes <= format::kMaxCounterPayload;
    if (!ok) break;
    at += sizeof(r);
    if (r.payload_bytes > size - at) break;  // a torn last record
    if (r.type == format::kCounterKeep) {
      payload.resize(r.payload_bytes);
      ok = ReadAt(fd, at, payload.data(), payload.size());
      uint64_t v[3] = {};
      size_t p = 0;
      for (uint64_t& x : v) {
        for (int shift = 0; ok && shift < 64; shift += 7) {
          ok = p < payload.size();
          if (!ok) break;
          x |= uint64_t(payload[p] & 0x7f) << shift;
          if ((payload[p++] & 0x80) == 0) break;
        }
      }
      if (ok) windows->emplace_back(v[1], v[2]);  // at_ns, from_ns, to_ns
    }
    at += r.payload_bytes;
  }
  syscall(SYS_close, fd);
  return ok;
}

// Writes `bytes` at `path` whole: aside first (PATH.PID.tmp), then renamed
// into place, so that a reader never finds it half written, and two
// processes that write the same bytes at once leave them once.
bool WriteAside(const std::string& path, const void* bytes, size_t size) {
  const std::string aside = path + "." + std::to_string(getpid()) + kAsideSuffix;
  bool ok;
  {
    OwnFdScope scope;
    const int fd = static_cast<int>(
        syscall(SYS_openat, AT_FDCWD, aside.c_str(),
                O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fd < 0) return false;
    size_t done = 0;
    while (done < size) {
      const long w = syscall(SYS_write, fd, static_cast<const char*>(bytes) + done, size - done);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) break;
      done += static_cast<size_t>(w);
    }
    ok = done == size;
    syscall(SYS_close, fd);
  }
  ok = ok && syscall(SYS_renameat, AT_FDCWD, aside.c_str(), AT_FDCWD, path.c_str()) == 0;
  if (!ok) syscall(SYS_unlink, aside.c_str());
  return ok;
}

// The empty segment that stands for an ended process once its segments
// with events are gone: its header and a final block with no event, so
// that readers find its counters (by its stem) and take it as ended
// cleanly. Two processes that make it at once make the same bytes.
bool WriteEndSegment(const std::string& path, const Header& h) {
  format::BlockEncoder encoder;
  format::BlockInfo info;
  info.rank = h.rank;
  encoder.Begin(info);
  std::vector<uint8_t> raw, block;
  encoder.Finish(&raw);
  format::BlockFramer framer(1);
  if (!framer.Frame(raw, 0, kBlockFlagFinal, encoder.span(), &block, &encoder.cuts())) {
    return false;
  }
  std::vector<uint8_t> bytes = h.bytes;
  bytes.insert(bytes.end(), block.begin(), block.end());
  return WriteAside(path, bytes.data(), bytes.size());
}

// The names in `dir`; false where it cannot be listed.
bool ListNames(const std::string& dir, std::vector<std::string>* names) {
  OwnFdScope scope;
  const int fd = OpenRead(dir, O_DIRECTORY);
  if (fd < 0) return false;
  alignas(8) char buf[16384];
  for (long n; (n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0;) {
    for (long at = 0; at < n;) {
      const auto* d = reinterpret_cast<const struct dirent64*>(buf + at);
      names->emplace_back(d->d_name);
      at += d->d_reclen;
    }
  }
  syscall(SYS_close, fd);
  return true;
}

using Windows = std::vector<std::pair<uint64_t, uint64_t>>;

// The windows this process kept whole, and those its parents had when they
// forked it (KeepRunWindow). Never freed: the flusher may run at exit.
Windows* RunWindows() {
  static auto* windows = new Windows;
  return windows;
}

// The window of the run's latest `dlprof keep` request (RUN_DIR/dlprof.keep's
// time, on the wall clock, put on this one): what the processes of the run
// keep once they notice it, within a second.
bool RequestWindow(const std::string& run_dir, uint64_t keep_ns,
                   std::pair<uint64_t, uint64_t>* window) {
  struct stat st;
  const std::string path = run_dir + "/" + TraceSink::kKeepRequestName;
  if (syscall(SYS_newfstatat, AT_FDCWD, path.c_str(), &st, 0) != 0) return false;
  struct timespec real;
  clock_gettime(CLOCK_REALTIME, &real);
  const int64_t offset = (int64_t(real.tv_sec) * 1000000000 + real.tv_nsec) - int64_t(NowNs());
  const int64_t at = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec - offset;
  const int64_t notice_ns = 1000000000;
  if (at < 0) return false;
  *window = {uint64_t(at) - std::min<uint64_t>(uint64_t(at), keep_ns),
             uint64_t(at) + notice_ns + keep_ns};
  return true;
}

bool EndsWith(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// Whether segment i of `segs` holds events of a window kept whole, or is
// the one before the first that does where that one begins after the
// window's start: what the process itself kept (TraceSink::KeepWindow).
bool Pinned(const std::vector<SegmentScan>& segs, size_t i, const Windows& windows) {
  auto holds = [&](size_t k, const std::pair<uint64_t, uint64_t>& w) {
    return segs[k].events() && segs[k].last_ns >= w.first && segs[k].first_ns <= w.second;
  };
  for (const auto& w : windows) {
    if (holds(i, w)) return true;
    if (i + 1 < segs.size() && holds(i + 1, w) && segs[i + 1].first_ns > w.first) return true;
  }
  return false;
}

// Segment n's number in the name of `path`, of stem `stem` (STEM.kN.dlprof;
// 0: STEM.dlprof).
uint32_t SegmentNumberOf(const std::string& path, const std::string& stem) {
  if (path.size() <= stem.size() + std::strlen(format::kTraceSuffix)) return 0;
  return static_cast<uint32_t>(std::strtoul(path.c_str() + stem.size() + 2, nullptr, 10));
}

bool IsFile(const std::string& path) {
  struct stat st;
  return syscall(SYS_newfstatat, AT_FDCWD, path.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
         S_ISREG(st.st_mode);
}

// The segment numbers an ended process's note (NoteEnded) lists; false
// where it cannot be read (another sweep removed it: settled).
bool ReadNote(const std::string& path, std::vector<uint32_t>* numbers) {
  char buf[4096];
  long n;
  {
    OwnFdScope scope;
    const int fd = OpenRead(path);
    if (fd < 0) return false;
    n = syscall(SYS_read, fd, buf, sizeof(buf) - 1);
    syscall(SYS_close, fd);
  }
  if (n <= 0 || buf[n - 1] != '\n') return false;  // (always whole: renamed into place)
  buf[n] = '\0';
  for (char* p = buf; *p != '\0' && *p != '\n';) {
    char* end;
    numbers->push_back(static_cast<uint32_t>(std::strtoul(p, &end, 10)));
    if (end == p) return false;
    p = end + (*end == ' ');
  }
  return !numbers->empty();
}

// One sweep over the ended processes of a host directory.
struct StemSweep {
  const Header& own;
  std::string run_dir;  // DLPROF_DIR/<run>
  uint64_t horizon_ns, keep_ns;
  int deleted = 0;

  // Deletes what it may of the ended process of `stem`, whose segments at
  // its end were `numbers`; returns whether nothing more will ever be done
  // to it (its note can go).
  bool Sweep(const std::string& stem, std::vector<uint32_t> numbers) {
    // Its segments on disk: those it left, less those deleted since, and
    // the end segment a sweep put after them.
    std::sort(numbers.begin(), numbers.end());
    numbers.push_back(numbers.back() + 1);
    std::vector<SegmentScan> segs;
    bool rings = false;
    for (size_t i = 0; i < numbers.size(); ++i) {
      if (i > 0 && numbers[i] == numbers[i - 1]) continue;
      SegmentScan s;
      s.n = numbers[i];
      s.path = SegmentPath(stem, s.n);
      if (!IsFile(s.path)) continue;
      rings = rings || IsFile(s.path + kRingsSuffix);
      segs.push_back(std::move(s));
    }
    if (segs.empty()) return true;  // (its files removed by hand)
    SegmentScan& newest = segs.back();
    Scan(&newest, &own);
    // Not known gone: running yet (an exec'd process's first image), of
    // another pid namespace, or unreadable for now. Looked at again.
    if (!newest.gone) return false;
    // Gone with a rings sidecar (killed before it removed it) or without a
    // clean end: its segments stay whole, as a killed process's.
    if (rings || !newest.read || (newest.last_flags & kBlockFlagFinal) == 0) return true;
    for (size_t i = 0; i + 1 < segs.size(); ++i) Scan(&segs[i]);
    auto before = [&](const SegmentScan& s) {
      return s.read && (!s.events() || s.last_ns < horizon_ns);
    };
    if (std::none_of(segs.begin(), segs.end(), [&](const SegmentScan& s) {
          return before(s) && (&s != &newest || s.events());
        })) {
      return segs.size() == 1 && !newest.events();  // its end segment alone
    }
    Windows windows = *RunWindows();
    if (std::pair<uint64_t, uint64_t> asked; RequestWindow(run_dir, keep_ns, &asked)) {
      windows.push_back(asked);
    }
    if (!KeptWindows(stem + format::kCountersSuffix, &windows)) return false;
    bool settled = true;
    for (size_t i = 0; i < segs.size(); ++i) {
      SegmentScan& s = segs[i];
      const bool pinned = Pinned(segs, i, windows);
      bool go = before(s) && !pinned;
      // The newest with events goes once an empty one stands for it.
      if (go && &s == &newest) {
        go = newest.events() && WriteEndSegment(SegmentPath(stem, newest.n + 1), newest.header);
      }
      if (go && (syscall(SYS_unlink, s.path.c_str()) == 0 || errno == ENOENT)) {
        ++deleted;  // (ENOENT: another process of the run deleted it first)
      } else if (!(before(s) && pinned) && !(&s == &newest && !s.events())) {
        // Within the horizon yet, or not deleted: looked at again. (What is
        // left once all is past the horizon, the end segment and the kept
        // windows' segments, stays for good: a window is never added
        // before a horizon already passed.)
        settled = false;
      }
    }
    return settled;
  }
};

}  // namespace

std::string SegmentPath(const std::string& stem, uint32_t n) {
  if (n == 0) return stem + format::kTraceSuffix;
  return stem + ".k" + std::to_string(n) + format::kTraceSuffix;
}

void KeepRunWindow(uint64_t from_ns, uint64_t to_ns) {
  Windows* windows = RunWindows();
  if (windows->size() < 64) windows->emplace_back(from_ns, to_ns);
}

void NoteEnded(const std::vector<std::string>& segment_paths, uint64_t due_ns) {
  if (segment_paths.empty()) return;
  const std::string& last = segment_paths.back();
  const std::string stem = format::TraceStemOf(last);
  const std::string ended_dir = last.substr(0, last.rfind('/')) + kEndedDir;
  std::string numbers;
  for (const std::string& path : segment_paths) {
    numbers += std::to_string(SegmentNumberOf(path, stem)) + " ";
  }
  numbers.back() = '\n';
  if (syscall(SYS_mkdirat, AT_FDCWD, ended_dir.c_str(), 0700) != 0 && errno != EEXIST) return;
  char due[kDueDigits + 2];
  snprintf(due, sizeof(due), "/%016llx", static_cast<unsigned long long>(due_ns));
  WriteAside(ended_dir + due + "." + stem.substr(stem.rfind('/') + 1), numbers.data(),
             numbers.size());
}

int SweepEndedSegments(const std::string& own_path, const std::vector<uint8_t>& own_header,
                       uint64_t now_ns, uint64_t keep_ns) {
  const uint64_t horizon_ns = now_ns - std::min(now_ns, keep_ns);
  Header own;
  if (!ParseHeader(own_header, &own)) return 0;
  const std::string dir = own_path.substr(0, own_path.rfind('/'));
  const std::string own_stem = format::TraceStemOf(own_path);
  const std::string ended_dir = dir + kEndedDir;
  std::vector<std::string> names;
  if (!ListNames(ended_dir, &names)) return 0;  // (none has ended yet)
  StemSweep sweep{own, dir.substr(0, dir.rfind('/')), horizon_ns, keep_ns};
  for (const std::string& name : names) {
    // DUE.STEM_NAME: nothing of it may go before the horizon passes DUE,
    // told from its name alone (the processes that ended within the last
    // DURATION cost a sweep no system call).
    if (name.size() <= kDueDigits + 1 || name[kDueDigits] != '.' ||
        EndsWith(name, kAsideSuffix)) {
      continue;
    }
    char* end;
    const uint64_t due_ns = std::strtoull(name.substr(0, kDueDigits).c_str(), &end, 16);
    if (*end != '\0' || due_ns >= horizon_ns) continue;
    const std::string note = ended_dir + "/" + name;
    const std::string stem = dir + "/" + name.substr(kDueDigits + 1);
    std::vector<uint32_t> numbers;
    if (stem == own_stem || !ReadNote(note, &numbers)) continue;
    // Settled: nothing more will ever be done to it, by any process.
    if (sweep.Sweep(stem, std::move(numbers))) syscall(SYS_unlink, note.c_str());
  }
  return sweep.deleted;
}

}  // namespace dlprof::core
