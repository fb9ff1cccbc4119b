/* pread_overhead: the workload of dlprof's overhead, trace-size and memory
 * benchmarks (bench/README.md).
 *
 * It does N preads of BLOCK bytes (4 KiB by default) from a page-cached file
 * in T threads and prints one JSON line with the time per call, the cost of
 * two clock_gettime(CLOCK_MONOTONIC_RAW) calls measured in the same process,
 * and the process's peak memory. It knows nothing about dlprof: the driver
 * (bench/overhead.py) runs it with and without LD_PRELOAD=libdlprof.so.
 *
 *   pread_overhead --file F --create [--file-mb 64]     make the data file
 *   pread_overhead --file F [--threads T] [--iters N] [--pattern seq|random]
 *                  [--fd own|shared] [--block B] [--warmup W] [--clock-iters M]
 *                  [--interleave K] [--step K]
 *
 * --iters is per thread. Thread i starts at offset i * size / T and reads
 * sequentially, wrapping at the end of the file (seq), or at 4 KiB-aligned
 * offsets from a per-thread xorshift generator (random). With --fd own every
 * thread opens the file itself; with --fd shared all use one descriptor.
 * Every pread is checked to return BLOCK bytes.
 *
 * Besides wall ns/call it reports the workers' own CPU time per call and the
 * whole process's CPU time per call while the workers ran (a tracer's
 * background threads included). With --interleave K each thread instead
 * alternates bursts of K libc preads, K raw syscall(SYS_pread64) (which no
 * LD_PRELOAD wrapper sees) and K clock pairs, timing each burst by wall clock
 * and by its CPU clock (il_* keys): the in-process differences stay stable on
 * a loaded machine.
 *
 * With --step K (the region benchmarks) each K reads run in an annotation
 * region "step", and each 100 steps in a region "epoch N": dlprof/dlprof.h
 * needs no library, and its calls do nothing without the tracer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dlprof/dlprof.h"

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t process_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char* what) {
  fprintf(stderr, "pread_overhead: %s: %s\n", what, strerror(errno));
  exit(2);
}

struct options {
  const char* file;
  int create;
  uint64_t file_mb;
  int threads;
  uint64_t iters;
  uint64_t warmup;
  uint64_t clock_iters;
  size_t block;
  int random;
  int shared_fd;
  uint64_t interleave;
  uint64_t step;
};

struct worker {
  pthread_t thread;
  const struct options* opt;
  int index;
  int fd;
  uint64_t file_size;
  pthread_barrier_t* barrier;
  uint64_t elapsed_ns;
  uint64_t cpu_ns;
  uint64_t preads;
  uint64_t short_reads;
  uint64_t checksum;
  double il_libc_ns, il_raw_ns, il_clock2_ns;  /* --interleave sums: wall */
  double il_libc_cpu, il_raw_cpu, il_clock2_cpu;  /* and thread CPU time */
};

/* Two back-to-back reads of the clock, as a traced call makes: ns per pair. */
static double clock_pair_ns(uint64_t iters) {
  struct timespec a, b;
  uint64_t sink = 0;
  uint64_t t0 = now_ns();
  for (uint64_t i = 0; i < iters; ++i) {
    clock_gettime(CLOCK_MONOTONIC_RAW, &a);
    clock_gettime(CLOCK_MONOTONIC_RAW, &b);
    sink += (uint64_t)(b.tv_nsec - a.tv_nsec);
  }
  uint64_t t1 = now_ns();
  __asm__ volatile("" : : "r"(sink) : "memory");
  return (double)(t1 - t0) / (double)iters;
}

static void make_file(const struct options* opt) {
  int fd = open(opt->file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) die("create");
  size_t chunk = 1u << 20;
  unsigned char* buf = malloc(chunk);
  if (!buf) die("malloc");
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (uint64_t mb = 0; mb < opt->file_mb; ++mb) {
    for (size_t i = 0; i < chunk; i += 8) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      memcpy(buf + i, &x, 8);
    }
    if (write(fd, buf, chunk) != (ssize_t)chunk) die("write");
  }
  free(buf);
  if (close(fd) != 0) die("close");
}

