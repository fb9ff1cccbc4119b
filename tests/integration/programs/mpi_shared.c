/* MPI-IO through the shared file pointer, with results known to be true.
 *
 * usage: mpiexec -n N mpi_shared MODE DIR LOGDIR [CALLS]
 *
 * Built with each MPI family found (tests/integration/CMakeLists.txt);
 * driven by test_mpi_shared.py. Every rank writes LOGDIR/rank<R>.log with
 * one EV line per MPI-IO call on the data file (format of mpi_io.c; an
 * offset is given only where the rank knows it for certain), then a RANK
 * line. The offsets logged are never asked of MPI: they are read out of the
 * data itself or follow from the standard's rules.
 *
 * MODE
 *   sequential  MPI_MODE_SEQUENTIAL and MPI_ERRORS_ARE_FATAL on the file,
 *               CALLS write_shared per rank; rank 0 prints the file's size.
 *               Run with and without the tracer: same exit code and output.
 *   hammer      DIR/words.dat (made by the test, 24 * (CALLS * N + 1) bytes
 *               at least), where the 8-byte word at byte offset o holds o:
 *               through a view from byte 24 on, every rank reads it through
 *               the shared pointer, CALLS
 *               times, 8 to 24 bytes a call (read_shared and iread_shared),
 *               and logs the offset the first word read says.
 *   ordered     write_ordered and read_ordered (blocking and split), rank r
 *               moving 16 * (r + 1) bytes: its offset is the sum of the
 *               lower ranks' sizes from where the pointer stood, which each
 *               rank computes and checks against the data read back;
 *               seek_shared, whose result with MPI_SEEK_SET is the offset
 *               given; set_size and preallocate (collective too), with
 *               what the thread read and wrote in the preallocate
 *               ("BENEATH\tread=R\twrite=W": /proc/thread-self/io).
 *   errors      calls that fail and return their error (MPI_ERRORS_RETURN):
 *               an invalid communicator or datatype; rank 0 prints what
 *               each returned. Same output with and without the tracer. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mpi_check.h"

#define EXPECT(cond)                                                          \
  do {                                                                        \
    if (!(cond)) {                                                            \
      fprintf(stderr, "%s:%d: rank %d: %s does not hold\n", __FILE__,         \
              __LINE__, rank, #cond);                                         \
      MPI_Abort(MPI_COMM_WORLD, 98);                                          \
    }                                                                         \
  } while (0)

static int rank, nranks;
static FILE* log_file;

static void emit(const char* name, long long offset, long long size,
                 long long bytes) {
  fprintf(log_file, "EV\trank=%d\tname=%s", rank, name);
  if (offset >= 0) fprintf(log_file, "\toffset=%lld", offset);
  if (size >= 0) fprintf(log_file, "\tsize=%lld", size);
  if (bytes >= 0) fprintf(log_file, "\tbytes=%lld", bytes);
  fprintf(log_file, "\n");
}

/* The calling thread's read and write system calls' bytes so far
 * (/proc/thread-self/io rchar, wchar). */
static void thread_io(long long* rchar, long long* wchar) {
  *rchar = *wchar = 0;
  FILE* f = fopen("/proc/thread-self/io", "r");
  if (f == NULL) return;
  char line[128];
  while (fgets(line, sizeof(line), f) != NULL) {
    if (sscanf(line, "rchar: %lld", rchar) != 1) sscanf(line, "wchar: %lld", wchar);
  }
  fclose(f);
}

static long long moved(MPI_Status* st) {
  int count = 0;
  CHECK(MPI_Get_count(st, MPI_BYTE, &count));
  return count;
}

/* Words holding their own byte offsets, `n` bytes from byte `at`. */
static void fill_words(uint64_t* words, long long at, long long n) {
  for (long long i = 0; i < n / 8; ++i) words[i] = (uint64_t)(at + 8 * i);
}

static void sequential(MPI_File fh, int calls) {
  char rec[100];
  MPI_Status st;
  memset(rec, 'a' + rank, sizeof rec);
  for (int i = 0; i < calls; ++i) {
    CHECK(MPI_File_write_shared(fh, rec, sizeof rec, MPI_BYTE, &st));
    /* Where it went is MPI's to know: no offset. */
    emit("MPI_File_write_shared", -1, sizeof rec, moved(&st));
  }
}

