/* reader_capi_check: the reader's C ABI (include/dlprof/reader.h) used from
 * C, for test_reader_capi.py, which compares what it prints with
 * dlprof-dump's output on the same traces.
 *
 *   reader_capi_check events DIR     one line per event:
 *                                    pid tid start dur kind offset size ret err path
 *                                    (blocks read 3 at a time), then "status N"
 *   reader_capi_check summary DIR    the summary JSON, its groups merged last
 *                                    first, each partial encoded and decoded
 *                                    on the way, then "status N" on stderr
 *   reader_capi_check open PATH      the status and message of opening PATH
 *   reader_capi_check cmdline DIR    per trace: "pid LENGTH " and the command
 *                                    line's LENGTH bytes as the ABI gives them
 *                                    (NULs included), then a newline */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dlprof/reader.h"

static int events(dlprof_traces* t) {
  int worst = DLPROF_OK;
  for (size_t i = 0; i < dlprof_trace_count(t); ++i) {
    dlprof_trace_info info;
    if (dlprof_trace_info_get(t, i, &info) != DLPROF_OK || !info.opened) continue;
    for (uint64_t b = 0; b < info.blocks; b += 3) {
      const size_t count = info.blocks - b < 3 ? (size_t)(info.blocks - b) : 3;
      uint64_t n = 0;
      if (dlprof_block_events(t, i, b, count, &n) != DLPROF_OK) return 1;
      dlprof_columns c;
      memset(&c, 0, sizeof c);
      c.capacity = n;
      c.start_ns = malloc(n * sizeof *c.start_ns + 1);
      c.dur_ns = malloc(n * sizeof *c.dur_ns + 1);
      c.kind = malloc(n * sizeof *c.kind + 1);
      c.tid = malloc(n * sizeof *c.tid + 1);
      c.file = malloc(n * sizeof *c.file + 1);
      c.offset = malloc(n * sizeof *c.offset + 1);
      c.size = malloc(n * sizeof *c.size + 1);
      c.ret = malloc(n * sizeof *c.ret + 1);
      c.err = malloc(n * sizeof *c.err + 1);
      size_t rows = 0;
      const dlprof_status st = dlprof_read_events(t, i, b, count, &c, &rows);
      if (st != DLPROF_OK) {
        fprintf(stderr, "read_events: %d %s\n", st, dlprof_last_error());
        if (worst == DLPROF_OK) worst = st;
      }
      for (size_t r = 0; r < rows; ++r) {
        size_t len = 0;
        const char* path = c.file[r] ? dlprof_trace_string(t, i, c.file[r], &len) : NULL;
        printf("%d %d %" PRIu64 " %" PRIu64 " %u %" PRId64 " %" PRIu64 " %" PRId64 " %d %.*s\n",
               info.pid, c.tid[r], c.start_ns[r], c.dur_ns[r], c.kind[r], c.offset[r], c.size[r],
               c.ret[r], c.err[r], path ? (int)len : 1, path ? path : "-");
      }
      free(c.start_ns); free(c.dur_ns); free(c.kind); free(c.tid); free(c.file);
      free(c.offset); free(c.size); free(c.ret); free(c.err);
    }
  }
  printf("status %d\n", worst);
  return 0;
}

static int cmdlines(dlprof_traces* t) {
  for (size_t i = 0; i < dlprof_trace_count(t); ++i) {
    dlprof_trace_info info;
    dlprof_process_info p;
    if (dlprof_trace_info_get(t, i, &info) != DLPROF_OK ||
        dlprof_trace_process_get(t, i, 0, &p) != DLPROF_OK) {
      fprintf(stderr, "process_get: %s\n", dlprof_last_error());
      return 1;
    }
    printf("%d %zu ", info.pid, p.cmdline_length);
    fwrite(p.cmdline, 1, p.cmdline_length, stdout);
    putchar('\n');
  }
  return 0;
}

static int summary(dlprof_traces* t) {
  dlprof_summary* total = NULL;
  int worst = DLPROF_OK;
  for (size_t g = dlprof_group_count(t); g-- > 0;) {
    dlprof_summary* s = NULL;
    const dlprof_status st = dlprof_summarize_group(t, g, &s);
    if (st != DLPROF_OK && worst == DLPROF_OK) {
      worst = st;
      fprintf(stderr, "summarize_group: %s\n", dlprof_last_error());
    }
    if (s == NULL) return 1;
    /* Every partial crosses as bytes, as between processes (a Dask worker's). */
    char* bytes = NULL;
    size_t n = 0;
    if (dlprof_summary_encode(s, &bytes, &n) != DLPROF_OK) return 1;
    dlprof_summary_free(s);
    s = NULL;
    if (dlprof_summary_decode(bytes, n, &s) != DLPROF_OK) {
      fprintf(stderr, "summary_decode: %s\n", dlprof_last_error());
      return 1;
    }
    dlprof_free(bytes);
    if (total == NULL) {
      total = s;
    } else if (dlprof_summary_merge(total, s) != DLPROF_OK) {
      return 1;
    }
  }
  if (total == NULL && dlprof_summarize(t, &total) != DLPROF_OK) return 1;
  char* json = NULL;
  size_t len = 0;
  if (dlprof_summary_json(total, &json, &len) != DLPROF_OK) return 1;
  fwrite(json, 1, len, stdout);
  putchar('\n');
  dlprof_free(json);
  dlprof_summary_free(total);
  fprintf(stderr, "status %d groups %zu\n", worst, dlprof_group_count(t));
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: reader_capi_check events|summary|open|cmdline PATH\n");
    return 2;
  }
  if (dlprof_reader_version() != ((DLPROF_READER_VERSION_MAJOR << 16) | DLPROF_READER_VERSION_MINOR)) {
    fprintf(stderr, "library version %#x, header %d.%d\n", dlprof_reader_version(),
            DLPROF_READER_VERSION_MAJOR, DLPROF_READER_VERSION_MINOR);
    return 1;
  }
  const char* paths[] = {argv[2]};
  dlprof_traces* t = NULL;
  const dlprof_status st = dlprof_traces_open(paths, 1, NULL, &t);
  if (strcmp(argv[1], "open") == 0) {
    printf("status %d traces %zu: %s\n", st, t ? dlprof_trace_count(t) : 0, dlprof_last_error());
    dlprof_traces_free(t);
    return 0;
  }
  if (st != DLPROF_OK) {
    fprintf(stderr, "open: %s\n", dlprof_last_error());
    return 1;
  }
  const int rc = strcmp(argv[1], "events") == 0    ? events(t)
                 : strcmp(argv[1], "cmdline") == 0 ? cmdlines(t)
                                                   : summary(t);
  dlprof_traces_free(t);
  return rc;
}
