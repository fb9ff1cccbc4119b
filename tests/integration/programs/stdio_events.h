/* What the STDIO test programs share (stdio_all.c, stdio_stdout.c): the
 * line each prints for every call it makes, naming the event the tracer
 * must record:
 *
 *   EV <tab> name=fread <tab> fd=3 <tab> path=/abs <tab> offset=0 <tab> size=500 ...
 *
 * offset is the stream position before the call (after it for the seek
 * class), taken with libc's own ftello (`libc_ftello`, looked up in
 * libc.so.6 itself so that the tracer does not see it); size the bytes
 * asked, bytes the bytes the stream really moved (the distance its position
 * moved), ret what the call returned (0/-1 for fgets, the new fd for
 * fopen/freopen/fdopen). */
#ifndef DLPROF_TESTS_INTEGRATION_PROGRAMS_STDIO_EVENTS_H_
#define DLPROF_TESTS_INTEGRATION_PROGRAMS_STDIO_EVENTS_H_

#include <dlfcn.h>
#include <limits.h>
#include <sys/types.h>

#include "common.h"

#define NA LLONG_MIN

static off_t (*libc_ftello)(FILE*);
static char fd_path[1024][PATH_MAX];

static long long pos_of(FILE* fp) { return (long long)libc_ftello(fp); }

/* Hides the object's size from the compiler (no fortification). */
__attribute__((unused)) static char* launder(char* p) {
  __asm__ volatile("" : "+r"(p));
  return p;
}

/* Counts the compiler cannot see (fortified calls go to the _chk forms). */
__attribute__((unused)) static volatile int runtime_n;

/* Where the expected events go (stdout unless a program's calls need it). */
static FILE* g_events;

static void emit(const char* name, int fd, long long offset, long long size,
                 long long bytes, long long ret) {
  FILE* out = g_events != NULL ? g_events : stdout;
  fprintf(out, "EV\tname=%s\tfd=%d\tpath=%s", name, fd, fd_path[fd]);
  if (offset != NA) fprintf(out, "\toffset=%lld", offset);
  if (size != NA) fprintf(out, "\tsize=%lld", size);
  if (bytes != NA) fprintf(out, "\tbytes=%lld", bytes);
  fprintf(out, "\tret=%lld\terrno=0\n", ret);
}

/* A read or write at the stream position: bytes = how far it moved. */
#define IO(nm, fp_, size_, call)                                               \
  do {                                                                         \
    FILE* s_ = (fp_);                                                          \
    long long before_ = pos_of(s_);                                            \
    long long r_ = (long long)(call);                                          \
    emit(nm, fileno(s_), before_, (long long)(size_), pos_of(s_) - before_,    \
         r_);                                                                  \
  } while (0)

/* fgets: a pointer result is recorded as 0 (or -1 for NULL). */
#define GETS(nm, fp_, n_, call)                                                \
  do {                                                                         \
    FILE* s_ = (fp_);                                                          \
    long long before_ = pos_of(s_);                                            \
    char* r_ = (call);                                                         \
    emit(nm, fileno(s_), before_, (long long)(n_), pos_of(s_) - before_,       \
         r_ ? 0 : -1);                                                         \
  } while (0)

/* A write on an append stream: it lands at the end of the file, `*end_`,
 * wherever the stream's position was. */
#define APPEND(nm, fp_, size_, end_, call)                                     \
  do {                                                                         \
    FILE* s_ = (fp_);                                                          \
    long long at_ = *(end_);                                                   \
    long long r_ = (long long)(call);                                          \
    *(end_) += (size_);                                                        \
    emit(nm, fileno(s_), at_, (long long)(size_), (long long)(size_), r_);     \
  } while (0)

/* fflush: the stream and its result. */
#define FLUSH(fp_)                                                             \
  do {                                                                         \
    FILE* s_ = (fp_);                                                          \
    long long r_ = fflush(s_);                                                 \
    emit("fflush", fileno(s_), NA, NA, NA, r_);                                \
  } while (0)

/* Seek class: offset is the position after the call. */
#define SEEK(nm, fp_, call)                                                    \
  do {                                                                         \
    FILE* s_ = (fp_);                                                          \
    long long r_ = (long long)(call);                                          \
    emit(nm, fileno(s_), pos_of(s_), NA, NA, r_);                              \
  } while (0)

static FILE* do_fopen(const char* nm, FILE* (*fn)(const char*, const char*),
                      const char* path, const char* mode) {
  FILE* fp = fn(path, mode);
  CHECK(fp != NULL);
  int fd = fileno(fp);
  snprintf(fd_path[fd], PATH_MAX, "%s", path);
  emit(nm, fd, NA, NA, NA, fd);
  return fp;
}

static void do_fclose(FILE* fp) {
  int fd = fileno(fp);
  int r = fclose(fp);
  CHECK(r == 0);
  emit("fclose", fd, NA, NA, NA, r);
}

/* libc's own ftello, which the tracer does not see. */
static void find_libc_ftello(void) {
  void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  CHECK(libc != NULL);
  libc_ftello = (off_t(*)(FILE*))dlsym(libc, "ftello");
  CHECK(libc_ftello != NULL);
}

#endif /* DLPROF_TESTS_INTEGRATION_PROGRAMS_STDIO_EVENTS_H_ */
