/* Files passed from rank to rank in a known order, for the merged timeline.
 *
 * usage: mpiexec -n N mpi_relay DIR ROUNDS
 *
 * Built with each MPI family found (tests/integration/CMakeLists.txt);
 * driven by test_mpi_clocks.py. In each of ROUNDS rounds, rank 0 writes
 * DIR/token.<round>.0 (4096 bytes), then every rank r > 0 in turn reads the
 * file the rank before it wrote and writes DIR/token.<round>.<r>; a barrier
 * separates each rank's turn from the next, and a pause of 20 ms after each
 * barrier keeps the turns apart. The true order of the calls is therefore:
 * write token.k.0 < read token.k.0 < write token.k.1 < read token.k.1 < ...
 * whatever the ranks' clocks say. */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mpi_check.h"

static void Pause(void) {
  struct timespec ts = {0, 20 * 1000 * 1000};
  nanosleep(&ts, NULL);
}

static void Token(const char* dir, int round, int from, char* path, size_t n) {
  snprintf(path, n, "%s/token.%d.%d", dir, round, from);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: mpi_relay DIR ROUNDS\n");
    return 2;
  }
  const char* dir = argv[1];
  const int rounds = atoi(argv[2]);
  int rank, nranks;
  CHECK(MPI_Init(&argc, &argv));
  CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  CHECK(MPI_Comm_size(MPI_COMM_WORLD, &nranks));
  char buf[4096], path[4096];
  memset(buf, 'a' + rank, sizeof(buf));
  for (int round = 0; round < rounds; ++round) {
    for (int turn = 0; turn < nranks; ++turn) {
      if (turn == rank) {
        if (rank > 0) {
          Token(dir, round, rank - 1, path, sizeof(path));
          int fd = open(path, O_RDONLY);
          if (fd < 0 || read(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) || close(fd) != 0) {
            perror(path);
            MPI_Abort(MPI_COMM_WORLD, 97);
          }
        }
        Token(dir, round, rank, path, sizeof(path));
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || write(fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) || close(fd) != 0) {
          perror(path);
          MPI_Abort(MPI_COMM_WORLD, 97);
        }
      }
      CHECK(MPI_Barrier(MPI_COMM_WORLD));
      Pause();
    }
  }
  CHECK(MPI_Finalize());
  return 0;
}
