#include "lib/core/path_filter.h"

#include <cstring>

namespace dlprof::core {

size_t NormalizePath(const char* base, const char* path, char* out, size_t cap) {
  if (cap < 2) return 0;
  size_t n = 0;
  auto append_components = [&](const char* p) -> bool {
    while (*p) {
      while (*p == '/') ++p;
      if (!*p) break;
      const char* end = p;
      while (*end && *end != '/') ++end;
      size_t len = static_cast<size_t>(end - p);
      if (len == 1 && p[0] == '.') {
        // stays in place
      } else if (len == 2 && p[0] == '.' && p[1] == '.') {
        while (n > 0 && out[n - 1] != '/') --n;  // drop last component
        if (n > 0) --n;                          // and its slash
      } else {
        if (n + 1 + len + 1 > cap) return false;
        out[n++] = '/';
        std::memcpy(out + n, p, len);
        n += len;
      }
      p = end;
    }
    return true;
  };
  if (path[0] != '/' && base != nullptr && !append_components(base)) return 0;
  if (!append_components(path)) return 0;
  if (n == 0) out[n++] = '/';
  out[n] = '\0';
  return n;
}

bool HasPathPrefix(const char* path, size_t path_len, const std::string& prefix) {
  size_t k = prefix.size();
  while (k > 1 && prefix[k - 1] == '/') --k;  // "/data/" matches like "/data"
  if (k == 1 && prefix[0] == '/') return path_len > 0 && path[0] == '/';
  if (path_len < k || std::memcmp(path, prefix.data(), k) != 0) return false;
  return path_len == k || path[k] == '/';
}

void PathFilter::Configure(const std::vector<std::string>& include,
                           const std::vector<std::string>& exclude,
                           const std::vector<std::string>& own) {
  include_ = include;
  exclude_ = exclude;
  own_.clear();
  for (const std::string& dir : own) {
    if (!dir.empty()) own_.push_back(dir);
  }
}

bool PathFilter::Traced(const char* abs_path, size_t len) const {
  if (len == 0 || abs_path[0] != '/') return false;
  for (const std::string& dir : own_) {
    if (HasPathPrefix(abs_path, len, dir)) return false;
  }
  for (const std::string& p : include_) {
    if (HasPathPrefix(abs_path, len, p)) return true;
  }
  for (const std::string& p : exclude_) {
    if (HasPathPrefix(abs_path, len, p)) return false;
  }
  return true;
}

}  // namespace dlprof::core
