/* Failing calls: return values and errno exactly as without the tracer.
 *
 * usage: errors DIR
 *
 * DIR must hold a regular file "file" (a few bytes) and a directory "subdir".
 * Prints one line per call: "CASE <name> <call> <path or -> <ret> <errno>"
 * (errno only where the call failed), and "ERRNO_KEPT <name> <errno>" where
 * a successful call must leave errno as it found it; first "START_ERRNO
 * <errno>", errno as main() finds it. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "common.h"

static char dir[PATH_MAX / 2];

static const char* at(const char* name) {
  static char paths[16][PATH_MAX];
  static int next;
  char* p = paths[next++ % 16];
  snprintf(p, PATH_MAX, "%s/%s", dir, name);
  return p;
}

static void report(const char* name, const char* call, const char* path, long long r,
                   int err) {
  printf("CASE %s %s %s %lld %d\n", name, call, path ? path : "-", r, r < 0 ? err : 0);
}

#define TRY(name, call_name, path, expr)        \
  do {                                          \
    errno = 0;                                  \
    long long r_ = (long long)(expr);           \
    report(name, call_name, path, r_, errno);   \
  } while (0)

int main(int argc, char** argv) {
  /* A program starts with errno 0 (C11 7.5): the tracer's start leaves it. */
  printf("START_ERRNO %d\n", errno);
  CHECK(argc == 2);
  snprintf(dir, sizeof(dir), "%s", argv[1]);
  char buf[256];
  struct stat st;

  const char* missing = at("missing");
  const char* file = at("file");
  const char* subdir = at("subdir");
  const char* under_file = at("file/child");

  TRY("enoent", "open", missing, open(missing, O_RDONLY));
  TRY("enotdir", "open", under_file, open(under_file, O_RDONLY));
  TRY("eisdir_open", "open", subdir, open(subdir, O_WRONLY));
  TRY("eexist", "open", file, open(file, O_CREAT | O_EXCL | O_WRONLY, 0644));
  TRY("enoent_openat", "openat", missing, openat(AT_FDCWD, missing, O_RDONLY));
  TRY("enoent_creat", "creat", at("nodir/new"), creat(at("nodir/new"), 0644));
  TRY("ebadf_read", "read", NULL, read(999, buf, sizeof(buf)));
  TRY("ebadf_close", "close", NULL, close(999));
  TRY("ebadf_fstat", "fstat", NULL, fstat(999, &st));

  int dfd = open(subdir, O_RDONLY | O_DIRECTORY);
  CHECK(dfd >= 0);
  TRY("eisdir_read", "read", subdir, read(dfd, buf, sizeof(buf)));
  TRY("eisdir_pread", "pread", subdir, pread(dfd, buf, sizeof(buf), 0));
  CHECK(close(dfd) == 0);

  int fd = open(file, O_RDONLY);
  CHECK(fd >= 0);
  /* An empty path without AT_EMPTY_PATH names no file (ENOENT), though the
   * fd it is relative to is on one: "-". */
  TRY("enoent_fstatat_empty", "fstatat", NULL, fstatat(fd, "", &st, 0));
  struct statx stx;
  TRY("enoent_statx_empty", "statx", NULL, statx(fd, "", 0, STATX_SIZE, &stx));
  dfd = open(subdir, O_RDONLY | O_DIRECTORY);
  CHECK(dfd >= 0);
  TRY("enoent_openat_empty", "openat", NULL, openat(dfd, "", O_RDONLY));
  CHECK(close(dfd) == 0);
  TRY("ebadf_write_rdonly", "write", file, write(fd, "x", 1));
  volatile off_t negative = -1; /* hidden from the compiler's checks */
  TRY("einval_pread", "pread", file, pread(fd, buf, 10, negative));
  TRY("einval_lseek", "lseek", file, lseek(fd, 0, 12345));
  TRY("einval_lseek_neg", "lseek", file, lseek(fd, -100, SEEK_SET));
  struct iovec iov = {buf, 10};
  volatile int bad_count = -1;
  TRY("einval_readv", "readv", file, readv(fd, &iov, bad_count));
  TRY("einval_ftruncate_rdonly", "ftruncate", file, ftruncate(fd, 0));
  TRY("eisdir_unlink", "unlink", subdir, unlink(subdir));
  TRY("enoent_stat", "stat", missing, stat(missing, &st));
  TRY("enoent_access", "access", missing, access(missing, R_OK));
  TRY("enoent_unlink", "unlink", missing, unlink(missing));
  TRY("enoent_rename", "rename", missing, rename(missing, at("renamed")));
  TRY("eexist_mkdir", "mkdir", subdir, mkdir(subdir, 0755));
  TRY("enotempty_rmdir", "rmdir", dir, rmdir(dir));

  /* Memory the kernel cannot read: EFAULT, and no crash in the tracer,
   * which would read the same path or iovec array. */
  volatile uintptr_t unmapped = 0x10;
  const char* bad_path = (const char*)unmapped;
  TRY("efault_open", "open", NULL, open(bad_path, O_RDONLY));
  TRY("efault_stat", "stat", NULL, stat(bad_path, &st));
  TRY("efault_access", "access", NULL, access(bad_path, R_OK));
  TRY("efault_rename", "rename", NULL, rename(bad_path, at("renamed")));
  TRY("efault_readv", "readv", NULL, readv(fd, (const struct iovec*)unmapped, 1));
  /* Into memory the kernel cannot write: the tracer reads none of it, so
   * the file, fd and count are still recorded, as strace shows them. */
  TRY("efault_read", "read", file, read(fd, (void*)unmapped, 4));
  TRY("efault_pread", "pread", file, pread(fd, (void*)unmapped, 4, 0));
  /* A position shared with a dup: the kernel's, where the failed call
   * started (5), not the @0 a failed call's -1 bytes made of it. */
  int shared = dup(fd);
  lseek(fd, 5, SEEK_SET);
  TRY("efault_read_dup", "read", file, read(shared, (void*)unmapped, 4));
  close(shared);

  /* Successful calls leave errno as it was. */
  errno = 77;
  ssize_t r = read(fd, buf, 4);
  printf("ERRNO_KEPT read %zd %d\n", r, errno);
  errno = 78;
  r = pread(fd, buf, 4, 0);
  printf("ERRNO_KEPT pread %zd %d\n", r, errno);
  errno = 79;
  int s = fstat(fd, &st);
  printf("ERRNO_KEPT fstat %d %d\n", s, errno);
  errno = 80;
  off_t o = lseek(fd, 0, SEEK_SET);
  printf("ERRNO_KEPT lseek %lld %d\n", (long long)o, errno);
  errno = 81;
  s = close(fd);
  printf("ERRNO_KEPT close %d %d\n", s, errno);
  errno = 82;
  s = stat(file, &st);
  printf("ERRNO_KEPT stat %d %d\n", s, errno);
  return 0;
}
