// dlprof: runs a command under the tracer.
//
//   dlprof run [options] [--] command [args...]
//
// Sets LD_PRELOAD (libdlprof.so, found relative to this program, in front of
// any existing value but a sanitizer runtime), the DLPROF_* variables from
// the options and PYTHONPATH (the dlprof Python module), runs the command,
// waits for every process the command left running (job_wait.h, up to
// --wait), prints the summary of the traces that run wrote, and exits as the
// command did (the same status, or the same signal). See --help and
// docs/ANNOTATIONS.md.
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "lib/core/config.h"
#include "lib/core/launch_env.h"
#include "lib/core/run_id.h"
#include "tools/launcher/job_wait.h"
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
  va_list ap;
  va_start(ap, fmt);
  fputs("dlprof: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

[[noreturn]] void Die(int status, const std::string& message) {
  fprintf(stderr, "dlprof: %s\n", message.c_str());
  exit(status);
}

std::string Usage() {
  core::Config d;  // the runtime's defaults
  std::string excludes;
  for (const std::string& e : core::DefaultExcludes()) excludes += (excludes.empty() ? "" : ":") + e;
  std::string s;
  s += "usage: dlprof run [options] [--] command [args...]\n";
  s += "       dlprof --version\n";
  s += "       dlprof --help\n";
  s += "\n";
  s += "Runs `command` with the dlprof tracer preloaded (libdlprof.so in front of\n";
  s += "LD_PRELOAD), every process it starts traced into one directory, then prints\n";
  s += "the summary (dlprof-dump --summary) of the traces this run wrote, on stderr,\n";
  s += "once every process of the run has ended: processes the command left running\n";
  s += "(background jobs, daemons, mpirun's) are waited for, up to --wait seconds.\n";
  s += "Exits with the command's status; a command killed by a signal kills dlprof\n";
  s += "with the same signal. Under mpirun/srun/torchrun, run one `dlprof run` per\n";
  s += "rank: `mpirun -n 4 dlprof run -- python train.py`.\n";
  s += "\n";
  s += "options (each sets the environment variable shown; default in brackets):\n";
  s += "  --dir D           DLPROF_DIR       trace directory [" + d.dir + "]; traces go to\n";
  s += "                                     D/<run id>/<host>/\n";
  s += "  --trace MODULES   DLPROF_TRACE     modules to trace: posix,stdio,mpiio,cuda,app [all]\n";
  s += "  --buffer-kb N     DLPROF_BUFFER_KB ring size per thread in KiB [" +
       std::to_string(d.buffer_kb) + "]\n";
  s += "  --flush-ms N      DLPROF_FLUSH_MS  longest time an event waits in memory [" +
       std::to_string(d.flush_ms) + "]\n";
  s += "  --on-full MODE    DLPROF_ON_FULL   full ring: wait (lossless) or drop (counted) [wait]\n";
  s += "  --stacks          DLPROF_STACKS=1  record the native call stack of each I/O call [off]\n";
  s += "  --cuda KINDS      DLPROF_CUDA      GPU records: kernel,memcpy,memset,sync,runtime,\n";
  s += "                                     driver,nvtx [" + d.cuda + "]\n";
  s += "  --include P       DLPROF_INCLUDE   also trace paths under P, even inside an excluded\n";
  s += "                                     directory; everything not excluded is traced\n";
  s += "                                     anyway (repeatable, or P1:P2) [none]\n";
  s += "  --exclude P       DLPROF_EXCLUDE   do not trace paths under P; replaces the default\n";
  s += "                                     list (repeatable, or P1:P2)\n";
  s += "                                     [" + excludes + "]\n";
  s += "  --quiet           DLPROF_QUIET=1   no per-process line at exit, no notes from dlprof\n";
  s += "                                     (processes left running are still named)\n";
  s += "  --no-summary                       do not print the summary at the end (and do\n";
  s += "                                     not wait for processes left running)\n";
  s += "  --wait S                           before the summary, wait up to S seconds\n";
  s += "                                     (decimals allowed) for the processes the\n";
  s += "                                     command left running; those still running\n";
  s += "                                     then are named [10]\n";
  s += "  --timeline FILE                    at the end, also write the run's timeline to\n";
  s += "                                     FILE in Perfetto's format (dlprof-dump\n";
  s += "                                     --format perfetto), for ui.perfetto.dev\n";
  s += "  --regions WHICH                    the summary attributes I/O to the innermost\n";
  s += "                                     or outermost region holding it [outermost]\n";
  s += "  -h, --help                         this help\n";
  s += "  --version                          the version\n";
  s += "\n";
  s += "other variables:\n";
  s += "  DLPROF_ENABLE     0 turns the tracer off [1]\n";
  s += "  DLPROF_RUN_ID     the run: one id for all processes of a job [the batch\n";
  s += "                    system's or launcher's job id, else a new one that dlprof\n";
  s += "                    sets for the command; see docs/USER_GUIDE.md, Runs]\n";
  s += "  LD_PRELOAD        dlprof puts libdlprof.so first (after a sanitizer runtime,\n";
  s += "                    libasan or libtsan, which must come first) and keeps what\n";
  s += "                    was there\n";
  s += "  PYTHONPATH        dlprof puts its Python module (import dlprof) first\n";
  s += "  NVTX_INJECTION64_PATH  set by the tracer to record NVTX ranges, unless already set\n";
  s += "  CUDA_INJECTION64_PATH  set by the tracer to load its CUPTI plugin, unless already set\n";
  s += "\n";
  s += "In a job with several ranks (RANK, SLURM_PROCID, OMPI_COMM_WORLD_RANK,\n";
  s += "PMI_RANK, PMIX_RANK, ... or a world size above 1), no rank prints the\n";
  s += "summary, since the others may still be running; rank 0 says how to print\n";
  s += "it once the job has finished:\n";
  s += "  dlprof-dump --summary DIR\n";
  return s;
}

const char* Env(const char* name) {
  const char* v = getenv(name);
  return (v && *v) ? v : nullptr;
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

// The trace files under `dir`, at any depth (DLPROF_DIR/<run>/<host>/).
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

std::set<std::string> TraceFiles(const std::string& dir) {
  std::set<std::string> out;
  CollectTraceFiles(dir, 0, &out);
  return out;
}

// The run of the command: as the runtime would resolve it (lib/core/run_id.h).
// An id this launcher makes is set as chosen, like one a user sets: the
// command's processes, an mpirun among them, are all one run. Returns the id.
std::string SetRunId() {
  struct utsname u {};
  const std::string host = uname(&u) == 0 ? u.nodename : "";
  core::RunId r = core::ResolveRunId([](const char* n) { return getenv(n); }, host);
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

struct Options {
  std::map<std::string, std::string> env;  // DLPROF_* to set
  std::vector<std::string> include, exclude;
  bool dir_given = false;
  bool summary = true;
  int64_t wait_ms = 10000;  // --wait
  std::string regions;      // --regions: passed to dlprof-dump; "" for its default
  std::string timeline;     // --timeline: the Perfetto file to write; "" for none
  std::vector<std::string> command;
};

Options ParseRun(int argc, char** argv) {
  Options o;
  int i = 2;
  auto value = [&](const std::string& opt, const std::string& inline_value, bool has_inline) {
    if (has_inline) return inline_value;
    if (i + 1 >= argc) Die(2, "option " + opt + " needs a value (see dlprof --help)");
    return std::string(argv[++i]);
  };
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.size() < 2 || a[0] != '-') break;  // the command
    std::string name = a, inline_value;
    bool has_inline = false;
    size_t eq = a.find('=');
    if (a.compare(0, 2, "--") == 0 && eq != std::string::npos) {
      name = a.substr(0, eq);
      inline_value = a.substr(eq + 1);
      has_inline = true;
    }
    if (name == "--dir") {
      o.env["DLPROF_DIR"] = value(name, inline_value, has_inline);
      o.dir_given = true;
    } else if (name == "--trace") {
      o.env["DLPROF_TRACE"] = value(name, inline_value, has_inline);
    } else if (name == "--buffer-kb") {
      o.env["DLPROF_BUFFER_KB"] = value(name, inline_value, has_inline);
    } else if (name == "--flush-ms") {
      o.env["DLPROF_FLUSH_MS"] = value(name, inline_value, has_inline);
    } else if (name == "--on-full") {
      o.env["DLPROF_ON_FULL"] = value(name, inline_value, has_inline);
    } else if (name == "--cuda") {
      o.env["DLPROF_CUDA"] = value(name, inline_value, has_inline);
    } else if (name == "--include") {
      o.include.push_back(value(name, inline_value, has_inline));
    } else if (name == "--exclude") {
      o.exclude.push_back(value(name, inline_value, has_inline));
    } else if (name == "--stacks" && !has_inline) {
      o.env["DLPROF_STACKS"] = "1";
    } else if (name == "--quiet" && !has_inline) {
      o.env["DLPROF_QUIET"] = "1";
      g_quiet = true;
    } else if (name == "--no-summary" && !has_inline) {
      o.summary = false;
    } else if (name == "--wait") {
      const std::string v = value(name, inline_value, has_inline);
      if (!ParseWaitSeconds(v, &o.wait_ms)) {
        Die(2, "option --wait needs seconds, e.g. 10 or 0.5 (not '" + v + "')");
      }
    } else if (name == "--timeline") {
      o.timeline = value(name, inline_value, has_inline);
      if (o.timeline.empty()) Die(2, "option --timeline needs a file name, e.g. job.pftrace");
    } else if (name == "--regions") {
      o.regions = value(name, inline_value, has_inline);
      if (o.regions != "innermost" && o.regions != "outermost") {
        Die(2, "option --regions needs innermost or outermost (not '" + o.regions + "')");
      }
    } else if (name == "-h" || name == "--help") {
      fputs(Usage().c_str(), stdout);
      exit(0);
    } else {
      Die(2, "unknown option " + a + " (see dlprof --help)");
    }
  }
  for (; i < argc; ++i) o.command.push_back(argv[i]);
  if (o.command.empty()) Die(2, "no command to run (usage: dlprof run [options] -- command [args...])");
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& p : v) s += (s.empty() ? "" : ":") + p;
    return s;
  };
  if (!o.include.empty()) o.env["DLPROF_INCLUDE"] = join(o.include);
  if (!o.exclude.empty()) o.env["DLPROF_EXCLUDE"] = join(o.exclude);
  // The runtime's own parser judges the values: a bad one is a usage error
  // here rather than a warning from every traced process.
  std::vector<std::string> problems;
  core::ParseConfig(
      [&o](const char* n) -> const char* {
        auto it = o.env.find(n);
        return it == o.env.end() ? nullptr : it->second.c_str();
      },
      [&problems](const std::string& w) { problems.push_back(w); });
  if (!problems.empty()) Die(2, problems.front());
  return o;
}

