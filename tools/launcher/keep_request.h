// `dlprof keep RUN_DIR`: asks every process of a run traced with
// DLPROF_KEEP to keep the window around now whole (keep_request.cc); the
// trace directory or a host's directory stands for the bounded run in it,
// and a directory without one is refused.
#ifndef DLPROF_TOOLS_LAUNCHER_KEEP_REQUEST_H_
#define DLPROF_TOOLS_LAUNCHER_KEEP_REQUEST_H_

namespace dlprof::launcher {

// The command's exit status: 0 asked, 2 usage, 1 the request not made.
int KeepRequest(int argc, char** argv);

}  // namespace dlprof::launcher

#endif  // DLPROF_TOOLS_LAUNCHER_KEEP_REQUEST_H_
