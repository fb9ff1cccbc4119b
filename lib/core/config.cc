#include "lib/core/config.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <string>

#include "lib/core/path_filter.h"

namespace dlprof::core {
namespace {

bool ParseBool(const std::string& v, bool* out) {
  if (v == "1" || v == "true" || v == "yes" || v == "on") {
    *out = true;
    return true;
  }
  if (v == "0" || v == "false" || v == "no" || v == "off") {
    *out = false;
    return true;
  }
  return false;
}

bool ParseUint(const std::string& v, uint32_t lo, uint32_t hi, uint32_t* out) {
  if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos) return false;
  errno = 0;
  unsigned long long n = std::strtoull(v.c_str(), nullptr, 10);
  if (errno != 0 || n < lo || n > hi) return false;
  *out = static_cast<uint32_t>(n);
  return true;
}

bool ParseModules(const std::string& v, uint32_t* out) {
  uint32_t m = 0;
  for (const std::string& item : SplitList(v, ',')) {
    if (item == "posix") m |= kModulePosix;
    else if (item == "stdio") m |= kModuleStdio;
    else if (item == "mpiio") m |= kModuleMpiio;
    else if (item == "cuda") m |= kModuleCuda;
    else if (item == "app") m |= kModuleApp;
    else if (item == "gds") m |= kModuleGds;
    else if (item == "aio") m |= kModuleAio;
    else if (item == "all") m |= kModuleAll;
    else return false;
  }
  if (m == 0) return false;  // "" or ",": tracing nothing is no choice anyone makes
  *out = m;
  return true;
}

}  // namespace

bool ParseKeepDuration(const std::string& v, uint64_t* ms) {
  const size_t digits = std::min(v.find_first_not_of("0123456789"), v.size());
  if (digits == 0 || digits > 9) return false;  // no number, or past any sane duration
  const uint64_t n = std::strtoull(v.substr(0, digits).c_str(), nullptr, 10);
  const std::string unit = digits == v.size() ? "s" : v.substr(digits);
  uint64_t scale;
  if (unit == "ms") scale = 1;
  else if (unit == "s") scale = 1000;
  else if (unit == "m" || unit == "min") scale = 60 * 1000;
  else if (unit == "h") scale = 3600 * 1000;
  else if (unit == "d") scale = 24 * 3600 * 1000;
  else return false;
  const uint64_t total = n * scale;
  if (total < 1000 || total > 30ull * 24 * 3600 * 1000) return false;
  *ms = total;
  return true;
}

bool ParseKeepWhen(const std::string& v, double* percent) {
  constexpr char kPrefix[] = "batch_wait>";
  constexpr size_t kPrefixLen = sizeof(kPrefix) - 1;
  if (v.compare(0, kPrefixLen, kPrefix) != 0) return false;
  std::string num = v.substr(kPrefixLen);
  if (!num.empty() && num.back() == '%') num.pop_back();
  if (num.empty() || num.find_first_not_of("0123456789.") != std::string::npos) return false;
  char* end = nullptr;
  const double p = std::strtod(num.c_str(), &end);
  if (end == nullptr || *end != '\0' || !(p > 0) || !(p < 100)) return false;
  *percent = p;
  return true;
}

const std::vector<std::string>& DefaultExcludes() {
  // Never destroyed: a vfork child's exit() would free it in its parent's
  // memory (and no exit handler may find it gone).
  static const auto* const kDirs = new std::vector<std::string>{
      "/proc", "/sys", "/dev", "/etc", "/usr", "/lib", "/lib64",
      "/bin", "/sbin", "/boot", "/run", "/var/lib"};
  return *kDirs;
}

