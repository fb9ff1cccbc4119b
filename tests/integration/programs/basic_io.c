/* Single-threaded POSIX I/O with known results.
 *
 * usage: basic_io DIR
 *
 * Works on files in DIR and prints, for every call it makes on them, one
 * line describing the event the tracer must record:
 *
 *   EV <tab> name=read <tab> fd=3 <tab> path=/abs <tab> offset=100 ...
 *
 * Offsets of read/write calls are the kernel's file position before the
 * call, taken with the raw lseek system call (which the tracer does not
 * see); for O_APPEND writes, where the bytes landed. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <sys/sendfile.h>

#include "common.h"

#pragma GCC diagnostic ignored "-Woverride-init"

#ifndef RWF_NOAPPEND
#define RWF_NOAPPEND 0x00000020 /* Linux 6.9; older headers lack it */
#endif

#define NA LLONG_MIN

struct ev {
  const char* name;
  long long fd;
  const char* path;
  long long offset;
  long long size;
  long long bytes;
  long long ret;
  long long err;
  long long newfd;
};

static void emit(struct ev e) {
  printf("EV\tname=%s", e.name);
  if (e.fd != NA) printf("\tfd=%lld", e.fd);
  if (e.path) printf("\tpath=%s", e.path);
  if (e.offset != NA) printf("\toffset=%lld", e.offset);
  if (e.size != NA) printf("\tsize=%lld", e.size);
  if (e.bytes != NA) printf("\tbytes=%lld", e.bytes);
  printf("\tret=%lld\terrno=%lld", e.ret, e.err);
  if (e.newfd != NA) printf("\tnewfd=%lld", e.newfd);
  printf("\n");
}

#define EMIT(...)                                                             \
  emit((struct ev){.fd = NA, .path = NULL, .offset = NA, .size = NA,          \
                   .bytes = NA, .err = 0, .newfd = NA, __VA_ARGS__})

/* The program's own record of which path each fd refers to. */
static const char* fd_path[4096];

static char dir[PATH_MAX / 2], path_a[PATH_MAX], path_b[PATH_MAX], path_c[PATH_MAX],
    path_d[PATH_MAX];
static char buf[65536];

/* A call at the current position: offset is the position before the call
 * (append: where the bytes went). */
#define STREAM(nm, fd_, size_, call)                                           \
  do {                                                                         \
    int f_ = (fd_);                                                            \
    long long pos_ = raw_tell(f_);                                             \
    ssize_t r_ = (call);                                                       \
    int err_ = r_ < 0 ? errno : 0;                                             \
    if (fcntl_is_append(f_) && r_ > 0) pos_ = raw_tell(f_) - r_;               \
    EMIT(.name = nm, .fd = f_, .path = fd_path[f_], .offset = pos_,            \
         .size = (long long)(size_), .bytes = r_ > 0 ? r_ : 0, .ret = r_,     \
         .err = err_);                                                         \
  } while (0)

#define POSITIONAL(nm, fd_, size_, off_, call)                                 \
  do {                                                                         \
    int f_ = (fd_);                                                            \
    long long before_ = raw_tell(f_);                                          \
    ssize_t r_ = (call);                                                       \
    int err_ = r_ < 0 ? errno : 0;                                             \
    CHECK(raw_tell(f_) == before_);                                            \
    EMIT(.name = nm, .fd = f_, .path = fd_path[f_], .offset = (off_),          \
         .size = (long long)(size_), .bytes = r_ > 0 ? r_ : 0, .ret = r_,     \
         .err = err_);                                                         \
  } while (0)

/* A write that appended: where it went is the file's end less its bytes. */
#define APPENDED(nm, fd_, size_, call)                                         \
  do {                                                                         \
    int f_ = (fd_);                                                            \
    ssize_t r_ = (call);                                                       \
    CHECK(r_ > 0);                                                             \
    EMIT(.name = nm, .fd = f_, .path = fd_path[f_],                            \
         .offset = raw_file_size(f_) - r_, .size = (long long)(size_),         \
         .bytes = r_, .ret = r_);                                              \
  } while (0)

