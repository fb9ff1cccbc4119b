// dlprof: runs a command under the tracer.
//
//   dlprof run [options] [--] command [args...]
//
// Sets LD_PRELOAD (libdlprof.so, found relative to this program, in front of
// any existing value but a sanitizer runtime), the DLPROF_* variables from
// the options (options.h) and PYTHONPATH (the dlprof Python module), runs
// the command, waits for every process the command left running
// (job_wait.h, up to --wait), says in one line what the run's processes
// wrote (their own lines are silenced), prints the summary of the traces
// that run wrote, and exits as the command did (the same status, or the same
// signal). See --help and docs/ANNOTATIONS.md.
#include <dlfcn.h>
#include <limits.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "lib/core/config.h"
#include "lib/core/launch_env.h"
#include "lib/core/run_id.h"
#include "lib/format/trace_layout.h"
#include "tools/launcher/job_wait.h"
#include "tools/launcher/keep_request.h"
#include "tools/launcher/options.h"
#include "tools/launcher/run_traces.h"
#include "tools/launcher/siblings.h"

#ifndef DLPROF_VERSION
#define DLPROF_VERSION "unknown"
#endif

extern char** environ;

namespace dlprof::launcher {
namespace {

bool g_quiet = false;

void Note(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void Note(const char* fmt, ...) {
  if (g_quiet) return;
  // One write for the line: the ranks of an mpirun job share a stderr, and
  // three writes a line interleaved theirs ("dlprof: dlprof: 1 trace, ...").
  char text[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  fprintf(stderr, "dlprof: %s\n", text);
}

[[noreturn]] void Die(int status, const std::string& message) {
  fprintf(stderr, "dlprof: %s\n", message.c_str());
  exit(status);
}

const char* Env(const char* name) {
  const char* v = getenv(name);
  return (v && *v) ? v : nullptr;
}

std::string HostName() {
  struct utsname u {};
  return uname(&u) == 0 ? u.nodename : "";
}

// GCC's and Clang's ASan, TSan and HWASan runtimes, which must be the first
// library loaded.
bool IsSanitizerRuntime(const std::string& path) {
  const std::string name = path.substr(path.rfind('/') + 1);
  for (const char* prefix : {"libasan.", "libtsan.", "libhwasan.", "libclang_rt.asan",
                             "libclang_rt.tsan", "libclang_rt.hwasan"}) {
    if (name.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

// The run of the tracer loaded into this process (dlprof/plugin.h), or
// null: the launcher is itself traced where it was started by a traced
// process, which hands on its run out of the program's sight
// (lib/core/child_env.h), or where the user preloads the tracer.
const char* TracedRunId() {
  using RunIdFn = const char* (*)();
  auto fn = reinterpret_cast<RunIdFn>(dlsym(RTLD_DEFAULT, "dlprof_plugin_run_id"));
  const char* id = fn != nullptr ? fn() : nullptr;
  return id != nullptr && *id != '\0' ? id : nullptr;
}

// The run of the command: as the runtime would resolve it (lib/core/run_id.h).
// An id this launcher makes is set as chosen, like one a user sets: the
// command's processes, an mpirun among them, are all one run. A launcher
// traced inside a run makes none: its command stays in that run. Returns
// the id.
std::string SetRunId() {
  core::RunId r = core::ResolveRunId([](const char* n) { return getenv(n); }, HostName());
  if (r.source == core::RunIdSource::kGenerated) {
    if (const char* traced = TracedRunId()) r.id = traced;
  }
  switch (r.source) {
    case core::RunIdSource::kExplicit:
    case core::RunIdSource::kInherited:
      break;  // already in the environment
    case core::RunIdSource::kGenerated:
      setenv("DLPROF_RUN_ID", r.id.c_str(), 1);
      unsetenv("DLPROF_RUN_ID_AUTO");
      break;
    default:  // the job's: passed on as the runtime passes on its own
      setenv("DLPROF_RUN_ID", r.id.c_str(), 1);
      setenv("DLPROF_RUN_ID_AUTO", r.id.c_str(), 1);
      break;
  }
  return r.id;
}

// The trace directory, absolute: the option, else the inherited variable,
// else the default. Each run has its own directory in it (DIR/<run id>/<host>/).
std::string TraceDirectory(const Options& o) {
  std::string dir;
  if (o.dir_given) {
    dir = o.env.at("DLPROF_DIR");
  } else if (const char* inherited = Env("DLPROF_DIR")) {
    dir = inherited;
  } else {
    dir = core::Config().dir;
  }
  if (dir.empty()) Die(2, "--dir: needs a directory");
  if (dir[0] != '/') {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof(cwd))) dir = std::string(cwd) + "/" + dir;
  }
  return dir;
}

// libdlprof.so first in LD_PRELOAD, once; what was preloaded before stays. A
// sanitizer runtime stays in front of it: ASan and TSan abort unless they
// come first.
void PreloadLibrary(const std::string& lib) {
  std::string sanitizers, rest;
  if (const char* old = Env("LD_PRELOAD")) {
    std::string s = old;
    size_t start = 0;
    while (start <= s.size()) {
      size_t end = s.find_first_of(": ", start);
      if (end == std::string::npos) end = s.size();
      std::string item = s.substr(start, end - start);
      if (!item.empty() && item != lib && Canonical(item) != lib) {
        std::string& to = IsSanitizerRuntime(item) ? sanitizers : rest;
        to += (to.empty() ? "" : ":") + item;
      }
      start = end + 1;
    }
  }
  std::string preload = sanitizers.empty() ? lib : sanitizers + ":" + lib;
  if (!rest.empty()) preload += ":" + rest;
  setenv("LD_PRELOAD", preload.c_str(), 1);
}

// dlprof's Python package first on PYTHONPATH, once.
void PythonPathFirst(const std::string& py) {
  if (py.empty()) return;
  const char* old = Env("PYTHONPATH");
  std::string path = py;
  if (old) {
    std::string s = old;
    if (s != py && s.rfind(py + ":", 0) != 0) path += ":" + s;
    else path = s;
  }
  setenv("PYTHONPATH", path.c_str(), 1);
}

// --- running the command ---------------------------------------------------------

volatile sig_atomic_t g_child = 0;
volatile sig_atomic_t g_stop_waiting = 0;  // a signal while waiting for the job
const int kForwarded[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};

// A signal sent to dlprof alone (kill, mpirun, a batch system) goes on to the
// command. One from the terminal (si_code SI_KERNEL) reached the command's
// process group already.
void Forward(int sig, siginfo_t* info, void*) {
  if (info && info->si_code == SI_KERNEL) return;
  if (g_child > 0) kill(g_child, sig);
}

// While the launcher waits for the processes the command left running, an
// interrupt ends the wait: the summary follows at once.
void StopWaiting(int) { g_stop_waiting = 1; }

// Runs the command, forwarding signals to it meanwhile; returns its wait
// status, and its pid in `*pid`.
int RunCommand(const std::vector<std::string>& command, pid_t* pid) {
  // Forward signals from the moment the child exists; block them until then.
  sigset_t fwd, old_mask;
  sigemptyset(&fwd);
  for (int s : kForwarded) sigaddset(&fwd, s);
  sigprocmask(SIG_BLOCK, &fwd, &old_mask);
  std::vector<std::string> words = command;
  std::vector<char*> args;
  for (auto& a : words) args.push_back(a.data());
  args.push_back(nullptr);
  fflush(nullptr);
  pid_t child = fork();
  if (child < 0) Die(2, std::string("cannot fork: ") + strerror(errno));
  if (child == 0) {
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    execvp(args[0], args.data());
    int err = errno;
    fprintf(stderr, "dlprof: cannot run %s: %s\n", args[0], strerror(err));
    _exit(err == ENOENT ? 127 : 126);
  }
  g_child = child;
  *pid = child;
  for (int s : kForwarded) {
    struct sigaction sa {};
    sa.sa_sigaction = Forward;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(s, &sa, nullptr);
  }
  sigprocmask(SIG_SETMASK, &old_mask, nullptr);

  int status = 0;
  while (waitpid(child, &status, 0) < 0) {
    if (errno != EINTR) Die(2, std::string("waitpid: ") + strerror(errno));
  }
  g_child = 0;
  for (int s : kForwarded) signal(s, SIG_DFL);
  return status;
}

// Waits up to `wait_ms` for the processes the command left running (an
// interrupt ends the wait) and names those still running then.
void WaitForJob(int64_t wait_ms) {
  for (int s : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction sa {};
    sa.sa_handler = StopWaiting;
    sigemptyset(&sa.sa_mask);
    sigaction(s, &sa, nullptr);
  }
  const std::vector<LeftProcess> left = WaitForDescendants(wait_ms, &g_stop_waiting);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) signal(s, SIG_DFL);
  if (left.empty()) return;
  // Said even with --quiet: the summary lacks part of their I/O.
  std::string names;
  for (const LeftProcess& p : left) {
    names += (names.empty() ? "" : ", ") + std::string("pid ") + std::to_string(p.pid) + " (" +
             p.name + ")";
  }
  const std::string when = g_stop_waiting ? std::string("after an interrupt")
                                          : "after --wait " + SecondsText(wait_ms);
  fprintf(stderr,
          "dlprof: %zu process%s of the run still running %s; the summary has their I/O "
          "so far: %s\n",
          left.size(), left.size() == 1 ? "" : "es", when.c_str(), names.c_str());
}

// What the launcher does once the command has ended: its line, the summary
// and the timeline.
struct Finish {
  const Options* o;
  std::string self;     // this program's directory
  std::string dir;      // DLPROF_DIR
  std::string run_dir;  // DIR/<run id>
  std::vector<std::string> files;  // the traces this run wrote
  bool multi_rank = false;
  long rank = -1;
  pid_t command = 0;    // the command's pid
  bool line = false;    // the processes were silenced: say what they wrote
};

// One line for the lines the silenced processes would have printed.
void SayWhatWasWritten(const Finish& f) {
  if (!f.line || f.files.empty()) return;
  const char* on_full = getenv("DLPROF_ON_FULL");
  const bool drop = on_full && strcmp(on_full, "drop") == 0;
  // Several ranks write into one directory: this launcher speaks for its own.
  const TraceTally t = TallyTraces(f.files, drop, f.multi_rank ? f.command : 0, HostName());
  if (t.traces == 0 && t.unreadable == 0) return;
  Note("%s in %s", TallyText(t, drop).c_str(), f.run_dir.c_str());
}

void PrintSummary(const Finish& f) {
  if (f.multi_rank) {
    if (f.rank == 0) {
      Note("traces in %s; once every rank has finished: dlprof-dump --summary %s",
           f.run_dir.c_str(), f.run_dir.c_str());
    }
  } else if (f.files.empty()) {
    Note("no trace was written in %s", f.run_dir.c_str());
  } else {
    std::vector<std::string> cmd = {FindDump(f.self), "--summary"};
    if (!f.o->regions.empty()) cmd.push_back("--regions=" + f.o->regions);
    cmd.insert(cmd.end(), f.files.begin(), f.files.end());
    const int ds = RunDump(std::move(cmd), "the summary");
    if (ds < 0 || !WIFEXITED(ds) || (WEXITSTATUS(ds) != 0 && WEXITSTATUS(ds) != 127)) {
      Note("the summary could not be printed in full; the traces are in %s", f.dir.c_str());
    }
  }
}

// The timeline (--timeline) of the same traces; in a job of several ranks,
// only once they have all finished.
void WriteTimeline(const Finish& f) {
  const std::string& timeline = f.o->timeline;
  if (f.multi_rank) {
    if (f.rank == 0) {
      Note("once every rank has finished: dlprof-dump --format perfetto -o %s %s",
           timeline.c_str(), f.run_dir.c_str());
    }
  } else if (!f.files.empty()) {
    // "--output=": a file named "-x" (--timeline=-x) is no option to it.
    std::vector<std::string> cmd = {FindDump(f.self), "--format=perfetto", "--output=" + timeline};
    cmd.insert(cmd.end(), f.files.begin(), f.files.end());
    const int ds = RunDump(std::move(cmd), "the timeline");
    if (ds >= 0 && WIFEXITED(ds) && WEXITSTATUS(ds) == 0) {
      Note("timeline in %s (open it in https://ui.perfetto.dev)", timeline.c_str());
    } else {
      Note("the timeline %s could not be written in full", timeline.c_str());
    }
  }
}

// Exits as the command did: its status, or its signal.
int ExitAs(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    // Die the same way, without a core file of our own.
    struct rlimit no_core = {0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, nullptr);
    fflush(nullptr);
    raise(sig);
    return 128 + sig;  // a signal that does not terminate
  }
  return 1;
}

int Run(int argc, char** argv) {
  Options o;
  bool help = false;
  std::string error;
  if (!ParseRun(argc, argv, &o, &help, &error)) Die(2, error);
  if (help) {
    fputs(Usage().c_str(), stdout);
    return 0;
  }
  g_quiet = o.quiet;
  Finish f;
  f.o = &o;
  f.self = SelfDir();
  const std::string lib = FindLibrary(f.self);
  if (lib.empty()) {
    Die(2, "cannot find libdlprof.so next to " + f.self +
               " (looked in ../lib, ../lib64 and the same directory; DLPROF_LIBRARY names it)");
  }
  f.dir = TraceDirectory(o);
  o.env["DLPROF_DIR"] = f.dir;
  f.run_dir = format::RunDirectory(f.dir, SetRunId());
  // Each process's line at exit would come before the summary, one per
  // process: silenced, unless the user chose, and said in one line below.
  // Only that line: a warning or why tracing stepped aside is still said.
  if (!o.env.count("DLPROF_QUIET") && getenv("DLPROF_QUIET") == nullptr) {
    o.env["DLPROF_QUIET"] = "exit";
    f.line = true;
  }
  for (const auto& [k, v] : o.env) setenv(k.c_str(), v.c_str(), 1);
  PreloadLibrary(lib);
  PythonPathFirst(FindPythonDir(f.self));

  f.rank = core::LaunchRank(Env);
  f.multi_rank = core::LaunchWorldSize(Env) > 1 || f.rank > 0;
  const std::set<std::string> before = TraceFiles(f.run_dir);
  const bool disabled = getenv("DLPROF_ENABLE") && strcmp(getenv("DLPROF_ENABLE"), "0") == 0;
  if (disabled) o.summary = false;
  // A bounded run is asked to keep a moment by its directory: named as the
  // command starts, when `dlprof keep` is of use, not only at the end.
  const char* keep = getenv("DLPROF_KEEP");  // --keep's, or the environment's
  uint64_t keep_ms = 0;
  if (!disabled && keep && core::ParseKeepDuration(keep, &keep_ms) &&
      (!f.multi_rank || f.rank == 0)) {
    Note("bounded trace (last %s kept) in %s; to keep the window around a moment: "
         "dlprof keep %s", keep, f.run_dir.c_str(), f.run_dir.c_str());
  }
  // Only a launcher that prints the summary waits for the whole job; as
  // subreaper, it inherits the processes the command leaves behind.
  const bool wait_for_job = (o.summary || !o.timeline.empty()) && !f.multi_rank;
  if (wait_for_job && !BecomeSubreaper()) {
    Note("cannot wait for processes the command leaves running (prctl: %s)", strerror(errno));
  }
  const int status = RunCommand(o.command, &f.command);
  if (wait_for_job) WaitForJob(o.wait_ms);

  for (const std::string& file : TraceFiles(f.run_dir)) {
    if (!before.count(file)) f.files.push_back(file);
  }
  SayWhatWasWritten(f);
  if (o.summary) PrintSummary(f);
  if (!o.timeline.empty()) WriteTimeline(f);
  return ExitAs(status);
}

}  // namespace
}  // namespace dlprof::launcher

int main(int argc, char** argv) {
  using namespace dlprof::launcher;
  if (argc < 2) {
    fputs(Usage().c_str(), stderr);
    return 2;
  }
  std::string cmd = argv[1];
  if (cmd == "--version" || cmd == "version") {
    printf("dlprof %s\n", DLPROF_VERSION);
    return 0;
  }
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    fputs(Usage().c_str(), stdout);
    return 0;
  }
  if (cmd == "run") return Run(argc, argv);
  if (cmd == "keep") return KeepRequest(argc, argv);
  fprintf(stderr, "dlprof: %s\n", UnknownCommand(argc, argv).c_str());
  return 2;
}
