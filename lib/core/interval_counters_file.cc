// The counters file's writes (interval_counters.h): creating it with the
// trace's header, and appending records -- the record so far written over,
// records a failed write (a full disk) left held in memory put first.
#include "lib/core/interval_counters.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "lib/core/own_fd.h"
#include "lib/core/raw_log.h"

namespace dlprof::core {

bool IntervalCounters::Open(const std::string& path, const std::vector<uint8_t>& header,
                            uint64_t now_ns, std::string* error) {
  // No OwnFdScope here: TraceSink::Open, the one caller, holds one.
  const int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, path.c_str(),
                                          O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                                          0600));
  if (fd < 0) {
    *error = "cannot create " + path + ": " + std::strerror(errno);
    return false;
  }
  const bool ok = syscall(SYS_write, fd, header.data(), header.size()) ==
                  static_cast<long>(header.size());
  const int err = errno;
  syscall(SYS_close, fd);
  if (!ok) {
    *error = "cannot write " + path + ": " + std::strerror(err);
    syscall(SYS_unlink, path.c_str());
    return false;
  }
  path_ = path;
  bytes_written_ = header.size();
  interval_start_ns_ = now_ns;
  for (uint32_t k = 0; k < kEventKindLimit; ++k) kinds_[k].kind = k;
  return true;
}

void IntervalCounters::Keep(const format::KeepRecord& k) {
  if (path_.empty() || failed_) return;
  std::vector<uint8_t> bytes;
  format::AppendKeepRecord(k, &bytes);
  Write(bytes, nullptr);
}

void IntervalCounters::Lost(const format::LostRecord& r) {
  if (path_.empty() || failed_) return;
  std::vector<uint8_t> bytes;
  format::AppendLostRecord(r, &bytes);
  Write(bytes, nullptr);
}

bool IntervalCounters::Write(const std::vector<uint8_t>& kept,
                             const std::vector<uint8_t>* so_far) {
  // The records kept go where the records kept end (those a failed write
  // left in memory first), then the record so far: the new one, or the
  // one there again (the interval goes on).
  std::vector<uint8_t> out = unwritten_;
  out.insert(out.end(), kept.begin(), kept.end());
  const size_t kept_bytes = out.size();
  const std::vector<uint8_t>& tail = so_far != nullptr ? *so_far : so_far_record_;
  out.insert(out.end(), tail.begin(), tail.end());
  // Opened and closed around each write, as the trace is (trace_sink.h):
  // the program never finds one of our descriptors among its own.
  OwnFdScope scope;
  int fd = static_cast<int>(
      syscall(SYS_openat, AT_FDCWD, path_.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC));
  if (fd >= 0) fd = MoveOwnFdHigh(fd);  // (its close may flush to NFS)
  bool ok = fd >= 0;
  if (ok) {
    // What lies past the records kept goes first: a kill from here on
    // leaves whole records and at worst a torn last one, never a record
    // half written over another.
    if (tail_bytes_ > 0) ok = syscall(SYS_ftruncate, fd, static_cast<off_t>(bytes_written_)) == 0;
    size_t done = 0;
    while (ok && done < out.size()) {
      const long w = syscall(SYS_pwrite64, fd, out.data() + done, out.size() - done,
                             static_cast<off_t>(bytes_written_ + done));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) ok = false;
      else done += static_cast<size_t>(w);
    }
    const int err = errno;
    syscall(SYS_close, fd);
    errno = err;
  }
  if (!ok) tail_bytes_ = std::max(tail_bytes_, out.size());  // the next write cuts it off
  if (!ok && so_far != nullptr) {
    // A pass's record so far is best effort (a descriptor limit, a full
    // disk): the next write clears what this one left.
    so_far_record_.clear();
    return false;
  }
  if (!ok && unwritten_.size() + kept.size() <= kMaxUnwrittenBytes) {
    // A full disk (or no descriptor free) for a while: the records wait
    // here, in order, and the next write (the next pass's) puts them first.
    if (!told_unwritten_) {
      RawLog("cannot write counters %s: %s; its records wait in memory until it can",
             path_.c_str(), std::strerror(errno));
      told_unwritten_ = true;
    }
    unwritten_.insert(unwritten_.end(), kept.begin(), kept.end());
    so_far_record_.clear();
    return true;
  }
  if (!ok) {
    RawLog("cannot write counters %s: %s; the whole run's counters stop here", path_.c_str(),
           std::strerror(errno));
    failed_ = true;
    return false;
  }
  bytes_written_ += kept_bytes;
  unwritten_.clear();
  if (so_far != nullptr) so_far_record_ = *so_far;
  tail_bytes_ = so_far_record_.size();
  return true;
}

}  // namespace dlprof::core
