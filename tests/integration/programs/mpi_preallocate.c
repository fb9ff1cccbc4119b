/* MPI_File_preallocate, whose MPI writes the file's blocks itself (ROMIO and
 * ompio write zeros where the file has none): I/O that no call of the
 * program's stands for.
 *
 * usage: mpirun -n 2 mpi_preallocate DIR LOGDIR
 *
 * Built with MPI (mpicc), not with the other programs (CMakeLists.txt).
 *
 * Both ranks open DIR/prealloc.dat, preallocate 1 MiB, and write 4 KiB at
 * 4096 * rank. Each logs what its thread wrote in the preallocate (the
 * growth of /proc/thread-self/io's wchar: write system calls' bytes) and in
 * its own write:
 *
 *   PREALLOC <tab> wchar=1048576
 *   WRITE <tab> wchar=4096
 */
#include <mpi.h>
#include <stdio.h>

#include "mpi_check.h"

static long long wchar(void) {
  FILE* f = fopen("/proc/thread-self/io", "r");
  if (f == NULL) return -1;
  char line[128];
  long long v = -1;
  while (fgets(line, sizeof(line), f) != NULL) {
    if (sscanf(line, "wchar: %lld", &v) == 1) break;
  }
  fclose(f);
  return v;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  if (argc != 3) MPI_Abort(MPI_COMM_WORLD, 2);
  char path[4096];
  snprintf(path, sizeof(path), "%s/rank%d.log", argv[2], rank);
  FILE* log_file = fopen(path, "w");
  if (log_file == NULL) MPI_Abort(MPI_COMM_WORLD, 2);
  snprintf(path, sizeof(path), "%s/prealloc.dat", argv[1]);
  MPI_File fh;
  CHECK(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
                      &fh));
  long long before = wchar();
  CHECK(MPI_File_preallocate(fh, 1 << 20));
  long long after = wchar();
  static char buf[4096];
  CHECK(MPI_File_write_at(fh, 4096 * rank, buf, 4096, MPI_BYTE, MPI_STATUS_IGNORE));
  const long long written = wchar();
  CHECK(MPI_File_close(&fh));
  fprintf(log_file, "PREALLOC\twchar=%lld\nWRITE\twchar=%lld\n", after - before,
          written - after);
  fclose(log_file);
  MPI_Finalize();
  return 0;
}
