// Diagnostics on stderr written with the raw write system call, so the
// tracer's own messages are never traced and never touch stdio state the
// program may hold locked.
#ifndef DLPROF_LIB_CORE_RAW_LOG_H_
#define DLPROF_LIB_CORE_RAW_LOG_H_

#include <cerrno>

namespace dlprof::core {

// printf-style; prefixes "dlprof: " and appends a newline. Silent once
// SetLogQuiet(true): DLPROF_QUIET=1 keeps everything of ours off the
// program's output.
void RawLog(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void SetLogQuiet(bool quiet);

// Notes which file fd 2 is when the runtime starts. A program may close its
// stderr and get fd 2 back from open() for one of its own files; RawLog then
// stays silent rather than write into that file (fd 2 that is a regular file
// other than the one noted here).
void NoteStderr();

// Saves errno on construction and restores it on destruction, so tracer code
// between a real call and the wrapper's return cannot disturb it.
class ErrnoSaver {
 public:
  ErrnoSaver() : saved_(errno) {}
  ~ErrnoSaver() { errno = saved_; }
  int value() const { return saved_; }
  ErrnoSaver(const ErrnoSaver&) = delete;
  ErrnoSaver& operator=(const ErrnoSaver&) = delete;

 private:
  int saved_;
};

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_RAW_LOG_H_
