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

size_t ChildEnvBytes(const ChildEnvSpec& spec, char* const* envp) {
  if (!PreloadsUs(EnvValue(envp, "LD_PRELOAD"), spec.self_name)) return 0;
  size_t n = 0;
  if (envp) {
    while (envp[n]) ++n;
  }
  // Ours: dir, the run id pair, the markers, PYTHONPATH; and the null.
  size_t bytes = (n + 4 + kMaxChildMarkers + 1) * sizeof(char*);
  if (spec.python_dir) {
    const char* old = EnvValue(envp, kPythonPath);
    bytes += sizeof(kPythonPath) + strlen(spec.python_dir) + 1 + (old ? strlen(old) : 0) + 1;
  }
  return bytes;
}

char* const* BuildChildEnv(const ChildEnvSpec& spec, char* const* envp, void* memory,
                           size_t bytes) {
  const bool dir = spec.dir_entry && DirIsOurs(spec, envp);
  const bool run = spec.run_entry && RunIdIsOurs(spec, envp);
  const char* old_path = spec.python_dir ? EnvValue(envp, kPythonPath) : nullptr;
  // PYTHONPATH goes as it is when the bootstrap leads it already.
  const bool path = spec.python_dir && !PythonPathLedBy(old_path, spec.python_dir);

  // PYTHONPATH=DIR[:OLD], written after the pointers.
  char** out = static_cast<char**>(memory);
  size_t n = 0;
  if (envp) {
    while (envp[n]) ++n;
  }
  const size_t slots = n + 4 + kMaxChildMarkers + 1;
  char* path_entry = nullptr;
  if (path) {
    path_entry = reinterpret_cast<char*>(out + slots);
    char* w = path_entry;
    const char* end = static_cast<char*>(memory) + bytes;
    auto put = [&](const char* s) {
      while (*s && w < end - 1) *w++ = *s++;
    };
    put(kPythonPath);
    put("=");
    put(spec.python_dir);
    if (old_path) {
      put(":");
      put(old_path);
    }
    *w = '\0';
  }

  bool placed_dir = false, placed_run = false, placed_auto = false, placed_path = false;
  size_t k = 0;
  for (size_t i = 0; i < n; ++i) {
    const char* e = envp[i];
    const size_t len = NameLength(e);
    auto is = [&](const char* name) { return strlen(name) == len && strncmp(e, name, len) == 0; };
    if (dir && is("DLPROF_DIR")) {
      if (!placed_dir) out[k++] = const_cast<char*>(spec.dir_entry);
      placed_dir = true;
    } else if (run && is("DLPROF_RUN_ID")) {
      if (!placed_run) out[k++] = const_cast<char*>(spec.run_entry);
      placed_run = true;
    } else if (run && is("DLPROF_RUN_ID_AUTO")) {
      // Dropped when the id is the user's (no auto entry).
      if (!placed_auto && spec.run_auto_entry) out[k++] = const_cast<char*>(spec.run_auto_entry);
      placed_auto = true;
    } else if (path && is(kPythonPath)) {
      if (!placed_path) out[k++] = path_entry;
      placed_path = true;
    } else {
      out[k++] = const_cast<char*>(e);
    }
  }
  if (dir && !placed_dir) out[k++] = const_cast<char*>(spec.dir_entry);
  if (run && !placed_run) out[k++] = const_cast<char*>(spec.run_entry);
  if (run && !placed_auto && spec.run_auto_entry) out[k++] = const_cast<char*>(spec.run_auto_entry);
  for (int m = 0; m < spec.marker_count && m < kMaxChildMarkers; ++m) {
    const char* marker = spec.markers[m];
    const char* eq = strchr(marker, '=');
    const size_t len = eq ? static_cast<size_t>(eq - marker) : strlen(marker);
    bool present = false;
    for (size_t i = 0; i < n && !present; ++i) present = ValueIf(envp[i], marker, len) != nullptr;
    if (!present) out[k++] = const_cast<char*>(marker);
  }
  if (path && !placed_path) out[k++] = path_entry;
  out[k] = nullptr;
  return out;
}

