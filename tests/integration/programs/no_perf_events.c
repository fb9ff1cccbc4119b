/* Runs a program where perf_event_open is refused, as a container's
 * seccomp profile refuses it (tests/integration/test_map_faults.py).
 *
 *   no_perf_events [--kill | --allow] PROGRAM [ARG...]
 *
 * Installs a seccomp filter under which perf_event_open fails with EACCES
 * (every other system call is allowed), then executes PROGRAM; the filter
 * holds for it and its children. With --kill, perf_event_open kills the
 * process instead (SECCOMP_RET_KILL_PROCESS, as systemd's
 * SystemCallFilter= does); with --allow, the filter allows it too (a
 * filter that is there, and does not stand in the way). Exits 98 when the
 * filter cannot be installed. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char** argv) {
  unsigned int action = SECCOMP_RET_ERRNO | (EACCES & SECCOMP_RET_DATA);
  if (argc > 1 && strcmp(argv[1], "--kill") == 0) {
    action = SECCOMP_RET_KILL_PROCESS;
    ++argv, --argc;
  } else if (argc > 1 && strcmp(argv[1], "--allow") == 0) {
    action = SECCOMP_RET_ALLOW;
    ++argv, --argc;
  }
  if (argc < 2) {
    fprintf(stderr, "usage: no_perf_events [--kill | --allow] PROGRAM [ARG...]\n");
    return 2;
  }
  struct sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_perf_event_open, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, action),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {(unsigned short)(sizeof(filter) / sizeof(filter[0])), filter};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
      prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) {
    perror("no_perf_events: seccomp");
    return 98;
  }
  execvp(argv[1], argv + 1);
  perror("no_perf_events: exec");
  return 127;
}
