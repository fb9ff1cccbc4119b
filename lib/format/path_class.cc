// The file classes a path alone decides (docs/ANALYSIS.md, "File classes",
// rules 1 and 2: code and the system's files), shared by the reader's
// analysis (lib/analysis/summary/file_classes.h) and the runtime's counters
// (lib/core/interval_counters.h), which class each file as the flusher
// meets it: one set of rules, whichever side applies them.
#include "lib/format/path_class.h"

#include <cctype>

namespace dlprof::format {
namespace {

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// `path` is `dir` or lies below it.
bool Under(std::string_view path, std::string_view dir) {
  return StartsWith(path, dir) && (path.size() == dir.size() || path[dir.size()] == '/');
}

// "libfoo.so", "libfoo.so.1", "libfoo.so.1.2.3".
bool IsSharedLibraryName(std::string_view name) {
  size_t at = name.find(".so");
  while (at != std::string_view::npos) {
    std::string_view rest = name.substr(at + 3);
    bool versions = true;  // nothing, or .N groups
    for (size_t i = 0; i < rest.size(); ++i) {
      const char c = rest[i];
      if (c == '.') {
        if (i + 1 >= rest.size() || !isdigit(static_cast<unsigned char>(rest[i + 1]))) {
          versions = false;
          break;
        }
      } else if (!isdigit(static_cast<unsigned char>(c))) {
        versions = false;
        break;
      }
    }
    if (versions && (rest.empty() || rest[0] == '.')) return true;
    at = name.find(".so", at + 1);
  }
  return false;
}

bool IsCodeName(std::string_view name) {
  static const char* const kCodeSuffixes[] = {".py", ".pyc", ".pyo", ".pyd", ".pyi", ".pth",
                                              ".a",  ".o",   ".jar", ".class"};
  for (const char* suffix : kCodeSuffixes) {
    if (EndsWith(name, suffix)) return true;
  }
  return IsSharedLibraryName(name);
}

bool IsCodeDirectory(std::string_view dir, std::string_view parent) {
  if (dir == "site-packages" || dir == "dist-packages" || dir == "__pycache__" ||
      EndsWith(dir, ".dist-info") || EndsWith(dir, ".egg-info")) {
    return true;
  }
  // lib/python3, lib/python3.11: the interpreter's own library.
  if (parent == "lib" && StartsWith(dir, "python") && dir.size() > 6 &&
      isdigit(static_cast<unsigned char>(dir[6]))) {
    return true;
  }
  return false;
}

// The caches and scratch files of the stack under the job, not its data:
// CUDA's JIT cache (~/.nv/ComputeCache), Triton's (~/.triton), torch's hub
// and kernel caches (~/.cache/torch), and multiprocessing's temporary
// directories (/tmp/pymp-*: a DataLoader's queues and shared tensors).
bool IsRuntimeCacheDirectory(std::string_view dir, std::string_view parent) {
  return dir == ".nv" || dir == ".triton" || (parent == ".cache" && dir == "torch") ||
         StartsWith(dir, "pymp-");
}

bool IsLauncherName(std::string_view dir) {
  // Open MPI's and PRRTE's session directories, PMIx's, their per-user
  // configuration (~/.openmpi, ~/.pmix). Specific enough for a file's name.
  static const char* const kPrefixes[] = {"ompi.",  "prte.",    "openmpi-sessions",
                                          "pmix-",  "pmix.",    ".openmpi",
                                          ".pmix"};
  for (const char* p : kPrefixes) {
    if (StartsWith(dir, p)) return true;
  }
  return false;
}

// ROMIO's (MPICH's and Open MPI's MPI-IO) files beside a data file: the
// shared file pointer (".data.shfp.N") and its lock probes ("data.locktest.N").
bool IsMpiIoHelperName(std::string_view name) {
  return (!name.empty() && name[0] == '.' && name.find(".shfp.") != std::string_view::npos) ||
         name.find(".locktest.") != std::string_view::npos;
}

bool IsSystemPath(std::string_view path) {
  static const char* const kSystemDirs[] = {"/proc", "/sys",  "/dev",  "/etc",     "/run",
                                            "/var/run", "/var/lib", "/boot", "/bin", "/sbin",
                                            "/lib", "/lib64"};
  for (const char* d : kSystemDirs) {
    if (Under(path, d)) return true;
  }
  if (Under(path, "/usr")) {
    return !Under(path, "/usr/local") || Under(path, "/usr/local/lib") ||
           Under(path, "/usr/local/bin") || Under(path, "/usr/local/share");
  }
  return false;
}

}  // namespace

uint8_t PathClassOf(std::string_view path) {
  if (path.empty() || path[0] != '/') return kPathSystem;  // pipe:[..], socket:[..]
  // memfd_create's memory: no longer traced, but traces recorded before
  // hold its calls ("/memfd:NAME (deleted)" reads like a path at the root).
  if (StartsWith(path, "/memfd:")) return kPathSystem;
  // The components: every directory, then the file's name.
  std::string_view parent;
  size_t start = 1;
  bool launcher_dir = false;
  for (;;) {
    const size_t slash = path.find('/', start);
    const std::string_view part = path.substr(
        start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (slash == std::string_view::npos) {
      if (IsCodeName(part)) return kPathCode;
      // The last part may name a directory itself (opened to list it).
      launcher_dir |= IsLauncherName(part) || IsMpiIoHelperName(part) ||
                      IsRuntimeCacheDirectory(part, parent);
      break;
    }
    if (IsCodeDirectory(part, parent)) return kPathCode;
    launcher_dir |= IsLauncherName(part) || IsRuntimeCacheDirectory(part, parent);
    parent = part;
    start = slash + 1;
  }
  if (launcher_dir || IsSystemPath(path)) return kPathSystem;
  return kPathByUse;
}

}  // namespace dlprof::format
