// The processes of a job that ended badly (verdict.h, BadEnd): a non-zero
// exit status, or a signal, as each trace's last record says; or no end
// at all in a trace cut short (SIGKILL, which no handler sees).
#include <signal.h>
#include <string.h>

#include <algorithm>
#include <cinttypes>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "lib/analysis/findings/verdict.h"
#include "lib/text/text.h"

namespace dlprof::analysis {

namespace {

using ByPid = std::map<std::pair<std::string, int32_t>, const std::string*>;  // its first key

// Whether the program that ran `id` (its nearest ancestor in the trace that
// is no launcher: a shell between them passes a helper's status up) went
// on to end with status 0: it judged the failure (a helper's: git
// rev-parse outside a repository, 128; the compiler probes of
// ctypes.util.find_library, 1; in jobs that succeeded).
using Pids = std::set<std::pair<std::string, int32_t>>;
bool ParentWentOn(const Summary& s, const std::map<std::string, std::string>& roles,
                  const ByPid& by_pid, const Pids& went_on, const Summary::ProcessId& id) {
  int32_t ppid = id.ppid;
  for (int depth = 0; depth < 64 && ppid > 0; ++depth) {  // (a pid reused: no loop)
    auto parent = by_pid.find({id.host, ppid});
    if (parent == by_pid.end()) return false;
    const Summary::ProcessId& p = s.process_ids.at(*parent->second);
    auto role = roles.find(*parent->second);
    if (role == roles.end() || role->second != "launcher") {
      return went_on.count({p.host, p.pid}) != 0;
    }
    ppid = p.ppid;
  }
  return false;
}

}  // namespace

void FindBadEnds(const Summary& s, Verdict* v) {
  std::vector<BadEnd> ends;
  ByPid by_pid;
  for (const auto& [key, id] : s.process_ids) by_pid.emplace(std::make_pair(id.host, id.pid), &key);
  Pids went_on;  // ended with status 0 (its last image: any of its keys)
  for (const auto& [key, id] : s.process_ids) {
    if (id.exit_seen && id.exit_status == 0 && id.end_signal == 0) {
      went_on.insert({id.host, id.pid});
    }
  }
  const std::map<std::string, std::string> roles = ProcessRoles(s);
  for (const auto& [key, id] : s.process_ids) {
    const bool unrecorded = !id.exit_seen && id.end_signal == 0 && id.trace_unfinished;
    if (id.end_signal == 0 && (!id.exit_seen || id.exit_status == 0) && !unrecorded) continue;
    // The job's own processes (a launcher's status follows its ranks'),
    // where no program that ran them went on.
    auto role = roles.find(key);
    if (role != roles.end() && role->second != "main" && role->second != "loader workers") {
      continue;
    }
    if (ParentWentOn(s, roles, by_pid, went_on, id)) continue;
    BadEnd e;
    e.host = id.host, e.exe = id.exe, e.pid = id.pid, e.rank = id.rank;
    e.status = id.end_signal == 0 ? id.exit_status : 0;
    e.signal = id.end_signal;
    e.sender = id.signal_sender;
    e.recorded = !unrecorded;
    auto sender = by_pid.find({id.host, id.signal_sender});
    if (e.sender != 0 && sender != by_pid.end()) {
      e.sender_exe = s.process_ids.at(*sender->second).exe;
    }
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
  if (!e.recorded) return "no end recorded (SIGKILL, the OOM killer, or still running)";
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
