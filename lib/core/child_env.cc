// Reading the environment past the program's getenv, and the environment
// the runtime hands each child (child_env.h says why).
#include "lib/core/child_env.h"

#include <dlfcn.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "lib/core/cuda_injection.h"
#include "lib/core/nvtx_injection.h"
#include "lib/core/real_symbol.h"
#include "lib/core/run_id.h"
#include "lib/core/stacks.h"

extern char** environ;

namespace dlprof::core {
namespace {

// Constant-initialised: Initialize may run before this file's dynamic
// initialisers would.
ChildEnvSpec g_spec;
std::atomic<bool> g_spec_ready{false};
char g_python_dir[PATH_MAX];
bool g_python_dir_known = false;
// The bootstrap's directory where this process, if a Python interpreter,
// puts it on its PYTHONPATH (PrepareChildEnv); null: DLPROF_PYTHON=0.
const char* g_own_python_dir = nullptr;

// What a traced parent handed this process (TakeInheritedEnv): copies, the
// environment's entries being gone.
const char* g_inherited_dir = nullptr;
const char* g_inherited_run = nullptr;
const char* g_inherited_run_auto = nullptr;
const char* g_inherited_io_map = nullptr;

// The markers of messages given once per run (child_env.h).
const char* const kMarkers[] = {kInjectionWarnedVar, kNvtxInjectionWarnedVar, kStacksWarnedVar,
                                kUntracedWarnedVar, kConfigWarnedVar};
constexpr int kMarkerKinds = sizeof(kMarkers) / sizeof(kMarkers[0]);
static_assert(kMarkerKinds <= kMaxChildMarkers, "room for every marker");
bool g_marker_given[kMarkerKinds];

// The value of NAME=value when `entry` is one for `name` (of `len` bytes).
const char* ValueIf(const char* entry, const char* name, size_t len) {
  return strncmp(entry, name, len) == 0 && entry[len] == '=' ? entry + len + 1 : nullptr;
}

size_t NameLength(const char* entry) {
  const char* eq = strchr(entry, '=');
  return eq ? static_cast<size_t>(eq - entry) : strlen(entry);
}

bool SameValue(const char* a, const char* b) {
  return (a == nullptr) == (b == nullptr) && (a == nullptr || strcmp(a, b) == 0);
}

// Whether LD_PRELOAD (items separated by ':' or ' ') names a file called
// `self_name`, or libdlprof.so.
bool PreloadsUs(const char* preload, const char* self_name) {
  if (preload == nullptr) return false;
  const size_t self_len = self_name ? strlen(self_name) : 0;
  const char* p = preload;
  while (*p) {
    const char* end = p;
    while (*end && *end != ':' && *end != ' ') ++end;
    const char* base = p;
    for (const char* q = p; q < end; ++q) {
      if (*q == '/') base = q + 1;
    }
    const size_t len = static_cast<size_t>(end - base);
    if ((self_len && len == self_len && strncmp(base, self_name, len) == 0) ||
        (len == 12 && strncmp(base, "libdlprof.so", 12) == 0)) {
      return true;
    }
    p = *end ? end + 1 : end;
  }
  return false;
}

// The child's run id pair is ours to set: it has none, or the one this
// process started with (the program passed its environment on).
bool RunIdIsOurs(const ChildEnvSpec& spec, char* const* envp) {
  const char* id = EnvValue(envp, "DLPROF_RUN_ID");
  if (id == nullptr) return true;
  return SameValue(id, spec.run_inherited) &&
         SameValue(EnvValue(envp, "DLPROF_RUN_ID_AUTO"), spec.run_auto_inherited);
}

bool DirIsOurs(const ChildEnvSpec& spec, char* const* envp) {
  const char* dir = EnvValue(envp, "DLPROF_DIR");
  return dir == nullptr || SameValue(dir, spec.dir_inherited);
}

constexpr char kPythonPath[] = "PYTHONPATH";

// A copy of `name`'s value, taken out of the environment; null when unset.
const char* Take(const char* name) {
  const char* v = GetEnv(name);
  if (v == nullptr) return nullptr;
  const char* copy = strdup(v);
  UnsetEnv(name);
  return copy;
}

using SetenvFn = int (*)(const char*, const char*, int);
using UnsetenvFn = int (*)(const char*);

char* Concat(const char* a, const char* b) {
  const size_t la = strlen(a), lb = strlen(b);
  char* s = static_cast<char*>(malloc(la + lb + 1));
  if (s == nullptr) return nullptr;
  memcpy(s, a, la);
  memcpy(s + la, b, lb + 1);
  return s;
}

// "NAME=value", allocated.
char* Entry(const char* name, const char* value) {
  char* with_eq = Concat(name, "=");
  char* e = with_eq ? Concat(with_eq, value) : nullptr;
  free(with_eq);
  return e;
}

}  // namespace

const char* EnvValue(char* const* env, const char* name) {
  if (env == nullptr || name == nullptr) return nullptr;
  const size_t len = strlen(name);
  for (char* const* e = env; *e; ++e) {
    if (const char* v = ValueIf(*e, name, len)) return v;
  }
  return nullptr;
}

const char* GetEnv(const char* name) { return EnvValue(environ, name); }

bool SetEnv(const char* name, const char* value) {
  static SetenvFn fn = reinterpret_cast<SetenvFn>(FindRealSymbol("setenv"));
  return fn != nullptr && fn(name, value, 1) == 0;
}

bool UnsetEnv(const char* name) {
  static UnsetenvFn fn = reinterpret_cast<UnsetenvFn>(FindRealSymbol("unsetenv"));
  return fn != nullptr && fn(name) == 0;
}

bool PythonPathLedBy(const char* value, const char* dir) {
  if (value == nullptr || dir == nullptr || !*dir) return false;
  const size_t len = strlen(dir);
  return strncmp(value, dir, len) == 0 && (value[len] == '\0' || value[len] == ':');
}

void TakeInheritedEnv() {
  g_inherited_dir = Take(kInheritedDirVar);
  g_inherited_run = Take(kInheritedRunIdVar);
  g_inherited_run_auto = Take(kInheritedRunIdAutoVar);
  g_inherited_io_map = Take(kInheritedIoMapVar);
  for (int m = 0; m < kMarkerKinds; ++m) {
    const char* v = Take(kMarkers[m]);
    g_marker_given[m] = v != nullptr;
    free(const_cast<char*>(v));
  }
}

const char* RuntimeEnv(const char* name) {
  if (g_inherited_dir != nullptr && strcmp(name, "DLPROF_DIR") == 0) return g_inherited_dir;
  if (g_inherited_run != nullptr) {
    if (strcmp(name, "DLPROF_RUN_ID") == 0) return g_inherited_run;
    if (strcmp(name, "DLPROF_RUN_ID_AUTO") == 0) return g_inherited_run_auto;
  }
  return GetEnv(name);
}

const char* InheritedIoMap() { return g_inherited_io_map; }

size_t ChildEnvBytes(const ChildEnvSpec& spec, char* const* envp) {
  if (!PreloadsUs(EnvValue(envp, "LD_PRELOAD"), spec.self_name)) return 0;
  size_t n = 0;
  if (envp) {
    while (envp[n]) ++n;
  }
  // Ours: dir, the run id pair, the I/O map, the markers; and the null.
  return (n + 4 + kMaxChildMarkers + 1) * sizeof(char*);
}

char* const* BuildChildEnv(const ChildEnvSpec& spec, char* const* envp, void* memory,
                           size_t bytes) {
  (void)bytes;  // ChildEnvBytes' count of pointers is all it takes
  const bool dir = spec.dir_entry && DirIsOurs(spec, envp);
  const bool run = spec.run_entry && RunIdIsOurs(spec, envp);
  char** out = static_cast<char**>(memory);
  size_t n = 0;
  if (envp) {
    while (envp[n]) ++n;
  }
  const char* io_map = __atomic_load_n(&spec.io_map_entry, __ATOMIC_ACQUIRE);
  bool placed_dir = false, placed_run = false, placed_auto = false, placed_io_map = false;
  size_t k = 0;
  for (size_t i = 0; i < n; ++i) {
    const char* e = envp[i];
    const size_t len = NameLength(e);
    auto is = [&](const char* name) { return strlen(name) == len && strncmp(e, name, len) == 0; };
    // An entry of ours the child gets again takes its place; one it does
    // not get (a program's copy of an environment made for a child) goes.
    if (is(kInheritedDirVar)) {
      if (dir && !placed_dir) out[k++] = const_cast<char*>(spec.dir_entry);
      placed_dir = true;
    } else if (is(kInheritedRunIdVar)) {
      if (run && !placed_run) out[k++] = const_cast<char*>(spec.run_entry);
      placed_run = true;
    } else if (is(kInheritedRunIdAutoVar)) {
      if (run && !placed_auto && spec.run_auto_entry) {
        out[k++] = const_cast<char*>(spec.run_auto_entry);
      }
      placed_auto = true;
    } else if (is(kInheritedIoMapVar)) {
      if (io_map && !placed_io_map) out[k++] = const_cast<char*>(io_map);
      placed_io_map = true;
    } else {
      out[k++] = const_cast<char*>(e);
    }
  }
  if (dir && !placed_dir) out[k++] = const_cast<char*>(spec.dir_entry);
  if (run && !placed_run) out[k++] = const_cast<char*>(spec.run_entry);
  if (run && !placed_auto && spec.run_auto_entry) out[k++] = const_cast<char*>(spec.run_auto_entry);
  if (io_map && !placed_io_map) out[k++] = const_cast<char*>(io_map);
  for (int m = 0; m < spec.marker_count && m < kMaxChildMarkers; ++m) {
    const char* marker = spec.markers[m];
    const char* eq = strchr(marker, '=');
    const size_t len = eq ? static_cast<size_t>(eq - marker) : strlen(marker);
    bool present = false;
    for (size_t i = 0; i < n && !present; ++i) present = ValueIf(envp[i], marker, len) != nullptr;
    if (!present) out[k++] = const_cast<char*>(marker);
  }
  out[k] = nullptr;
  return out;
}

const ChildEnvSpec* ProcessChildEnv() {
  return g_spec_ready.load(std::memory_order_acquire) ? &g_spec : nullptr;
}

void PrepareChildEnv(const char* dir, bool python) {
  if (g_spec_ready.load()) return;
  g_spec.dir_entry = Entry(kInheritedDirVar, dir);
  // What the program sees (child_env.h): a child's value equal to it is
  // the one the program passed on, not one it chose.
  if (const char* v = GetEnv("DLPROF_DIR")) g_spec.dir_inherited = strdup(v);
  const char* id = ProcessRunId();
  if (id && *id) {
    g_spec.run_entry = Entry(kInheritedRunIdVar, id);
    if (!ProcessRunIdIsUsers()) g_spec.run_auto_entry = Entry(kInheritedRunIdAutoVar, id);
  }
  if (const char* v = GetEnv("DLPROF_RUN_ID")) g_spec.run_inherited = strdup(v);
  if (const char* v = GetEnv("DLPROF_RUN_ID_AUTO")) g_spec.run_auto_inherited = strdup(v);
  // Markers this process was given go on, whatever the program passes.
  for (int m = 0; m < kMarkerKinds; ++m) {
    if (g_marker_given[m]) AddChildMarker(kMarkers[m]);
  }
  if (python && *PythonBootstrapDir()) g_own_python_dir = PythonBootstrapDir();
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&PrepareChildEnv), &info) != 0 && info.dli_fname) {
    const char* slash = strrchr(info.dli_fname, '/');
    g_spec.self_name = strdup(slash ? slash + 1 : info.dli_fname);
  }
  g_spec_ready.store(true, std::memory_order_release);
}

