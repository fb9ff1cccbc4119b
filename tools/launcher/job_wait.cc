// Waiting for every process of a `dlprof run` job (job_wait.h): the
// launcher as child subreaper, and the job's processes read from /proc.
#include "tools/launcher/job_wait.h"

#include <dirent.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

namespace dlprof::launcher {
namespace {

int64_t NowMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

std::string ReadSmallFile(const std::string& path) {
  FILE* f = fopen(path.c_str(), "re");
  if (f == nullptr) return std::string();
  std::string s;
  char buf[4096];
  size_t n;
  while (s.size() < 16384 && (n = fread(buf, 1, sizeof(buf), f)) > 0) s.append(buf, n);
  fclose(f);
  return s;
}

struct ProcEntry {
  pid_t ppid = 0;
  char state = '?';
  std::string comm;
};

// /proc/PID/stat: "pid (comm) state ppid ..."; comm may hold spaces and
// parentheses, so the fields after it are found from the last ')'.
bool ReadStat(pid_t pid, ProcEntry* out) {
  const std::string s = ReadSmallFile("/proc/" + std::to_string(pid) + "/stat");
  const size_t open = s.find('(');
  const size_t close = s.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return false;
  out->comm = s.substr(open + 1, close - open - 1);
  int ppid = 0;
  char state = '?';
  if (sscanf(s.c_str() + close + 1, " %c %d", &state, &ppid) != 2) return false;
  out->state = state;
  out->ppid = ppid;
  return true;
}

// The command line, arguments joined by spaces, cut to a readable length.
std::string NameOf(pid_t pid, const std::string& comm) {
  std::string cmd = ReadSmallFile("/proc/" + std::to_string(pid) + "/cmdline");
  while (!cmd.empty() && cmd.back() == '\0') cmd.pop_back();
  std::replace(cmd.begin(), cmd.end(), '\0', ' ');
  if (cmd.empty()) return comm;
  constexpr size_t kMaxName = 60;
  if (cmd.size() > kMaxName) cmd = cmd.substr(0, kMaxName - 3) + "...";
  return cmd;
}

}  // namespace

bool ParseWaitSeconds(const std::string& s, int64_t* ms) {
  const size_t dot = s.find('.');
  const std::string whole = s.substr(0, dot);
  std::string frac = dot == std::string::npos ? "" : s.substr(dot + 1);
  if ((whole.empty() && frac.empty()) || whole.size() > 6 ||
      whole.find_first_not_of("0123456789") != std::string::npos ||
      frac.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  frac.resize(3, '0');
  *ms = (whole.empty() ? 0 : std::stoll(whole)) * 1000 + std::stoll(frac.substr(0, 3));
  return true;
}

std::string SecondsText(int64_t ms) {
  std::string s = std::to_string(ms / 1000);
  if (ms % 1000 != 0) {
    char frac[8];
    snprintf(frac, sizeof(frac), ".%03d", static_cast<int>(ms % 1000));
    s += frac;
    while (s.back() == '0') s.pop_back();
  }
  return s + " s";
}

bool BecomeSubreaper() { return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0; }

std::vector<LeftProcess> Descendants(pid_t ancestor) {
  std::map<pid_t, ProcEntry> all;
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      char* end = nullptr;
      const long pid = strtol(e->d_name, &end, 10);
      if (end == e->d_name || *end != '\0' || pid <= 0) continue;
      ProcEntry p;
      if (ReadStat(static_cast<pid_t>(pid), &p)) all[static_cast<pid_t>(pid)] = p;
    }
    closedir(d);
  }
  // Walk down from `ancestor`; a zombie has ended (it waits to be reaped).
  std::vector<pid_t> frontier = {ancestor};
  std::vector<LeftProcess> out;
  while (!frontier.empty()) {
    const pid_t parent = frontier.back();
    frontier.pop_back();
    for (const auto& [pid, p] : all) {
      if (p.ppid != parent || pid == parent) continue;
      frontier.push_back(pid);
      if (p.state != 'Z') out.push_back({pid, NameOf(pid, p.comm)});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const LeftProcess& a, const LeftProcess& b) { return a.pid < b.pid; });
  return out;
}

std::vector<LeftProcess> WaitForDescendants(int64_t wait_ms, volatile sig_atomic_t* interrupted) {
  const int64_t deadline = NowMs() + std::max<int64_t>(wait_ms, 0);
  for (;;) {
    int status = 0;
    const pid_t p = waitpid(-1, &status, WNOHANG);
    if (p > 0) continue;  // one more has ended; look again at once
    if (p < 0 && errno == EINTR) continue;
    if (p < 0) return {};  // ECHILD: nothing of the job is left
    if (*interrupted || NowMs() >= deadline) return Descendants(getpid());
    // Children are still running. Polling (10 ms) keeps this simple and
    // independent of how SIGCHLD is handled; the cost is nil next to the
    // summary that follows.
    const timespec pause = {0, 10 * 1000 * 1000};
    nanosleep(&pause, nullptr);
  }
}

}  // namespace dlprof::launcher
