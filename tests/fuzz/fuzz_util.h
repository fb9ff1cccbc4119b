// Shared by the format fuzz targets (header, block, column and varint
// fuzzers): the input as a file the reader can open, a cursor that takes
// fields from the input, and the check that turns a broken invariant into a
// crash libFuzzer keeps (and fuzz_replay fails on).
#ifndef DLPROF_TESTS_FUZZ_FUZZ_UTIL_H_
#define DLPROF_TESTS_FUZZ_FUZZ_UTIL_H_

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

// Not assert(): the fuzzers' invariants must hold in release builds too.
#define FUZZ_CHECK(cond)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: fuzz invariant broken: %s\n", __FILE__, __LINE__, \
              #cond);                                                          \
      abort();                                                                 \
    }                                                                          \
  } while (0)

namespace dlprof::fuzz {

// Bytes as a file the reader opens by name (/proc/self/fd/N of a memfd).
class MemFile {
 public:
  MemFile(const uint8_t* data, size_t size) {
    fd_ = memfd_create("dlprof-fuzz", MFD_CLOEXEC);
    if (fd_ < 0) return;
    size_t done = 0;
    while (done < size) {
      ssize_t w = write(fd_, data + done, size - done);
      if (w <= 0) break;
      done += static_cast<size_t>(w);
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~MemFile() {
    if (fd_ >= 0) close(fd_);
  }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  bool ok() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  std::string path_;
};

// Takes little-endian integers and byte runs from the input; past its end
// every value is zero, so a target never has to check what is left.
class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  size_t left() const { return static_cast<size_t>(end_ - p_); }
  bool empty() const { return p_ == end_; }
  template <typename T>
  T Take() {
    T v = 0;
    const size_t n = left() < sizeof(T) ? left() : sizeof(T);
    std::memcpy(&v, p_, n);
    p_ += n;
    return v;
  }
  // Up to `n` bytes (fewer at the end); `*got` says how many.
  const uint8_t* Bytes(size_t n, size_t* got) {
    *got = left() < n ? left() : n;
    const uint8_t* r = p_;
    p_ += *got;
    return r;
  }
  const uint8_t* position() const { return p_; }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

}  // namespace dlprof::fuzz

#endif  // DLPROF_TESTS_FUZZ_FUZZ_UTIL_H_