#define SEEK(nm, fd_, off_, whence_)                                           \
  do {                                                                         \
    int f_ = (fd_);                                                            \
    off_t r_ = nm(f_, (off_), (whence_));                                      \
    CHECK(r_ >= 0);                                                            \
    EMIT(.name = #nm, .fd = f_, .path = fd_path[f_], .offset = r_, .ret = r_); \
  } while (0)

static int append_fds[4096];
static int fcntl_is_append(int fd) { return append_fds[fd]; }

static int do_open(const char* nm, int fd, const char* path, int flags) {
  CHECK(fd >= 0);
  fd_path[fd] = path;
  append_fds[fd] = (flags & O_APPEND) != 0;
  EMIT(.name = nm, .fd = fd, .path = path, .ret = fd);
  return fd;
}

static void do_close(int fd) {
  const char* p = fd_path[fd];
  int r = close(fd);
  CHECK(r == 0);
  fd_path[fd] = NULL;
  append_fds[fd] = 0;
  EMIT(.name = "close", .fd = fd, .path = p, .ret = 0);
}

static int do_dup(const char* nm, int oldfd, int r) {
  CHECK(r >= 0);
  fd_path[r] = fd_path[oldfd];
  append_fds[r] = append_fds[oldfd];
  EMIT(.name = nm, .fd = oldfd, .path = fd_path[oldfd], .ret = r, .newfd = r);
  return r;
}

int main(int argc, char** argv) {
  CHECK(argc == 2);
  snprintf(dir, sizeof(dir), "%s", argv[1]);
  snprintf(path_a, sizeof(path_a), "%s/a.dat", dir);
  snprintf(path_b, sizeof(path_b), "%s/b.log", dir);
  snprintf(path_c, sizeof(path_c), "%s/c.dat", dir);
  snprintf(path_d, sizeof(path_d), "%s/sub/d.dat", dir);
  for (size_t i = 0; i < sizeof(buf); ++i) buf[i] = (char)('a' + i % 26);

  /* --- writes, seeks and reads at the file position ----------------------- */
  int fd = do_open("open", open(path_a, O_CREAT | O_RDWR | O_TRUNC, 0644), path_a,
                   O_RDWR);
  STREAM("write", fd, 1000, write(fd, buf, 1000));
  STREAM("write", fd, 3000, write(fd, buf, 3000));
  SEEK(lseek, fd, 100, SEEK_SET);
  STREAM("read", fd, 500, read(fd, buf, 500));
  SEEK(lseek, fd, 200, SEEK_CUR);
  STREAM("read", fd, 4096, read(fd, buf, 4096)); /* short: 3200 */
  STREAM("read", fd, 4096, read(fd, buf, 4096)); /* at EOF: 0 */
  SEEK(lseek, fd, -10, SEEK_END);
  SEEK(lseek64, fd, 0, SEEK_CUR);

  /* --- positional calls leave the position alone ------------------------- */
  POSITIONAL("pwrite", fd, 50, 4000, pwrite(fd, buf, 50, 4000));
  STREAM("read", fd, 100, read(fd, buf, 100)); /* 3990..4050: 60 */
  POSITIONAL("pread", fd, 256, 10, pread(fd, buf, 256, 10));
  POSITIONAL("pread64", fd, 128, 4030, pread64(fd, buf, 128, 4030)); /* short */
  POSITIONAL("pwrite64", fd, 77, 5000, pwrite64(fd, buf, 77, 5000)); /* hole */
  POSITIONAL("pread", fd, 64, 9000, pread(fd, buf, 64, 9000));       /* past EOF */

  /* --- vectored ------------------------------------------------------------ */
  struct iovec wv[3] = {{buf, 10}, {buf + 10, 20}, {buf + 30, 30}};
  STREAM("writev", fd, 60, writev(fd, wv, 3));
  SEEK(lseek, fd, 0, SEEK_SET);
  struct iovec rv[2] = {{buf, 100}, {buf + 100, 200}};
  STREAM("readv", fd, 300, readv(fd, rv, 2));
  POSITIONAL("preadv", fd, 300, 1000, preadv(fd, rv, 2, 1000));
  POSITIONAL("pwritev", fd, 60, 6000, pwritev(fd, wv, 3, 6000));
  /* preadv2 with offset -1 reads at, and moves, the file position. */
  STREAM("preadv2", fd, 300, preadv2(fd, rv, 2, -1, 0));
  POSITIONAL("preadv2", fd, 300, 2000, preadv2(fd, rv, 2, 2000, 0));

  /* --- metadata ------------------------------------------------------------ */
  struct stat st;
  CHECK(fstat(fd, &st) == 0);
  EMIT(.name = "fstat", .fd = fd, .path = path_a, .ret = 0);
  CHECK(st.st_size == 6060);
  CHECK(stat(path_a, &st) == 0);
  EMIT(.name = "stat", .path = path_a, .ret = 0);
  CHECK(lstat(path_a, &st) == 0);
  EMIT(.name = "lstat", .path = path_a, .ret = 0);
  CHECK(access(path_a, R_OK) == 0);
  EMIT(.name = "access", .path = path_a, .ret = 0);

  /* --- dup family: the copies name the same file and share its position --- */
  SEEK(lseek, fd, 0, SEEK_SET);
  int fd2 = do_dup("dup", fd, dup(fd));
  STREAM("read", fd2, 100, read(fd2, buf, 100));
  STREAM("read", fd, 100, read(fd, buf, 100));
  STREAM("read", fd2, 100, read(fd2, buf, 100));
  int fd50 = do_dup("dup2", fd, dup2(fd, 50));
  STREAM("write", fd50, 25, write(fd50, buf, 25));
  STREAM("read", fd, 10, read(fd, buf, 10));
  int fd60 = do_dup("fcntl", fd, fcntl(fd, F_DUPFD, 60));
  int fd70 = do_dup("dup3", fd, dup3(fd, 70, O_CLOEXEC));
  SEEK(lseek, fd60, 5990, SEEK_SET);
  STREAM("read", fd70, 1000, read(fd70, buf, 1000)); /* 5990..6060: 70 */
  CHECK(fstat(fd70, &st) == 0);
  EMIT(.name = "fstat", .fd = fd70, .path = path_a, .ret = 0);
  do_close(fd);
  do_close(fd2);
  do_close(fd50);
  do_close(fd60);
  /* fd 70 outlives the fd it was copied from. */
  SEEK(lseek, fd70, 4000, SEEK_SET);
  STREAM("read", fd70, 8, read(fd70, buf, 8));
  do_close(fd70);

  /* --- fd numbers are reused for other files ------------------------------- */
  char sub[PATH_MAX];
  snprintf(sub, sizeof(sub), "%s/sub", dir);
  CHECK(mkdir(sub, 0755) == 0);
  EMIT(.name = "mkdir", .path = sub, .ret = 0);
  int dfd = do_open("open", open(dir, O_RDONLY | O_DIRECTORY), dir, O_RDONLY);
  int fb = do_open("openat",
                   openat(dfd, "b.log", O_CREAT | O_WRONLY | O_APPEND, 0644),
                   path_b, O_APPEND);
  STREAM("write", fb, 11, write(fb, "first line\n", 11));
  SEEK(lseek, fb, 0, SEEK_SET); /* O_APPEND writes go to the end anyway */
  STREAM("write", fb, 12, write(fb, "second line\n", 12));
  struct iovec av[2] = {{"third ", 6}, {"line\n", 5}};
  STREAM("writev", fb, 11, writev(fb, av, 2));
  int fdd = do_open("openat", openat(dfd, "sub/../sub/d.dat", O_CREAT | O_RDWR, 0600),
                    path_d, O_RDWR);
  STREAM("write", fdd, 4096, write(fdd, buf, 4096));
  CHECK(ftruncate(fdd, 1000) == 0);
  EMIT(.name = "ftruncate", .fd = fdd, .path = path_d, .size = 1000, .ret = 0);
  CHECK(fsync(fdd) == 0);
  EMIT(.name = "fsync", .fd = fdd, .path = path_d, .ret = 0);
  CHECK(readahead(fdd, 512, 4096) == 0); /* past the end is no error */
  EMIT(.name = "readahead", .fd = fdd, .path = path_d, .offset = 512, .size = 4096, .ret = 0);
  SEEK(lseek, fdd, 0, SEEK_SET);
  STREAM("read", fdd, 4096, read(fdd, buf, 4096)); /* 1000 after truncate */
  do_close(fb);
  do_close(fdd);
  do_close(dfd);

  int fc = do_open("creat", creat(path_c, 0644), path_c, O_WRONLY);
  STREAM("write", fc, 12345, write(fc, buf, 12345));
  do_close(fc);
  fc = do_open("open", open(path_c, O_RDONLY), path_c, O_RDONLY);
  for (;;) {
    long long pos = raw_tell(fc);
    ssize_t r = read(fc, buf, 5000);
    EMIT(.name = "read", .fd = fc, .path = path_c, .offset = pos, .size = 5000,
         .bytes = r > 0 ? r : 0, .ret = r);
    if (r <= 0) break;
  }
  do_close(fc);

  /* An fd opened where no wrapper sees it (raw system call): named on first
   * use, at the right offsets. */
  int raw = (int)syscall(SYS_openat, AT_FDCWD, path_c, O_RDONLY);
  CHECK(raw >= 0);
  fd_path[raw] = path_c;
  CHECK(syscall(SYS_lseek, raw, 100L, SEEK_SET) == 100);
  STREAM("read", raw, 1000, read(raw, buf, 1000));
  STREAM("read", raw, 1000, read(raw, buf, 1000));
  do_close(raw);
  raw = (int)syscall(SYS_openat, AT_FDCWD, path_c, O_RDONLY);
  CHECK(raw >= 0);
  fd_path[raw] = path_c;
  CHECK(syscall(SYS_lseek, raw, 12000L, SEEK_SET) == 12000);
  STREAM("read", raw, 1000, read(raw, buf, 1000)); /* short: 345 */
  STREAM("read", raw, 1000, read(raw, buf, 1000)); /* at EOF */
  do_close(raw);

  /* In-kernel copies (each event names its source) move the destination's
   * position when they write at it, as a write would: the writes after
   * them are recorded where they went. */
  char path_e[PATH_MAX];
  snprintf(path_e, sizeof(path_e), "%s/e.dat", dir);
  int src = do_open("open", open(path_c, O_RDONLY), path_c, O_RDONLY);
  int dst = do_open("open", open(path_e, O_CREAT | O_WRONLY | O_TRUNC, 0644), path_e, O_WRONLY);
  STREAM("copy_file_range", src, 40, copy_file_range(src, NULL, dst, NULL, 40, 0));
  STREAM("sendfile", src, 10, sendfile(dst, src, NULL, 10));
  STREAM("write", dst, 5, write(dst, "after", 5));
  loff_t out_at = 1000; /* an explicit destination offset: the position stays */
  STREAM("copy_file_range", src, 20, copy_file_range(src, NULL, dst, &out_at, 20, 0));
  STREAM("write", dst, 5, write(dst, "again", 5));
  /* A copy from a file the tracer leaves out (/etc): the event names its
   * destination, which it writes. */
  int etc = open("/etc/passwd", O_RDONLY);
  if (etc >= 0) {
    ssize_t r = sendfile(dst, etc, NULL, 100);
    EMIT(.name = "sendfile", .fd = dst, .path = path_e, .size = 100, .bytes = r > 0 ? r : 0,
         .ret = r);
    close(etc);
  }
  do_close(src);
  do_close(dst);
  /* Into an fd the tracer first meets in the copy (opened by number here;
   * inherited, as `prog > file`, alike): the kernel's position it finds
   * there already counts the copy's bytes, so the writes after it are
   * where they went, 500 and 300 (they were recorded at 1000 and 600).
   * The position is asked of the kernel after the write only: an lseek by
   * number before it would set the tracer's shadow position right. */
  src = do_open("open", open(path_c, O_RDONLY), path_c, O_RDONLY);
  for (int i = 0; i < 2; ++i) {
    dst = (int)syscall(SYS_openat, AT_FDCWD, path_e, O_WRONLY | (i == 0 ? O_TRUNC : 0));
    CHECK(dst >= 0);
    fd_path[dst] = path_e;
    if (i == 0) {
      STREAM("sendfile", src, 500, sendfile(dst, src, NULL, 500));
    } else {
      STREAM("copy_file_range", src, 300, copy_file_range(src, NULL, dst, NULL, 300, 0));
    }
    CHECK(write(dst, "after", 5) == 5);
    const long long at = raw_tell(dst) - 5;
    CHECK(at == (i == 0 ? 500 : 300));
    EMIT(.name = "write", .fd = dst, .path = path_e, .offset = at, .size = 5, .bytes = 5,
         .ret = 5);
    do_close(dst);
  }
  do_close(src);

  /* --- writes that append wherever they were asked to go ------------------- */
  char path_f[PATH_MAX];
  snprintf(path_f, sizeof(path_f), "%s/f.dat", dir);
  int fl = do_open("open", open(path_f, O_CREAT | O_WRONLY | O_TRUNC | O_APPEND, 0644), path_f,
                   O_APPEND);
  STREAM("write", fl, 1000, write(fl, buf, 1000));
  APPENDED("pwrite", fl, 100, pwrite(fl, buf, 100, 0)); /* Linux: at the end */
  APPENDED("pwritev", fl, 60, pwritev(fl, wv, 3, 10));
  /* RWF_NOAPPEND (Linux 6.9; a kernel before refuses it) writes at the
   * offset given, O_APPEND or not (it was recorded at the end, @1100). */
  POSITIONAL("pwritev2", fl, 60, 5, pwritev2(fl, wv, 3, 5, RWF_NOAPPEND));
  do_close(fl);
  int ff = do_open("open", open(path_f, O_RDWR), path_f, O_RDWR);
  APPENDED("pwritev2", ff, 60, pwritev2(ff, wv, 3, 0, RWF_APPEND));
  APPENDED("pwritev2", ff, 60, pwritev2(ff, wv, 3, -1, RWF_APPEND)); /* moves to the end */
  STREAM("write", ff, 5, write(ff, "after", 5));
  /* A count the kernel refuses unread: the array is one iovec long. */
  static volatile int huge = 2000000000;
  STREAM("readv", ff, 0, readv(ff, rv, huge));

  /* --- positions and fds changed by number, or by splice (not recorded) ----- */
  CHECK(syscall(SYS_lseek, ff, 10L, SEEK_SET) == 10);
  CHECK(syscall(SYS_read, ff, buf, 90) == 90);
  STREAM("read", ff, 100, read(ff, buf, 100)); /* at 100 */
  int pipe_fds[2];
  CHECK(pipe(pipe_fds) == 0);
  CHECK(splice(ff, NULL, pipe_fds[1], NULL, 50, 0) == 50);
  STREAM("read", ff, 100, read(ff, buf, 100)); /* at 250 */
  CHECK(read(pipe_fds[0], buf, 50) == 50);
  int fa = do_open("open", open(path_a, O_RDONLY), path_a, O_RDONLY);
  CHECK(syscall(SYS_dup2, ff, fa) == fa); /* fa now names f.dat */
  fd_path[fa] = path_f;
  SEEK(lseek, fa, 0, SEEK_SET);
  STREAM("read", fa, 10, read(fa, buf, 10));
  CHECK(syscall(SYS_close, fa) == 0);
  CHECK(syscall(SYS_close, ff) == 0);
  /* The closed fds' numbers now name pipes: their reads are not the file's. */
  int again[2];
  CHECK(pipe(again) == 0 && (again[0] == ff || again[0] == fa));
  CHECK(write(again[1], "pipe", 4) == 4 && read(again[0], buf, 4) == 4);

  /* memfd_create's file is memory, as a pipe is: no event names it (its
   * reads were the data set's, "/memfd:basic_io (deleted)"). */
  int mem = memfd_create("basic_io", 0);
  CHECK(mem >= 0);
  CHECK(write(mem, buf, 4096) == 4096 && pread(mem, buf, 4096, 0) == 4096);
  void* map = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, mem, 0);
  CHECK(map != MAP_FAILED && munmap(map, 4096) == 0);
  CHECK(close(mem) == 0);

  /* dup and fcntl by number share the position; preadv2 at -1 by number
   * moves it; F_SETFL by number turns O_APPEND on. */
  int fn = do_open("open", open(path_f, O_RDWR), path_f, O_RDWR);
  int fn_dup = (int)syscall(SYS_dup, fn);
  int fn_80 = (int)syscall(SYS_fcntl, fn, F_DUPFD, 80);
  CHECK(fn_dup >= 0 && fn_80 >= 80);
  fd_path[fn_dup] = fd_path[fn_80] = path_f;
  STREAM("read", fn, 10, read(fn, buf, 10));
  STREAM("read", fn_dup, 10, read(fn_dup, buf, 10));
  STREAM("read", fn_80, 10, read(fn_80, buf, 10));
  struct iovec ten = {buf, 10};
  CHECK(syscall(SYS_preadv2, fn, &ten, 1, -1L, -1L, 0L) == 10);
  STREAM("read", fn, 10, read(fn, buf, 10));
  CHECK(syscall(SYS_fcntl, fn, F_SETFL, (long)O_APPEND) == 0);
  append_fds[fn] = append_fds[fn_dup] = append_fds[fn_80] = 1;
  STREAM("write", fn_dup, 5, write(fn_dup, "tail!", 5));
  do_close(fn);
  do_close(fn_dup);
  do_close(fn_80);
  return 0;
}