void SetChildIoMap(const char* path) {
  const char* entry = path != nullptr ? Entry(kInheritedIoMapVar, path) : nullptr;
  __atomic_store_n(&g_spec.io_map_entry, entry, __ATOMIC_RELEASE);
}

namespace {
// Whether the children's environment carries marker `name`.
bool ChildrenHaveMarker(const char* name) {
  const size_t len = strlen(name);
  for (int m = 0; m < g_spec.marker_count; ++m) {
    if (ValueIf(g_spec.markers[m], name, len)) return true;
  }
  return false;
}
}  // namespace

void AddChildMarker(const char* name) {
  if (ChildrenHaveMarker(name) || g_spec.marker_count >= kMaxChildMarkers) return;
  const char* entry = Concat(name, "=1");
  if (entry == nullptr) return;
  g_spec.markers[g_spec.marker_count] = entry;
  __atomic_store_n(&g_spec.marker_count, g_spec.marker_count + 1, __ATOMIC_RELEASE);
}

bool HasChildMarker(const char* name) {
  // Given by the parent (before PrepareChildEnv passes it on), or added.
  for (int m = 0; m < kMarkerKinds; ++m) {
    if (g_marker_given[m] && strcmp(kMarkers[m], name) == 0) return true;
  }
  return ChildrenHaveMarker(name);
}

