// What the tracer knows about each file descriptor: which file (string id of
// its path) it refers to, and a shadow of its file position, so read and
// write events get their offset without an extra lseek.
//
// Entries are atomics indexed by fd; wrappers on different threads update
// them without locks. The shadow position is exact for the usual cases
// (open, read/write, lseek, pread leaves it alone); fds that share their
// description with a dup are read from the kernel instead. It is documented
// as an estimate when descriptions are shared with a forked process.
#ifndef DLPROF_LIB_CORE_FD_TABLE_H_
#define DLPROF_LIB_CORE_FD_TABLE_H_

#include <atomic>
#include <cstdint>

namespace dlprof::core {

class FdTable {
 public:
  // file_id values with a special meaning.
  static constexpr uint32_t kUnknown = 0;             // never seen: probe once
  static constexpr uint32_t kIgnored = 0xffffffffu;   // excluded or not a file
  // Traced, but the string table was full when its path came: its events
  // are not recorded and are counted as dropped (file_ids.h, CountLostEvent).
  static constexpr uint32_t kLost = 0xfffffffeu;
  // A file id an event can carry (none of the values above).
  static bool Named(uint32_t file) { return file - 1 < kLost - 1; }  // (0 wraps: one compare)
  static constexpr int64_t kNoPosition = -1;

  bool Init(int capacity);
  int capacity() const { return capacity_; }

  uint32_t File(int fd) const {
    return InRange(fd) ? entries_[fd].file.load(std::memory_order_acquire) : kIgnored;
  }
  bool Append(int fd) const {
    return InRange(fd) && entries_[fd].append.load(std::memory_order_relaxed);
  }
  // The fd's position is known only to the kernel: O_APPEND writes land at
  // the end, and an open file description shared with another fd (dup) moves
  // under either of them.
  bool KernelPosition(int fd) const {
    return InRange(fd) && (entries_[fd].append.load(std::memory_order_relaxed) ||
                           entries_[fd].shared.load(std::memory_order_relaxed));
  }
  // The fd's position moves where the tracer cannot see (a stdio stream on
  // it reads ahead and writes through glibc's internal calls): asked of the
  // kernel from now on, as a shared description's is.
  void PositionFromKernel(int fd) {
    if (InRange(fd)) entries_[fd].shared.store(true, std::memory_order_relaxed);
  }
  // fcntl(F_SETFL) turned O_APPEND on or off; the description stays the same.
  void SetAppend(int fd, bool append) {
    if (InRange(fd)) entries_[fd].append.store(append, std::memory_order_relaxed);
  }

  void Set(int fd, uint32_t file, int64_t position, bool append);
  void Clear(int fd) { if (InRange(fd)) Set(fd, kUnknown, kNoPosition, false); }
  void ClearRange(unsigned first, unsigned last);
  // dup: the new fd refers to the same file at the same position, and both
  // share one file position from now on.
  void Copy(int from, int to);

  int64_t Position(int fd) const {
    return InRange(fd) ? entries_[fd].position.load(std::memory_order_relaxed) : kNoPosition;
  }
  void SetPosition(int fd, int64_t pos) {
    if (InRange(fd)) entries_[fd].position.store(pos, std::memory_order_relaxed);
  }
  // A read or write at the current position moved it by `bytes`; returns the
  // position the call started at, or kNoPosition if unknown.
  int64_t Advance(int fd, int64_t bytes);

 private:
  struct Entry {
    std::atomic<uint32_t> file;
    std::atomic<bool> append;
    std::atomic<bool> shared;  // description shared with another fd (dup)
    std::atomic<int64_t> position;
  };
  bool InRange(int fd) const { return fd >= 0 && fd < capacity_; }

  Entry* entries_ = nullptr;
  int capacity_ = 0;
};

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_FD_TABLE_H_
