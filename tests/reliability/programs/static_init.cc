// I/O before main and after it: a C++ static constructor, a function with
// __attribute__((constructor)), main, an atexit handler registered in main
// and a static destructor. Each writes its own file in $REL_DATA (open,
// write of 16 bytes, close), and prints its name in the order they ran.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

void WriteOne(const char* name) {
  const char* dir = getenv("REL_DATA");
  if (dir == nullptr) return;
  std::string path = std::string(dir) + "/" + name + ".dat";
  int fd = open(path.c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
  if (fd < 0) _exit(98);
  if (write(fd, "0123456789abcdef", 16) != 16) _exit(98);
  if (close(fd) != 0) _exit(98);
  printf("RAN %s\n", name);
  fflush(stdout);
}

struct Early {
  Early() { WriteOne("static_ctor"); }
  ~Early() { WriteOne("static_dtor"); }
} early;

__attribute__((constructor)) void CtorFunction() { WriteOne("ctor_function"); }

void AtExit() { WriteOne("atexit"); }

}  // namespace

int main(int argc, char** argv) {
  atexit(AtExit);
  WriteOne("main");
  if (argc > 1 && std::strcmp(argv[1], "exit") == 0) exit(0);
  return 0;
}
