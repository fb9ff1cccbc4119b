#include "lib/core/stacks.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "lib/core/child_env.h"
#include "lib/core/clock.h"
#include "lib/core/raw_log.h"
#include "lib/core/runtime.h"

namespace dlprof::core {

bool g_stacks_enabled = false;

namespace {

using BacktraceFn = int (*)(void**, int);
BacktraceFn g_backtrace = nullptr;

// libdlprof.so's own mapped range: its frames (the wrapper, this file) are
// left out of every stack.
uintptr_t g_self_lo = 0;
uintptr_t g_self_hi = 0;

// dl_iterate_phdr names the executable "": this is its path.
char g_exe_path[4096];

// Frames captured beyond kMaxStackFrames, to make room for ours.
constexpr int kSelfFrameAllowance = 8;

// Events dropped on this thread when it last recorded a stack: a change
// means the event a stack would follow may be the one dropped.
thread_local uint64_t tls_dropped_seen __attribute__((tls_model("initial-exec"))) = 0;

// Stacks this thread recorded lately: (hash of the frames, frame count) ->
// string id, so that a repeated stack costs a hash of its words instead of
// an interning (a byte-wise hash and a compare). Entries of another trace
// (before a fork) have another generation. Default TLS model: no static TLS
// is taken from a process that dlopen()s the library.
struct StackCacheEntry {
  uint64_t hash;
  uint32_t id;
  uint16_t count;
  uint16_t generation;
};
constexpr uint32_t kStackCacheSize = 256;
thread_local StackCacheEntry tls_stack_cache[kStackCacheSize];
std::atomic<uint16_t> g_generation{1};

inline uint64_t Mix(uint64_t x) {  // splitmix64's finaliser
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

inline uint64_t HashFrames(void* const* frames, int n) {
  uint64_t h = 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(n + 1);
  for (int i = 0; i < n; ++i) h = Mix(h ^ reinterpret_cast<uintptr_t>(frames[i]));
  return h;
}

// --- module map ------------------------------------------------------------

struct ModuleInfo {
  std::string path;
  uintptr_t bias = 0;
  uintptr_t lo = 0;
  uintptr_t hi = 0;
};

// The loader's counters of objects added and removed when the map was last
// written into this trace; ~0 forces a scan.
std::atomic<unsigned long long> g_seen_adds{~0ull};
std::atomic<unsigned long long> g_seen_subs{~0ull};
// Guards g_described. A spin flag, not a mutex, so a forked child can
// simply reset it.
std::atomic_flag g_module_lock = ATOMIC_FLAG_INIT;
// (bias, lo) of every object already described in this trace. Never freed:
// wrappers may run during static destruction.
std::vector<std::pair<uintptr_t, uintptr_t>>* g_described = nullptr;

void ObjectRange(const dl_phdr_info* info, uintptr_t* lo, uintptr_t* hi) {
  uintptr_t l = UINTPTR_MAX, h = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    uintptr_t end = start + ph.p_memsz;
    if (start < l) l = start;
    if (end > h) h = end;
  }
  if (h == 0) l = 0;
  *lo = l;
  *hi = h;
}

int PeekCounters(dl_phdr_info* info, size_t size, void* data) {
  auto* out = static_cast<unsigned long long*>(data);
  if (size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
    out[0] = info->dlpi_adds;
    out[1] = info->dlpi_subs;
  }
  return 1;  // the counters are the same in every entry: stop at the first
}

struct ScanState {
  std::vector<ModuleInfo> found;
  unsigned long long adds = 0, subs = 0;
};

int CollectModule(dl_phdr_info* info, size_t size, void* data) {
  auto* s = static_cast<ScanState*>(data);
  if (s->found.empty() &&
      size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
    s->adds = info->dlpi_adds;
    s->subs = info->dlpi_subs;
  }
  ModuleInfo m;
  m.bias = info->dlpi_addr;
  ObjectRange(info, &m.lo, &m.hi);
  if (m.hi <= m.lo) return 0;
  const char* name = info->dlpi_name;
  m.path = (name && name[0]) ? name : g_exe_path;
  s->found.push_back(std::move(m));
  return 0;
}

void Lock() {
  while (g_module_lock.test_and_set(std::memory_order_acquire)) syscall(SYS_sched_yield);
}
void Unlock() { g_module_lock.clear(std::memory_order_release); }

// Records a `module` event for every loaded object this trace has not
// described yet.
void DescribeNewModules(ThreadContext& t) {
  ScanState scan;
  scan.found.reserve(64);
  dl_iterate_phdr(CollectModule, &scan);
  Lock();
  if (g_described == nullptr) g_described = new std::vector<std::pair<uintptr_t, uintptr_t>>();
  const uint64_t now = NowNs();
  for (const ModuleInfo& m : scan.found) {
    bool known = false;
    for (const auto& d : *g_described) {
      if (d.first == m.bias && d.second == m.lo) {
        known = true;
        break;
      }
    }
    if (known) continue;
    Event ev{};
    ev.kind = static_cast<uint16_t>(EventKind::ModuleMap);
    ev.start_ns = now;
    ev.file = Runtime::Get().strings().Intern(m.path.data(), m.path.size());
    ev.fd = -1;
    ev.offset = static_cast<int64_t>(m.bias);
    ev.size = m.hi - m.lo;
    ev.aux = m.lo;
    Record(t, ev);
    g_described->emplace_back(m.bias, m.lo);
  }
  g_seen_adds.store(scan.adds, std::memory_order_relaxed);
  g_seen_subs.store(scan.subs, std::memory_order_relaxed);
  Unlock();
}

void MaybeDescribeModules(ThreadContext& t) {
  unsigned long long c[2] = {0, 0};
  dl_iterate_phdr(PeekCounters, c);
  if (c[0] == g_seen_adds.load(std::memory_order_relaxed) &&
      c[1] == g_seen_subs.load(std::memory_order_relaxed)) {
    return;
  }
  DescribeNewModules(t);
}

// A forked child writes a new trace: describe every object again.
void StacksForkChild() {
  g_module_lock.clear(std::memory_order_relaxed);
  // The stack cache's ids are still valid, but a stack first seen in the
  // child must trigger describing the modules again.
  uint16_t g = static_cast<uint16_t>(g_generation.load(std::memory_order_relaxed) + 1);
  g_generation.store(g == 0 ? 1 : g, std::memory_order_relaxed);
  // The parent's list may have been mid-update in another thread: start a
  // new one (the old one is left as it is).
  g_described = new std::vector<std::pair<uintptr_t, uintptr_t>>();
  g_seen_adds.store(~0ull, std::memory_order_relaxed);
  g_seen_subs.store(~0ull, std::memory_order_relaxed);
}

int FindSelf(dl_phdr_info* info, size_t, void* data) {
  auto* self = static_cast<uintptr_t*>(data);
  uintptr_t lo, hi;
  ObjectRange(info, &lo, &hi);
  if (self[0] >= lo && self[0] < hi) {
    self[1] = lo;
    self[2] = hi;
    return 1;
  }
  return 0;
}

inline bool InSelf(void* ip) {
  uintptr_t a = reinterpret_cast<uintptr_t>(ip);
  return a - g_self_lo < g_self_hi - g_self_lo;
}

}  // namespace

size_t EncodeStack(const uintptr_t* frames, int n, char* out) {
  for (int i = 0; i < n; ++i) {
    uint64_t v = frames[i];
    std::memcpy(out + 8 * i, &v, 8);  // little-endian: the only byte order we run on
  }
  return static_cast<size_t>(n) * 8;
}

void SetUpStacks(const Config& config) {
  if (!config.stacks || g_stacks_enabled) return;
  void* lib = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) lib = dlopen("libunwind.so", RTLD_NOW | RTLD_LOCAL);
  void* fn = lib ? dlsym(lib, "unw_backtrace") : nullptr;
  if (fn == nullptr) {
    if (!HasChildMarker(kStacksWarnedVar)) {
      const char* why = dlerror();
      RawLog("DLPROF_STACKS=1 but libunwind (libunwind.so.8) cannot be loaded%s%s; "
             "tracing goes on without call stacks",
             why ? ": " : "", why ? why : "");
      AddChildMarker(kStacksWarnedVar);  // once per run: children are told
    }
    return;
  }
  g_backtrace = reinterpret_cast<BacktraceFn>(fn);

