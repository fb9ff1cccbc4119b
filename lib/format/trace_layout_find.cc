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
  std::error_code ec;
  std::vector<std::string> files;
  fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
  for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code type_ec;
    if (it->is_regular_file(type_ec) && EndsWith(it->path().filename().string(), kTraceSuffix)) {
      files.push_back(it->path().string());
    }
  }
  if (ec) errors->push_back("error: " + dir + ": cannot list directory: " + ec.message());
  if (files.empty() && !ec) {
    errors->push_back("error: " + dir + ": holds no dlprof trace (no *.dlprof file below it)");
  }
  std::sort(files.begin(), files.end());
  found->insert(found->end(), files.begin(), files.end());
}

}  // namespace dlprof::format
