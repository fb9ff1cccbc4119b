/* MPI-IO file names with a colon, which ROMIO (MPICH) may read as a file
 * system driver's prefix ("ufs:") and Open MPI's ompio takes as they are.
 *
 * usage: mpirun -n 2 mpi_names DIR LOGDIR
 *
 * Built with MPI (mpicc), not with the other programs (CMakeLists.txt).
 *
 * In DIR, each rank opens (on MPI_COMM_SELF) "r<rank>-10:30.dat" and
 * "ufs:r<rank>.dat", writes 100 and 300 bytes at 0 and closes them; then
 * deletes the second by the same name. For each open it logs the file MPI
 * really made (the name as given, or what follows "ufs:"), found with
 * stat() after the close, or that the open failed (MPICH refuses a prefix it
 * does not know); and for each file opened, a view it sets with a data
 * representation no MPI has (it fails):
 *
 *   VIEW <tab> name=ufs:r1.dat <tab> rc=<MPI's error code>
 *   OPEN <tab> name=ufs:r1.dat <tab> rc=0 <tab> file=DIR/r1.dat
 *   DELETE <tab> name=ufs:r1.dat <tab> rc=0 <tab> file=DIR/r1.dat
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpi_check.h"

/* The file `name` made in `dir`: the name itself, or what follows its first
 * colon; "-" when neither is there. */
static void made(const char* dir, const char* name, char* out, size_t n) {
  struct stat st;
  snprintf(out, n, "%s/%s", dir, name);
  if (stat(out, &st) == 0) return;
  const char* colon = strchr(name, ':');
  snprintf(out, n, "%s/%s", dir, colon ? colon + 1 : name);
  if (stat(out, &st) != 0) snprintf(out, n, "-");
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank;
  CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  if (argc != 3 || chdir(argv[1]) != 0) MPI_Abort(MPI_COMM_WORLD, 2);
  char path[4096], name[2][64], file[4096];
  snprintf(path, sizeof(path), "%s/rank%d.log", argv[2], rank);
  FILE* log_file = fopen(path, "w");
  if (log_file == NULL) MPI_Abort(MPI_COMM_WORLD, 2);
  snprintf(name[0], sizeof(name[0]), "r%d-10:30.dat", rank);
  snprintf(name[1], sizeof(name[1]), "ufs:r%d.dat", rank);
  static char buf[300];
  MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
  for (int i = 0; i < 2; ++i) {
    MPI_File fh;
    const int rc = MPI_File_open(MPI_COMM_SELF, name[i], MPI_MODE_CREATE | MPI_MODE_RDWR,
                                 MPI_INFO_NULL, &fh);
    if (rc == MPI_SUCCESS) {
      CHECK(MPI_File_write_at(fh, 0, buf, i == 0 ? 100 : 300, MPI_BYTE, MPI_STATUS_IGNORE));
      /* A view refused (no such data representation): it sets nothing. */
      const int view = MPI_File_set_view(fh, 777, MPI_BYTE, MPI_BYTE, "bogus", MPI_INFO_NULL);
      fprintf(log_file, "VIEW\tname=%s\trc=%d\n", name[i], view);
      CHECK(MPI_File_close(&fh));
    }
    made(argv[1], name[i], file, sizeof(file));
    fprintf(log_file, "OPEN\tname=%s\trc=%d\tfile=%s\n", name[i], rc, file);
  }
  made(argv[1], name[1], file, sizeof(file));
  const int rc = MPI_File_delete(name[1], MPI_INFO_NULL);
  fprintf(log_file, "DELETE\tname=%s\trc=%d\tfile=%s\n", name[1], rc, file);
  fclose(log_file);
  MPI_Finalize();
  return 0;
}
