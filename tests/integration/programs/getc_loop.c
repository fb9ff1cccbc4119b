/* getc_loop: many cheap traced calls, to make a large trace quickly.
 *
 *   getc_loop FILE N
 *
 * Opens FILE with fopen and calls fgetc on it N times, rewinding at the end
 * of the file; nearly every fgetc is served from the stream's buffer, so
 * the calls cost no system call (tests/integration/test_progress.py). */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: getc_loop FILE N\n");
    return 2;
  }
  const long n = atol(argv[1 + 1]);
  FILE* f = fopen(argv[1], "rb");
  if (f == NULL) {
    perror(argv[1]);
    return 1;
  }
  long got = 0;
  for (long i = 0; i < n; ++i) {
    if (fgetc(f) == EOF) {
      rewind(f);
      continue;
    }
    ++got;
  }
  fclose(f);
  printf("%ld\n", got);
  return 0;
}
