/* MPI-4's large-count calls (the _c forms, MPI_Count counts: MPICH 4; mpi4py
 * 4 calls them where MPI has them).
 *
 * usage: mpirun -n 2 mpi_large_count DIR LOGDIR
 *
 * Built with MPI (mpicc), not with the other programs (CMakeLists.txt).
 * Each rank writes 4096 bytes at rank * 4096 with MPI_File_write_at_c, 4096
 * more at 8192 + rank * 4096 with MPI_File_write_at_all_c, and reads its
 * first 4096 back with MPI_File_read_at_c and MPI_File_read_c (from the
 * start). Each call is logged to LOGDIR/rank<N>.log as in mpi_io.c, under
 * the name the tracer gives it (the plain call's). Where the MPI has no
 * large-count calls (MPI_VERSION < 4: Open MPI 4), the log says SKIP. */
#include <mpi.h>
#include <stdio.h>

#include "mpi_check.h"

static int rank;
static FILE* log_file;

#if MPI_VERSION >= 4
static void emit(const char* name, long long offset, long long size) {
  fprintf(log_file, "EV\trank=%d\tname=%s", rank, name);
  if (offset >= 0) fprintf(log_file, "\toffset=%lld", offset);
  if (size >= 0) fprintf(log_file, "\tsize=%lld\tbytes=%lld", size, size);
  fprintf(log_file, "\n");
}
#endif

int main(int argc, char** argv) {
  CHECK(MPI_Init(&argc, &argv));
  int nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (argc != 3) {
    fprintf(stderr, "usage: mpi_large_count DIR LOGDIR\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/rank%d.log", argv[2], rank);
  log_file = fopen(path, "w");
  if (log_file == NULL) MPI_Abort(MPI_COMM_WORLD, 3);
  fprintf(log_file, "RANK\t%d\t%d\n", rank, nranks);
#if MPI_VERSION >= 4
  snprintf(path, sizeof path, "%s/large.dat", argv[1]);
  static char buf[4096];
  MPI_File fh;
  CHECK(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
  emit("MPI_File_open", -1, -1);
  CHECK(MPI_File_write_at_c(fh, rank * 4096, buf, (MPI_Count)4096, MPI_BYTE, MPI_STATUS_IGNORE));
  emit("MPI_File_write_at", rank * 4096, 4096);
  CHECK(MPI_File_write_at_all_c(fh, 8192 + rank * 4096, buf, (MPI_Count)4096, MPI_BYTE,
                                MPI_STATUS_IGNORE));
  emit("MPI_File_write_at_all", 8192 + rank * 4096, 4096);
  MPI_Status st;
  CHECK(MPI_File_read_at_c(fh, rank * 4096, buf, (MPI_Count)4096, MPI_BYTE, &st));
  emit("MPI_File_read_at", rank * 4096, 4096);
  CHECK(MPI_File_read_c(fh, buf, (MPI_Count)4096, MPI_BYTE, MPI_STATUS_IGNORE));
  emit("MPI_File_read", 0, 4096);
  CHECK(MPI_File_close(&fh));
  emit("MPI_File_close", -1, -1);
#else
  fprintf(log_file, "SKIP\tMPI_VERSION %d has no large-count calls\n", MPI_VERSION);
#endif
  fclose(log_file);
  MPI_Finalize();
  return 0;
}