/* Pulls the whole file into the page cache with large reads (few events). */
static uint64_t warm_file(int fd, uint64_t size) {
  size_t chunk = 1u << 20;
  unsigned char* buf = malloc(chunk);
  if (!buf) die("malloc");
  uint64_t calls = 0;
  for (uint64_t off = 0; off < size; off += chunk) {
    if (pread(fd, buf, chunk, (off_t)off) < 0) die("warm pread");
    ++calls;
  }
  free(buf);
  return calls;
}

struct cursor {
  uint64_t pos, rng, blocks, sum, shorts;
};

/* n reads at the next offsets of the pattern: through pread() (the libc
 * symbol, which LD_PRELOAD interposes) or straight through syscall(). */
static void read_burst(struct worker* w, struct cursor* c, unsigned char* buf, uint64_t n,
                       int raw) {
  const struct options* opt = w->opt;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t b;
    if (opt->random) {
      c->rng ^= c->rng << 13, c->rng ^= c->rng >> 7, c->rng ^= c->rng << 17;
      b = c->rng % c->blocks;
    } else {
      b = c->pos;
      if (++c->pos == c->blocks) c->pos = 0;
    }
    ssize_t r = raw ? syscall(SYS_pread64, w->fd, buf, opt->block, (off_t)(b * opt->block))
                    : pread(w->fd, buf, opt->block, (off_t)(b * opt->block));
    if (r != (ssize_t)opt->block) ++c->shorts;
    c->sum += buf[0];
  }
}

static void* run_worker(void* arg) {
  struct worker* w = arg;
  const struct options* opt = w->opt;
  unsigned char* buf = aligned_alloc(4096, opt->block < 4096 ? 4096 : opt->block);
  if (!buf) die("aligned_alloc");
  struct cursor c = {0, 0x2545f4914f6cdd1dull * (uint64_t)(w->index + 1),
                     w->file_size / opt->block, 0, 0};
  c.pos = c.blocks * (uint64_t)w->index / (uint64_t)opt->threads;

  read_burst(w, &c, buf, opt->warmup, 0);
  w->preads += opt->warmup;
  pthread_barrier_wait(w->barrier);
  const uint64_t c0 = thread_cpu_ns();
  const uint64_t t0 = now_ns();
  if (opt->step > 0) {
    for (uint64_t done = 0, steps = 0; done < opt->iters; done += opt->step, ++steps) {
      if (steps % 100 == 0) {
        char epoch[32];
        snprintf(epoch, sizeof epoch, "epoch %llu", (unsigned long long)(steps / 100));
        if (steps > 0) dlprof_region_end();
        dlprof_region_begin(epoch);
      }
      dlprof_region_begin("step");
      read_burst(w, &c, buf, opt->iters - done < opt->step ? opt->iters - done : opt->step, 0);
      dlprof_region_end();
    }
    dlprof_region_end();
  } else if (opt->interleave == 0) {
    read_burst(w, &c, buf, opt->iters, 0);
  } else {
    /* Rounds of K libc preads, K raw syscalls and K clock pairs: machine
     * speed drifts alike over all three, so their differences are stable. */
    for (uint64_t done = 0; done < opt->iters; done += opt->interleave) {
      const uint64_t k = opt->iters - done < opt->interleave ? opt->iters - done
                                                              : opt->interleave;
      /* Wall time and this thread's CPU time of each burst: CPU time leaves
       * out what other processes take from us on a loaded machine. */
      uint64_t a = now_ns(), ac = thread_cpu_ns();
      read_burst(w, &c, buf, k, 0);
      uint64_t b = now_ns(), bc = thread_cpu_ns();
      read_burst(w, &c, buf, k, 1);
      uint64_t d = now_ns(), dc = thread_cpu_ns();
      w->il_clock2_ns += clock_pair_ns(k) * (double)k;
      uint64_t ec = thread_cpu_ns();
      w->il_libc_ns += (double)(b - a);
      w->il_raw_ns += (double)(d - b);
      w->il_libc_cpu += (double)(bc - ac);
      w->il_raw_cpu += (double)(dc - bc);
      w->il_clock2_cpu += (double)(ec - dc);
    }
  }
  const uint64_t t1 = now_ns();
  const uint64_t c1 = thread_cpu_ns();
  w->elapsed_ns = t1 - t0;
  w->cpu_ns = c1 - c0;
  w->preads += opt->iters;
  w->short_reads = c.shorts;
  w->checksum = c.sum;
  free(buf);
  return NULL;
}

