/* The C ABI of dlprof's reader and analysis (lib/read, lib/analysis), for
 * bindings (the Python module) and other programs: open a set of traces,
 * list their processes, decode a trace's events into caller-provided
 * columns a range of blocks at a time, compute the partial summary of a
 * group of traces, merge partials, render one as JSON.
 *
 * C++ inside, C at the edge: no exception and no exit() crosses it. Every
 * call that can fail returns a dlprof_status; dlprof_last_error() gives the
 * message of the last failure on the calling thread. A handle is used by one
 * thread at a time; different handles, on different threads, are
 * independent (Dask runs a task per group, each with its own handle).
 *
 *   dlprof_traces* t;
 *   const char* dirs[] = {"dlprof-traces"};
 *   if (dlprof_traces_open(dirs, 1, NULL, &t) != DLPROF_OK) puts(dlprof_last_error());
 *   dlprof_summary* total = NULL;
 *   for (size_t g = 0; g < dlprof_group_count(t); ++g) {
 *     dlprof_summary* s;
 *     dlprof_summarize_group(t, g, &s);
 *     if (total == NULL) total = s; else dlprof_summary_merge(total, s);
 *   }
 *   char* json; size_t len;
 *   dlprof_summary_json(total, &json, &len);  -- as dlprof-dump --summary --format json
 *   dlprof_free(json); dlprof_summary_free(total); dlprof_traces_free(t);
 *
 * docs/READER_API.md describes each call. Built as libdlprof_reader.so. */
#ifndef DLPROF_READER_H_
#define DLPROF_READER_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum dlprof_status {
  DLPROF_OK = 0,
  DLPROF_ERROR_ARGUMENT = 1, /* a null handle, an index out of range */
  DLPROF_ERROR_INPUT = 2,    /* an input that is missing or holds no trace */
  DLPROF_ERROR_DAMAGED = 3,  /* damaged data: what was intact is still given */
  DLPROF_ERROR_MEMORY = 4,   /* out of memory */
  DLPROF_ERROR_INTERNAL = 5
} dlprof_status;

/* The ABI's version: calls are only ever added (a minor step); a major step
 * would change existing ones. 1.1 added dlprof_reader_version,
 * dlprof_traces_clock_domains, dlprof_trace_process_get, the region calls,
 * dlprof_summary_encode /
 * dlprof_summary_decode; 1.2 dlprof_kind_traits, dlprof_kind_bytes,
 * dlprof_kind_thread; 1.3 dlprof_compare_json and dlprof_trace_info.clock;
 * 1.4 dlprof_trace_info.faults and DLPROF_KIND_MAP_READ; 1.5 DLPROF_KIND_ASYNC
 * and the category "aio"; 1.6 dlprof_whole_run_json. */
#define DLPROF_READER_VERSION_MAJOR 1
#define DLPROF_READER_VERSION_MINOR 6
/* (major << 16) | minor of the library loaded, to check against the above. */
uint32_t dlprof_reader_version(void);

/* The message of the last call on this thread that did not return DLPROF_OK
 * ("" if none); valid until the thread's next call. */
const char* dlprof_last_error(void);

/* ---- A set of traces ---------------------------------------------------- */

typedef struct dlprof_traces dlprof_traces;

/* Opens `paths` (directories stand for every *.dlprof file below them) and
 * reads every trace's headers; no event is decoded yet. Traces of one run
 * (job) are kept: `run`, or the latest when `run` is null, as dlprof-dump
 * does (dlprof_traces_note names the others). The clocks of the run's hosts
 * are aligned onto one time base. DLPROF_ERROR_INPUT when a path names no
 * trace (the others are still opened: *out is set) or no trace belongs to
 * `run` (*out is null). */
dlprof_status dlprof_traces_open(const char* const* paths, size_t count, const char* run,
                                 dlprof_traces** out);
/* "" or a line naming the other runs the input held. */
const char* dlprof_traces_note(const dlprof_traces* traces);
void dlprof_traces_free(dlprof_traces* traces);

size_t dlprof_trace_count(const dlprof_traces* traces);
/* The clock domains (hosts, boots) of the traces: 1 when they share one
 * clock, so that a handle over any subset of them gives the same times. */
size_t dlprof_traces_clock_domains(const dlprof_traces* traces);
/* Start of the first event of all the traces: --from counts from here. */
uint64_t dlprof_traces_first_ns(const dlprof_traces* traces);

