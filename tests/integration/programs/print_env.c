/* Prints the environment the program sees, one "ENV NAME=value" line per
 * entry of environ, in its order; with "getenv NAME..." also each named
 * variable as getenv() gives it ("GETENV NAME=value" or "GETENV NAME unset").
 *
 * usage: print_env [getenv NAME...] */
#define _GNU_SOURCE
#include "common.h"

extern char** environ;

int main(int argc, char** argv) {
  for (char** e = environ; *e; ++e) printf("ENV %s\n", *e);
  if (argc > 1 && strcmp(argv[1], "getenv") == 0) {
    for (int i = 2; i < argc; ++i) {
      const char* v = getenv(argv[i]);
      if (v) printf("GETENV %s=%s\n", argv[i], v);
      else printf("GETENV %s unset\n", argv[i]);
    }
  }
  return 0;
}
