// The environment, as the runtime reads it and as it passes it on.
//
// Reading: the runtime never calls getenv(). A program may define its own
// getenv, setenv and putenv, which then take the place of libc's for the
// whole process, the tracer included: bash does (nm -D /bin/bash), and its
// setenv, called before bash's main, makes bash build its variable table
// early, after which its getenv no longer sees the environment the process
// was given (a traced bash started a run of its own). So the runtime walks
// environ itself, and changes its own environment only through libc's
// setenv/unsetenv, found in the real-symbol table.
//
// Passing on: what children need of the runtime (the run id, the absolute
// trace directory, the markers of messages already given) is never put into
// the process's own environment, where the program would see it, drop it
// (bash keeps a copy of its own) or hand it to children of its own by ways
// the tracer does not see. It is added to the environment handed to each
// exec and spawn (lib/intercept/process.cc, spawn.cc) whose LD_PRELOAD
// names libdlprof.so, under names of the tracer's own (DLPROF_INHERITED_*,
// the markers); a child that is not traced gets nothing of ours. The
// child's runtime takes them out of its environment as it starts
// (TakeInheritedEnv), before the program can see them: a traced program's
// environment is the one it would have untraced, but for what must be read
// in-process (LD_PRELOAD, CUDA_INJECTION64_PATH, NVTX_INJECTION64_PATH and,
// in a Python interpreter, PYTHONPATH led by the bootstrap, which takes
// itself off again).
//
// Building a child's environment allocates nothing and takes no lock: exec
// runs in vfork children and after fork in threaded programs, where malloc
// may deadlock. The caller gives it memory (ChildEnvBytes says how much).
#ifndef DLPROF_LIB_CORE_CHILD_ENV_H_
#define DLPROF_LIB_CORE_CHILD_ENV_H_

#include <cstddef>

