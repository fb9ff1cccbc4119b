// Listing the traces below a directory (trace_layout.h), for the readers and
// the launcher. Apart from trace_layout.cc so that the runtime, which only
// names paths, does not link std::filesystem.
#include <algorithm>
#include <filesystem>
#include <system_error>

#include "lib/format/trace_layout.h"

namespace dlprof::format {
namespace fs = std::filesystem;
namespace {

bool EndsWith(const std::string& s, const char* suffix) {
  size_t n = std::char_traits<char>::length(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

}  // namespace

void FindTraceFiles(const std::string& dir, std::vector<std::string>* found,
                    std::vector<std::string>* errors) {
  std::vector<std::string> files;
  // Every directory below, each listed on its own: one that cannot be
  // listed (permission denied) is said, and the walk goes on with the
  // others. Symbolic links to directories are not followed (no loops).
  std::vector<fs::path> pending = {fs::path(dir)};
  bool listed_any = false;
  while (!pending.empty()) {
    const fs::path here = pending.back();
    pending.pop_back();
    std::error_code ec;
    fs::directory_iterator it(here, ec);
    for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
      std::error_code type_ec;
      if (it->is_directory(type_ec) && !it->is_symlink(type_ec)) {
        pending.push_back(it->path());
      } else if (it->is_regular_file(type_ec) &&
                 EndsWith(it->path().filename().string(), kTraceSuffix)) {
        files.push_back(it->path().string());
      }
    }
    if (ec) {
      errors->push_back("error: " + here.string() + ": cannot list directory: " + ec.message());
    } else {
      listed_any = true;
    }
  }
  if (files.empty() && listed_any) {
    errors->push_back("error: " + dir + ": holds no dlprof trace (no *.dlprof file below it)");
  }
  std::sort(files.begin(), files.end());
  found->insert(found->end(), files.begin(), files.end());
}

}  // namespace dlprof::format
