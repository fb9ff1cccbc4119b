/* Failure paths of many wrappers: every call prints its return value and
 * errno (whatever the call left there, also on success) as
 * "CASE <name> <event> <ret> <errno>", where <event> is the event
 * the trace must hold for it (with that return value and errno) or "-" when
 * the call concerns nothing the tracer follows (a bad fd, a pipe).
 * Successful calls made with errno preset to 77 print "KEPT <name> <errno>":
 * the tracer must leave errno alone.
 *
 *   errs DIR      (DIR holds "file", 13 bytes, and "sub/", a directory
 *                  with one file in it)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/uio.h>

#include "rel.h"

#define CASE(name, event, expr)                                                 \
  do {                                                                          \
    errno = 0;                                                                  \
    long long r_ = (long long)(expr);                                           \
    int e_ = errno;                                                             \
    printf("CASE %s %s %lld %d\n", name, event, r_, e_);                         \
  } while (0)

/* Pointer results: 0 for a pointer, -1 for NULL (or MAP_FAILED). */
#define PCASE(name, event, expr)                                                \
  do {                                                                          \
    errno = 0;                                                                  \
    void* p_ = (void*)(expr);                                                   \
    int e_ = errno;                                                             \
    int fail_ = p_ == NULL || p_ == MAP_FAILED;                                 \
    printf("CASE %s %s %d %d\n", name, event, fail_ ? -1 : 0, e_);               \
  } while (0)

/* Calls that return an error number instead of setting errno. */
#define RCASE(name, event, expr)                                                \
  do {                                                                          \
    errno = 0;                                                                  \
    int r_ = (expr);                                                            \
    printf("CASE %s %s %d %d\n", name, event, r_, errno);                       \
  } while (0)

#define KEPT(name, expr)                                                        \
  do {                                                                          \
    errno = 77;                                                                 \
    long long r_ = (long long)(expr);                                           \
    printf("KEPT %s %d%s\n", name, errno, r_ < 0 ? " (failed)" : "");          \
  } while (0)

static void on_alarm(int sig) { (void)sig; }

static void arm_alarm(void) {
  struct itimerval it = {{0, 0}, {0, 50000}};
  CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0);
}

