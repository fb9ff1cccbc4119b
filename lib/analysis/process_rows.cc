// Who a summary row of processes is (process_rows.h).
#include "lib/analysis/process_rows.h"

namespace dlprof::dump {

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
  return id;
}

std::string ProcessKey(const Summary::ProcessId& id, const ProcessImage& image, bool with_host) {
  const std::string& exe = image.exe_chain.empty() ? id.exe : image.exe_chain;
  std::string key = (with_host ? id.host + ": " : std::string()) + "pid " +
                    std::to_string(id.pid) + " (" + exe + ")";
  if (id.forked) key += " forked";
  return key;
}

}  // namespace dlprof::dump
