/* The cuFile ABI's types as the two test programs use them (NVIDIA's
 * cufile.h: the same layouts, only the members they touch named): the fake
 * libcufile (fake_cufile.c) and the program that calls it (gds_program.c)
 * must agree on them, so they are written once. */
#ifndef DLPROF_TESTS_GDS_CUFILE_ABI_H_
#define DLPROF_TESTS_GDS_CUFILE_ABI_H_

#include <stddef.h>
#include <sys/types.h>

typedef struct { int err; int cu_err; } CUfileError_t;
typedef struct {
  int type;
  union { int fd; void* handle; } handle;
  const void* fs_ops;
} CUfileDescr_t;
typedef void* CUfileHandle_t;
typedef void* CUfileBatchHandle_t;
typedef void* CUstream;
typedef struct {
  int mode;
  union {
    struct { void* devPtr_base; off_t file_offset; off_t devPtr_offset; size_t size; } batch;
  } u;
  CUfileHandle_t fh;
  int opcode;
  void* cookie;
} CUfileIOParams_t;
typedef struct { void* cookie; int status; size_t ret; } CUfileIOEvents_t;

#endif  /* DLPROF_TESTS_GDS_CUFILE_ABI_H_ */
