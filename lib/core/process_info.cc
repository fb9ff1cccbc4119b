#include "lib/core/process_info.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "lib/core/clock.h"
#include "lib/core/file_ids.h"
#include "lib/core/runtime.h"

namespace dlprof::core {
namespace {

std::string ReadSmallFile(const char* path) {
  std::string out;
  int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC));
  if (fd < 0) return out;
  char buf[4096];
  for (;;) {
    long n = syscall(SYS_read, fd, buf, sizeof(buf));
    if (n <= 0 || out.size() > 64 * 1024) break;
    out.append(buf, static_cast<size_t>(n));
  }
  syscall(SYS_close, fd);
  return out;
}

}  // namespace

int32_t RankFromEnvironment() {
  static const char* const kVars[] = {"RANK",     "SLURM_PROCID", "OMPI_COMM_WORLD_RANK",
                                      "PMI_RANK", "PMIX_RANK",    "PALS_RANKID",
                                      "FLUX_TASK_RANK"};
  for (const char* var : kVars) {
    const char* v = getenv(var);
    if (!v || !*v) continue;
    char* end = nullptr;
    long r = strtol(v, &end, 10);
    if (*end == '\0' && r >= 0 && r < (1l << 30)) return static_cast<int32_t>(r);
  }
  return -1;
}

format::ProcessInfo CollectProcessInfo(bool forked, uint64_t start_ns) {
  format::ProcessInfo info;
  ClockPair clock = ReadClockPair();
  info.clock_mono_ns = clock.mono_ns;
  info.clock_real_ns = clock.real_ns;
  info.pid = static_cast<int32_t>(syscall(SYS_getpid));
  info.ppid = static_cast<int32_t>(syscall(SYS_getppid));
  info.rank = RankFromEnvironment();
  // Every block this runtime writes says whether it holds GPU work.
  info.flags = (forked ? kHeaderFlagForked : 0) | kHeaderFlagGpuMarked;
  info.process_start_ns = start_ns;
  struct utsname u;
  if (uname(&u) == 0) info.host = u.nodename;
  char exe[PATH_MAX];
  long n = syscall(SYS_readlink, "/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) info.exe.assign(exe, static_cast<size_t>(n));
  info.cmdline = ReadSmallFile("/proc/self/cmdline");
  while (!info.cmdline.empty() && info.cmdline.back() == '\0') info.cmdline.pop_back();
  // The clock domain: processes with the same boot id and time namespace
  // read the same CLOCK_MONOTONIC_RAW.
  info.boot_id = ReadSmallFile("/proc/sys/kernel/random/boot_id");
  while (!info.boot_id.empty() && info.boot_id.back() == '\n') info.boot_id.pop_back();
  char ns[64];
  n = syscall(SYS_readlink, "/proc/self/ns/time", ns, sizeof(ns) - 1);
  if (n > 0) info.time_ns.assign(ns, static_cast<size_t>(n));
  return info;
}

void ScanInheritedFds(Runtime& rt) {
  int dir = static_cast<int>(
      syscall(SYS_openat, AT_FDCWD, "/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir < 0) return;
  char buf[4096];
  for (;;) {
    long n = syscall(SYS_getdents64, dir, buf, sizeof(buf));
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      struct Dirent64 {
        uint64_t ino;
        int64_t off;
        unsigned short reclen;
        unsigned char type;
        char name[1];
      };
      auto* d = reinterpret_cast<Dirent64*>(buf + off);
      off += d->reclen;
      if (d->name[0] < '0' || d->name[0] > '9') continue;
      int fd = atoi(d->name);
      if (fd == dir || fd == rt.trace_fd()) continue;
      IdentifyFd(rt, fd);
    }
  }
  syscall(SYS_close, dir);
}

}  // namespace dlprof::core
