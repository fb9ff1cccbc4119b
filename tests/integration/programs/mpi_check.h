/* The MPI test programs' CHECK: an MPI call that does not succeed ends the
 * job with a message naming it (exit 99), so a test never reads on after a
 * failed call. */
#ifndef DLPROF_TESTS_MPI_CHECK_H_
#define DLPROF_TESTS_MPI_CHECK_H_

#include <mpi.h>
#include <stdio.h>

#define CHECK(call)                                                           \
  do {                                                                        \
    int rc_ = (call);                                                         \
    if (rc_ != MPI_SUCCESS) {                                                 \
      fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call,    \
              rc_);                                                           \
      MPI_Abort(MPI_COMM_WORLD, 99);                                          \
    }                                                                         \
  } while (0)

#endif /* DLPROF_TESTS_MPI_CHECK_H_ */