namespace dlprof::core {

// --- this process's environment ----------------------------------------

// `name`'s value in `env` (NAME=value strings, null-terminated; a null env
// is empty), or null.
const char* EnvValue(char* const* env, const char* name);
// `name`'s value in the process's environment (environ), or null.
const char* GetEnv(const char* name);
// libc's setenv(name, value, 1) and unsetenv, never the program's. False
// when libc refuses (or cannot be found).
bool SetEnv(const char* name, const char* value);
bool UnsetEnv(const char* name);

// --- what a traced parent handed this process ---------------------------

// The names a child gets the runtime's state under: the parent's absolute
// trace directory, its run id, and that id's mark as one the tracer
// resolved (not the user's).
constexpr char kInheritedDirVar[] = "DLPROF_INHERITED_DIR";
constexpr char kInheritedRunIdVar[] = "DLPROF_INHERITED_RUN_ID";
constexpr char kInheritedRunIdAutoVar[] = "DLPROF_INHERITED_RUN_ID_AUTO";
// The name of the rank's I/O map file a GPU process hands its exec'd
// children (rank_io_map.h).
constexpr char kInheritedIoMapVar[] = "DLPROF_INHERITED_IO_MAP";

// Called first by Runtime::Initialize: keeps what a traced parent handed
// this process (the DLPROF_INHERITED_* variables, the markers) and takes it
// out of the environment, so that the program never sees it.
void TakeInheritedEnv();
// The environment as the runtime reads its configuration and its run id:
// the process's, where DLPROF_DIR, DLPROF_RUN_ID and DLPROF_RUN_ID_AUTO are
// what the parent handed on when it handed them (the run id and its mark
// as a pair), and the markers are those it was given.
const char* RuntimeEnv(const char* name);
// The I/O map file the process that exec'd this one handed it, or null.
const char* InheritedIoMap();

// --- what children get ---------------------------------------------------

// Markers of messages given once per run, passed on as NAME=1.
constexpr char kUntracedWarnedVar[] = "DLPROF_UNTRACED_WARNED";
constexpr char kConfigWarnedVar[] = "DLPROF_CONFIG_WARNED";  // bad DLPROF_* values
constexpr int kMaxChildMarkers = 8;

// Everything a child's environment is built from. Plain pointers and
// counts only: the runtime's copy lives in constant-initialised storage.
struct ChildEnvSpec {
  // "DLPROF_INHERITED_DIR=<absolute>"; given where the child's DLPROF_DIR is
  // missing or still the value this process's program was started with (a
  // program that set another one for its child keeps it).
  const char* dir_entry = nullptr;
  const char* dir_inherited = nullptr;
  // "DLPROF_INHERITED_RUN_ID=<id>" and, for an id the tracer resolved rather
  // than one the user set, "DLPROF_INHERITED_RUN_ID_AUTO=<id>" (null: the
  // child takes the id as the user's). Given where the child's
  // DLPROF_RUN_ID is missing or the DLPROF_RUN_ID/_AUTO pair is still what
  // this process's program was started with (a run id the program chose
  // for its child wins).
  const char* run_entry = nullptr;
  const char* run_auto_entry = nullptr;
  const char* run_inherited = nullptr;
  const char* run_auto_inherited = nullptr;
  // "DLPROF_INHERITED_IO_MAP=<path>" (null: none), set and changed while
  // the process runs (SetChildIoMap): read with an atomic load.
  const char* io_map_entry = nullptr;
  // "NAME=1", added where the child lacks NAME.
  const char* markers[kMaxChildMarkers] = {};
  int marker_count = 0;
  // The file name of the preloaded library ("libdlprof.so"): a child whose
  // LD_PRELOAD names no such file is not traced and gets nothing.
  const char* self_name = nullptr;
};

// Bytes BuildChildEnv needs for `envp`; 0 when the child gets `envp` as it
// is (not traced, or no spec).
size_t ChildEnvBytes(const ChildEnvSpec& spec, char* const* envp);
// The child's environment, laid out in `memory` (ChildEnvBytes of it,
// pointer-aligned): `envp`'s entries in their order, ours replacing any of
// the same name in place, the others at the end. A DLPROF_INHERITED_*
// entry of `envp` that is not given again is left out: it is never the
// program's.
char* const* BuildChildEnv(const ChildEnvSpec& spec, char* const* envp, void* memory,
                           size_t bytes);

// Whether `value` (a PYTHONPATH) has `dir` as its first entry.
bool PythonPathLedBy(const char* value, const char* dir);

// The runtime's spec: null until PrepareChildEnv, and in a process whose
// tracer is off (DLPROF_ENABLE=0).
const ChildEnvSpec* ProcessChildEnv();
// Called once by Runtime::Initialize, after the configuration and the run
// id: fills the runtime's spec. `python` is DLPROF_PYTHON: whether this
// process, if a Python interpreter, gets the bootstrap.
void PrepareChildEnv(const char* dir, bool python);
// Hands exec'd children the rank's I/O map file `path` from now on (null:
// none). From the flusher: it allocates; an entry replaced is never freed
// (an exec on another thread may be copying it).
void SetChildIoMap(const char* path);
// Adds marker NAME=1 for children (no-op when it is there already).
void AddChildMarker(const char* name);
// Whether this process started with marker `name` or has added it since.
bool HasChildMarker(const char* name);

// <directory of libdlprof.so>/dlprof-python where it is a directory, else
// "" (issue 30's bootstrap; the `pytorch` side installs it there).
const char* PythonBootstrapDir();
// The directory of the dlprof package `dlprof run` puts on PYTHONPATH for
// the program's `import dlprof` (build/python, <prefix>/lib/dlprof/python or
// <prefix>/share/dlprof/python, found from the library's directory as the
// launcher finds it from its own), else "". The bootstrap loads the package
// from there when it is on the path: the tracer's reads, not the program's.
const char* LauncherPythonDir();
// Whether this process is a Python interpreter: its executable's name
// starts with "python" (python3, python3.11, a virtualenv's python, which
// /proc/self/exe resolves to the interpreter it links to).
bool IsPythonInterpreter();
// In a Python interpreter, before Python reads its environment: the
// bootstrap first on PYTHONPATH (DIR if it was unset, DIR:OLD if it was
// set, even empty; as it is when DIR leads already). Nothing elsewhere:
// each traced Python process, a child too, puts it there for itself.
void PutBootstrapOnPythonPath();

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_CHILD_ENV_H_
