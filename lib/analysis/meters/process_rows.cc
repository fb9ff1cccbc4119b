// Who a summary row of processes is (process_rows.h).
#include "lib/analysis/meters/process_rows.h"

namespace dlprof::analysis {

bool PythonIsolated(const std::string& cmdline) {
  // Arguments are NUL-separated; the first is the program.
  std::vector<std::string> args;
  for (size_t at = 0; at < cmdline.size();) {
    size_t end = cmdline.find('\0', at);
    if (end == std::string::npos) end = cmdline.size();
    args.push_back(cmdline.substr(at, end - at));
    at = end + 1;
  }
  if (args.empty()) return false;
  const size_t slash = args[0].rfind('/');
  if (args[0].compare(slash == std::string::npos ? 0 : slash + 1, 6, "python") != 0) return false;
  // The interpreter's own options come before the script, -c or -m: a group
  // of letters ("-IEu"), where W and X take the rest or the next argument.
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() < 2 || a[0] != '-') return false;  // the script
    if (a[1] == '-') continue;                       // --long options
    for (size_t c = 1; c < a.size(); ++c) {
      if (a[c] == 'I' || a[c] == 'E' || a[c] == 'S') return true;
      if (a[c] == 'c' || a[c] == 'm') return false;  // the rest is the program's
      if (a[c] == 'W' || a[c] == 'X') {
        if (c + 1 == a.size()) ++i;  // the value is the next argument
        break;
      }
    }
  }
  return false;
}

Summary::ProcessId IdOf(const ProcessTrace& p, const ProcessImage& image) {
  Summary::ProcessId id;
  id.host = p.info.host;
  id.pid = p.info.pid;
  id.ppid = p.info.ppid;
  id.rank = p.info.rank;
  const std::string& named = image.exe_chain.empty() ? p.info.exe : image.exe_chain;
  const size_t cut = image.exe_chain.empty() ? named.rfind('/') : named.rfind(" -> ");
  id.exe = cut == std::string::npos ? named : named.substr(cut + (image.exe_chain.empty() ? 1 : 4));
  id.forked = image.exe_chain.empty() ? (p.info.flags & kHeaderFlagForked) != 0 : image.forked;
  id.execed = !image.exe_chain.empty();
  id.python_isolated = PythonIsolated(p.info.cmdline);
  return id;
}

std::string ProcessKey(const Summary::ProcessId& id, const ProcessImage& image, bool with_host) {
  const std::string& exe = image.exe_chain.empty() ? id.exe : image.exe_chain;
  std::string key = (with_host ? id.host + ": " : std::string()) + "pid " +
                    std::to_string(id.pid) + " (" + exe + ")";
  if (id.forked) key += " forked";
  // Another process of the host had the pid before: a row of its own.
  if (image.earlier_same_pid > 0) key += " #" + std::to_string(image.earlier_same_pid + 1);
  return key;
}

}  // namespace dlprof::analysis
