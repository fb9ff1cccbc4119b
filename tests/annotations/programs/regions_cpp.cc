// The annotation header from C++: dlprof::Region scopes and the C functions.
//
//   regions_cpp FILE   reads FILE in "outer" / "inner" scopes; prints "ok".
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

#include "dlprof/dlprof.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  int fd = open(argv[1], O_RDONLY);
  if (fd < 0) return 2;
  char buf[4096];
  {
    dlprof::Region outer("outer");
    if (pread(fd, buf, 100, 0) != 100) return 2;
    {
      dlprof::Region inner("inner");
      if (pread(fd, buf, 200, 0) != 200) return 2;
    }
    dlprof_mark("after inner");
  }
  close(fd);
  std::printf("ok active=%d\n", dlprof_active());
  return 0;
}
