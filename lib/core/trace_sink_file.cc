// The trace file's own writes (trace_sink.h): creating it (and the trace
// directory) with its header, and appending each block through a
// descriptor opened for that write and checked to be the file the tracer
// made, or kept in memory while the program holds every descriptor
// (EMFILE). The flusher's passes are trace_sink.cc's.
#include "lib/core/trace_sink.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lib/core/clock.h"
#include "lib/core/own_fd.h"
#include "lib/core/raw_log.h"
#include "lib/core/runtime.h"
#include "lib/format/trace_layout.h"

namespace dlprof::core {
namespace {

// The blocks that wait for a descriptor (EMFILE): beyond this, tracing stops.
constexpr size_t kMaxPendingBytes = 64u << 20;

// mkdir -p with 0700 for the parts it creates. From the leaf upwards: where
// the directory exists (every process of a job but the first on a host),
// that costs one mkdir, not one per component of the path -- on Lustre or
// GPFS each is a request to the metadata server. EEXIST from a process that
// won the race is success.
bool MakeDirs(const std::string& dir, std::string* error) {
  if (syscall(SYS_mkdir, dir.c_str(), 0700) != 0) {
    int err = errno;
    if (err == ENOENT) {
      size_t slash = dir.find_last_of('/');
      while (slash != std::string::npos && slash > 0 && dir[slash - 1] == '/') --slash;
      if (slash == std::string::npos || slash == 0) {
        *error = "cannot create " + dir + ": " + std::strerror(err);
        return false;
      }
      if (!MakeDirs(dir.substr(0, slash), error)) return false;
      if (syscall(SYS_mkdir, dir.c_str(), 0700) != 0) err = errno;
      else err = 0;
    }
    if (err != 0 && err != EEXIST) {
      *error = "cannot create " + dir + ": " + std::strerror(err);
      return false;
    }
  }
  struct stat st;
  if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    *error = dir + " is not a directory";
    return false;
  }
  return true;
}

}  // namespace

