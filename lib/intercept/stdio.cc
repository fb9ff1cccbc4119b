// STDIO streams opened, closed, read, written and positioned (the printf
// and scanf families: stdio_formatted.cc; what they share and what an event
// holds: stdio_streams.h).
#include <fcntl.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdarg>
#include <cstring>

#include "lib/core/own_fd.h"
#include "lib/intercept/describe.h"
#include "lib/intercept/stdio_streams.h"
#include "lib/intercept/wrapper.h"

using dlprof::Event;
using dlprof::EventKind;
using dlprof::core::WhenNoLowOwnFd;
using namespace dlprof::intercept;
using namespace dlprof::intercept::stdio;

extern "C" {
size_t __fread_chk(void* ptr, size_t ptrlen, size_t size, size_t n, FILE* fp);
size_t __fread_unlocked_chk(void* ptr, size_t ptrlen, size_t size, size_t n, FILE* fp);
char* __fgets_chk(char* s, size_t size, int n, FILE* fp);
char* __fgets_unlocked_chk(char* s, size_t size, int n, FILE* fp);
}

DLPROF_REAL(ftello)

namespace dlprof::intercept::stdio {

uint32_t TracedFileOf(FILE* fp) {
  if (fp == nullptr) return 0;
  int fd = fileno(fp);
  if (fd < 0) return 0;
  uint32_t file = dlprof::core::FileOfFd(Rt(), fd);
  return FdTable::Named(file) ? file : 0;
}

bool DescribeStreamFd(Event& e, FILE* fp) {
  if (fp == nullptr) return false;
  const int fd = fileno(fp);
  return fd >= 0 && DescribeFd(e, fd);
}

StreamPosition::StreamPosition(FILE* fp, bool lock) {
  dlprof::core::ThreadContext& t = dlprof::core::CurrentThread();
  // (The module's kinds are on or off together, DLPROF_TRACE: with it off,
  // no position is asked of the C library, which asks the kernel.)
  if (!dlprof::core::Tracing(t) || !dlprof::core::KindEnabled(EventKind::Fread)) return;
  {
    dlprof::core::ErrnoSaver keep;
    OpenWindow(t, DLPROF_CALLER_FRAME());  // a handler's traced call is deferred, not lost
    const bool traced = TracedFileOf(fp) != 0;
    CloseWindow(t);
    if (!traced) return;
    if (lock) {
      flockfile(fp);  // may wait for another thread: outside the window
      locked_ = fp;
    }
    OpenWindow(t, DLPROF_CALLER_FRAME());
    errno_before_ = keep.value();
    at_ = real_ftello(fp);
    CloseWindow(t);
  }
  // The call then starts from errno 0: whether it set errno is known
  // (StreamError), and the program's is put back where it did not.
  errno = 0;
  zeroed_ = true;
}

bool DescribeStream(Event& e, FILE* fp, int64_t pos, uint64_t asked, uint64_t moved) {
  const int fd = fileno(fp);
  if (!DescribeStreamFd(e, fp)) return false;
  // A write on an O_APPEND fd (an "a" or "a+" stream's, the shell's `>>`
  // under stdout, fdopen(fd, "w") of one) lands at the end of the file when
  // the stream writes it out, wherever the position was before ("a+" reads
  // from 0), after what the stream still holds from before it: the file's
  // size and the bytes held, less what it wrote. (The position of a stream
  // not opened "a" counts from the fd's offset, 0 until its first write.)
  if (moved > 0 && dlprof::kEventKinds.info[e.kind].op_class == dlprof::OpClass::Write &&
      Rt().fds().Append(fd)) {
    struct stat st;
    if (syscall(SYS_fstat, fd, &st) == 0) {
      const int64_t end = st.st_size + static_cast<int64_t>(__fpending(fp));
      if (end >= static_cast<int64_t>(moved)) pos = end - static_cast<int64_t>(moved);
    }
  }
  e.offset = pos;
  e.size = asked;
  e.aux = moved;
  return true;
}

int64_t Tell(FILE* fp) { return real_ftello(fp); }

int StreamError(FILE* fp, bool failed, int err) {
  return failed && fp != nullptr && ferror(fp) ? err : 0;
}

}  // namespace dlprof::intercept::stdio

