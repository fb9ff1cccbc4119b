/* Moves a secret through every kind of buffer-carrying call.
 *
 *   secret DIR     (the secret is the first line of stdin)
 *
 * Writes it to DIR/data.txt with write, pwrite, writev, fwrite, fputs,
 * fprintf and through a shared mapping, then reads it back with read,
 * pread, readv, fread, fgets and getline; prints "OK <bytes>" when every
 * read gave the secret back. The trace must hold sizes and offsets only.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include "rel.h"

int main(int argc, char** argv) {
  CHECK(argc == 2);
  char secret[256];
  long n = 0;
  char c;
  while (n < (long)sizeof(secret) - 2 && syscall(SYS_read, 0, &c, 1) == 1 && c != '\n') {
    secret[n++] = c;
  }
  CHECK(n > 0);
  secret[n++] = '\n';
  secret[n] = '\0';
  char path[PATH_MAX];
  snprintf(path, sizeof(path), "%s/data.txt", argv[1]);

  int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);
  CHECK(fd >= 0);
  CHECK(write(fd, secret, (size_t)n) == n);
  CHECK(pwrite(fd, secret, (size_t)n, n) == n);
  struct iovec iov[2] = {{secret, (size_t)n / 2}, {secret + n / 2, (size_t)(n - n / 2)}};
  CHECK(lseek(fd, 2 * n, SEEK_SET) == 2 * n);
  CHECK(writev(fd, iov, 2) == n);
  CHECK(close(fd) == 0);

  FILE* f = fopen(path, "a");
  CHECK(f != NULL);
  CHECK(fwrite(secret, 1, (size_t)n, f) == (size_t)n);
  CHECK(fputs(secret, f) >= 0);
  CHECK(fprintf(f, "%s", secret) == n);
  CHECK(fclose(f) == 0);

  fd = open(path, O_RDWR);
  CHECK(fd >= 0);
  CHECK(ftruncate(fd, 7 * n) == 0);
  char* map = mmap(NULL, (size_t)(7 * n), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  CHECK(map != MAP_FAILED);
  memcpy(map + 6 * n, secret, (size_t)n);
  CHECK(msync(map, (size_t)(7 * n), MS_SYNC) == 0);
  CHECK(munmap(map, (size_t)(7 * n)) == 0);

  char back[256];
  int ok = 1;
  CHECK(lseek(fd, 0, SEEK_SET) == 0);
  CHECK(read(fd, back, (size_t)n) == n);
  ok &= memcmp(back, secret, (size_t)n) == 0;
  CHECK(pread(fd, back, (size_t)n, n) == n);
  ok &= memcmp(back, secret, (size_t)n) == 0;
  struct iovec riov = {back, (size_t)n};
  CHECK(lseek(fd, 2 * n, SEEK_SET) == 2 * n);
  CHECK(readv(fd, &riov, 1) == n);
  ok &= memcmp(back, secret, (size_t)n) == 0;
  CHECK(close(fd) == 0);

  f = fopen(path, "r");
  CHECK(f != NULL);
  CHECK(fseek(f, 3 * n, SEEK_SET) == 0);
  CHECK(fread(back, 1, (size_t)n, f) == (size_t)n);
  ok &= memcmp(back, secret, (size_t)n) == 0;
  CHECK(fgets(back, sizeof(back), f) != NULL);
  ok &= strcmp(back, secret) == 0;
  char* line = NULL;
  size_t cap = 0;
  for (int i = 0; i < 2; ++i) {
    CHECK(getline(&line, &cap, f) == n);
    ok &= strcmp(line, secret) == 0;
  }
  free(line);
  CHECK(fclose(f) == 0);
  printf("OK %d %ld\n", ok, 7 * n);
  return 0;
}
