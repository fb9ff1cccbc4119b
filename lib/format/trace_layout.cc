// The names of a trace directory's layout (trace_layout.h): what the writer
// creates and the launcher looks in. The listing of a directory is in
// trace_layout_find.cc, so that the runtime, which only names, links none of
// std::filesystem.
#include "lib/format/trace_layout.h"

#include <cstdio>
#include <string>

namespace dlprof::format {
namespace {

std::string Basename(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::string LayoutName(const std::string& s, const char* fallback) {
  std::string out;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    out += ok ? c : '_';
  }
  if (out.empty()) out = fallback;
  if (out[0] == '.') out[0] = '_';
  return out;
}

std::string RunDirectory(const std::string& dir, const std::string& run_id) {
  return dir + "/" + LayoutName(run_id, "run");
}

std::string HostDirectory(const std::string& dir, const std::string& run_id,
                          const std::string& host) {
  return RunDirectory(dir, run_id) + "/" + LayoutName(host, "host");
}

std::string TraceFileName(const std::string& exe, const std::string& host, int32_t pid,
                          uint64_t clock_mono_ns) {
  std::string name = Basename(exe);
  if (name.empty()) name = "process";
  char tail[64];
  snprintf(tail, sizeof(tail), "-%d-%llx%s", pid, static_cast<unsigned long long>(clock_mono_ns),
           kTraceSuffix);
  return name + "-" + LayoutName(host, "host") + tail;
}

std::string TraceStemOf(const std::string& trace_path) {
  std::string stem = trace_path;
  const size_t n = std::char_traits<char>::length(kTraceSuffix);
  if (stem.size() >= n && stem.compare(stem.size() - n, n, kTraceSuffix) == 0) {
    stem.resize(stem.size() - n);
  }
  const size_t dot = stem.rfind(".k");
  if (dot != std::string::npos && dot + 2 < stem.size() &&
      stem.find_first_not_of("0123456789", dot + 2) == std::string::npos) {
    stem.resize(dot);
  }
  return stem;
}

int32_t TraceFilePid(const std::string& path, const std::string& host) {
  const size_t n = std::char_traits<char>::length(kTraceSuffix);
  if (path.size() <= n || path.compare(path.size() - n, n, kTraceSuffix) != 0) return -1;
  const std::string name = Basename(TraceStemOf(path));
  // EXE-HOST-PID-CLOCK: the last two fields, then the host before them.
  const size_t clock = name.rfind('-');
  if (clock == std::string::npos || clock == 0) return -1;
  const size_t pid = name.rfind('-', clock - 1);
  if (pid == std::string::npos || pid + 1 == clock || clock - pid - 1 > 9 ||
      name.find_first_not_of("0123456789", pid + 1) < clock) {
    return -1;
  }
  const std::string tail = "-" + LayoutName(host, "host");
  if (pid < tail.size() || name.compare(pid - tail.size(), tail.size(), tail) != 0) return -1;
  return static_cast<int32_t>(std::stol(name.substr(pid + 1, clock - pid - 1)));
}

}  // namespace dlprof::format