bool TraceSink::Open(const format::ProcessInfo& info, std::string* error) {
  // DLPROF_DIR/<run>/<host>/ (lib/format/trace_layout.h).
  const std::string dir = format::HostDirectory(config_.dir, info.run_id, info.host);
  // Never cut short, whatever DLPROF_DIR's length.
  path_ = dir + "/" + format::TraceFileName(info.exe, info.host, info.pid, info.clock_mono_ns);
  const char* name = path_.c_str();
  auto create = [&] {
    return static_cast<int>(syscall(SYS_openat, AT_FDCWD, name,
                                    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  };
  rank_.store(info.rank, std::memory_order_relaxed);
  // The header says which clock traced calls read, and the calibration's
  // error where it is the TSC.
  format::ProcessInfo with_clock = info;
  if (EventClockDecision().tsc) {
    if (tick_clock_.Start()) {
      tsc_ = true;
      encoder_.SetTickScale(tick_clock_.scale());
      scale_ns_.store(tick_clock_.scale().ns, std::memory_order_relaxed);
    } else {
      // Before any traced call read the TSC: nothing recorded needs a scale.
      FallBackToClockGettime("CLOCK_MONOTONIC_RAW stood still while the TSC ran");
      RawLog("clock_gettime(CLOCK_MONOTONIC_RAW) stands still while the TSC runs: "
             "the TSC cannot be calibrated; timing with clock_gettime");
    }
  }
  with_clock.clock = EventClockDecision().why;
  if (tsc_) {
    with_clock.clock +=
        "; calibration error " + std::to_string(tick_clock_.start_error_ns()) + " ns";
  }
  if (config_.keep_ms > 0) with_clock.flags |= kHeaderFlagSegment;
  std::vector<uint8_t> header = format::EncodeFileHeader(with_clock);
  OwnFdScope scope;
  // The directory usually exists (the host's other processes made it):
  // try the file first, and make the directories only when it is missing.
  int fd = create();
  if (fd < 0 && (errno == ENOENT || errno == ENOTDIR)) {
    // DLPROF_DIR first, so that a message names the part the user gave.
    if (!MakeDirs(config_.dir, error) || !MakeDirs(dir, error)) return false;
    fd = create();
  }
  // A child forked while its parent held every descriptor its soft limit
  // allows ran untraced ("Too many open files"), though the hard limit had
  // room: it is created in the slot above (its later writes wait in memory
  // for a descriptor, or for the last write, as its parent's do).
  if (fd < 0 && errno == EMFILE) fd = OpenAboveFdLimit(create);
  if (fd < 0) {
    *error = "cannot create " + path_ + ": " + std::strerror(errno);
    return false;
  }
  struct stat st {};
  const bool ok = syscall(SYS_fstat, fd, &st) == 0 && WriteFd(fd, header.data(), header.size());
  const int err = errno;
  syscall(SYS_close, fd);
  if (!ok) {
    // No trace without its header: remove the file we created.
    *error = "cannot write " + path_ + ": " + std::strerror(err);
    syscall(SYS_unlink, name);
    return false;
  }
  file_bytes_ = header.size();
  file_dev_ = st.st_dev;
  file_ino_ = st.st_ino;
  opened_ns_ = NowNs();
  last_block_ns_.store(opened_ns_, std::memory_order_relaxed);
  if (config_.keep_ms > 0) StartKeeping(header, opened_ns_);
  return true;
}

int TraceSink::OpenForAppend() {
  int fd;
  do {
    fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, path_.c_str(),
                                  O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC));
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return -1;
  // Another file in its place (the trace removed and the name reused) is
  // not ours to write into.
  if (!IsTrace(fd)) {
    syscall(SYS_close, fd);
    errno = ENOENT;
    return -1;
  }
  return MoveOwnFdHigh(fd);
}

bool TraceSink::IsTrace(int fd) const {
  struct stat st;
  return syscall(SYS_fstat, fd, &st) == 0 && st.st_dev == file_dev_ && st.st_ino == file_ino_;
}

bool TraceSink::WriteFd(int fd, const uint8_t* p, size_t n) {
  while (n > 0) {
    long w = syscall(SYS_write, fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
    progress_.fetch_add(1, std::memory_order_relaxed);
  }
  return true;
}

// The process's last write (it exits, execs, or dies of a signal) while it
// holds every descriptor its soft RLIMIT_NOFILE allows: the blocks held
// back for one would be lost. One slot above the program's (own_fd.h).
int TraceSink::WriteDescriptorAboveLimit() {
  return OpenAboveFdLimit([&] { return OpenForAppend(); });
}

// One try at appending the blocks held back and this one. `anew`: the
// last try's descriptor was closed under it, so the file may end in part of
// the block; it is cut back to its last whole one before the write.
bool TraceSink::WriteOnce(const uint8_t* p, size_t n, bool last, bool anew, int* err) {
  int fd = WriteDescriptor();
  if (fd < 0 && errno == EMFILE && last) fd = WriteDescriptorAboveLimit();
  if (fd < 0) {
    *err = errno;
    return false;
  }
  if (anew) syscall(SYS_ftruncate, fd, static_cast<off_t>(file_bytes_));
  const bool ok = (pending_.empty() || WriteFd(fd, pending_.data(), pending_.size())) &&
                  WriteFd(fd, p, n);
  *err = errno;
  // A write cut short (the disk full) leaves a torn block: the file is
  // cut back to its last whole one, which a reader takes as the end.
  if (!ok && *err != EMFILE && *err != ENFILE) {
    syscall(SYS_ftruncate, fd, static_cast<off_t>(file_bytes_));
  }
  // (Only ours: a file of the program's in its place is not to close.)
  if (fd != kept_fd_.load(std::memory_order_relaxed) && IsTrace(fd)) syscall(SYS_close, fd);
  return ok;
}

bool TraceSink::WriteAll(const uint8_t* p, size_t n, bool last) {
  int err = 0;
  bool ok = false;
  {
    OwnFdScope scope;
    ok = WriteOnce(p, n, last, false, &err);
    // A program that closes every descriptor number it could have (a
    // daemon's loop from 3 to its limit, or over /proc/self/fd) closed ours
    // under the write (EBADF): tracing stopped there. Once more, through a
    // descriptor opened anew.
    if (!ok && err == EBADF) ok = WriteOnce(p, n, last, true, &err);
  }
  if (ok && !pending_.empty()) {
    std::vector<uint8_t>().swap(pending_);
    waiting_for_fd_.store(false, std::memory_order_relaxed);
  }
  if (!ok && (err == EMFILE || err == ENFILE) && pending_.size() + n <= kMaxPendingBytes) {
    // The program holds every descriptor it may: keep the block for a later
    // write (the next pass, or the last at exit) rather than stop tracing.
    if (!told_no_fd_) {
      RawLog("cannot open trace %s: %s; its events wait in memory until a descriptor is free",
             path_.c_str(), std::strerror(err));
      told_no_fd_ = true;
    }
    pending_.insert(pending_.end(), p, p + n);
    waiting_for_fd_.store(true, std::memory_order_relaxed);
    return true;
  }
  errno = err;
  return ok;
}

}  // namespace dlprof::core
