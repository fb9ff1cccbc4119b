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
} dlprof_trace_info;
dlprof_status dlprof_trace_info_get(dlprof_traces* traces, size_t trace, dlprof_trace_info* out);

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
 * input was damaged (the summary covers the rest; *out is set). */
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

void dlprof_free(void* p);

/* ---- The event catalogue --------------------------------------------------- */

/* What dlprof-dump calls event kind `kind` (the `name` of an I/O event,
 * the `kind` of a GPU or app event: "pread64", "kernel"), its category (the
 * `cat`: "posix", "stdio", "mpiio", "cuda", "app", "dlprof") and its
 * operation class ("read", "write", "open", "meta", "kernel", "memcpy",
 * "region"...). Static strings; null for a code the catalogue does not know
 * (dlprof-dump prints such a kind as "kind_N", category "unknown"). */
const char* dlprof_kind_name(uint16_t kind);
const char* dlprof_kind_category(uint16_t kind);
const char* dlprof_kind_class(uint16_t kind);

#ifdef __cplusplus
}
#endif

#endif /* DLPROF_READER_H_ */
