/* A "CUDA program" for the fake libcupti (fake_cupti.cc): loads the CUPTI
 * plugin as the driver does, launches fake kernels around file reads, and
 * prints what the trace must hold. For fake_cupti_test.py.
 *
 *   fake_cuda_app PLUGIN DATA_FILE normal|switch|fork|steps|stall|stall-exec
 *
 *   normal  5 before_kernel, read DATA_FILE, 5 after_kernel
 *   switch  as normal, then launches probe kernels until the plugin has
 *           detached and re-attached CUPTI (the zero-timestamp switch), then
 *           5 late_before_kernel, a read, 5 late_after_kernel
 *   fork    as normal, then a forked child launches a kernel and exits
 *           through exit() (atexit handlers run); the parent waits for it
 *   steps   4 training steps: a region load_batch around a read of DATA_FILE
 *           while the GPU is idle, then 2 step_kernel launches (for the
 *           per-step batch wait and data stall; test_html_report.py)
 *   stall   DATA_FILE a FIFO: a first kernel, 300 ms, then a forked "loader
 *           worker" opens the FIFO and reads FAKE_STALL_READS bytes (20; at
 *           most 60) from it, one at a time, each of which the parent writes
 *           30 ms after a kernel: the GPU idles while the worker's reads are
 *           outstanding. Each process prints each of its I/O calls' start
 *           and end on the tracer's clock (IO START END; the closes, of
 *           microseconds, aside), for
 *           the data stall (test_keep.py)
 *   stall-exec  as stall, but the worker is started by exec (as
 *           multiprocessing's spawn starts one): this program again, in
 *           mode stall-worker, which only reads */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dlprof/dlprof.h"
#include "fake_injection.h"

static void (*launch)(const char*);
static void (*destroy_context)(void);
static int (*finalizes)(void);
static int (*subscribes)(void);

static void sleep_ms(int ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

static void launch_n(const char* name, int n) {
  for (int i = 0; i < n; ++i) launch(name);
}

static void read_file(const char* path) {
  char buf[4096];
  sleep_ms(2); /* the fake kernels "run" 2 us after launch; let them end */
  int fd = open(path, O_RDONLY);
  if (fd < 0 || read(fd, buf, sizeof(buf)) <= 0) {
    perror(path);
    exit(99);
  }
  close(fd);
  sleep_ms(2);
}

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC_RAW, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The "stall" mode (see the top): each process's I/O calls, timed. */
static uint64_t io_times[2 * 64];
static int io_calls;

static void timed(uint64_t start) {
  io_times[2 * io_calls] = start;
  io_times[2 * io_calls + 1] = now_ns();
  ++io_calls;
}

static void print_io(void) {
  for (int i = 0; i < io_calls; ++i) {
    printf("IO %llu %llu\n", (unsigned long long)io_times[2 * i],
           (unsigned long long)io_times[2 * i + 1]);
  }
}

static int stall_reads(void) {
  const char* n = getenv("FAKE_STALL_READS");
  const int reads = n ? atoi(n) : 20;
  return reads < 1 || reads > 60 ? -1 : reads;
}

/* The loader worker: reads the FIFO a byte at a time. */
static int stall_worker(const char* fifo) {
  const int reads = stall_reads();
  uint64_t t = now_ns();
  int fd = open(fifo, O_RDONLY);
  if (fd < 0) return 3;
  timed(t);
  char c;
  for (int i = 0; i < reads; ++i) {
    t = now_ns();
    if (read(fd, &c, 1) != 1) return 4;
    timed(t);
  }
  close(fd);
  print_io();
  return 0;
}

static int stall(char** argv, int by_exec) {
  const char* fifo = argv[2];
  const int reads = stall_reads();
  if (reads < 0) return 2;
  launch("_Z11first_kernelv");
  sleep_ms(300); /* CUPTI attached long before: the rank measures its stall */
  fflush(stdout);
  pid_t worker = fork();
  if (worker == 0) {
    if (by_exec) {
      execl("/proc/self/exe", argv[0], argv[1], fifo, "stall-worker", (char*)NULL);
      _exit(5);
    }
    exit(stall_worker(fifo));
  }
  uint64_t t = now_ns();
  int fd = open(fifo, O_WRONLY);
  if (fd < 0) return 3;
  timed(t);
  for (int i = 0; i < reads; ++i) {
    launch("_Z10batch_kernv");
    sleep_ms(30);
    t = now_ns();
    if (write(fd, "x", 1) != 1) return 4;
    timed(t);
  }
  close(fd);
  int status = 0;
  waitpid(worker, &status, 0);
  launch("_Z11last_kernelv");
  sleep_ms(2);
  destroy_context();
  print_io();
  printf("WORKER %d\nDONE\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s PLUGIN DATA normal|switch|fork|steps|stall|stall-exec\n",
            argv[0]);
    return 2;
  }
  if (strcmp(argv[3], "stall-worker") == 0) return stall_worker(argv[2]);
  launch = (void (*)(const char*))dlsym(RTLD_DEFAULT, "fake_launch_kernel");
  destroy_context = (void (*)(void))dlsym(RTLD_DEFAULT, "fake_destroy_context");
  finalizes = (int (*)(void))dlsym(RTLD_DEFAULT, "fake_finalize_count");
  subscribes = (int (*)(void))dlsym(RTLD_DEFAULT, "fake_subscribe_count");
  if (!launch || !destroy_context || !finalizes || !subscribes) {
    fprintf(stderr, "the fake libcupti is not loaded (LD_PRELOAD it)\n");
    return 2;
  }
  if (fake_inject(argv[1]) != 0) return 2;

  if (strcmp(argv[3], "stall") == 0) return stall(argv, 0);
  if (strcmp(argv[3], "stall-exec") == 0) return stall(argv, 1);
  if (strcmp(argv[3], "steps") == 0) {
    for (int step = 0; step < 4; ++step) {
      dlprof_region_begin("load_batch");
      read_file(argv[2]);
      dlprof_region_end();
      launch_n("_Z11step_kernelv", 2);
    }
    sleep_ms(2);
    destroy_context();
    printf("DONE\n");
    return 0;
  }

  launch_n("_Z13before_kernelPfi", 5);
  read_file(argv[2]);
  launch_n("_Z12after_kernelPfi", 5);

  if (strcmp(argv[3], "switch") == 0) {
    /* Waits for the plugin's switch (its flusher finalizes and subscribes
     * again): bounded, at 2400 probes 25 ms apart (60 s), which a loaded
     * machine does not overrun as it could the former 5 s. */
    int probes = 0;
    while ((finalizes() < 1 || subscribes() < 2) && probes < 2400) {
      launch("_Z12probe_kernelv");
      ++probes;
      sleep_ms(25);
    }
    printf("SWITCHED %d\nPROBES %d\n", finalizes() >= 1 && subscribes() >= 2, probes);
    launch_n("_Z18late_before_kernelv", 5);
    read_file(argv[2]);
    launch_n("_Z17late_after_kernelv", 5);
  } else if (strcmp(argv[3], "fork") == 0) {
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
      launch("_Z12child_kernelv");
      exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    printf("CHILD %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }
  destroy_context();
  printf("DONE\n");
  return 0;
}
