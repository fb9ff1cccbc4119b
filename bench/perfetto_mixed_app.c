/* perfetto_mixed_app: the mixed CPU/GPU workload of bench/perfetto_size.sh,
 * a "training loop" against the fake libcupti of tests/gpu/fake_cupti (no
 * GPU needed): each step launches two kernels and reads a 4 KiB slice of
 * DATA_FILE with pread, as a loader feeding a GPU would; every 1024 steps
 * it pauses 3 ms.
 *
 *   perfetto_mixed_app PLUGIN DATA_FILE STEPS
 *
 * Run under LD_PRELOAD=libdlprof.so:<fake libcupti.so.13> with
 * DLPROF_CUDA=kernel,runtime, so that each launch records an API call, a
 * kernel and the correlation between them. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "../tests/gpu/fake_cupti/fake_injection.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s PLUGIN DATA_FILE STEPS\n", argv[0]);
    return 2;
  }
  void (*launch)(const char*) = (void (*)(const char*))dlsym(RTLD_DEFAULT, "fake_launch_kernel");
  if (!launch) {
    fprintf(stderr, "the fake libcupti is not loaded (LD_PRELOAD it)\n");
    return 2;
  }
  if (fake_inject(argv[1]) != 0) return 2;
  int fd = open(argv[2], O_RDONLY);
  if (fd < 0) {
    perror(argv[2]);
    return 1;
  }
  char buf[4096];
  const long steps = atol(argv[3]);
  for (long i = 0; i < steps; ++i) {
    launch("_Z7forwardPfS_i");
    if (pread(fd, buf, sizeof(buf), (off_t)((i * 4096) & 0xfffff)) < 0) {
      perror("pread");
      return 1;
    }
    launch("_Z8backwardPfS_i");
    if (i % 1024 == 1023) {
      /* A pause now and then, as a loader waits for a batch: the fake
       * "GPU" records faster than a real one, and the plugin's threads
       * must keep up (else CUPTI drops records, as it would). */
      struct timespec pause = {0, 3 * 1000 * 1000};
      nanosleep(&pause, NULL);
    }
  }
  close(fd);
  return 0;
}