namespace {
// The directory libdlprof.so was loaded from, absolute (a child may start
// in another directory); false where it cannot be told.
bool LibraryDir(char (&dir)[PATH_MAX]) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&LibraryDir), &info) == 0 || !info.dli_fname) return false;
  if (realpath(info.dli_fname, dir) == nullptr) return false;
  char* slash = strrchr(dir, '/');
  if (slash == nullptr) return false;
  *slash = '\0';
  return true;
}

// `out` = <library dir>/`rel` where `test` (relative to it; "." for the
// directory itself) exists.
bool FoundBesideLibrary(const char* rel, const char* test, char (&out)[PATH_MAX]) {
  char lib[PATH_MAX];
  char probe[PATH_MAX];
  struct stat st {};
  if (!LibraryDir(lib)) return false;
  const int n = snprintf(out, sizeof(out), "%s/%s", lib, rel);
  if (n <= 0 || n >= static_cast<int>(sizeof(out))) return false;
  const int m = snprintf(probe, sizeof(probe), "%s/%s", out, test);
  return m > 0 && m < static_cast<int>(sizeof(probe)) && stat(probe, &st) == 0;
}

char g_launcher_python_dir[PATH_MAX];
bool g_launcher_python_dir_known = false;
}  // namespace

const char* PythonBootstrapDir() {
  if (g_python_dir_known) return g_python_dir;
  g_python_dir_known = true;
  if (!FoundBesideLibrary("dlprof-python", ".", g_python_dir)) g_python_dir[0] = 0;
  return g_python_dir;
}

