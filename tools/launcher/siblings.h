// Where dlprof run finds what it installs beside itself (libdlprof.so, the
// Python package, dlprof-dump), and how it runs dlprof-dump.
#ifndef DLPROF_TOOLS_LAUNCHER_SIBLINGS_H_
#define DLPROF_TOOLS_LAUNCHER_SIBLINGS_H_

#include <string>
#include <vector>

namespace dlprof::launcher {

// The directory of this program (/proc/self/exe), "." if unknown.
std::string SelfDir();
bool IsFile(const std::string& p);
// `p` with links and dots resolved (realpath), else as given.
std::string Canonical(const std::string& p);
// libdlprof.so: $DLPROF_LIBRARY, else ../lib, ../lib64 or beside `self`;
// "" if none.
std::string FindLibrary(const std::string& self);
// The directory holding the dlprof Python package; "" if none.
std::string FindPythonDir(const std::string& self);
// dlprof-dump beside `self`, else from PATH.
std::string FindDump(const std::string& self);
// Runs dlprof-dump (`cmd`: its path and arguments) untraced, its output on
// our stderr (stdout is the command's), and waits: its wait status, -1 if
// it could not be started. `what` names its output in a failure message.
int RunDump(std::vector<std::string> cmd, const char* what);

}  // namespace dlprof::launcher

#endif  // DLPROF_TOOLS_LAUNCHER_SIBLINGS_H_