/* What a trace's headers say. Strings stay valid as long as `traces`. */
typedef struct dlprof_trace_info {
  const char* path;
  const char* host;
  const char* exe;
  int32_t pid, ppid, rank; /* rank -1: none in the header */
  uint32_t header_flags;   /* kHeaderFlag* (dlprof/format.h) */
  int opened;              /* 0: not a readable trace; the rest is empty */
  uint64_t blocks;         /* blocks with an intact header */
  uint64_t events;         /* events their headers announce */
  uint64_t first_start_ns; /* UINT64_MAX: no event */
  uint64_t process_start_ns;
  uint64_t file_bytes;
  const char* clock;       /* the events' clock: "tsc; calibration error N ns" or
                              "clock_gettime: <why>"; "" in older traces */
  const char* faults;      /* how page faults on mapped files were recorded:
                              "events; ...", "counts; <why>" or "off; <why>";
                              "" in older traces (none were) */
} dlprof_trace_info;
dlprof_status dlprof_trace_info_get(dlprof_traces* traces, size_t trace, dlprof_trace_info* out);

/* What else a trace says about its process, for which its blocks are read
 * (their headers; every payload when `count_dropped` is non-zero, to add up
 * the events the runtime dropped). Strings stay valid as long as `traces`. */
typedef struct dlprof_process_info {
  const char* cmdline;     /* the arguments, each ended by a NUL */
  size_t cmdline_length;   /* bytes of cmdline, NULs included */
  const char* run_id;      /* the run (job) it belongs to; "" in older traces */
  uint64_t last_end_ns;    /* latest event end the block headers state, on the
                              job's time base; 0: no event */
  uint64_t dropped_events; /* UINT64_MAX unless counted */
  uint64_t damaged_blocks; /* payloads found damaged while counting */
  int clean_exit;          /* the block of a clean shutdown is there */
} dlprof_process_info;
dlprof_status dlprof_trace_process_get(dlprof_traces* traces, size_t trace, int count_dropped,
                                       dlprof_process_info* out);

/* ---- Events into columns -------------------------------------------------- */

/* Caller-owned arrays of `capacity` rows each; a null array is not filled. */
typedef struct dlprof_columns {
  size_t capacity;
  uint64_t* start_ns;
  uint64_t* dur_ns;
  uint16_t* kind; /* the event catalogue's code (dlprof/catalogue.h) */
  uint16_t* flags;
  int32_t* tid;
  int32_t* rank; /* the block's rank, else the header's; -1: none */
  int32_t* fd;   /* GPU events: the device */
  uint32_t* file; /* string id of the path (0: none): dlprof_trace_string */
  int64_t* offset;
  uint64_t* size;
  int64_t* ret;
  int32_t* err;
  uint64_t* aux;
} dlprof_columns;

/* Events the headers of blocks [first_block, first_block + block_count)
 * announce: enough rows for dlprof_read_events on that range. */
dlprof_status dlprof_block_events(dlprof_traces* traces, size_t trace, size_t first_block,
                                  size_t block_count, uint64_t* events);

/* Decodes blocks [first_block, first_block + block_count) of `trace` into
 * `columns`, in the order stored (a thread's events in the order they
 * ended), and sets *rows. Start times are on the job's one time base (as in
 * every output of dlprof-dump: traces of other hosts' clocks mapped onto the
 * reference host's). A damaged block is skipped: DLPROF_ERROR_DAMAGED,
 * with the others' events given and the file and offset in the message.
 * DLPROF_ERROR_ARGUMENT when the columns are too small. */
dlprof_status dlprof_read_events(dlprof_traces* traces, size_t trace, size_t first_block,
                                 size_t block_count, const dlprof_columns* columns,
                                 size_t* rows);

/* The string `id` of `trace` (a path, a kernel or region name), as read so
 * far: ids are per trace, and a string arrives in the block of its first
 * use or an earlier one. Null when not (yet) seen. *length gets its length
 * (strings may hold any byte). The handle keeps 16 traces open at most:
 * copy the string before reading events or counting blocks of another
 * trace, which may close this one. */
const char* dlprof_trace_string(dlprof_traces* traces, size_t trace, uint32_t id,
                                size_t* length);

/* ---- Region instances ------------------------------------------------------ */

typedef struct dlprof_regions dlprof_regions;