static void hammer(MPI_File fh, int calls) {
  uint64_t words[3];
  MPI_Status st;
  MPI_Request req;
  for (int i = 0; i < calls; ++i) {
    const int n = 8 * (1 + (i + rank) % 3);
    memset(words, 0xff, sizeof words);
    if (i % 4 == 3) {
      CHECK(MPI_File_iread_shared(fh, words, n, MPI_BYTE, &req));
      CHECK(MPI_Wait(&req, &st));
      EXPECT(moved(&st) == n);
      emit("MPI_File_iread_shared", (long long)words[0], n, n);
    } else {
      CHECK(MPI_File_read_shared(fh, words, n, MPI_BYTE, &st));
      EXPECT(moved(&st) == n);
      emit("MPI_File_read_shared", (long long)words[0], n, n);
    }
    for (int w = 1; w < n / 8; ++w) EXPECT(words[w] == words[0] + 8 * w);
  }
}

static void ordered(MPI_File fh, int rounds) {
  /* Rank r moves 16 * (r + 1) bytes a call: it starts below + before. */
  const long long mine = 16 * (rank + 1);
  long long below = 0, all = 0;
  for (int r = 0; r < nranks; ++r) {
    if (r < rank) below += 16 * (r + 1);
    all += 16 * (r + 1);
  }
  uint64_t words[64];
  MPI_Status st;
  long long base = 0;
  for (int i = 0; i < rounds; ++i, base += all) {
    fill_words(words, base + below, mine);
    if (i % 2 == 0) {
      CHECK(MPI_File_write_ordered(fh, words, mine, MPI_BYTE, &st));
      emit("MPI_File_write_ordered", base + below, mine, moved(&st));
    } else {
      CHECK(MPI_File_write_ordered_begin(fh, words, mine, MPI_BYTE));
      emit("MPI_File_write_ordered_begin", base + below, mine, mine);
      CHECK(MPI_File_write_ordered_end(fh, words, &st));
      emit("MPI_File_write_ordered_end", -1, 0, 0);
    }
  }
  CHECK(MPI_File_sync(fh));
  emit("MPI_File_sync", -1, -1, -1);
  CHECK(MPI_Barrier(MPI_COMM_WORLD));
  CHECK(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
  emit("MPI_File_seek_shared", 0, -1, -1);
  base = 0;
  for (int i = 0; i < rounds; ++i, base += all) {
    memset(words, 0xff, sizeof words);
    if (i % 2 == 0) {
      CHECK(MPI_File_read_ordered(fh, words, mine, MPI_BYTE, &st));
      emit("MPI_File_read_ordered", base + below, mine, moved(&st));
    } else {
      CHECK(MPI_File_read_ordered_begin(fh, words, mine, MPI_BYTE));
      emit("MPI_File_read_ordered_begin", base + below, mine, mine);
      CHECK(MPI_File_read_ordered_end(fh, words, &st));
      emit("MPI_File_read_ordered_end", -1, 0, 0);
    }
    /* The data says where it came from: the rule above holds. */
    EXPECT(words[0] == (uint64_t)(base + below));
  }
  /* A seek relative to the pointer: where it lands is not ours to say. */
  CHECK(MPI_File_seek_shared(fh, 16, MPI_SEEK_SET));
  emit("MPI_File_seek_shared", 16, -1, -1);
  CHECK(MPI_File_seek_shared(fh, 8, MPI_SEEK_CUR));
  emit("MPI_File_seek_shared", -1, -1, -1);
  CHECK(MPI_File_read_ordered(fh, words, mine, MPI_BYTE, &st));
  emit("MPI_File_read_ordered", 24 + below, mine, moved(&st));
  EXPECT(words[0] == (uint64_t)(24 + below));
  /* Collective in the standard, like seek_shared. A size the file already
   * exceeds: Open MPI 4.1's preallocate has each rank compare the file's
   * size with it to decide whether to join its last broadcast, while its
   * root grows the file (beyond the size asked: set_size after); a rank
   * that looks after the root wrote skips the broadcast and the others wait
   * for it forever (a stall under load, traced or not). Past the end, every
   * rank sees the same size and returns at once. */
  long long r0, w0, r1, w1;
  thread_io(&r0, &w0);
  CHECK(MPI_File_preallocate(fh, rounds * all - 8));
  thread_io(&r1, &w1);
  emit("MPI_File_preallocate", -1, rounds * all - 8, -1);
  /* MPI's own I/O of the file's blocks in it (ROMIO reads what the file
   * holds and writes it back): I/O of the file's that no call of ours is. */
  fprintf(log_file, "BENEATH\tread=%lld\twrite=%lld\n", r1 - r0, w1 - w0);
  CHECK(MPI_File_set_size(fh, rounds * all));
  emit("MPI_File_set_size", -1, rounds * all, -1);
}

int main(int argc, char** argv) {
  CHECK(MPI_Init(&argc, &argv));
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (argc < 4) {
    fprintf(stderr, "usage: mpi_shared MODE DIR LOGDIR [CALLS]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const char* mode = argv[1];
  const int calls = argc > 4 ? atoi(argv[4]) : 10;
  char path[4096];
  snprintf(path, sizeof path, "%s/rank%d.log", argv[3], rank);
  log_file = fopen(path, "w");
  if (log_file == NULL) MPI_Abort(MPI_COMM_WORLD, 3);
  MPI_File fh;

  if (strcmp(mode, "sequential") == 0) {
    snprintf(path, sizeof path, "%s/seq.dat", argv[2]);
    /* The file's handler, and MPI_FILE_NULL's for the open itself: any
     * error the tracer provoked would end the job. */
    CHECK(MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_ARE_FATAL));
    CHECK(MPI_File_open(MPI_COMM_WORLD, path,
                        MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL,
                        MPI_INFO_NULL, &fh));
    CHECK(MPI_File_set_errhandler(fh, MPI_ERRORS_ARE_FATAL));
    emit("MPI_File_open", -1, -1, -1);
    sequential(fh, calls);
  } else if (strcmp(mode, "hammer") == 0) {
    snprintf(path, sizeof path, "%s/words.dat", argv[2]);
    CHECK(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL,
                        &fh));
    emit("MPI_File_open", -1, -1, -1);
    /* A view from byte 24 on: the shared pointer counts from there. */
    CHECK(MPI_File_set_view(fh, 24, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    emit("MPI_File_set_view", 24, -1, -1);
    hammer(fh, calls);
  } else if (strcmp(mode, "ordered") == 0) {
    snprintf(path, sizeof path, "%s/ordered.dat", argv[2]);
    CHECK(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR,
                        MPI_INFO_NULL, &fh));
    emit("MPI_File_open", -1, -1, -1);
    ordered(fh, calls);
  } else if (strcmp(mode, "errors") == 0) {
    /* Calls that fail with MPI_ERRORS_RETURN, the default for files: the
     * program sees the error and goes on. An invalid communicator or
     * datatype handed to MPI again by the tracer would raise the error on
     * MPI_COMM_WORLD, whose handler is fatal. */
    snprintf(path, sizeof path, "%s/errors.dat", argv[2]);
    int rc;
#ifndef OPEN_MPI /* Open MPI itself raises this one on MPI_COMM_WORLD. */
    rc = MPI_File_open(MPI_COMM_NULL, path, MPI_MODE_CREATE | MPI_MODE_RDWR,
                       MPI_INFO_NULL, &fh);
    if (rank == 0) printf("open on MPI_COMM_NULL: %s\n", rc ? "error" : "success");
#endif
    CHECK(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR,
                        MPI_INFO_NULL, &fh));
    emit("MPI_File_open", -1, -1, -1);
    char buf[64] = {0};
    MPI_Status st;
    rc = MPI_File_write_at(fh, 64 * rank, buf, sizeof buf, MPI_DATATYPE_NULL, &st);
    emit("MPI_File_write_at", -1, -1, -1);
    if (rank == 0) printf("write_at with MPI_DATATYPE_NULL: %s\n", rc ? "error" : "success");
    rc = MPI_File_read_shared(fh, buf, sizeof buf, MPI_DATATYPE_NULL, &st);
    emit("MPI_File_read_shared", -1, -1, -1);
    if (rank == 0) printf("read_shared with MPI_DATATYPE_NULL: %s\n", rc ? "error" : "success");
  } else {
    fprintf(stderr, "mpi_shared: unknown mode %s\n", mode);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  CHECK(MPI_File_close(&fh));
  emit("MPI_File_close", -1, -1, -1);
  fprintf(log_file, "RANK\t%d\t%d\n", rank, nranks);
  fclose(log_file);
  CHECK(MPI_Barrier(MPI_COMM_WORLD));
  if (rank == 0 && strcmp(mode, "sequential") == 0) {
    struct stat sb;
    EXPECT(stat(path, &sb) == 0);
    printf("size %lld\n", (long long)sb.st_size);
  }
  if (rank == 0) printf("%s: %d ranks done\n", mode, nranks);
  fflush(stdout);
  CHECK(MPI_Finalize());
  return 0;
}