int Run(int argc, char** argv) {
  Options o = ParseRun(argc, argv);
  const std::string self = SelfDir();
  const std::string lib = FindLibrary(self);
  if (lib.empty()) {
    Die(2, "cannot find libdlprof.so next to " + self +
               " (looked in ../lib, ../lib64 and the same directory; DLPROF_LIBRARY names it)");
  }

  // The trace directory: the option, else the inherited variable, else the
  // default. Each run has its own directory in it (DIR/<run id>/<host>/).
  std::string dir;
  if (o.dir_given) {
    dir = o.env["DLPROF_DIR"];
  } else if (const char* inherited = Env("DLPROF_DIR")) {
    dir = inherited;
  } else {
    dir = core::Config().dir;
  }
  if (dir.empty()) Die(2, "--dir needs a directory");
  if (dir[0] != '/') {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof(cwd))) dir = std::string(cwd) + "/" + dir;
  }
  o.env["DLPROF_DIR"] = dir;
  const std::string run_dir = dir + "/" + SetRunId();

  for (const auto& [k, v] : o.env) setenv(k.c_str(), v.c_str(), 1);
  // libdlprof.so first, once; what was preloaded before stays. A sanitizer
  // runtime stays in front of it: ASan and TSan abort unless they come first.
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
  const std::string py = FindPythonDir(self);
  if (!py.empty()) {
    const char* old = Env("PYTHONPATH");
    std::string path = py;
    if (old) {
      std::string s = old;
      if (s != py && s.rfind(py + ":", 0) != 0) path += ":" + s;
      else path = s;
    }
    setenv("PYTHONPATH", path.c_str(), 1);
  }

  const long rank = core::LaunchRank(Env);
  const long world = core::LaunchWorldSize(Env);
  const bool multi_rank = world > 1 || rank > 0;
  const std::set<std::string> before = TraceFiles(run_dir);
  if (o.summary && getenv("DLPROF_ENABLE") && strcmp(getenv("DLPROF_ENABLE"), "0") == 0) {
    o.summary = false;
  }
  // Only a launcher that prints the summary waits for the whole job; as
  // subreaper, it inherits the processes the command leaves behind.
  const bool wait_for_job = (o.summary || !o.timeline.empty()) && !multi_rank;
  if (wait_for_job && !BecomeSubreaper()) {
    Note("cannot wait for processes the command leaves running (prctl: %s)", strerror(errno));
  }

  // Forward signals from the moment the child exists; block them until then.
  sigset_t fwd, old_mask;
  sigemptyset(&fwd);
  for (int s : kForwarded) sigaddset(&fwd, s);
  sigprocmask(SIG_BLOCK, &fwd, &old_mask);
  std::vector<char*> args;
  for (auto& a : o.command) args.push_back(a.data());
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

  if (wait_for_job) {
    for (int s : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction sa {};
      sa.sa_handler = StopWaiting;
      sigemptyset(&sa.sa_mask);
      sigaction(s, &sa, nullptr);
    }
    const std::vector<LeftProcess> left = WaitForDescendants(o.wait_ms, &g_stop_waiting);
    for (int s : {SIGINT, SIGTERM, SIGHUP}) signal(s, SIG_DFL);
    if (!left.empty()) {
      // Said even with --quiet: the summary below lacks part of their I/O.
      std::string names;
      for (const LeftProcess& p : left) {
        names += (names.empty() ? "" : ", ") + std::string("pid ") + std::to_string(p.pid) +
                 " (" + p.name + ")";
      }
      const std::string when =
          g_stop_waiting ? std::string("after an interrupt")
                         : "after --wait " + SecondsText(o.wait_ms);
      fprintf(stderr,
              "dlprof: %zu process%s of the run still running %s; the summary has their I/O "
              "so far: %s\n",
              left.size(), left.size() == 1 ? "" : "es", when.c_str(), names.c_str());
    }
  }

  // The summary of the traces this run wrote.
  std::vector<std::string> files;
  for (const std::string& f : TraceFiles(run_dir)) {
    if (!before.count(f)) files.push_back(f);
  }
  if (o.summary && multi_rank) {
    if (rank == 0) {
      Note("traces in %s; once every rank has finished: dlprof-dump --summary %s",
           run_dir.c_str(), run_dir.c_str());
    }
  } else if (o.summary && files.empty()) {
    Note("no trace was written in %s", run_dir.c_str());
  } else if (o.summary) {
    std::vector<std::string> cmd = {FindDump(self), "--summary"};
    if (!o.regions.empty()) cmd.push_back("--regions=" + o.regions);
    cmd.insert(cmd.end(), files.begin(), files.end());
    const int ds = RunDump(std::move(cmd), "the summary");
    if (ds < 0 || !WIFEXITED(ds) || (WEXITSTATUS(ds) != 0 && WEXITSTATUS(ds) != 127)) {
      Note("the summary could not be printed in full; the traces are in %s", dir.c_str());
    }
  }

  // The timeline (--timeline) of the same traces; in a job of several ranks,
  // only once they have all finished.
  if (!o.timeline.empty() && multi_rank) {
    if (rank == 0) {
      Note("once every rank has finished: dlprof-dump --format perfetto -o %s %s",
           o.timeline.c_str(), run_dir.c_str());
    }
  } else if (!o.timeline.empty() && !files.empty()) {
    std::vector<std::string> cmd = {FindDump(self), "--format", "perfetto", "-o", o.timeline};
    cmd.insert(cmd.end(), files.begin(), files.end());
    const int ds = RunDump(std::move(cmd), "the timeline");
    if (ds >= 0 && WIFEXITED(ds) && WEXITSTATUS(ds) == 0) {
      Note("timeline in %s (open it in https://ui.perfetto.dev)", o.timeline.c_str());
    } else {
      Note("the timeline %s could not be written in full", o.timeline.c_str());
    }
  }

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
  fprintf(stderr, "dlprof: unknown command %s\n\n%s", cmd.c_str(), Usage().c_str());
  return 2;
}
