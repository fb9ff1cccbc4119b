// The traces a `dlprof run` wrote, listed (run_traces.h).
#include "tools/launcher/run_traces.h"

#include <dirent.h>
#include <sys/stat.h>

namespace dlprof::launcher {
namespace {

void CollectTraceFiles(const std::string& dir, int depth, std::set<std::string>* out) {
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    const std::string path = dir + "/" + n;
    if (n.size() > 7 && n.compare(n.size() - 7, 7, ".dlprof") == 0) {
      out->insert(path);
    } else if (depth < 4 && (e->d_type == DT_DIR || e->d_type == DT_UNKNOWN)) {
      struct stat st {};
      if (lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
        CollectTraceFiles(path, depth + 1, out);
      }
    }
  }
  closedir(d);
}

}  // namespace

std::set<std::string> TraceFiles(const std::string& dir) {
  std::set<std::string> out;
  CollectTraceFiles(dir, 0, &out);
  return out;
}

}  // namespace dlprof::launcher
