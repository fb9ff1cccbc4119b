// Path normalisation and the DLPROF_INCLUDE / DLPROF_EXCLUDE filter.
// Both run inside open wrappers, so neither allocates.
#ifndef DLPROF_LIB_CORE_PATH_FILTER_H_
#define DLPROF_LIB_CORE_PATH_FILTER_H_

#include <cstddef>
#include <string>
#include <vector>

namespace dlprof::core {

// Writes the absolute, lexically normalised form of `path` into `out`
// ("//", "/./" and "/x/../" collapsed; symlinks are not resolved). A relative
// `path` is taken relative to `base`, which must be absolute. Returns the
// length, or 0 when the result does not fit `cap` bytes with its NUL.
size_t NormalizePath(const char* base, const char* path, char* out, size_t cap);

// True when `path` equals `prefix` or lies below it ("/usr" matches "/usr"
// and "/usr/lib", not "/usrdata").
bool HasPathPrefix(const char* path, size_t path_len, const std::string& prefix);

// Decides which paths are traced. Include prefixes win over exclude prefixes
// (so DLPROF_INCLUDE=/ records everything); the tracer's own directories
// (the trace directory, the Python bootstrap's: what the tracer itself
// reads and writes there is not the program's I/O) are never traced. Names
// that are not paths (pipe:[..], socket:[..]) never are.
class PathFilter {
 public:
  // Empty entries of `own` are left out.
  void Configure(const std::vector<std::string>& include,
                 const std::vector<std::string>& exclude, const std::vector<std::string>& own);
  bool Traced(const char* abs_path, size_t len) const;

 private:
  std::vector<std::string> include_;
  std::vector<std::string> exclude_;
  std::vector<std::string> own_;
};

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_PATH_FILTER_H_
