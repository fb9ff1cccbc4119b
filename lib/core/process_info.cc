#include "lib/core/process_info.h"

#include <fcntl.h>
#include <sched.h>
#include <limits.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "lib/core/child_env.h"
#include "lib/core/clock.h"
#include "lib/core/file_ids.h"
#include "lib/core/launch_env.h"
#include "lib/core/map_faults.h"
#include "lib/core/proc_dir.h"
#include "lib/core/run_id.h"
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

// The clock offsets of this process's time namespace ("monotonic 86400 0;
// boottime 0 0"): what decides its CLOCK_MONOTONIC_RAW beside the boot. The
// namespace's inode number would not do: it is reused once the namespace is
// gone. Kernels without time namespaces have no such file: "".
static std::string TimeNamespaceOffsets() {
  const std::string raw = ReadSmallFile("/proc/self/timens_offsets");
  std::string out;
  bool space = false;
  for (char c : raw) {
    if (c == '\n') {
      if (!out.empty() && out.back() != ';') out += ';';
      space = false;
    } else if (c == ' ' || c == '\t') {
      space = !out.empty() && out.back() != ';';
    } else {
      if (space) out += ' ';
      space = false;
      out += c;
    }
  }
  while (!out.empty() && out.back() == ';') out.pop_back();
  return out;
}

static std::string BootId() {
  std::string id = ReadSmallFile("/proc/sys/kernel/random/boot_id");
  while (!id.empty() && id.back() == '\n') id.pop_back();
  return id;
}

// Field 22 of /proc/self/stat, after the command name in parentheses (which
// may itself hold spaces and parentheses: the last ')' ends it).
static std::string KernelStartTicks() {
  const std::string stat = ReadSmallFile("/proc/self/stat");
  size_t pos = stat.rfind(')');
  if (pos == std::string::npos) return "";
  // Fields 3..21 follow the name; 22 is the start time.
  for (int field = 2; field < 22 && pos != std::string::npos; ++field) {
    pos = stat.find(' ', pos + 1);
  }
  if (pos == std::string::npos) return "";
  size_t end = stat.find(' ', pos + 1);
  return stat.substr(pos + 1, end == std::string::npos ? std::string::npos : end - pos - 1);
}

// The CPUs the process may run on (its affinity mask: taskset, Slurm's
// binding, a cpuset), in decimal; empty if the kernel does not say. A CPU
// quota (cgroup cpu.max) is not counted.
static std::string AffinityCpus() {
  for (size_t n = 1024; n <= 65536; n *= 4) {
    cpu_set_t* set = CPU_ALLOC(n);
    if (set == nullptr) return "";
    const size_t size = CPU_ALLOC_SIZE(n);
    const bool ok = sched_getaffinity(0, size, set) == 0;
    const int count = ok ? CPU_COUNT_S(size, set) : 0;
    CPU_FREE(set);
    if (ok) return count > 0 ? std::to_string(count) : "";
    if (errno != EINVAL) return "";
  }
  return "";
}

// The process's pid namespace, "pid:[INODE]" ("" where /proc has no ns/):
// with the host, boot, pid and start tick, it names one process where
// containers of their own on one host each have a pid 1.
static std::string PidNamespace() {
  char link[64];
  const long n = syscall(SYS_readlink, "/proc/self/ns/pid", link, sizeof(link) - 1);
  return n > 0 ? std::string(link, static_cast<size_t>(n)) : std::string();
}

std::string ClockDomainId() { return BootId() + " " + TimeNamespaceOffsets(); }

format::ProcessInfo CollectProcessInfo(bool forked, uint64_t start_ns) {
  format::ProcessInfo info;
  ClockPair clock = ReadClockPair();
  info.clock_mono_ns = clock.mono_ns;
  info.clock_real_ns = clock.real_ns;
  info.pid = static_cast<int32_t>(syscall(SYS_getpid));
  info.ppid = static_cast<int32_t>(syscall(SYS_getppid));
  info.rank = LaunchRank(GetEnv);
  // Every block this runtime writes says whether it holds GPU work.
  info.flags = (forked ? kHeaderFlagForked : 0) | kHeaderFlagGpuMarked;
  info.process_start_ns = start_ns;
  struct utsname u;
  if (uname(&u) == 0) info.host = u.nodename;
  char exe[PATH_MAX];
  long n = syscall(SYS_readlink, "/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) info.exe.assign(exe, static_cast<size_t>(n));
  info.run_id = ProcessRunId();  // resolved once at start; a forked child keeps it
  info.parent_run_id = ProcessParentRunId();
  info.cmdline = ReadSmallFile("/proc/self/cmdline");
  // The arguments are stored separated (docs/FORMAT.md): only the last one's
  // NUL goes, so that an empty last argument stays.
  if (!info.cmdline.empty() && info.cmdline.back() == '\0') info.cmdline.pop_back();
  // The clock domain: processes with the same boot id and time namespace
  // read the same CLOCK_MONOTONIC_RAW.
  info.boot_id = BootId();
  info.time_ns = TimeNamespaceOffsets();
  info.kernel_start = KernelStartTicks();
  info.pid_ns = PidNamespace();
  const int saved = errno;  // the program's errno, untouched
  info.cpus = AffinityCpus();
  errno = saved;
  info.faults = MapFaults::Get().description();
  return info;
}

void ScanInheritedFds(Runtime& rt) {
  ForEachNumberedEntry("/proc/self/fd", [&](int fd, int dir) {
    if (fd != dir) IdentifyFd(rt, fd);
  });
}

}  // namespace dlprof::core