int main(int argc, char** argv) {
  CHECK(argc == 2);
  const char* dir = argv[1];
  char file[PATH_MAX], sub[PATH_MAX], missing[PATH_MAX], other[PATH_MAX], sub_file[PATH_MAX];
  snprintf(file, sizeof(file), "%s/file", dir);
  snprintf(sub, sizeof(sub), "%s/sub", dir);
  snprintf(sub_file, sizeof(sub_file), "%s/sub/inner", dir);
  snprintf(missing, sizeof(missing), "%s/missing", dir);
  snprintf(other, sizeof(other), "%s/other", dir);
  char buf[256];
  struct stat st;
  struct iovec iov = {buf, sizeof(buf)};
  setvbuf(stdout, NULL, _IOLBF, 0);

  /* --- open family ---------------------------------------------------- */
  CASE("open_enoent", "open", open(missing, O_RDONLY));
  CASE("openat_enoent", "openat", openat(AT_FDCWD, missing, O_RDONLY));
  CASE("creat_enoent", "creat", creat("/nonexistent-dir/x", 0644));
  CASE("open_enotdir", "open", open(file, O_RDONLY | O_DIRECTORY));
  CASE("open_eisdir", "open", open(sub, O_WRONLY));
  CASE("open_eexist", "open", open(file, O_CREAT | O_EXCL | O_WRONLY, 0644));
  CASE("close_ebadf", "-", close(1000));

  int fd = open(file, O_RDONLY);
  CHECK(fd >= 0);
  int dfd = open(sub, O_RDONLY | O_DIRECTORY);
  CHECK(dfd >= 0);
  int pipefd[2];
  CHECK(pipe(pipefd) == 0);

  /* --- read/write ------------------------------------------------------- */
  CASE("read_ebadf", "-", read(1000, buf, 10));
  CASE("read_eisdir", "read", read(dfd, buf, 10));
  CASE("read_short", "read", read(fd, buf, 100));
  CASE("read_eof", "read", read(fd, buf, 100));
  CASE("write_rdonly_ebadf", "write", write(fd, "x", 1));
  CASE("write_ebadf", "-", write(1000, "x", 1));
  CASE("pread_einval", "pread", pread(fd, buf, 10, -1));
  CASE("pread_eisdir", "pread", pread(dfd, buf, 10, 0));
  CASE("pread_short", "pread", pread(fd, buf, 100, 10));
  CASE("pread_past_eof", "pread", pread(fd, buf, 100, 1000));
  CASE("pwrite_ebadf", "pwrite", pwrite(fd, "x", 1, 0));
  CASE("readv_ebadf", "-", readv(1000, &iov, 1));
  CASE("writev_ebadf", "writev", writev(fd, &iov, 1));
  CASE("preadv_einval", "preadv", preadv(fd, &iov, 1, -5));
  CASE("preadv2_short", "preadv2", preadv2(fd, &iov, 1, 3, 0));
  CASE("pwritev2_ebadf", "pwritev2", pwritev2(fd, &iov, 1, 0, 0));
  CASE("lseek_einval", "lseek", lseek(fd, 0, 99));
  CASE("lseek_neg", "lseek", lseek(fd, -100, SEEK_SET));
  CASE("lseek_espipe", "-", lseek(pipefd[0], 0, SEEK_CUR));
  CASE("lseek_ebadf", "-", lseek(1000, 0, SEEK_SET));

  /* --- sync, size ------------------------------------------------------- */
  CASE("fsync_ebadf", "-", fsync(1000));
  CASE("fdatasync_einval", "-", fdatasync(pipefd[0]));
  CASE("ftruncate_rdonly", "ftruncate", ftruncate(fd, 0));
  CASE("truncate_enoent", "truncate", truncate(missing, 0));
  CASE("fallocate_ebadf", "fallocate", fallocate(fd, 0, 0, 10));
  RCASE("posix_fallocate_ebadf", "posix_fallocate", posix_fallocate(fd, 0, 10));
  CASE("readahead_ebadf", "-", readahead(1000, 0, 10));
  CASE("readahead_eisdir", "readahead", readahead(dfd, 0, 10));
  CASE("readahead_pipe", "-", readahead(pipefd[0], 0, 10));
  RCASE("posix_fadvise_einval", "posix_fadvise", posix_fadvise(fd, 0, 0, 99));

  /* --- metadata --------------------------------------------------------- */
  CASE("stat_enoent", "stat", stat(missing, &st));
  CASE("lstat_enoent", "lstat", lstat(missing, &st));
  CASE("fstat_ebadf", "-", fstat(1000, &st));
  CASE("fstatat_enoent", "fstatat", fstatat(AT_FDCWD, missing, &st, 0));
  struct statx stx;
  CASE("statx_enoent", "statx", statx(AT_FDCWD, missing, 0, STATX_ALL, &stx));
  CASE("access_enoent", "access", access(missing, R_OK));
  CASE("faccessat_enoent", "faccessat", faccessat(AT_FDCWD, missing, R_OK, 0));
  CASE("unlink_enoent", "unlink", unlink(missing));
  CASE("unlink_eisdir", "unlink", unlink(sub));
  CASE("unlinkat_enoent", "unlinkat", unlinkat(AT_FDCWD, missing, 0));
  CASE("rename_enoent", "rename", rename(missing, other));
  CASE("renameat_enoent", "renameat", renameat(AT_FDCWD, missing, AT_FDCWD, other));
  CASE("renameat2_eexist", "renameat2",
       renameat2(AT_FDCWD, file, AT_FDCWD, sub, RENAME_NOREPLACE));
  CASE("mkdir_eexist", "mkdir", mkdir(sub, 0755));
  CASE("mkdirat_enoent", "mkdirat", mkdirat(AT_FDCWD, "/nonexistent-dir/x", 0755));
  CASE("rmdir_enotempty", "rmdir", rmdir(sub));
  CASE("rmdir_enoent", "rmdir", rmdir(missing));
  PCASE("opendir_enoent", "opendir", opendir(missing));
  PCASE("fdopendir_ebadf", "-", fdopendir(1000));
  DIR* d = opendir(sub);
  CHECK(d != NULL);
  int entries = 0;
  errno = 77;
  while (readdir(d) != NULL) ++entries;
  printf("KEPT readdir_end %d entries=%d\n", errno, entries);
  CASE("closedir", "closedir", closedir(d));

  /* --- maps, dups, copies ----------------------------------------------- */
  PCASE("mmap_ebadf", "-", mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, 1000, 0));
  PCASE("mmap_eacces", "mmap", mmap(NULL, 4096, PROT_WRITE, MAP_SHARED, fd, 0));
  CASE("munmap_einval", "-", munmap((void*)1, 4096));
  CASE("msync_einval", "-", msync((void*)1, 4096, MS_SYNC));
  CASE("dup_ebadf", "-", dup(1000));
  CASE("dup2_ebadf", "-", dup2(1000, 1001));
  CASE("dup3_einval", "dup3", dup3(fd, fd, 0));
  CASE("fcntl_ebadf", "-", fcntl(1000, F_GETFL));
  CASE("fcntl_dupfd_einval", "fcntl", fcntl(fd, F_DUPFD, -1));
  CASE("sendfile_ebadf", "-", sendfile(1000, fd, NULL, 10));
  CASE("copy_file_range_ebadf", "copy_file_range",
       copy_file_range(fd, NULL, 1000, NULL, 10, 0));

  /* --- stdio ------------------------------------------------------------- */
  PCASE("fopen_enoent", "fopen", fopen(missing, "r"));
  PCASE("fopen_eisdir", "fopen", fopen(sub, "w"));
  PCASE("fdopen_ebadf", "-", fdopen(1000, "r"));
  FILE* f = fopen(file, "r");
  CHECK(f != NULL);
  CASE("fread_short", "fread", fread(buf, 1, 100, f));
  CASE("fread_eof", "fread", fread(buf, 1, 100, f));
  printf("FEOF %d\n", feof(f) != 0);
  PCASE("fgets_eof", "fgets", fgets(buf, sizeof(buf), f));
  CASE("fgetc_eof", "fgetc", fgetc(f));
  char* line = NULL;
  size_t cap = 0;
  CASE("getline_eof", "getline", getline(&line, &cap, f));
  free(line);
  CASE("fwrite_rdonly", "fwrite", fwrite("x", 1, 1, f));
  printf("FERROR %d\n", ferror(f) != 0);
  clearerr(f);
  CASE("fputs_rdonly", "fputs", fputs("x", f));
  CASE("fputc_rdonly", "fputc", fputc('x', f));
  CASE("fprintf_rdonly", "fprintf", fprintf(f, "%d", 42));
  clearerr(f);
  CASE("fseek_einval", "fseek", fseek(f, 0, 99));
  CASE("fseek_neg", "fseek", fseek(f, -100, SEEK_SET));
  rewind(f);
  int scanned = 0;
  CASE("fscanf_match", "fscanf", fscanf(f, "%d", &scanned));
  CASE("fclose", "fclose", fclose(f));
  FILE* pf = fdopen(dup(pipefd[1]), "w");
  CHECK(pf != NULL);
  CASE("ftell_espipe", "-", ftell(pf));
  fclose(pf);

  /* --- errno kept on success --------------------------------------------- */
  KEPT("pread", pread(fd, buf, 5, 0));
  KEPT("read", read(fd, buf, 5));
  KEPT("lseek", lseek(fd, 0, SEEK_SET));
  KEPT("fstat", fstat(fd, &st));
  KEPT("stat", stat(file, &st));
  int fd2 = dup(fd);
  KEPT("close", close(fd2));
  FILE* g = fopen(file, "r");
  KEPT("fread", fread(buf, 1, 5, g));
  KEPT("fclose", fclose(g));

  /* --- EINTR: a signal without SA_RESTART during a blocking read --------- */
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_alarm;
  sa.sa_flags = 0; /* no SA_RESTART */
  sigemptyset(&sa.sa_mask);
  CHECK(sigaction(SIGALRM, &sa, NULL) == 0);
  arm_alarm();
  CASE("read_eintr", "-", read(pipefd[0], buf, 10));
  arm_alarm();
  CASE("readv_eintr", "-", readv(pipefd[0], &iov, 1));
  FILE* rp = fdopen(dup(pipefd[0]), "r");
  CHECK(rp != NULL);
  arm_alarm();
  PCASE("fgets_eintr", "-", fgets(buf, sizeof(buf), rp));
  printf("FERROR %d\n", ferror(rp) != 0);
  fclose(rp);
  /* A FIFO in the traced directory: the EINTR is in the trace. */
  char fifo[PATH_MAX];
  snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
  CHECK(mkfifo(fifo, 0600) == 0);
  int ff = open(fifo, O_RDWR);
  CHECK(ff >= 0);
  arm_alarm();
  CASE("fifo_read_eintr", "read", read(ff, buf, 10));
  CHECK(close(ff) == 0);
  CHECK(unlink(fifo) == 0);

  CASE("close_twice_first", "close", close(dfd));
  CASE("close_twice_second", "-", close(dfd));
  CHECK(close(fd) == 0);
  return 0;
}