const ChildEnvSpec* ProcessChildEnv() {
  return g_spec_ready.load(std::memory_order_acquire) ? &g_spec : nullptr;
}

void PrepareChildEnv(const char* dir, bool python) {
  if (g_spec_ready.load()) return;
  g_spec.dir_entry = Concat("DLPROF_DIR=", dir);
  if (const char* v = GetEnv("DLPROF_DIR")) g_spec.dir_inherited = strdup(v);
  const char* id = ProcessRunId();
  if (id && *id) {
    g_spec.run_entry = Concat("DLPROF_RUN_ID=", id);
    if (!ProcessRunIdIsUsers()) g_spec.run_auto_entry = Concat("DLPROF_RUN_ID_AUTO=", id);
  }
  if (const char* v = GetEnv("DLPROF_RUN_ID")) g_spec.run_inherited = strdup(v);
  if (const char* v = GetEnv("DLPROF_RUN_ID_AUTO")) g_spec.run_auto_inherited = strdup(v);
  // Markers this process was given go on, whatever the program passes.
  static const char* const kMarkers[] = {kInjectionWarnedVar, kNvtxInjectionWarnedVar,
                                         kStacksWarnedVar, kUntracedWarnedVar};
  for (const char* m : kMarkers) {
    if (GetEnv(m) != nullptr) AddChildMarker(m);
  }
  if (python && *PythonBootstrapDir()) g_spec.python_dir = PythonBootstrapDir();
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&PrepareChildEnv), &info) != 0 && info.dli_fname) {
    const char* slash = strrchr(info.dli_fname, '/');
    g_spec.self_name = strdup(slash ? slash + 1 : info.dli_fname);
  }
  g_spec_ready.store(true, std::memory_order_release);
}

void AddChildMarker(const char* name) {
  if (HasChildMarker(name) || g_spec.marker_count >= kMaxChildMarkers) return;
  const char* entry = Concat(name, "=1");
  if (entry == nullptr) return;
  g_spec.markers[g_spec.marker_count] = entry;
  __atomic_store_n(&g_spec.marker_count, g_spec.marker_count + 1, __ATOMIC_RELEASE);
}

bool HasChildMarker(const char* name) {
  const size_t len = strlen(name);
  for (int m = 0; m < g_spec.marker_count; ++m) {
    if (ValueIf(g_spec.markers[m], name, len)) return true;
  }
  return false;
}

const char* PythonBootstrapDir() {
  if (g_python_dir_known) return g_python_dir;
  g_python_dir_known = true;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&PythonBootstrapDir), &info) == 0 || !info.dli_fname) {
    return g_python_dir;
  }
  // Absolute: a child may start in another directory.
  char self[PATH_MAX];
  if (realpath(info.dli_fname, self) == nullptr) return g_python_dir;
  char* slash = strrchr(self, '/');
  if (slash == nullptr) return g_python_dir;
  *slash = '\0';
  char dir[PATH_MAX];
  const int n = snprintf(dir, sizeof(dir), "%s/dlprof-python", self);
  struct stat st {};
  if (n > 0 && n < static_cast<int>(sizeof(dir)) && stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) {
    memcpy(g_python_dir, dir, static_cast<size_t>(n) + 1);
  }
  return g_python_dir;
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
  const ChildEnvSpec* spec = ProcessChildEnv();
  if (spec == nullptr || spec->python_dir == nullptr || !IsPythonInterpreter()) return;
  const char* old = GetEnv(kPythonPath);
  if (PythonPathLedBy(old, spec->python_dir)) return;
  if (old == nullptr) {
    SetEnv(kPythonPath, spec->python_dir);
    return;
  }
  char* joined = Concat(spec->python_dir, ":");
  char* value = joined ? Concat(joined, old) : nullptr;
  if (value) SetEnv(kPythonPath, value);
  free(value);
  free(joined);
}

}  // namespace dlprof::core
