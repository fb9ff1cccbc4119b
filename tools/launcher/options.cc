// dlprof's command line: its help, the options of `dlprof run` and their
// checks (options.h). A bad value is the launcher's usage error, with the
// option's name, before anything starts, rather than a warning from every
// traced process followed by the runtime's default.
#include "tools/launcher/options.h"

#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "lib/core/config.h"
#include "lib/cupti/cuda_kinds.h"
#include "tools/common/option_value.h"
#include "tools/launcher/job_wait.h"

namespace dlprof::launcher {
namespace {

// `value` is digits only, from lo to hi.
bool InRange(const std::string& value, uint64_t lo, uint64_t hi) {
  if (value.empty() || value.size() > 12 ||
      value.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  const uint64_t n = std::strtoull(value.c_str(), nullptr, 10);
  return n >= lo && n <= hi;
}

// Every comma-separated word of `value` is one of `known`, and there is one.
bool ListOf(const std::string& value, const std::vector<std::string>& known) {
  const std::vector<std::string> words = core::SplitList(value, ',');
  for (const std::string& w : words) {
    bool found = false;
    for (const std::string& k : known) found = found || w == k;
    if (!found) return false;
  }
  return !words.empty();
}

// A word as a shell reads it back: bare when safe, else single-quoted.
std::string ShellWord(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                         "0123456789_-+=./:,@%") == std::string::npos) {
    return s;
  }
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Whether `a` and `b` differ by at most one letter added, dropped, changed
// or swapped with its neighbour, case aside ("rn", "rnu", "Run": "run").
bool OneEditApart(const std::string& a, const std::string& b) {
  auto lower = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  const std::string x = lower(a), y = lower(b);
  if (x == y) return true;
  if (x.size() == y.size()) {
    size_t first = 0;
    while (x[first] == y[first]) ++first;
    if (x.compare(first + 1, std::string::npos, y, first + 1, std::string::npos) == 0) {
      return true;  // one changed
    }
    return first + 1 < x.size() && x[first] == y[first + 1] && x[first + 1] == y[first] &&
           x.compare(first + 2, std::string::npos, y, first + 2, std::string::npos) == 0;
  }
  const std::string& longer = x.size() > y.size() ? x : y;
  const std::string& shorter = x.size() > y.size() ? y : x;
  if (longer.size() != shorter.size() + 1) return false;
  size_t first = 0;
  while (first < shorter.size() && longer[first] == shorter[first]) ++first;
  return longer.compare(first + 1, std::string::npos, shorter, first, std::string::npos) == 0;
}

// Whether `word` names a program that `dlprof run -- word` would find.
bool IsProgram(const std::string& word) {
  if (word.find('/') != std::string::npos) return access(word.c_str(), X_OK) == 0;
  const char* path = getenv("PATH");
  for (const std::string& dir : core::SplitList(path ? path : "", ':')) {
    if (access((dir + "/" + word).c_str(), X_OK) == 0) return true;
  }
  return false;
}

}  // namespace

std::string Usage() {
  core::Config d;  // the runtime's defaults
  std::string excludes;
  for (const std::string& e : core::DefaultExcludes()) {
    excludes += (excludes.empty() ? "" : ":") + e;
  }
  std::string s;
  s += "usage: dlprof run [options] [--] command [args...]\n";
  s += "       dlprof keep RUN_DIR   (a bounded trace's processes keep the window around now;\n";
  s += "                              given DLPROF_DIR, its bounded run written last)\n";
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
  s += "  --trace MODULES   DLPROF_TRACE     modules to trace: posix,stdio,mpiio,cuda,app,gds,"
       "aio [all]\n";
  s += "  --buffer-kb N     DLPROF_BUFFER_KB ring size per thread in KiB [" +
       std::to_string(d.buffer_kb) + "]\n";
  s += "  --flush-ms N      DLPROF_FLUSH_MS  longest time an event waits in memory [" +
       std::to_string(d.flush_ms) + "]\n";
  s += "  --on-full MODE    DLPROF_ON_FULL   full ring: wait (lossless) or drop (counted) [wait]\n";
  s += "  --keep DURATION   DLPROF_KEEP      bounded trace: full events of the last DURATION\n";
  s += "                                     (5s, 10m, 1h) and counters for the whole run [off]\n";
  s += "  --keep-when RULE  DLPROF_KEEP_WHEN keep a window whole when batch_wait>N% [off]\n";
  s += "  --stacks          DLPROF_STACKS=1  record the native call stack of each I/O call [off]\n";
  s += "  --cuda KINDS      DLPROF_CUDA      GPU records: kernel,memcpy,memset,sync,runtime,\n";
  s += "                                     driver, or all [" + d.cuda + "]; NVTX ranges\n";
  s += "                                     are recorded whatever this says\n";
  s += "  --include P       DLPROF_INCLUDE   also trace paths under P, even inside an excluded\n";
  s += "                                     directory; everything not excluded is traced\n";
  s += "                                     anyway (absolute; repeatable, or P1:P2) [none]\n";
  s += "  --exclude P       DLPROF_EXCLUDE   do not trace paths under P; replaces the default\n";
  s += "                                     list (absolute; repeatable, or P1:P2)\n";
  s += "                                     [" + excludes + "]\n";
  s += "  --quiet           DLPROF_QUIET=1   no line on the traces written, no notes from\n";
  s += "                                     dlprof (processes left running are still named);\n";
  s += "                                     without it, dlprof sets DLPROF_QUIET=exit for\n";
  s += "                                     the command (unless set: no line per process,\n";
  s += "                                     warnings still said) and prints one line for all\n";
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
  s += "An option's value follows it (--dir D) or an '=' (--dir=D); a value that\n";
  s += "begins with '-' and a letter or '-' only the latter (--dir=-odd).\n";
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

bool CheckOptionValue(const std::string& name, const std::string& v, std::string* error) {
  const std::string quoted = "'" + v + "'";
  std::string why;
  if (name == "--dir" || name == "--timeline") {
    if (v.empty()) {
      why = name == "--dir" ? "needs a directory" : "needs a file name, e.g. job.pftrace";
    }
  } else if (name == "--include" || name == "--exclude") {
    // The tracer matches absolute paths: a relative prefix would match
    // nothing (the runtime drops it, or the whole value, with a warning).
    const std::vector<std::string> paths = core::SplitList(v, ':');
    if (paths.empty()) why = "needs a path";
    for (const std::string& p : paths) {
      if (p[0] != '/') {
        why = "'" + p + "' is not an absolute path (paths are matched absolute)";
        break;
      }
    }
  } else if (name == "--trace") {
    if (!ListOf(v, {"posix", "stdio", "mpiio", "cuda", "app", "gds", "aio", "all"})) {
      why = quoted + " is not a list of modules (posix,stdio,mpiio,cuda,app,gds,aio or all)";
    }
  } else if (name == "--buffer-kb") {
    if (!InRange(v, 4, 1024 * 1024)) why = quoted + " is not a size in KiB (4..1048576)";
  } else if (name == "--flush-ms") {
    if (!InRange(v, 1, 3600 * 1000)) why = quoted + " is not a time in milliseconds (1..3600000)";
  } else if (name == "--keep") {
    uint64_t ms = 0;
    if (!core::ParseKeepDuration(v, &ms)) {
      why = quoted + " is not a duration from 1s to 30d (5s, 10m, 1h)";
    }
  } else if (name == "--keep-when") {
    double share = 0;
    if (!core::ParseKeepWhen(v, &share)) {
      why = quoted + " is not batch_wait>N% (N above 0, below 100)";
    }
  } else if (name == "--on-full") {
    if (v != "wait" && v != "drop") why = quoted + " is neither wait nor drop";
  } else if (name == "--cuda") {
    // The words the CUPTI plugin takes (lib/cupti/cuda_kinds.h), nvtx
    // among them although it changes nothing.
    std::string warning;
    cupti::ParseCudaKinds(v.c_str(), &warning);
    if (v.find_first_not_of(", ") == std::string::npos || !warning.empty()) {
      why = quoted + " is not a list of GPU record kinds (kernel,memcpy,memset,sync,runtime," +
            "driver or all)";
    }
  } else if (name == "--wait") {
    int64_t ms = 0;
    if (!ParseWaitSeconds(v, &ms)) why = quoted + " is not a number of seconds (e.g. 10 or 0.5)";
  } else if (name == "--regions") {
    if (v != "innermost" && v != "outermost") why = quoted + " is neither innermost nor outermost";
  }
  if (why.empty()) return true;
  *error = name + ": " + why;
  return false;
}

// Sets what a valued option asks for; its value has been checked.
void SetValued(const std::string& name, const std::string& v, Options* o) {
  static const std::map<std::string, const char*> kVariables = {
      {"--dir", "DLPROF_DIR"},           {"--trace", "DLPROF_TRACE"},
      {"--buffer-kb", "DLPROF_BUFFER_KB"}, {"--flush-ms", "DLPROF_FLUSH_MS"},
      {"--on-full", "DLPROF_ON_FULL"},   {"--cuda", "DLPROF_CUDA"},
      {"--keep", "DLPROF_KEEP"},         {"--keep-when", "DLPROF_KEEP_WHEN"}};
  auto var = kVariables.find(name);
  if (var != kVariables.end()) {
    o->env[var->second] = v;
    if (name == "--dir") o->dir_given = true;
  } else if (name == "--include") {
    o->include.push_back(v);
  } else if (name == "--exclude") {
    o->exclude.push_back(v);
  } else if (name == "--wait") {
    ParseWaitSeconds(v, &o->wait_ms);
  } else if (name == "--timeline") {
    o->timeline = v;
  } else if (name == "--regions") {
    o->regions = v;
  }
}

bool ParseRun(int argc, char** argv, Options* o, bool* help, std::string* error) {
  static const char* const kValued[] = {"--dir",     "--trace",   "--buffer-kb", "--flush-ms",
                                        "--on-full", "--cuda",    "--include",   "--exclude",
                                        "--wait",    "--timeline", "--regions", "--keep",
                                        "--keep-when"};
  *help = false;
  int i = 2;
  for (; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      ++i;
      break;
    }
    if (a.size() < 2 || a[0] != '-') break;  // the command
    std::string name = a, v;
    bool has_inline = false;
    const size_t eq = a.find('=');
    if (a.compare(0, 2, "--") == 0 && eq != std::string::npos) {
      name = a.substr(0, eq);
      v = a.substr(eq + 1);
      has_inline = true;
    }
    bool valued = false;
    for (const char* k : kValued) valued = valued || name == k;
    if (valued) {
      if (!has_inline) {
        if (i + 1 >= argc) {
          *error = name + ": needs a value (see dlprof --help)";
          return false;
        }
        // A forgotten value must not swallow the next option: "--dir
        // --stacks" made a directory "--stacks", "--dir -- cmd" one "--".
        if (tools::LooksLikeOption(argv[i + 1])) {
          *error = name + ": needs a value, but " + tools::RefusedValueNote(name, argv[i + 1]);
          return false;
        }
        v = argv[++i];
      }
      if (!CheckOptionValue(name, v, error)) return false;
      SetValued(name, v, o);
    } else if (name == "--stacks" && !has_inline) {
      o->env["DLPROF_STACKS"] = "1";
    } else if (name == "--quiet" && !has_inline) {
      o->env["DLPROF_QUIET"] = "1";
      o->quiet = true;
    } else if (name == "--no-summary" && !has_inline) {
      o->summary = false;
    } else if (name == "-h" || name == "--help") {
      *help = true;
      return true;
    } else {
      *error = "unknown option " + a + " (see dlprof --help)";
      return false;
    }
  }
  for (; i < argc; ++i) o->command.push_back(argv[i]);
  if (o->command.empty()) {
    *error = "no command to run (usage: dlprof run [options] -- command [args...])";
    return false;
  }
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& p : v) s += (s.empty() ? "" : ":") + p;
    return s;
  };
  if (!o->include.empty()) o->env["DLPROF_INCLUDE"] = join(o->include);
  if (!o->exclude.empty()) o->env["DLPROF_EXCLUDE"] = join(o->exclude);
  // --keep-when keeps windows of a bounded trace: --keep, or a good
  // DLPROF_KEEP in the environment (which the command inherits).
  const char* keep_env = getenv("DLPROF_KEEP");
  uint64_t keep_ms = 0;
  const bool keep_inherited = !o->env.count("DLPROF_KEEP") && keep_env != nullptr &&
                              core::ParseKeepDuration(keep_env, &keep_ms);
  if (o->env.count("DLPROF_KEEP_WHEN") && !o->env.count("DLPROF_KEEP") && !keep_inherited) {
    *error = "--keep-when: goes with --keep DURATION (it keeps windows of a bounded trace)";
    return false;
  }
  // The runtime's own parser has the last word, should it ever refuse what
  // the checks above let through: its warning, less what it says it does
  // instead ("ignoring X; using the default"), since nothing runs.
  std::vector<std::string> problems;
  core::ParseConfig(
      [o, keep_inherited, keep_env](const char* n) -> const char* {
        auto it = o->env.find(n);
        if (it != o->env.end()) return it->second.c_str();
        return keep_inherited && std::string(n) == "DLPROF_KEEP" ? keep_env : nullptr;
      },
      [&problems](const std::string& w) { problems.push_back(w); });
  if (!problems.empty()) {
    std::string why = problems.front();
    if (why.rfind("ignoring ", 0) == 0) why.erase(0, 9);
    const size_t instead = why.find("; using the default");
    if (instead != std::string::npos) why.erase(instead);
    *error = "the options set " + why;
    return false;
  }
  return true;
}

std::string UnknownCommand(int argc, char** argv) {
  const std::string word = argv[1];
  std::string rest;
  for (int i = 1; i < argc; ++i) rest += " " + ShellWord(argv[i]);
  if (word.size() > 1 && word[0] == '-') {
    // An option of `run` given before it.
    return "unknown option " + word + "; options of run come after it: dlprof run" + rest +
           "\n(dlprof --help lists them)";
  }
  // A typo of a command ("dlprof rn -- ./io") is no program to trace.
  for (const char* command : {"run", "keep", "help", "version"}) {
    if (word.size() > 1 && OneEditApart(word, command) && !IsProgram(word)) {
      return "unknown command '" + word + "' (did you mean '" + command + "'?)" +
             "\n(dlprof --help lists the commands and options)";
    }
  }
  return "unknown command " + ShellWord(word) + "; to trace a program: dlprof run --" + rest +
         "\n(dlprof --help lists the commands and options)";
}

}  // namespace dlprof::launcher
