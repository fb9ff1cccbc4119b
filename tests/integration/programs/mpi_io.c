/* MPI-IO on one shared file, independent and collective, with known results.
 *
 * usage: mpirun -n 2 mpi_io DIR LOGDIR
 *
 * Built with MPI (mpicc), not with the other programs (CMakeLists.txt).
 *
 * Every rank works on DIR/shared.dat and writes to LOGDIR/rank<N>.log (its
 * own file: mpirun's forwarded stdout may split lines of different ranks),
 * for each MPI-IO call it makes, one line with what it did:
 *
 *   EV <tab> rank=1 <tab> name=MPI_File_write_at <tab> offset=4096 <tab> size=4096 <tab> bytes=4096
 *
 * offset is the byte offset where the call's data starts (through the view,
 * from MPI_File_get_byte_offset; for seeks the position after), size the
 * bytes asked (count x type size), bytes what the status says moved (as
 * asked for the non-blocking call and at _begin, 0 at _end). Lines without
 * offset/size are calls with no data (open, sync, close...). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static long long here(MPI_File fh) {
  MPI_Offset pos, bytes;
  CHECK(MPI_File_get_position(fh, &pos));
  CHECK(MPI_File_get_byte_offset(fh, pos, &bytes));
  return (long long)bytes;
}

static long long moved(MPI_Status* st, MPI_Datatype type) {
  int count = 0, size = 0;
  CHECK(MPI_Get_count(st, type, &count));
  CHECK(MPI_Type_size(type, &size));
  return (long long)count * size;
}

int main(int argc, char** argv) {
  CHECK(MPI_Init(&argc, &argv));
  int nranks;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (argc != 3) {
    fprintf(stderr, "usage: mpi_io DIR LOGDIR\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/rank%d.log", argv[2], rank);
  log_file = fopen(path, "w");
  if (log_file == NULL) MPI_Abort(MPI_COMM_WORLD, 3);
  snprintf(path, sizeof path, "%s/shared.dat", argv[1]);
  static char buf[8192];
  static int ints[1024];
  for (int i = 0; i < (int)sizeof buf; ++i) buf[i] = (char)(rank * 31 + i);
  for (int i = 0; i < 1024; ++i) ints[i] = rank * 100000 + i;
  MPI_Status st;
  MPI_File fh;

  CHECK(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR,
                      MPI_INFO_NULL, &fh));
  emit("MPI_File_open", -1, -1, -1);

  /* Independent: 4096 bytes at rank * 4096. */
  CHECK(MPI_File_write_at(fh, rank * 4096, buf, 4096, MPI_BYTE, &st));
  emit("MPI_File_write_at", rank * 4096, 4096, moved(&st, MPI_BYTE));

  /* Collective: 256 ints at 8192 + rank * 1024. */
  CHECK(MPI_File_write_at_all(fh, 8192 + rank * 1024, ints, 256, MPI_INT, &st));
  emit("MPI_File_write_at_all", 8192 + rank * 1024, 1024, moved(&st, MPI_INT));

  /* Collective read of 500 bytes at rank * 4096 + 10. */
  CHECK(MPI_File_read_at_all(fh, rank * 4096 + 10, buf, 500, MPI_BYTE, &st));
  emit("MPI_File_read_at_all", rank * 4096 + 10, 500, moved(&st, MPI_BYTE));

  /* A view of ints: from 1024 + rank * 64 bytes, blocks of 16 ints every 128
   * bytes. */
  MPI_Datatype block, filetype;
  CHECK(MPI_Type_contiguous(16, MPI_INT, &block));
  CHECK(MPI_Type_create_resized(block, 0, 128, &filetype));
  CHECK(MPI_Type_commit(&filetype));
  const long long disp = 1024 + rank * 64;
  CHECK(MPI_File_set_view(fh, disp, MPI_INT, filetype, "native", MPI_INFO_NULL));
  emit("MPI_File_set_view", disp, -1, -1);
  long long at = here(fh);
  CHECK(MPI_File_read_all(fh, ints, 16, MPI_INT, &st));
  emit("MPI_File_read_all", at, 64, moved(&st, MPI_INT));
  /* 32 ints into the view: two blocks on, at disp + 256 bytes. */
  CHECK(MPI_File_seek(fh, 32, MPI_SEEK_SET));
  emit("MPI_File_seek", here(fh), -1, -1);
  at = here(fh);
  CHECK(MPI_File_read(fh, ints, 16, MPI_INT, &st));
  emit("MPI_File_read", at, 64, moved(&st, MPI_INT));

  /* Back to bytes. */
  CHECK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
  emit("MPI_File_set_view", 0, -1, -1);
  MPI_Type_free(&filetype);
  MPI_Type_free(&block);

  /* Non-blocking: 2048 bytes at 12288 + rank * 2048. */
  MPI_Request req;
  CHECK(MPI_File_iwrite_at(fh, 12288 + rank * 2048, buf, 2048, MPI_BYTE, &req));
  emit("MPI_File_iwrite_at", 12288 + rank * 2048, 2048, 2048);
  CHECK(MPI_Wait(&req, &st));
  /* Every write done before anyone asks the size. */
  CHECK(MPI_Barrier(MPI_COMM_WORLD));

  /* Split collective: 300 bytes at rank * 4096 + 100. */
  CHECK(MPI_File_seek(fh, rank * 4096 + 100, MPI_SEEK_SET));
  emit("MPI_File_seek", rank * 4096 + 100, -1, -1);
  CHECK(MPI_File_read_all_begin(fh, buf, 300, MPI_BYTE));
  emit("MPI_File_read_all_begin", rank * 4096 + 100, 300, 300);
  CHECK(MPI_File_read_all_end(fh, buf, &st));
  emit("MPI_File_read_all_end", -1, 0, 0);

  MPI_Offset size = 0;
  CHECK(MPI_File_get_size(fh, &size));
  emit("MPI_File_get_size", -1, (long long)size, -1);
  CHECK(MPI_File_sync(fh));
  emit("MPI_File_sync", -1, -1, -1);
  CHECK(MPI_File_close(&fh));
  emit("MPI_File_close", -1, -1, -1);
  fprintf(log_file, "RANK\t%d\t%d\n", rank, nranks);
  fclose(log_file);
  printf("rank %d of %d done\n", rank, nranks);
  fflush(stdout);
  CHECK(MPI_Finalize());
  return 0;
}
