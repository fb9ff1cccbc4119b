/* The C interface libdlprof.so exports to the parts of dlprof that live in
 * other shared objects (the CUPTI plugin) or other languages (the Python
 * module). Events use the layout of dlprof::Event in dlprof/format.h.
 *
 * Every function is safe to call at any time: when the tracer is not
 * running (disabled, not yet started, finished, or in a forked child that
 * could not start) they do nothing and report so. */
#ifndef DLPROF_PLUGIN_H_
#define DLPROF_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The tracer's clock: CLOCK_MONOTONIC_RAW in nanoseconds. */
uint64_t dlprof_plugin_now_ns(void);

/* Interns a string (kernel name, region name) and returns its id for an
 * event's `file` field; 0 when the table is full or tracing is off. */
uint32_t dlprof_plugin_intern(const char* text, size_t len);

/* Records one event (a dlprof::Event, 64 bytes) on the calling thread's
 * ring. Returns 1 if recorded, 0 if tracing is off for this thread. */
int dlprof_plugin_record(const void* event);

/* Adds `count` to the dropped-events count written into the trace. */
void dlprof_plugin_count_dropped(uint64_t count);

/* 1 when events of this module (bit of DLPROF_TRACE: "cuda", "app", ...) are
 * being recorded in this process. */
int dlprof_plugin_module_enabled(const char* module);

/* The value of DLPROF_CUDA as configured (never NULL). */
const char* dlprof_plugin_cuda_kinds(void);

/* GPU work may come in this process: CUPTI attached to it. With
 * DLPROF_KEEP, its rank's data stall is measured from now on (the I/O of
 * the processes sharing its rank's I/O map is marked: lib/core/rank_io_map.h).
 * Optional: a plugin finds no such function in an older libdlprof.so. */
void dlprof_plugin_gpu_attached(void);

/* Writes everything recorded so far to the trace file. */
void dlprof_plugin_flush(void);

/* Says `message` once on stderr, prefixed "dlprof: ". */
void dlprof_plugin_log(const char* message);

/* The run this process's trace belongs to, as the tracer resolved it at
 * start, from what a traced parent handed on too (docs/USER_GUIDE.md,
 * "Runs"); "" where it resolved none (DLPROF_ENABLE=0). `dlprof run`,
 * itself traced inside a run, keeps its command in that run. */
const char* dlprof_plugin_run_id(void);

#ifdef __cplusplus
}
#endif

#endif /* DLPROF_PLUGIN_H_ */
