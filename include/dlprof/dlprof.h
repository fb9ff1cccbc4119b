/* dlprof annotations: name the phases of a program (epoch, step, load_batch)
 * so that dlprof-dump can break I/O time, bytes and data-stall time down by
 * them.
 *
 *   #include <dlprof/dlprof.h>
 *
 *   dlprof_region_begin("epoch 3");
 *   for (...) {
 *     dlprof_region_begin("load_batch");
 *     read_batch(...);
 *     dlprof_region_end();
 *     dlprof_counter("queue_depth", depth);
 *   }
 *   dlprof_region_end();
 *   dlprof_mark("checkpoint written");
 *
 * A flow ties two points of the job together, in other threads or
 * processes of the same host: the timelines draw an arrow from each
 * dlprof_flow_start(name, id) to the dlprof_flow_finish(name, id) of the same
 * name and id (a loader worker's finished batch -> the training loop that
 * received it; dlprof.annotate_loader does this for PyTorch's DataLoader).
 *
 * The header needs no library at link time: each function looks up its
 * implementation in libdlprof.so once, at run time (dlsym(RTLD_DEFAULT)), and
 * does nothing when the program runs without dlprof. So an annotated program
 * runs unchanged with or without the tracer. (On glibc older than 2.34, link
 * with -ldl.) C99 and C++ are both fine; every function is thread-safe and
 * leaves errno as it was.
 *
 * Regions nest per thread: dlprof_region_end() ends the thread's innermost
 * open region. Each region becomes one event when it ends, spanning begin to
 * end, with its nesting depth (0 = outermost). Up to 64 levels are recorded;
 * deeper ones are counted and ignored. An end without a begin is ignored.
 *
 * Names are copied: the caller's string need not outlive the call. Put
 * attributes in the name ("epoch 3", "step epoch=3 batch=17"); every
 * distinct name is stored once in the trace.
 *
 * Events are recorded when the tracer runs with the `app` module
 * (DLPROF_TRACE, on by default).
 */
#ifndef DLPROF_DLPROF_H_
#define DLPROF_DLPROF_H_

#include <stdint.h>
#if !defined(DLPROF_BUILDING_LIBRARY)
#include <dlfcn.h>
#endif

#define DLPROF_ANNOTATION_API_VERSION 2  /* 2: flows */

#ifdef __cplusplus
extern "C" {
#endif

#if defined(DLPROF_BUILDING_LIBRARY)

/* The definitions, exported by libdlprof.so. */
void dlprof_region_begin(const char* name);
void dlprof_region_end(void);
void dlprof_mark(const char* name);
void dlprof_counter(const char* name, int64_t value);
void dlprof_counter_double(const char* name, double value);
void dlprof_flow_start(const char* name, uint64_t id);
void dlprof_flow_finish(const char* name, uint64_t id);
/* 1 when annotations are being recorded in this process, else 0. */
int dlprof_active(void);

#else /* !DLPROF_BUILDING_LIBRARY */

/* RTLD_DEFAULT needs _GNU_SOURCE in C; it is the null handle on glibc. */
#ifdef RTLD_DEFAULT
#define DLPROF_RTLD_DEFAULT_ RTLD_DEFAULT
#else
#define DLPROF_RTLD_DEFAULT_ ((void*)0)
#endif

/* Looks `symbol` up once per translation unit and caches it in `*slot`;
 * returns it, or a null pointer when libdlprof.so is not loaded. Internal. */
static inline void* dlprof_resolve_(void** slot, const char* symbol) {
  void* f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (__builtin_expect(f == (void*)0, 0)) {
    f = dlsym(DLPROF_RTLD_DEFAULT_, symbol);
    if (f == (void*)0) f = (void*)1; /* looked up, absent */
    __atomic_store_n(slot, f, __ATOMIC_RELEASE);
  }
  return f == (void*)1 ? (void*)0 : f;
}

typedef void (*dlprof_name_fn_)(const char*);
typedef void (*dlprof_void_fn_)(void);
typedef void (*dlprof_i64_fn_)(const char*, int64_t);
typedef void (*dlprof_f64_fn_)(const char*, double);
typedef int (*dlprof_int_fn_)(void);
typedef void (*dlprof_flow_fn_)(const char*, uint64_t);

/* Opens a region named `name` on the calling thread. */
static inline void dlprof_region_begin(const char* name) {
  static void* slot;
  dlprof_name_fn_ f = __extension__(dlprof_name_fn_) dlprof_resolve_(&slot, "dlprof_region_begin");
  if (f) f(name);
}

/* Closes the calling thread's innermost open region. */
static inline void dlprof_region_end(void) {
  static void* slot;
  dlprof_void_fn_ f = __extension__(dlprof_void_fn_) dlprof_resolve_(&slot, "dlprof_region_end");
  if (f) f();
}

/* An instant event. */
static inline void dlprof_mark(const char* name) {
  static void* slot;
  dlprof_name_fn_ f = __extension__(dlprof_name_fn_) dlprof_resolve_(&slot, "dlprof_mark");
  if (f) f(name);
}

/* A sample of a named integer counter (queue depth, batch size, ...). */
static inline void dlprof_counter(const char* name, int64_t value) {
  static void* slot;
  dlprof_i64_fn_ f = __extension__(dlprof_i64_fn_) dlprof_resolve_(&slot, "dlprof_counter");
  if (f) f(name, value);
}

/* A sample of a named floating-point counter (loss, learning rate, ...). */
static inline void dlprof_counter_double(const char* name, double value) {
  static void* slot;
  dlprof_f64_fn_ f = __extension__(dlprof_f64_fn_) dlprof_resolve_(&slot, "dlprof_counter_double");
  if (f) f(name, value);
}

/* Where flow `id` of `name` starts (an instant; the arrow leaves from here). */
static inline void dlprof_flow_start(const char* name, uint64_t id) {
  static void* slot;
  dlprof_flow_fn_ f = __extension__(dlprof_flow_fn_) dlprof_resolve_(&slot, "dlprof_flow_start");
  if (f) f(name, id);
}

/* Where flow `id` of `name` finishes (an instant; the arrow ends here). */
static inline void dlprof_flow_finish(const char* name, uint64_t id) {
  static void* slot;
  dlprof_flow_fn_ f = __extension__(dlprof_flow_fn_) dlprof_resolve_(&slot, "dlprof_flow_finish");
  if (f) f(name, id);
}

/* 1 when annotations are being recorded in this process, else 0. */
static inline int dlprof_active(void) {
  static void* slot;
  dlprof_int_fn_ f = __extension__(dlprof_int_fn_) dlprof_resolve_(&slot, "dlprof_active");
  return f ? f() : 0;
}

#endif /* DLPROF_BUILDING_LIBRARY */

#ifdef __cplusplus
}  /* extern "C" */

/* C++: a region for the lifetime of a scope.
 *   { dlprof::Region r("load_batch"); ... } */
namespace dlprof {
class Region {
 public:
  explicit Region(const char* name) { dlprof_region_begin(name); }
  ~Region() { dlprof_region_end(); }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;
};
}  /* namespace dlprof */
#endif

#endif /* DLPROF_DLPROF_H_ */
