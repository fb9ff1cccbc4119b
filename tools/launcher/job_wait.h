// Waiting for every process of a `dlprof run` job, not only its command.
//
// A command may leave processes behind that still do I/O: a shell's
// background job, a daemon that double-forks, mpirun's daemons shutting
// down. Their traces end only when they exit, so the summary waits for them.
//
// How they are found: the launcher makes itself a child subreaper
// (prctl(PR_SET_CHILD_SUBREAPER)) before it starts the command. Every
// process of the command's tree whose parent dies is then re-parented to the
// launcher instead of to init, so "no child left" (waitpid gives ECHILD)
// means "no process of the job left on this host". This was chosen over
// reading the traces (a trace without an end marker whose pid is alive)
// because pids in traces may belong to other hosts or pid namespaces (a pid
// alive here may be another process), a process that has not written its
// header yet is invisible in the traces, and a killed process never writes
// an end marker; the kernel's process tree has none of these gaps.
// Processes outside the tree (started by ssh on another host, or handed to
// another service such as systemd) are not waited for: their traces are
// summarised as they are.
#ifndef DLPROF_TOOLS_LAUNCHER_JOB_WAIT_H_
#define DLPROF_TOOLS_LAUNCHER_JOB_WAIT_H_

#include <sys/types.h>

#include <csignal>

#include <cstdint>
#include <string>
#include <vector>

namespace dlprof::launcher {

// Makes the calling process a child subreaper. False (with errno) where
// the kernel does not support it (before Linux 3.4).
bool BecomeSubreaper();

// One process of the job that was still running.
struct LeftProcess {
  pid_t pid = 0;
  std::string name;  // its command line, shortened, or its comm
};

// Reaps the launcher's children until none is left, or until `wait_ms`
// have passed, or until `*interrupted` becomes nonzero (a signal). Returns
// the processes of the job still running then (descendants of the
// launcher, by pid), empty when all ended.
std::vector<LeftProcess> WaitForDescendants(int64_t wait_ms, volatile sig_atomic_t* interrupted);

// --wait's value: "1.5" seconds -> 1500 ms, without going through a double.
bool ParseWaitSeconds(const std::string& s, int64_t* ms);
// And back: 1500 -> "1.5 s".
std::string SecondsText(int64_t ms);

// The descendants of `ancestor` now, from /proc, in pid order.
std::vector<LeftProcess> Descendants(pid_t ancestor);

}  // namespace dlprof::launcher

#endif  // DLPROF_TOOLS_LAUNCHER_JOB_WAIT_H_
