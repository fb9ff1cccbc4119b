// Where dlprof run finds its siblings, and how it runs dlprof-dump (siblings.h).
#include "tools/launcher/siblings.h"

#include <limits.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace dlprof::launcher {

std::string SelfDir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  buf[n] = '\0';
  std::string s(buf);
  size_t slash = s.rfind('/');
  return slash == std::string::npos ? "." : s.substr(0, slash);
}

bool IsFile(const std::string& p) {
  struct stat st {};
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string Canonical(const std::string& p) {
  char buf[PATH_MAX];
  return realpath(p.c_str(), buf) ? std::string(buf) : p;
}

std::string FindLibrary(const std::string& self) {
  if (const char* env = getenv("DLPROF_LIBRARY")) {
    if (IsFile(env)) return Canonical(env);
  }
  for (const char* rel : {"/../lib/libdlprof.so", "/../lib64/libdlprof.so", "/libdlprof.so"}) {
    if (IsFile(self + rel)) return Canonical(self + rel);
  }
  return std::string();
}

std::string FindPythonDir(const std::string& self) {
  for (const char* rel : {"/../python", "/../lib/dlprof/python", "/../share/dlprof/python"}) {
    if (IsFile(self + rel + "/dlprof/__init__.py")) return Canonical(self + rel);
  }
  return std::string();
}

std::string FindDump(const std::string& self) {
  if (IsFile(self + "/dlprof-dump") && access((self + "/dlprof-dump").c_str(), X_OK) == 0) {
    return self + "/dlprof-dump";
  }
  return "dlprof-dump";  // from PATH
}

int RunDump(std::vector<std::string> cmd, const char* what) {
  std::vector<char*> args;
  for (auto& a : cmd) args.push_back(a.data());
  args.push_back(nullptr);
  fflush(nullptr);
  const pid_t d = fork();
  if (d == 0) {
    dup2(2, 1);
    unsetenv("LD_PRELOAD");
    execvp(args[0], args.data());
    fprintf(stderr, "dlprof: cannot run %s for %s: %s\n", args[0], what, strerror(errno));
    _exit(127);
  }
  int status = 0;
  while (d > 0 && waitpid(d, &status, 0) < 0 && errno == EINTR) {
  }
  return d > 0 ? status : -1;
}

}  // namespace dlprof::launcher
