// Runs the built dlprof-dump on a test's files, as a user would: for the
// tests of its command line and of what it says of its input (dump_cli_test,
// damaged_input_test). Test binaries live in BUILD/tests/unit, the tool in
// BUILD/tools.
#ifndef DLPROF_TESTS_HELPERS_RUN_DUMP_H_
#define DLPROF_TESTS_HELPERS_RUN_DUMP_H_

#include <limits.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/helpers/trace_builder.h"

namespace dlprof::testing {

inline std::string DumpBinary() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  std::string exe(buf, n > 0 ? static_cast<size_t>(n) : 0);
  return exe.substr(0, exe.rfind('/')) + "/../../tools/dlprof-dump";
}

inline std::string ShellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct DumpResult {
  int status = -1;  // the exit status; 128 + N for a signal
  std::string out, err;
};

// dlprof-dump `args` (shell words, quoted where needed), its output in
// `dir`'s files stdout and stderr.
inline DumpResult RunDump(const ScratchDir& dir, const std::string& args) {
  const std::string out = dir.File("stdout"), err = dir.File("stderr");
  const int rc = std::system((ShellQuote(DumpBinary()) + " " + args + " >" + ShellQuote(out) +
                              " 2>" + ShellQuote(err)).c_str());
  DumpResult r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
  const std::vector<uint8_t> o = ReadFile(out), e = ReadFile(err);
  r.out.assign(o.begin(), o.end());
  r.err.assign(e.begin(), e.end());
  return r;
}

}  // namespace dlprof::testing

#endif  // DLPROF_TESTS_HELPERS_RUN_DUMP_H_
