/* How long MPI_Finalize takes on rank 0, after a barrier: with
 * DLPROF_MPI_CLOCK=1 it includes serving the clock measurements of every
 * other clock domain (bench/mpi_clock_sync.sh). Prints "finalize N ms". */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <time.h>
static double now(void){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+t.tv_nsec/1e9;}
int main(int argc,char**argv){ MPI_Init(&argc,&argv); int r; MPI_Comm_rank(MPI_COMM_WORLD,&r);
 MPI_Barrier(MPI_COMM_WORLD); double t0=now(); MPI_Finalize(); double t1=now(); if(r==0) printf("finalize %.3f ms\n",(t1-t0)*1e3); return 0;}
