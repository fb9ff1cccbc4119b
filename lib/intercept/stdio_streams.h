// What the STDIO wrappers share (stdio.cc: streams opened, read, written,
// positioned; stdio_formatted.cc: the printf and scanf families, stdout's
// own calls, dprintf): a stream's file and position, and the event of a
// call on it. An event names the stream's fd and file, the stream position
// before the call (`offset`), the bytes asked (`size`) and the bytes really
// moved (`aux`). glibc's stdio reads and writes through its internal
// syscall wrappers, not through read/write, so one fread is one event,
// never also a posix one.
#ifndef DLPROF_LIB_INTERCEPT_STDIO_STREAMS_H_
#define DLPROF_LIB_INTERCEPT_STDIO_STREAMS_H_

#include <stdio.h>

#include <cerrno>
#include <cstdint>

#include "dlprof/format.h"
#include "lib/intercept/wrapper.h"

namespace dlprof::intercept::stdio {

// The stream's file id, or 0 when the stream is not on a traced file.
uint32_t TracedFileOf(FILE* fp);

// Names the stream's file in `e` (DescribeFd, which counts an event on a
// file the string table had no room for as dropped); false when the stream
// is not on a traced file.
bool DescribeStreamFd(Event& e, FILE* fp);

// A stream's position before a call (-1 when it is not traced or we are
// not tracing; ftello may need an lseek), read without disturbing errno.
// The stream's lock is taken first and held until the call and its record
// are done (it is recursive: the call takes it again), so that another
// thread's call on the stream cannot come between the position and the
// call: its offset would be stale (two threads' 4-byte fwrites on one
// stream, 59 of 40000 offsets recorded twice). Not for the _unlocked calls,
// whose caller holds the lock or has the stream to itself.
class StreamPosition {
 public:
  explicit StreamPosition(FILE* fp, bool lock = true);
  ~StreamPosition() {
    if (zeroed_ && errno == 0) errno = errno_before_;  // the call set none
    if (locked_ != nullptr) funlockfile(locked_);
  }
  StreamPosition(const StreamPosition&) = delete;
  StreamPosition& operator=(const StreamPosition&) = delete;
  operator int64_t() const { return at_; }

 private:
  int64_t at_ = -1;
  FILE* locked_ = nullptr;
  // A traced stream's call starts from errno 0 (the program's kept here, put
  // back where the call sets none): StreamError takes errno for the call's
  // only where it set one.
  bool zeroed_ = false;
  int errno_before_ = 0;
};


// Fills `e` for a call on `fp` that began at `pos` and moved `moved` of the
// `asked` bytes; false when the stream is not traced.
bool DescribeStream(Event& e, FILE* fp, int64_t pos, uint64_t asked, uint64_t moved);

// The stream's position now (the C library's ftello, untraced).
int64_t Tell(FILE* fp);

// The errno of a call on `fp` that `failed`, or 0. EOF is not an error:
// errno means something only when the stream says so. The error flag stays
// set until clearerr, and a later call that fails without setting errno
// (getline on it returns -1 at once) left the program's old errno, recorded
// as the call's ("errno":1234): `err` is 0 there, the call having started
// from 0 (StreamPosition), and a call that fails again as before (EIO
// twice) sets it again.
int StreamError(FILE* fp, bool failed, int err);

}  // namespace dlprof::intercept::stdio

#endif  // DLPROF_LIB_INTERCEPT_STDIO_STREAMS_H_