const char* LauncherPythonDir() {
  if (g_launcher_python_dir_known) return g_launcher_python_dir;
  g_launcher_python_dir_known = true;
  // tools/launcher/siblings.cc's FindPythonDir looks at <bin>/../python,
  // <bin>/../lib/dlprof/python and <bin>/../share/dlprof/python: from the
  // library's directory (<prefix>/lib, build/lib) these.
  for (const char* rel : {"../python", "dlprof/python", "../share/dlprof/python"}) {
    if (FoundBesideLibrary(rel, "dlprof/__init__.py", g_launcher_python_dir)) {
      char canonical[PATH_MAX];
      if (realpath(g_launcher_python_dir, canonical) != nullptr) {
        memcpy(g_launcher_python_dir, canonical, strlen(canonical) + 1);
      }
      return g_launcher_python_dir;
    }
  }
  g_launcher_python_dir[0] = 0;
  return g_launcher_python_dir;
}

bool IsPythonInterpreter() {
  char exe[PATH_MAX];
  const long n = syscall(SYS_readlink, "/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0) return false;
  exe[n] = '\0';
  const char* slash = strrchr(exe, '/');
  return strncmp(slash ? slash + 1 : exe, "python", 6) == 0;
}

void PutBootstrapOnPythonPath() {
  const char* dir = g_own_python_dir;
  if (dir == nullptr || !IsPythonInterpreter()) return;
  const char* old = GetEnv(kPythonPath);
  if (PythonPathLedBy(old, dir)) return;
  if (old == nullptr) {
    SetEnv(kPythonPath, dir);
    return;
  }
  char* joined = Concat(dir, ":");
  char* value = joined ? Concat(joined, old) : nullptr;
  if (value) SetEnv(kPythonPath, value);
  free(value);
  free(joined);
}

}  // namespace dlprof::core