namespace {

// fread/fwrite count whole items; a short call may still have moved part of
// the next one: then what moved is how far the position went.
uint64_t ItemBytesMoved(FILE* fp, int64_t pos, size_t size, size_t n, size_t r) {
  if (r >= n || pos < 0) return r * size;
  const int64_t after = real_ftello(fp);
  return after >= pos ? static_cast<uint64_t>(after - pos) : r * size;
}

// fgets: how far the position moved (strlen would stop at a NUL byte in
// the line).
uint64_t LineBytesMoved(FILE* fp, int64_t pos, const char* r) {
  if (r == nullptr) return 0;
  const int64_t after = pos >= 0 ? real_ftello(fp) : -1;
  return after >= pos && pos >= 0 ? static_cast<uint64_t>(after - pos) : strlen(r);
}

int OpenFlagsOf(const char* mode) {
  int flags = 0;
  if (mode == nullptr) return flags;
  switch (mode[0]) {
    case 'r': flags = strchr(mode, '+') ? O_RDWR : O_RDONLY; break;
    case 'w': flags = (strchr(mode, '+') ? O_RDWR : O_WRONLY) | O_CREAT | O_TRUNC; break;
    case 'a': flags = (strchr(mode, '+') ? O_RDWR : O_WRONLY) | O_CREAT | O_APPEND; break;
  }
  return flags;
}

bool DescribeFopen(Event& e, const char* path, const char* mode, FILE* r) {
  bool traced = DescribeOpen(e, AT_FDCWD, path, OpenFlagsOf(mode), r ? fileno(r) : -1);
  if (r != nullptr) Rt().fds().PositionFromKernel(fileno(r));  // the stream moves it
  e.ret = r ? e.fd : -1;
  return traced;
}

}  // namespace

// --- open and close --------------------------------------------------------