  uintptr_t self[3] = {reinterpret_cast<uintptr_t>(&RecordCallStack), 0, 0};
  dl_iterate_phdr(FindSelf, self);
  g_self_lo = self[1];
  g_self_hi = self[2];

  ssize_t n = readlink("/proc/self/exe", g_exe_path, sizeof(g_exe_path) - 1);
  g_exe_path[n > 0 ? n : 0] = '\0';

  // libunwind sets itself up on first use: do it now, not in a traced call.
  void* warm[4];
  g_backtrace(warm, 4);

  static bool atfork_registered = false;
  if (!atfork_registered) {
    pthread_atfork(nullptr, nullptr, StacksForkChild);
    atfork_registered = true;
  }
  g_stacks_enabled = true;
}

void RecordCallStack(ThreadContext& t, uint64_t start, uint16_t tick_flag) {
  ThreadBuffer* b = t.buffer;
  if (b == nullptr) return;
  // If the event was dropped (full ring, drop mode), a stack recorded now
  // would be taken for the stack of the event before it.
  uint64_t dropped = b->dropped.load(std::memory_order_relaxed);
  if (__builtin_expect(dropped != tls_dropped_seen, 0)) {
    tls_dropped_seen = dropped;
    return;
  }
  void* raw[kMaxStackFrames + kSelfFrameAllowance];
  int n = g_backtrace(raw, kMaxStackFrames + kSelfFrameAllowance);
  int first = 0;
  while (first < n && InSelf(raw[first])) ++first;
  // And the tracer's frames further out: main is called through
  // MainThenItsStatus (process.cc, for its return value), which is no
  // frame of the program's.
  int count = 0;
  for (int i = first; i < n; ++i) {
    if (!InSelf(raw[i])) raw[first + count++] = raw[i];
  }
  if (count > kMaxStackFrames) count = kMaxStackFrames;
  if (count <= 0) return;
  static_assert(sizeof(void*) == 8, "stacks are stored as u64 addresses");
  const uint64_t hash = HashFrames(raw + first, count);
  const uint16_t generation = g_generation.load(std::memory_order_relaxed);
  StackCacheEntry& cached = tls_stack_cache[hash & (kStackCacheSize - 1)];
  uint32_t id;
  bool seen = cached.hash == hash && cached.count == count && cached.generation == generation &&
              cached.id != 0;
  if (seen) {
    id = cached.id;
  } else {
    id = Runtime::Get().strings().Intern(reinterpret_cast<const char*>(raw + first),
                                         static_cast<size_t>(count) * 8);
    if (id == 0) return;
    cached = {hash, id, static_cast<uint16_t>(count), generation};
  }
  Event s;
  s.kind = static_cast<uint16_t>(EventKind::CallStack);
  s.flags = tick_flag;  // `start` is the call's: ticks where its event's are
  s.err = 0;
  s.start_ns = start;
  s.dur_ns = 0;
  s.ret = 0;
  s.offset = -1;
  s.size = static_cast<uint64_t>(count);
  s.file = id;
  s.fd = -1;
  s.aux = 0;
  Record(t, s);
  // A stack this thread recorded before had its objects described then.
  if (!seen) MaybeDescribeModules(t);
}

}  // namespace dlprof::core
