/* More MPI files than the tracer's table of open files holds (4096 slots,
 * lib/intercept/mpi_files.cc): open at once, and over the run.
 *
 * usage: mpirun -n 1 mpi_many_files DIR LOGDIR N1 [N2 ...]
 *
 * Built with MPI (mpicc), not with the other programs (CMakeLists.txt).
 *
 * Round r opens N<r> files DIR/r<r>_<i> on MPI_COMM_SELF, all open at once,
 * writes 8 bytes at offset 0 of each and then closes them all. Every open
 * file holds a descriptor: the soft limit is raised to the hard one. Logs
 * to LOGDIR/rank<N>.log the distinct handles MPI gave (HANDLES) and the
 * RANK line of the other MPI programs. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "mpi_check.h"

static int compare_handles(const void* a, const void* b) {
  uintptr_t x = *(const uintptr_t*)a, y = *(const uintptr_t*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  CHECK(MPI_Init(&argc, &argv));
  int rank, nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (argc < 4) {
    fprintf(stderr, "usage: mpi_many_files DIR LOGDIR N1 [N2 ...]\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  struct rlimit fds;
  getrlimit(RLIMIT_NOFILE, &fds);
  fds.rlim_cur = fds.rlim_max;
  setrlimit(RLIMIT_NOFILE, &fds);
  int total = 0, most = 0;
  for (int r = 3; r < argc; ++r) {
    int n = atoi(argv[r]);
    total += n;
    if (n > most) most = n;
  }
  MPI_File* fh = malloc(sizeof(MPI_File) * most);
  uintptr_t* seen = malloc(sizeof(uintptr_t) * total);
  if (fh == NULL || seen == NULL) MPI_Abort(MPI_COMM_WORLD, 3);
  int nseen = 0;
  char path[4096];
  for (int r = 3; r < argc; ++r) {
    const int n = atoi(argv[r]);
    for (int i = 0; i < n; ++i) {
      snprintf(path, sizeof path, "%s/r%d_%d", argv[1], r - 3, i);
      CHECK(MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_CREATE | MPI_MODE_WRONLY,
                          MPI_INFO_NULL, &fh[i]));
      seen[nseen++] = (uintptr_t)fh[i];
      MPI_Status st;
      CHECK(MPI_File_write_at(fh[i], 0, "12345678", 8, MPI_BYTE, &st));
    }
    for (int i = 0; i < n; ++i) CHECK(MPI_File_close(&fh[i]));
  }
  qsort(seen, nseen, sizeof *seen, compare_handles);
  int distinct = 0;
  for (int i = 0; i < nseen; ++i) distinct += i == 0 || seen[i] != seen[i - 1];
  snprintf(path, sizeof path, "%s/rank%d.log", argv[2], rank);
  FILE* log_file = fopen(path, "w");
  if (log_file == NULL) MPI_Abort(MPI_COMM_WORLD, 3);
  fprintf(log_file, "HANDLES\t%d\nRANK\t%d\t%d\n", distinct, rank, nranks);
  fclose(log_file);
  free(seen);
  free(fh);
  CHECK(MPI_Finalize());
  return 0;
}