#define DLPROF_FOPEN(fn, kind)                                                  \
  DLPROF_REAL(fn)                                                               \
  extern "C" FILE* fn(const char* path, const char* mode) {                     \
    return Traced<FILE*>(                                                       \
        EventKind::kind,                                                        \
        [&] { return WhenNoLowOwnFd([&] { return real_##fn(path, mode); }); },      \
        [&](Event& e, FILE* r, int) { return DescribeFopen(e, path, mode, r); }); \
  }
DLPROF_FOPEN(fopen, Fopen)
DLPROF_FOPEN(fopen64, Fopen64)

namespace {

// freopen (glibc): the new file is opened while the stream's fd stays
// open, then moved onto that fd's number (dup3), which the stream keeps;
// where the open fails, the fd is closed, inside the call, where no
// wrapper sees it. So the fd table
// forgets the fd before the call, as close() does (ForgetBeforeClose): a
// pipe that gets the number afterwards was taken for the old file. On
// success the fd is named again: after `path`, or, freopen(NULL, mode,
// fp), after what it is (glibc reopens /proc/self/fd/N: the same file).
void ForgetStreamFd(FILE* fp) {
  if (fp == nullptr) return;
  dlprof::core::ErrnoSaver keep;  // no fd (fmemopen): EBADF
  const int fd = fileno(fp);
  if (fd >= 0) ForgetBeforeClose(fd);
}

bool DescribeFreopen(Event& e, const char* path, const char* mode, FILE* r) {
  if (path != nullptr) return DescribeFopen(e, path, mode, r);
  if (r == nullptr) return false;
  const int fd = fileno(r);
  if (!DescribeFd(e, fd)) return false;
  Rt().fds().PositionFromKernel(fd);  // the stream moves it
  e.aux = static_cast<uint32_t>(OpenFlagsOf(mode));
  e.ret = fd;
  return true;
}

}  // namespace

#define DLPROF_FREOPEN(fn, kind)                                                   \
  DLPROF_REAL(fn)                                                                  \
  extern "C" FILE* fn(const char* path, const char* mode, FILE* fp) {              \
    ForgetStreamFd(fp);                                                            \
    return Traced<FILE*>(                                                          \
        EventKind::kind,                                                           \
        [&] { return WhenNoLowOwnFd([&] { return real_##fn(path, mode, fp); }); },  \
        [&](Event& e, FILE* r, int) { return DescribeFreopen(e, path, mode, r); }); \
  }
DLPROF_FREOPEN(freopen, Freopen)
DLPROF_FREOPEN(freopen64, Freopen64)

DLPROF_REAL(fdopen)
extern "C" FILE* fdopen(int fd, const char* mode) {
  return Traced<FILE*>(
      EventKind::Fdopen, [&] { return real_fdopen(fd, mode); },
      [&](Event& e, FILE* r, int) {
        e.aux = static_cast<uint32_t>(OpenFlagsOf(mode));
        e.ret = r ? fd : -1;
        if (r != nullptr) {
          // The stream moves the fd's position from now on; "a" turned
          // O_APPEND on (glibc's own fcntl, which no wrapper sees).
          Rt().fds().PositionFromKernel(fd);
          if (mode != nullptr && mode[0] == 'a') Rt().fds().SetAppend(fd, true);
        }
        return DescribeFd(e, fd);
      });
}

DLPROF_REAL(fclose)
extern "C" int fclose(FILE* fp) {
  int fd = -1;
  if (fp != nullptr) {
    dlprof::core::ErrnoSaver keep;  // no fd (fmemopen, fopencookie): EBADF
    fd = fileno(fp);
  }
  // fclose closes the fd even when flushing fails.
  const uint32_t file = fd >= 0 ? ForgetBeforeClose(fd) : FdTable::kIgnored;
  return Traced<int>(
      EventKind::Fclose, [&] { return real_fclose(fp); },
      [&](Event& e, int, int) { return DescribeClose(e, fd, file); });
}

// --- reads -----------------------------------------------------------------

// fread/fwrite: `size` items of `n` bytes; the return value counts items.
#define DLPROF_FREAD_FWRITE(fn, kind, buf_type, lock)                                   \
  DLPROF_REAL(fn)                                                                       \
  extern "C" size_t fn(buf_type p, size_t size, size_t n, FILE* fp) {                   \
    const StreamPosition pos(fp, lock);                                                 \
    return Traced<size_t>(                                                              \
        EventKind::kind, [&] { return real_##fn(p, size, n, fp); },                     \
        [&](Event& e, size_t r, int err) {                                              \
          e.err = StreamError(fp, r < n, err);                                     \
          return DescribeStream(e, fp, pos, size * n,                                   \
                                ItemBytesMoved(fp, pos, size, n, r));                   \
        });                                                                             \
  }
DLPROF_FREAD_FWRITE(fread, Fread, void*, true)
DLPROF_FREAD_FWRITE(fread_unlocked, FreadUnlocked, void*, false)
DLPROF_FREAD_FWRITE(fwrite, Fwrite, const void*, true)
DLPROF_FREAD_FWRITE(fwrite_unlocked, FwriteUnlocked, const void*, false)

// Fortified forms (a size known only at run time): the extra argument is
// the buffer's size.
#define DLPROF_FREAD_CHK(fn, kind, lock)                                                 \
  DLPROF_REAL(fn)                                                                        \
  extern "C" size_t fn(void* p, size_t plen, size_t size, size_t n, FILE* fp) {         \
    const StreamPosition pos(fp, lock);                                                  \
    return Traced<size_t>(                                                               \
        EventKind::kind, [&] { return real_##fn(p, plen, size, n, fp); },                \
        [&](Event& e, size_t r, int err) {                                               \
          e.err = StreamError(fp, r < n, err);                                      \
          return DescribeStream(e, fp, pos, size * n, ItemBytesMoved(fp, pos, size, n, r)); \
        });                                                                              \
  }
DLPROF_FREAD_CHK(__fread_chk, FreadChk, true)
DLPROF_FREAD_CHK(__fread_unlocked_chk, FreadUnlockedChk, false)

// fgets: up to n - 1 bytes, to the end of a line; the fortified forms take
// the buffer's size too.
inline bool DescribeFgets(Event& e, FILE* fp, const StreamPosition& pos, int n, char* r,
                          int err) {
  e.err = StreamError(fp, r == nullptr, err);
  return DescribeStream(e, fp, pos, n > 0 ? n : 0, LineBytesMoved(fp, pos, r));
}
#define DLPROF_FGETS(fn, kind, lock)                                                    \
  DLPROF_REAL(fn)                                                                       \
  extern "C" char* fn(char* s, int n, FILE* fp) {                                       \
    const StreamPosition pos(fp, lock);                                                 \
    return Traced<char*>(                                                               \
        EventKind::kind, [&] { return real_##fn(s, n, fp); },                           \
        [&](Event& e, char* r, int err) { return DescribeFgets(e, fp, pos, n, r, err); }); \
  }
#define DLPROF_FGETS_CHK(fn, kind, lock)                                                \
  DLPROF_REAL(fn)                                                                       \
  extern "C" char* fn(char* s, size_t size, int n, FILE* fp) {                          \
    const StreamPosition pos(fp, lock);                                                 \
    return Traced<char*>(                                                               \
        EventKind::kind, [&] { return real_##fn(s, size, n, fp); },                     \
        [&](Event& e, char* r, int err) { return DescribeFgets(e, fp, pos, n, r, err); }); \
  }
DLPROF_FGETS(fgets, Fgets, true)
DLPROF_FGETS(fgets_unlocked, FgetsUnlocked, false)
DLPROF_FGETS_CHK(__fgets_chk, FgetsChk, true)
DLPROF_FGETS_CHK(__fgets_unlocked_chk, FgetsUnlockedChk, false)

#define DLPROF_GETC(fn, kind, lock)                                             \
  DLPROF_REAL(fn)                                                               \
  extern "C" int fn(FILE* fp) {                                                 \
    const StreamPosition pos(fp, lock);                                         \
    return Traced<int>(                                                         \
        EventKind::kind, [&] { return real_##fn(fp); },                         \
        [&](Event& e, int r, int err) {                                         \
          e.err = StreamError(fp, r == EOF, err);                          \
          return DescribeStream(e, fp, pos, 1, r == EOF ? 0 : 1);               \
        });                                                                     \
  }
DLPROF_GETC(fgetc, Fgetc, true)
DLPROF_GETC(getc, Getc, true)
// (With optimisation, <stdio.h> inlines the unlocked ones: only calls that
// reach the C library are seen, as for any function.)
DLPROF_GETC(fgetc_unlocked, FgetcUnlocked, false)
DLPROF_GETC(getc_unlocked, GetcUnlocked, false)

DLPROF_REAL(getdelim)
extern "C" ssize_t getdelim(char** line, size_t* n, int delim, FILE* fp) {
  const StreamPosition pos(fp);
  return Traced<ssize_t>(
      EventKind::Getdelim, [&] { return real_getdelim(line, n, delim, fp); },
      [&](Event& e, ssize_t r, int err) {
        e.err = StreamError(fp, r < 0, err);
        return DescribeStream(e, fp, pos, 0, r > 0 ? r : 0);
      });
}
DLPROF_REAL(getline)
extern "C" ssize_t getline(char** line, size_t* n, FILE* fp) {
  const StreamPosition pos(fp);
  return Traced<ssize_t>(
      EventKind::Getline, [&] { return real_getline(line, n, fp); },
      [&](Event& e, ssize_t r, int err) {
        e.err = StreamError(fp, r < 0, err);
        return DescribeStream(e, fp, pos, 0, r > 0 ? r : 0);
      });
}
// With optimisation, <stdio.h> inlines getline() as a call of __getdelim
// with '\n': that call is the program's getline.
extern "C" ssize_t __getdelim(char** line, size_t* n, int delim, FILE* fp);
DLPROF_REAL(__getdelim)
extern "C" ssize_t __getdelim(char** line, size_t* n, int delim, FILE* fp) {
  const StreamPosition pos(fp);
  return Traced<ssize_t>(
      delim == '\n' ? EventKind::Getline : EventKind::Getdelim,
      [&] { return real___getdelim(line, n, delim, fp); },
      [&](Event& e, ssize_t r, int err) {
        e.err = StreamError(fp, r < 0, err);
        return DescribeStream(e, fp, pos, 0, r > 0 ? r : 0);
      });
}

// --- writes ----------------------------------------------------------------

#define DLPROF_PUTC(fn, kind, lock)                                             \
  DLPROF_REAL(fn)                                                               \
  extern "C" int fn(int c, FILE* fp) {                                          \
    const StreamPosition pos(fp, lock);                                         \
    return Traced<int>(                                                         \
        EventKind::kind, [&] { return real_##fn(c, fp); },                      \
        [&](Event& e, int r, int err) {                                         \
          e.err = StreamError(fp, r == EOF, err);                          \
          return DescribeStream(e, fp, pos, 1, r == EOF ? 0 : 1);               \
        });                                                                     \
  }
DLPROF_PUTC(fputc, Fputc, true)
DLPROF_PUTC(putc, Putc, true)
DLPROF_PUTC(fputc_unlocked, FputcUnlocked, false)
DLPROF_PUTC(putc_unlocked, PutcUnlocked, false)

#define DLPROF_FPUTS(fn, kind, lock)                                            \
  DLPROF_REAL(fn)                                                               \
  extern "C" int fn(const char* s, FILE* fp) {                                  \
    const StreamPosition pos(fp, lock);                                         \
    return Traced<int>(                                                         \
        EventKind::kind, [&] { return real_##fn(s, fp); },                      \
        [&](Event& e, int r, int err) {                                         \
          e.err = StreamError(fp, r == EOF, err);                          \
          size_t len = s ? strlen(s) : 0;                                       \
          return DescribeStream(e, fp, pos, len, r == EOF ? 0 : len);           \
        });                                                                     \
  }
DLPROF_FPUTS(fputs, Fputs, true)
DLPROF_FPUTS(fputs_unlocked, FputsUnlocked, false)

// --- positioning and flush ---------------------------------------------------
// offset is the position after the call.

static bool DescribeSeek(Event& e, FILE* fp, int whence) {
  if (!DescribeStreamFd(e, fp)) return false;
  e.offset = real_ftello(fp);
  e.aux = static_cast<uint32_t>(whence);
  return true;
}

#define DLPROF_FSEEK(fn, kind, off_type)                                          \
  DLPROF_REAL(fn)                                                                 \
  extern "C" int fn(FILE* fp, off_type off, int whence) {                         \
    return Traced<int>(                                                           \
        EventKind::kind, [&] { return real_##fn(fp, off, whence); },              \
        [&](Event& e, int, int) { return DescribeSeek(e, fp, whence); });         \
  }
DLPROF_FSEEK(fseek, Fseek, long)
DLPROF_FSEEK(fseeko, Fseeko, off_t)
DLPROF_FSEEK(fseeko64, Fseeko64, off64_t)

#define DLPROF_FTELL(fn, kind, off_type)                                          \
  DLPROF_REAL(fn)                                                                 \
  extern "C" off_type fn(FILE* fp) {                                              \
    return Traced<off_type>(                                                      \
        EventKind::kind, [&] { return real_##fn(fp); },                           \
        [&](Event& e, off_type r, int) {                                          \
          if (!DescribeStreamFd(e, fp)) return false;                             \
          e.offset = r;                                                           \
          return true;                                                            \
        });                                                                       \
  }
DLPROF_FTELL(ftell, Ftell, long)
extern "C" off_t ftello(FILE* fp) {
  return Traced<off_t>(
      EventKind::Ftello, [&] { return real_ftello(fp); },
      [&](Event& e, off_t r, int) {
        if (!DescribeStreamFd(e, fp)) return false;
        e.offset = r;
        return true;
      });
}
DLPROF_FTELL(ftello64, Ftello64, off64_t)

DLPROF_REAL(rewind)
extern "C" void rewind(FILE* fp) {
  Traced<int>(
      EventKind::Rewind,
      [&] {
        real_rewind(fp);
        return 0;
      },
      [&](Event& e, int, int) { return DescribeSeek(e, fp, SEEK_SET); });
}

DLPROF_REAL(fgetpos)
extern "C" int fgetpos(FILE* fp, fpos_t* pos) {
  return Traced<int>(
      EventKind::Fgetpos, [&] { return real_fgetpos(fp, pos); },
      [&](Event& e, int, int) { return DescribeSeek(e, fp, SEEK_CUR); });
}
DLPROF_REAL(fsetpos)
extern "C" int fsetpos(FILE* fp, const fpos_t* pos) {
  return Traced<int>(
      EventKind::Fsetpos, [&] { return real_fsetpos(fp, pos); },
      [&](Event& e, int, int) { return DescribeSeek(e, fp, SEEK_SET); });
}

DLPROF_REAL(fflush)
extern "C" int fflush(FILE* fp) {
  return Traced<int>(
      EventKind::Fflush, [&] { return real_fflush(fp); },
      [&](Event& e, int, int) {
        return DescribeStreamFd(e, fp);
      });
}
