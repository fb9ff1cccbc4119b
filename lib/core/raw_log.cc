#include "lib/core/raw_log.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>

namespace dlprof::core {

void RawLog(const char* fmt, ...) {
  ErrnoSaver keep_errno;
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