static long vm_hwm_kb(void) {
  FILE* f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long kb = -1;
  while (fgets(line, sizeof(line), f)) {
    if (strncmp(line, "VmHWM:", 6) == 0) {
      kb = strtol(line + 6, NULL, 10);
      break;
    }
  }
  fclose(f);
  return kb;
}

static void usage(void) {
  fprintf(stderr,
          "usage: pread_overhead --file F [--create] [--file-mb MB] [--threads T]\n"
          "       [--iters N] [--warmup W] [--clock-iters M] [--block B]\n"
          "       [--pattern seq|random] [--fd own|shared] [--interleave K] [--step K]\n");
  exit(2);
}

int main(int argc, char** argv) {
  struct options opt = {NULL, 0, 64, 1, 1000000, 20000, 2000000, 4096, 0, 0, 0, 0};
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--create")) { opt.create = 1; continue; }
    if (!v) usage();
    ++i;
    if (!strcmp(a, "--file")) opt.file = v;
    else if (!strcmp(a, "--file-mb")) opt.file_mb = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--threads")) opt.threads = atoi(v);
    else if (!strcmp(a, "--iters")) opt.iters = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--warmup")) opt.warmup = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--clock-iters")) opt.clock_iters = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--block")) opt.block = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--interleave")) opt.interleave = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--step")) opt.step = strtoull(v, NULL, 10);
    else if (!strcmp(a, "--pattern")) {
      if (!strcmp(v, "seq")) opt.random = 0;
      else if (!strcmp(v, "random")) opt.random = 1;
      else usage();
    } else if (!strcmp(a, "--fd")) {
      if (!strcmp(v, "own")) opt.shared_fd = 0;
      else if (!strcmp(v, "shared")) opt.shared_fd = 1;
      else usage();
    } else usage();
  }
  if (!opt.file || opt.threads < 1 || opt.block == 0 || opt.clock_iters == 0) usage();
  if (opt.create) {
    make_file(&opt);
    int fd = open(opt.file, O_RDONLY);
    if (fd < 0) die("open");
    warm_file(fd, opt.file_mb << 20);
    close(fd);
    return 0;
  }

  int fd0 = open(opt.file, O_RDONLY);
  if (fd0 < 0) die("open");
  struct stat st;
  if (fstat(fd0, &st) != 0) die("fstat");
  const uint64_t size = (uint64_t)st.st_size;
  if (size < opt.block) {
    fprintf(stderr, "pread_overhead: %s is smaller than one block\n", opt.file);
    return 2;
  }
  uint64_t preads = warm_file(fd0, size);

  const double clock_before = clock_pair_ns(opt.clock_iters);

  struct worker* w = calloc((size_t)opt.threads, sizeof(*w));
  pthread_barrier_t barrier;
  pthread_barrier_init(&barrier, NULL, (unsigned)opt.threads);
  for (int i = 0; i < opt.threads; ++i) {
    w[i].opt = &opt;
    w[i].index = i;
    w[i].file_size = size;
    w[i].barrier = &barrier;
    w[i].fd = opt.shared_fd ? fd0 : open(opt.file, O_RDONLY);
    if (w[i].fd < 0) die("open");
  }
  const uint64_t pc0 = process_cpu_ns();
  const uint64_t t0 = now_ns();
  for (int i = 0; i < opt.threads; ++i) {
    if (pthread_create(&w[i].thread, NULL, run_worker, &w[i]) != 0) die("pthread_create");
  }
  for (int i = 0; i < opt.threads; ++i) pthread_join(w[i].thread, NULL);
  const uint64_t wall = now_ns() - t0;
  /* CPU of every thread of the process while the workers ran, the tracer's
   * flusher included, per worker pread (warm-up calls included). */
  const double phase_cpu_per_call =
      (double)(process_cpu_ns() - pc0) / (double)(opt.threads * (opt.iters + opt.warmup));

  const double clock_after = clock_pair_ns(opt.clock_iters);

  double sum_ns = 0, sum_cpu = 0, il_libc = 0, il_raw = 0, il_clock2 = 0;
  double il_libc_cpu = 0, il_raw_cpu = 0, il_clock2_cpu = 0;
  uint64_t shorts = 0;
  printf("{\"threads\":%d,\"iters\":%llu,\"block\":%zu,\"pattern\":\"%s\",\"fd\":\"%s\","
         "\"ns_per_call_thread\":[",
         opt.threads, (unsigned long long)opt.iters, opt.block, opt.random ? "random" : "seq",
         opt.shared_fd ? "shared" : "own");
  for (int i = 0; i < opt.threads; ++i) {
    double ns = (double)w[i].elapsed_ns / (double)opt.iters;
    sum_ns += ns;
    sum_cpu += (double)w[i].cpu_ns / (double)opt.iters;
    il_libc += w[i].il_libc_ns;
    il_raw += w[i].il_raw_ns;
    il_clock2 += w[i].il_clock2_ns;
    il_libc_cpu += w[i].il_libc_cpu;
    il_raw_cpu += w[i].il_raw_cpu;
    il_clock2_cpu += w[i].il_clock2_cpu;
    shorts += w[i].short_reads;
    preads += w[i].preads;
    printf("%s%.2f", i ? "," : "", ns);
  }
  for (int i = 0; i < opt.threads; ++i) {
    if (!opt.shared_fd) close(w[i].fd);
  }
  close(fd0);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("],\"ns_per_call\":%.2f,\"cpu_ns_per_call\":%.2f,\"process_cpu_ns_per_call\":%.2f,"
         "\"wall_ns\":%llu,\"clock2_ns\":%.2f,"
         "\"clock2_before_ns\":%.2f,\"clock2_after_ns\":%.2f,\"preads\":%llu,"
         "\"short_reads\":%llu,\"maxrss_kb\":%ld,\"vmhwm_kb\":%ld",
         sum_ns / opt.threads, sum_cpu / opt.threads, phase_cpu_per_call,
         (unsigned long long)wall, (clock_before + clock_after) / 2,
         clock_before, clock_after, (unsigned long long)preads, (unsigned long long)shorts,
         ru.ru_maxrss, vm_hwm_kb());
  if (opt.interleave) {
    /* Each thread made iters libc preads, iters raw syscalls and iters
     * clock pairs in rounds; ns per call, averaged over threads. */
    const double calls = (double)opt.iters * opt.threads;
    printf(",\"interleave\":%llu,\"il_libc_ns\":%.2f,\"il_syscall_ns\":%.2f,"
           "\"il_clock2_ns\":%.2f,\"il_libc_cpu_ns\":%.2f,\"il_syscall_cpu_ns\":%.2f,"
           "\"il_clock2_cpu_ns\":%.2f",
           (unsigned long long)opt.interleave, il_libc / calls, il_raw / calls, il_clock2 / calls,
           il_libc_cpu / calls, il_raw_cpu / calls, il_clock2_cpu / calls);
  }
  printf("}\n");
  free(w);
  pthread_barrier_destroy(&barrier);
  return shorts ? 1 : 0;
}