/* Every region instance of group `group` (dlprof_group_traces): the regions
 * the summary's per-region breakdown uses (lib/read/regions.h: annotation
 * regions, else NVTX ranges), in time order. The group is decoded in memory
 * (at most 16 M events: past that, the regions of the first ones and
 * DLPROF_ERROR_DAMAGED saying so). DLPROF_ERROR_DAMAGED when some input was
 * damaged: *out holds the regions of the rest. */
dlprof_status dlprof_group_regions(dlprof_traces* traces, size_t group, dlprof_regions** out);
size_t dlprof_region_count(const dlprof_regions* regions);

/* Caller-owned arrays of `capacity` rows each; a null array is not filled. */
typedef struct dlprof_region_columns {
  size_t capacity;
  uint32_t* trace;    /* index of its trace (process) in the handle */
  int32_t* tid;
  uint64_t* start_ns; /* on the job's time base */
  uint64_t* end_ns;
  uint32_t* depth;    /* nesting depth on its thread when it began */
  uint32_t* name;     /* id: dlprof_region_name */
  uint8_t* nvtx;      /* 1: an NVTX range, 0: an annotation region */
  uint8_t* outermost; /* 1: no region of its source on its thread holds it */
} dlprof_region_columns;
/* Fills every region's row; DLPROF_ERROR_ARGUMENT when the columns are too small. */
dlprof_status dlprof_region_read(const dlprof_regions* regions,
                                 const dlprof_region_columns* columns);
/* The name of name id `id` (ids count from 0, one per distinct name); null
 * past the last. Lives as long as `regions`. */
const char* dlprof_region_name(const dlprof_regions* regions, uint32_t id, size_t* length);
void dlprof_regions_free(dlprof_regions* regions);

/* ---- Summaries ----------------------------------------------------------- */

typedef struct dlprof_summary dlprof_summary;

/* The groups of traces that must be summarised together (their events
 * interact: GPU work, regions), as dlprof-dump forms them. */
size_t dlprof_group_count(const dlprof_traces* traces);
/* The traces of group `group`: up to `capacity` indices into `indices`;
 * returns the group's size. */
size_t dlprof_group_traces(const dlprof_traces* traces, size_t group, size_t* indices,
                           size_t capacity);

/* The partial summary of one group. DLPROF_ERROR_DAMAGED when some of its
 * input was damaged or could not be read beside input that could (the
 * summary covers the rest; *out is set). */
dlprof_status dlprof_summarize_group(dlprof_traces* traces, size_t group, dlprof_summary** out);
/* The summary of every trace (all groups, merged). */
dlprof_status dlprof_summarize(dlprof_traces* traces, dlprof_summary** out);

/* Adds `from` to `into` and frees `from` (whatever the status). Partials of
 * different groups of one dlprof_traces merge exactly, in any order. */
dlprof_status dlprof_summary_merge(dlprof_summary* into, dlprof_summary* from);
/* The summary as JSON, exactly as `dlprof-dump --summary --format json`
 * prints it (without the newline); free *json with dlprof_free. */
dlprof_status dlprof_summary_json(const dlprof_summary* summary, char** json, size_t* length);
void dlprof_summary_free(dlprof_summary* summary);
/* The whole run of a bounded trace (DLPROF_KEEP) from its counters, as the
 * "whole_run" object that `dlprof-dump --summary --format json` puts first
 * (docs/ANALYSIS_RUNS.md, "Bounded traces"); "null" where no trace of the handle
 * has counters. The summaries above are of the kept events only; free
 * *json with dlprof_free. */
dlprof_status dlprof_whole_run_json(dlprof_traces* traces, char** json, size_t* length);
/* Two runs side by side, exactly as `dlprof-dump --compare BEFORE AFTER
 * --format json` prints them (without the newline): {"before": <before's
 * summary JSON>, "after": <after's>, "change": after minus before of their
 * figures, and the findings that appeared or went away}. The summaries stay
 * the caller's; free *json with dlprof_free. */
dlprof_status dlprof_compare_json(const dlprof_summary* before, const dlprof_summary* after,
                                  char** json, size_t* length);

/* A partial summary as bytes, to merge it in another process (a Dask
 * worker's partial on the client): free *bytes with dlprof_free. The bytes
 * are for processes running the same build of the library, not a file
 * format: dlprof_summary_decode refuses another build's with
 * DLPROF_ERROR_INPUT. */
dlprof_status dlprof_summary_encode(const dlprof_summary* summary, char** bytes,
                                    size_t* length);
