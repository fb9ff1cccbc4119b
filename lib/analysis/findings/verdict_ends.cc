// The processes of a job that ended badly (verdict.h, BadEnd): a non-zero
// exit status, or a signal, as each trace's last record says.
#include <signal.h>
#include <string.h>

#include <algorithm>
#include <cinttypes>
#include <map>
#include <tuple>
#include <utility>

#include "lib/analysis/findings/verdict.h"
#include "lib/text/text.h"

namespace dlprof::analysis {

void FindBadEnds(const Summary& s, Verdict* v) {
  std::vector<BadEnd> ends;
  std::map<std::pair<std::string, int32_t>, const Summary::ProcessId*> by_pid;
  for (const auto& [key, id] : s.process_ids) by_pid.emplace(std::make_pair(id.host, id.pid), &id);
  for (const auto& [key, id] : s.process_ids) {
    if (id.end_signal == 0 && (!id.exit_seen || id.exit_status == 0)) continue;
    BadEnd e;
    e.host = id.host, e.exe = id.exe, e.pid = id.pid, e.rank = id.rank;
    e.status = id.end_signal == 0 ? id.exit_status : 0;
    e.signal = id.end_signal;
    e.sender = id.signal_sender;
    auto sender = by_pid.find({id.host, id.signal_sender});
    if (e.sender != 0 && sender != by_pid.end()) e.sender_exe = sender->second->exe;
    ends.push_back(std::move(e));
  }
  // Ranks first, in order (a job's failed rank among thousands), then by
  // host and pid; the processes without a rank after.
  std::sort(ends.begin(), ends.end(), [](const BadEnd& a, const BadEnd& b) {
    return std::make_tuple(a.rank < 0, a.rank, a.host, a.pid) <
           std::make_tuple(b.rank < 0, b.rank, b.host, b.pid);
  });
  v->bad_end_count = ends.size();
  if (ends.size() > kMaxBadEnds) ends.resize(kMaxBadEnds);
  v->bad_ends = std::move(ends);
}

std::string BadEndHow(const BadEnd& e) {
  if (e.signal == 0) return "exit status " + std::to_string(e.status);
  const char* abbrev = sigabbrev_np(e.signal);  // "TERM"; null past the known
  std::string how = abbrev != nullptr ? std::string("SIG") + abbrev
                                      : "signal " + std::to_string(e.signal);
  if (e.sender != 0) {
    how += " from pid " + std::to_string(e.sender);
    if (!e.sender_exe.empty()) how += " (" + e.sender_exe + ")";
  }
  return how;
}

std::string BadEndWho(const BadEnd& e) {
  const std::string pid = "pid " + std::to_string(e.pid);
  return e.rank >= 0 ? "rank " + std::to_string(e.rank) + " (" + pid + ")"
                     : pid + " (" + e.exe + ")";
}

std::string BadEndsText(const Verdict& v) {
  std::vector<std::pair<std::string, std::string>> groups;  // how, whom; first seen first
  for (const BadEnd& e : v.bad_ends) {
    const std::string how = BadEndHow(e);
    auto g = std::find_if(groups.begin(), groups.end(),
                          [&](const auto& group) { return group.first == how; });
    if (g == groups.end()) {
      groups.push_back({how, BadEndWho(e)});
    } else {
      g->second += ", " + BadEndWho(e);
    }
  }
  std::string text;
  for (const auto& [how, whom] : groups) text += (text.empty() ? "" : "; ") + how + ": " + whom;
  if (v.bad_end_count > v.bad_ends.size()) {
    text += text::Fmt("; %" PRIu64 " more", v.bad_end_count - v.bad_ends.size());
  }
  return text;
}

}  // namespace dlprof::analysis
