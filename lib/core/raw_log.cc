#include "lib/core/raw_log.h"

#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>

namespace dlprof::core {
namespace {

bool g_stderr_noted = false;
bool g_quiet = false;
struct stat g_stderr;  // st_mode 0: fd 2 was closed at the start

// False when fd 2 has become a regular file other than the stderr the
// program started with: a file of the program's, not a place for our lines.
bool StderrStillOurs() {
  struct stat now;
  if (syscall(SYS_fstat, 2, &now) != 0) return false;
  if (!S_ISREG(now.st_mode) || !g_stderr_noted) return true;
  return S_ISREG(g_stderr.st_mode) && now.st_dev == g_stderr.st_dev &&
         now.st_ino == g_stderr.st_ino;
}

}  // namespace

void NoteStderr() {
  if (syscall(SYS_fstat, 2, &g_stderr) != 0) g_stderr.st_mode = 0;
  g_stderr_noted = true;
}

void SetLogQuiet(bool quiet) { g_quiet = quiet; }

void RawLog(const char* fmt, ...) {
  if (g_quiet) return;
  ErrnoSaver keep_errno;
  if (!StderrStillOurs()) return;
  char buf[1024];
  int n = snprintf(buf, sizeof(buf), "dlprof: ");
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(buf + n, sizeof(buf) - n - 1, fmt, ap);
  va_end(ap);
  if (m < 0) m = 0;
  n += m;
  if (n > static_cast<int>(sizeof(buf)) - 2) n = sizeof(buf) - 2;
  buf[n++] = '\n';
  const char* p = buf;
  while (n > 0) {
    long w = syscall(SYS_write, 2, p, n);
    if (w <= 0) break;
    p += w;
    n -= static_cast<int>(w);
  }
}

}  // namespace dlprof::core