dlprof_status dlprof_summary_decode(const char* bytes, size_t length, dlprof_summary** out);

void dlprof_free(void* p);

/* ---- The event catalogue --------------------------------------------------- */

/* What dlprof-dump calls event kind `kind` (the `name` of an I/O event,
 * the `kind` of a GPU or app event: "pread64", "kernel"), its category (the
 * `cat`: "posix", "stdio", "mpiio", "cuda", "app", "gds", "aio", "dlprof") and its
 * operation class ("read", "write", "open", "meta", "kernel", "memcpy",
 * "region"...). Static strings; null for a code the catalogue does not know
 * (dlprof-dump prints such a kind as "kind_N", category "unknown"). */
const char* dlprof_kind_name(uint16_t kind);
const char* dlprof_kind_category(uint16_t kind);
const char* dlprof_kind_class(uint16_t kind);

/* What each kind is to a reader: the event rules that dlprof-dump and the
 * summary follow (1.2), so that a binding reads them rather than restating
 * them. dlprof_kind_traits: DLPROF_KIND_* bits (0 for a code the catalogue
 * does not know). */
#define DLPROF_KIND_IO (1u << 0) /* a POSIX, STDIO or MPI-IO call (not MPI_Init/Finalize) */
#define DLPROF_KIND_DATA (1u << 1)        /* a read or a write */
#define DLPROF_KIND_BANDWIDTH (1u << 2)   /* counts toward bandwidth (when not nested) */
#define DLPROF_KIND_GPU_WORK (1u << 3)    /* a kernel, copy or memset: GPU busy time */
#define DLPROF_KIND_GPU_API (1u << 4)     /* a CUDA runtime or driver API call */
#define DLPROF_KIND_GPU_CLOCK (1u << 5)   /* cupti_clock: the GPU clock's calibration */
#define DLPROF_KIND_NAMED (1u << 6)       /* its name is the string of `file` (CUDA, app) */
#define DLPROF_KIND_CONFIG (1u << 7)      /* `ret` is the string id of its configuration */
#define DLPROF_KIND_FLOW_START (1u << 8)  /* a flow's start; `aux` is the flow's id */
#define DLPROF_KIND_FLOW_FINISH (1u << 9) /* a flow's finish; `aux` is the flow's id */
#define DLPROF_KIND_CONTEXT (1u << 10)    /* a call stack or module map: no event */
#define DLPROF_KIND_TRACED_CALL (1u << 11) /* a POSIX, STDIO or MPI call: others may nest in it */
#define DLPROF_KIND_MAP_READ (1u << 12)   /* a major fault on a mapped file: reading, no call */
/* An asynchronous request (io_uring, Linux AIO, POSIX AIO; category "aio",
 * 1.5): `start_ns` its submission, `dur_ns` to its completion, `tid` the
 * thread that reaped it, `aux` packs the submitting thread, its opcode and
 * when it was reaped (docs/FORMAT_EVENTS.md, "Asynchronous requests"). */
#define DLPROF_KIND_ASYNC (1u << 13)
uint32_t dlprof_kind_traits(uint16_t kind);

/* Where the bytes a call moved are: DLPROF_BYTES_RET (POSIX reads and
 * writes: `ret` when above 0, else none), DLPROF_BYTES_AUX (STDIO and MPI-IO
 * reads and writes), DLPROF_BYTES_SIZE (GPU copies and memsets) or
 * DLPROF_BYTES_NONE. */
#define DLPROF_BYTES_NONE 0
#define DLPROF_BYTES_RET 1
#define DLPROF_BYTES_AUX 2
#define DLPROF_BYTES_SIZE 3
int dlprof_kind_bytes(uint16_t kind);

/* Whose thread a record belongs to: DLPROF_THREAD_RECORD (the `tid` that
 * wrote it), DLPROF_THREAD_CALLER (CUDA API calls, delivered on CUPTI's
 * thread: the caller's tid is `offset`) or DLPROF_THREAD_STREAM (work on a GPU
 * stream: `fd` is the device, `offset` the stream). */
#define DLPROF_THREAD_RECORD 0
#define DLPROF_THREAD_CALLER 1
#define DLPROF_THREAD_STREAM 2
int dlprof_kind_thread(uint16_t kind);

#ifdef __cplusplus
}
#endif

#endif /* DLPROF_READER_H_ */
