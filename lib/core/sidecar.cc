// The rings sidecar, writer's side (sidecar.h).
#include "lib/core/sidecar.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "lib/core/own_fd.h"
#include "lib/core/raw_map.h"
#include "lib/format/crc32c.h"

namespace dlprof::core {
namespace {

int OpenAt(const char* path, int flags) {
  return static_cast<int>(syscall(SYS_openat, AT_FDCWD, path, flags | O_NOFOLLOW | O_CLOEXEC,
                                  0600));
}

// Whether fd is still the sidecar KeepFd opened (the program may have
// closed it and have a file of its own at that number).
bool IsKept(int fd, uint64_t dev, uint64_t ino) {
  struct stat st;
  return fd >= 0 && syscall(SYS_fstat, fd, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

uint64_t FirstRegion() { return format::kSidecarHeaderBytes + format::kStringLogBytes; }

}  // namespace

bool Sidecar::Create(const std::string& trace_path, int32_t pid, int32_t rank,
                     uint64_t ring_capacity, uint64_t region_header_bytes,
                     uint64_t region_bytes) {
  path_ = trace_path + format::kSidecarSuffix;
  auto create = [&] { return OpenAt(path_.c_str(), O_RDWR | O_CREAT | O_EXCL); };
  int fd = create();
  // As the trace's creation (TraceSink::Open): a forked child of a parent
  // at its soft RLIMIT_NOFILE has the slot above it (own_fd.h). Not a
  // region's map: a new thread's, while the program's others may open.
  if (fd < 0 && errno == EMFILE) fd = OpenAboveFdLimit(create);
  if (fd < 0) return false;
  void* p = MAP_FAILED;
  if (AllocateOwnFile(fd, 0, FirstRegion())) {
    p = RawMmap(nullptr, FirstRegion(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  syscall(SYS_close, fd);
  if (p == MAP_FAILED) {
    syscall(SYS_unlink, path_.c_str());
    return false;
  }
  auto* h = static_cast<format::SidecarHeader*>(p);
  h->version = format::kSidecarVersion;
  h->header_bytes = format::kSidecarHeaderBytes;
  h->event_bytes = sizeof(Event);
  h->region_header_bytes = static_cast<uint32_t>(region_header_bytes);
  h->ring_capacity = ring_capacity;
  h->region_bytes = region_bytes;
  h->string_log_bytes = format::kStringLogBytes;
  h->first_region = FirstRegion();
  h->inflight_end.store(0, std::memory_order_relaxed);
  h->string_log_pos.store(0, std::memory_order_relaxed);
  h->rank.store(rank, std::memory_order_relaxed);
  h->pid = pid;
  // The magic last: a reader takes the header for one only when it is whole.
  std::atomic_thread_fence(std::memory_order_release);
  std::memcpy(h->magic, format::kSidecarMagic, sizeof(h->magic));
  log_ = static_cast<uint8_t*>(p) + format::kSidecarHeaderBytes;
  region_bytes_ = region_bytes;
  next_region_ = 0;
  removed_.store(false, std::memory_order_relaxed);
  header_ = h;
  return true;
}

void* Sidecar::MapRegion(void* fixed) {
  if (header_ == nullptr || removed_.load(std::memory_order_acquire)) return nullptr;
  pthread_mutex_lock(&grow_mu_);
  const uint64_t at = FirstRegion() + next_region_ * region_bytes_;
  void* p = MAP_FAILED;
  const bool kept = IsKept(kept_fd_, kept_dev_, kept_ino_);
  int fd = kept ? kept_fd_ : OpenAt(path_.c_str(), O_RDWR);
  if (fd >= 0) {
    if (AllocateOwnFile(fd, at, region_bytes_)) {
      p = RawMmap(fixed, region_bytes_, PROT_READ | PROT_WRITE,
                  MAP_SHARED | (fixed != nullptr ? MAP_FIXED : 0), fd, static_cast<off_t>(at));
    }
    if (!kept) syscall(SYS_close, fd);
  }
  if (p != MAP_FAILED) ++next_region_;
  pthread_mutex_unlock(&grow_mu_);
  return p == MAP_FAILED ? nullptr : p;
}

void Sidecar::AppendString(uint32_t id, const char* text, size_t len) {
  if (header_ == nullptr) return;
  constexpr uint64_t kLog = format::kStringLogBytes;
  const uint64_t rec = (format::kStringRecordHeader + len + 7) & ~uint64_t{7};
  if (rec > kLog) return;
  // A record never wraps around the end: one that would not fit starts the
  // next lap.
  uint64_t pos = header_->string_log_pos.load(std::memory_order_relaxed);
  uint64_t start;
  do {
    const uint64_t off = pos % kLog;
    start = off + rec > kLog ? pos + (kLog - off) : pos;
  } while (!header_->string_log_pos.compare_exchange_weak(pos, start + rec,
                                                           std::memory_order_relaxed));
  uint8_t* r = log_ + start % kLog;
  auto* tag = reinterpret_cast<std::atomic<uint32_t>*>(r);
  tag->store(0, std::memory_order_relaxed);
  const uint32_t len32 = static_cast<uint32_t>(len);
  std::memcpy(r + 4, &id, 4);
  std::memcpy(r + 8, &len32, 4);
  std::memcpy(r + format::kStringRecordHeader, text, len);
  std::memset(r + format::kStringRecordHeader + len, 0, rec - format::kStringRecordHeader - len);
  const uint32_t crc = format::Crc32c(text, len, format::Crc32c(r + 4, 8));
  std::memcpy(r + 12, &crc, 4);
  tag->store(format::kStringRecordTag, std::memory_order_release);
}

void Sidecar::Remove() {
  // Also from a signal handler: no lock, path_ only read.
  if (header_ == nullptr || removed_.exchange(true)) return;
  const int at = current_.load(std::memory_order_acquire);
  syscall(SYS_unlink, at < 0 ? path_.c_str() : moved_[at].c_str());
}

void Sidecar::MoveWithTrace(const std::string& trace_path) {
  if (header_ == nullptr || removed_.load(std::memory_order_acquire)) return;
  const int at = current_.load(std::memory_order_relaxed);
  const int next = at == 0 ? 1 : 0;
  moved_[next] = trace_path + format::kSidecarSuffix;
  const char* from = at < 0 ? path_.c_str() : moved_[at].c_str();
  if (syscall(SYS_renameat, AT_FDCWD, from, AT_FDCWD, moved_[next].c_str()) == 0) {
    current_.store(next, std::memory_order_release);
  }
}

void Sidecar::KeepFd() {
  if (header_ == nullptr || removed_.load(std::memory_order_acquire)) return;
  pthread_mutex_lock(&grow_mu_);
  if (kept_fd_ < 0 && current_.load(std::memory_order_relaxed) < 0) {
    OwnFdScope scope;
    int fd = OpenAt(path_.c_str(), O_RDWR);
    struct stat st;
    if (fd >= 0 && syscall(SYS_fstat, fd, &st) == 0) {
      const int high = static_cast<int>(syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, 100));
      if (high >= 0) {
        syscall(SYS_close, fd);
        fd = high;
      }
      kept_fd_ = fd;
      kept_dev_ = st.st_dev;
      kept_ino_ = st.st_ino;
    } else if (fd >= 0) {
      syscall(SYS_close, fd);
    }
  }
  pthread_mutex_unlock(&grow_mu_);
}

void Sidecar::ReleaseFd() {
  pthread_mutex_lock(&grow_mu_);
  if (kept_fd_ >= 0) {
    const int fd = OpenAt(path_.c_str(), O_RDWR);  // the path names it again: ours goes
    if (fd >= 0) {
      syscall(SYS_close, fd);
      if (IsKept(kept_fd_, kept_dev_, kept_ino_)) syscall(SYS_close, kept_fd_);
      kept_fd_ = -1;
    }
  }
  pthread_mutex_unlock(&grow_mu_);
}

void Sidecar::ForgetAfterFork() {
  // The parent's file, kept: not ours (it is the parent's to hold).
  if (IsKept(kept_fd_, kept_dev_, kept_ino_)) syscall(SYS_close, kept_fd_);
  kept_fd_ = -1;
  if (header_ != nullptr) RawMunmap(header_, FirstRegion());
  header_ = nullptr;
  log_ = nullptr;
  path_.clear();
  current_.store(-1, std::memory_order_relaxed);
  removed_.store(false, std::memory_order_relaxed);
  next_region_ = 0;
  // Another thread of the parent may have held it at the fork.
  pthread_mutex_init(&grow_mu_, nullptr);
}

}  // namespace dlprof::core