std::vector<std::string> SplitList(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(sep, start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

Config ParseConfig(const EnvLookup& getenv_fn, const WarningSink& warn) {
  Config c;
  c.exclude = DefaultExcludes();
  auto get = [&](const char* name) -> const char* { return getenv_fn(name); };
  auto bad = [&](const char* name, const std::string& value, const std::string& expected,
                 const std::string& fallback) {
    warn(std::string("ignoring ") + name + "='" + value + "': expected " + expected +
         "; using the default (" + fallback + ")");
  };

  if (const char* v = get("DLPROF_ENABLE")) {
    if (!ParseBool(v, &c.enabled)) bad("DLPROF_ENABLE", v, "0 or 1", "1");
  }
  if (const char* v = get("DLPROF_DIR")) {
    if (*v) c.dir = v;
    else bad("DLPROF_DIR", v, "a directory", c.dir);
  }
  if (const char* v = get("DLPROF_TRACE")) {
    if (!ParseModules(v, &c.modules)) {
      bad("DLPROF_TRACE", v, "a comma-separated list of posix,stdio,mpiio,cuda,app,gds,aio", "all");
    }
  }
  // Path prefixes are matched against absolute, normalised paths: an entry
  // that is not absolute would match nothing, and is said; the others are
  // normalised as the paths are ("/tmp//x/../y" is "/tmp/y"). A value none
  // of whose entries is a path is a bad value: the default stays (a
  // DLPROF_EXCLUDE=garbage that emptied the list traced /usr, /proc, /etc).
  auto prefixes = [&](const char* name, const char* v, std::vector<std::string>* list,
                      const std::string& fallback) {
    std::vector<std::string> kept, rejected;
    for (const std::string& entry : SplitList(v, ':')) {
      char norm[4096];
      if (entry[0] != '/' || NormalizePath("/", entry.c_str(), norm, sizeof(norm)) == 0) {
        rejected.push_back(entry);
      } else {
        kept.emplace_back(norm);
      }
    }
    if (kept.empty() && !rejected.empty()) {
      return bad(name, v, "colon-separated absolute paths (paths are matched absolute)",
                 fallback);
    }
    for (const std::string& entry : rejected) {
      warn(std::string("ignoring ") + name + " entry '" + entry +
           "': expected an absolute path (paths are matched absolute)");
    }
    *list = std::move(kept);
  };
  if (const char* v = get("DLPROF_INCLUDE")) {
    prefixes("DLPROF_INCLUDE", v, &c.include, "none");
  }
  if (const char* v = get("DLPROF_EXCLUDE")) {
    std::string defaults;
    for (const std::string& d : DefaultExcludes()) defaults += (defaults.empty() ? "" : " ") + d;
    prefixes("DLPROF_EXCLUDE", v, &c.exclude, defaults);
  }
  if (const char* v = get("DLPROF_BUFFER_KB")) {
    if (!ParseUint(v, 4, 1024 * 1024, &c.buffer_kb)) {
      bad("DLPROF_BUFFER_KB", v, "a size in KiB from 4 to 1048576", "512");
    }
  }
  if (const char* v = get("DLPROF_MAX_STRINGS")) {
    if (!ParseUint(v, 85, 85u << 20, &c.max_strings)) {
      bad("DLPROF_MAX_STRINGS", v, "a count from 85 to 89128960", "89128960");
    }
  }
  if (const char* v = get("DLPROF_FLUSH_MS")) {
    if (!ParseUint(v, 1, 3600 * 1000, &c.flush_ms)) {
      bad("DLPROF_FLUSH_MS", v, "milliseconds from 1 to 3600000", "200");
    }
  }
  if (const char* v = get("DLPROF_ON_FULL")) {
    std::string s = v;
    if (s == "wait") c.on_full = OnFull::kWait;
    else if (s == "drop") c.on_full = OnFull::kDrop;
    else bad("DLPROF_ON_FULL", v, "wait or drop", "wait");
  }
  if (const char* v = get("DLPROF_CLOCK")) {
    std::string s = v;
    if (s == "auto") c.clock = ClockSetting::kAuto;
    else if (s == "tsc") c.clock = ClockSetting::kTsc;
    else if (s == "clock_gettime") c.clock = ClockSetting::kClockGettime;
    else bad("DLPROF_CLOCK", v, "auto, tsc or clock_gettime", "auto");
  }
  if (const char* v = get("DLPROF_STACKS")) {
    if (!ParseBool(v, &c.stacks)) bad("DLPROF_STACKS", v, "0 or 1", "0");
  }
  if (const char* v = get("DLPROF_MPI_CLOCK")) {
    if (!ParseBool(v, &c.mpi_clock)) bad("DLPROF_MPI_CLOCK", v, "0 or 1", "1");
  }
  if (const char* v = get("DLPROF_QUIET")) {
    // "exit": the line each process says at exit only (the launcher, which
    // says one for the run), warnings and reasons still said.
    if (std::string(v) == "exit") {
      c.quiet_exit = true;
    } else if (!ParseBool(v, &c.quiet)) {
      bad("DLPROF_QUIET", v, "0, 1 or exit", "0");
    }
    c.quiet_exit = c.quiet_exit || c.quiet;
  }
  if (const char* v = get("DLPROF_PYTHON")) {
    if (!ParseBool(v, &c.python)) bad("DLPROF_PYTHON", v, "0 or 1", "1");
  }
  // Read by the Python side (python/dlprof/_env.py), which says nothing:
  // checked here, so that a bad value is said once for a job, as the
  // others are, not by every Python process and worker of every rank.
  for (const char* name : {"DLPROF_PYTHON_DISABLE", "DLPROF_PYTHON_SAMPLES"}) {
    bool value;
    if (const char* v = get(name); v != nullptr && !ParseBool(v, &value)) {
      bad(name, v, "0 or 1", std::strcmp(name, "DLPROF_PYTHON_SAMPLES") == 0 ? "1" : "0");
    }
  }
  if (const char* v = get("DLPROF_CUDA")) c.cuda = v;
  if (const char* v = get("DLPROF_MAP_FAULTS")) {
    std::string s = v;
    if (s == "events") c.map_faults = MapFaultsSetting::kEvents;
    else if (s == "counts") c.map_faults = MapFaultsSetting::kCounts;
    else if (s == "off" || s == "0") c.map_faults = MapFaultsSetting::kOff;
    else bad("DLPROF_MAP_FAULTS", v, "events, counts or off", "events");
  }
  if (const char* v = get("DLPROF_KEEP")) {
    if (!ParseKeepDuration(v, &c.keep_ms)) {
      bad("DLPROF_KEEP", v, "a duration from 1s to 30d (1500ms, 5s, 10m, 2h, 1d)",
          "off: every event is kept");
      c.keep_ms = 0;
    }
  }
  if (const char* v = get("DLPROF_KEEP_WHEN")) {
    if (!ParseKeepWhen(v, &c.keep_when_batch_wait)) {
      bad("DLPROF_KEEP_WHEN", v, "batch_wait>N% with N above 0 and below 100", "no rule");
      c.keep_when_batch_wait = -1;
    } else if (c.keep_ms == 0) {
      warn(std::string("ignoring DLPROF_KEEP_WHEN='") + v +
           "': it keeps windows of a bounded trace, and DLPROF_KEEP is not set");
      c.keep_when_batch_wait = -1;
    }
  }
  return c;
}

}  // namespace dlprof::core
