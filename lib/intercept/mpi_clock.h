// Clock offsets between hosts, measured through MPI (mpi_clock.cc says how).
#ifndef DLPROF_LIB_INTERCEPT_MPI_CLOCK_H_
#define DLPROF_LIB_INTERCEPT_MPI_CLOCK_H_

namespace dlprof::intercept {

// Right after a successful MPI_Init / MPI_Init_thread: `world` is
// MPI_COMM_WORLD, `rank` and `size` this process's place in it. Collective:
// every rank calls it (each traced rank does, in its MPI_Init wrapper).
void MeasureClocksAtInit(void* world, int rank, int size);

// Right before MPI_Finalize; collective like MPI_Finalize itself.
void MeasureClocksAtFinalize();

}  // namespace dlprof::intercept

#endif  // DLPROF_LIB_INTERCEPT_MPI_CLOCK_H_
