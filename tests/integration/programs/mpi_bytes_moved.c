/* MPI-IO reads that move fewer bytes than asked, with and without a status.
 *
 * usage: mpirun -n 2 mpi_bytes_moved DIR LOGDIR
 *
 * Built with MPI (mpicc), not with the other programs (CMakeLists.txt).
 *
 * Every rank works on DIR/moved.dat, 110 bytes long once both ranks wrote
 * their 10 bytes, and reads at and past its end: 4 MPI_INT from byte
 * 100 + 3 * rank move 10 or 7 bytes (not a whole number of ints, where
 * MPI_Get_count says MPI_UNDEFINED), from byte 1000 none. Each read is made
 * twice, with a status and then with MPI_STATUS_IGNORE (what programs
 * usually pass); the bytes the status says moved are what both moved. A
 * derived datatype with a gap between its ints is read at the end too.
 *
 * Each call is logged to LOGDIR/rank<N>.log as in mpi_io.c:
 *
 *   EV <tab> rank=1 <tab> name=MPI_File_read_at <tab> offset=103 <tab> size=16 <tab> bytes=7
 */
#include <mpi.h>
#include <stdio.h>

#include "mpi_check.h"

static int rank;
static FILE* log_file;

static void emit(const char* name, long long offset, long long size,
                 long long bytes) {
  fprintf(log_file, "EV\trank=%d\tname=%s", rank, name);
  if (offset >= 0) fprintf(log_file, "\toffset=%lld", offset);
  if (size >= 0) fprintf(log_file, "\tsize=%lld", size);
  if (bytes >= 0) fprintf(log_file, "\tbytes=%lld", bytes);
  fprintf(log_file, "\n");
}

/* The bytes a status says moved, whatever the datatype. */
static long long moved(MPI_Status* st) {
  MPI_Count bytes = 0;
  CHECK(MPI_Get_elements_x(st, MPI_BYTE, &bytes));
  return (long long)bytes;
}

static int ints[64];

/* read_at with a status, then the same with MPI_STATUS_IGNORE; `all`: the
 * collective form. */
static void read_at_twice(MPI_File fh, long long at, int count, MPI_Datatype type,
                          long long size, int all) {
  const char* name = all ? "MPI_File_read_at_all" : "MPI_File_read_at";
  MPI_Status st;
  if (all) {
    CHECK(MPI_File_read_at_all(fh, at, ints, count, type, &st));
  } else {
    CHECK(MPI_File_read_at(fh, at, ints, count, type, &st));
  }
  long long bytes = moved(&st);
  emit(name, at, size, bytes);
  if (all) {
    CHECK(MPI_File_read_at_all(fh, at, ints, count, type, MPI_STATUS_IGNORE));
  } else {
    CHECK(MPI_File_read_at(fh, at, ints, count, type, MPI_STATUS_IGNORE));
  }
  emit(name, at, size, bytes);
}

int main(int argc, char** argv) {
  CHECK(MPI_Init(&argc, &argv));
  int nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (argc != 3) {
    fprintf(stderr, "usage: mpi_bytes_moved DIR LOGDIR\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/rank%d.log", argv[2], rank);
  log_file = fopen(path, "w");
  if (log_file == NULL) MPI_Abort(MPI_COMM_WORLD, 3);
  snprintf(path, sizeof path, "%s/moved.dat", argv[1]);
  MPI_File fh;
  MPI_Status st;

  CHECK(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR,
                      MPI_INFO_NULL, &fh));
  emit("MPI_File_open", -1, -1, -1);
  /* 10 bytes at rank * 100: the file ends at byte 110. */
  CHECK(MPI_File_write_at(fh, rank * 100, "0123456789", 10, MPI_BYTE, MPI_STATUS_IGNORE));
  emit("MPI_File_write_at", rank * 100, 10, 10);
  CHECK(MPI_Barrier(MPI_COMM_WORLD));

  read_at_twice(fh, 100 + 3 * rank, 4, MPI_INT, 16, 0);   /* 10 or 7 bytes */
  read_at_twice(fh, 1000, 4, MPI_INT, 16, 0);             /* past the end: 0 */
  read_at_twice(fh, 100 + 3 * rank, 4, MPI_INT, 16, 1);   /* collective */

  /* The individual pointer: 4 ints from byte 105, 5 bytes left. */
  long long bytes = -1;
  for (int ignore = 0; ignore < 2; ++ignore) {
    CHECK(MPI_File_seek(fh, 105, MPI_SEEK_SET));
    emit("MPI_File_seek", 105, -1, -1);
    if (ignore) {
      CHECK(MPI_File_read(fh, ints, 4, MPI_INT, MPI_STATUS_IGNORE));
    } else {
      CHECK(MPI_File_read(fh, ints, 4, MPI_INT, &st));
      bytes = moved(&st);
    }
    emit("MPI_File_read", 105, 16, bytes);
  }

  /* Two ints with one int's gap between them in memory: 8 bytes of data. */
  MPI_Datatype gapped;
  CHECK(MPI_Type_vector(2, 1, 2, MPI_INT, &gapped));
  CHECK(MPI_Type_commit(&gapped));
  read_at_twice(fh, 104, 2, gapped, 16, 0);
  MPI_Type_free(&gapped);

  CHECK(MPI_File_close(&fh));
  emit("MPI_File_close", -1, -1, -1);
  fprintf(log_file, "RANK\t%d\t%d\n", rank, nranks);
  fclose(log_file);
  CHECK(MPI_Finalize());
  return 0;
}
