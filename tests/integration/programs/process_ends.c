/* Children that end in every way a process can, for their traces' last
 * records (lib/core/process_end.h).
 *
 * usage: process_ends FILE          (children)
 *        process_ends FILE helper   (a helper that fails)
 *
 * children: the parent forks one child per way; each reads FILE (a traced
 * call) and ends: "return" 4 from main, "exit" 3, "_exit" 5, "quick_exit"
 * 6, "term" (the parent sends it SIGTERM once it has read), "kill" (SIGKILL
 * likewise: the OOM killer's), "segv" (a fault), "zero" (exit 0),
 * "thread_exit" (a thread that made no traced call calls _exit(7): it has
 * no ring of its own). The parent waits for each and prints what wait() said, "CHILD <pid> <way> status=<exit status or -1> signal=<signal or 0>",
 * then "PARENT <pid>", and returns 1 from main (as a job whose steps failed).
 * helper: the parent reads FILE and runs a helper that fails, as a job runs
 * `git rev-parse` outside a repository (system("/bin/false"): "HELPER
 * status=1"), and returns 0. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#include "common.h"

static const char* const kWays[] = {"return", "exit",  "_exit", "quick_exit", "term",
                                    "kill",   "segv", "zero",  "thread_exit"};

static void* exit_from_thread(void* arg) {
  (void)arg;
  _exit(7);
}

static void read_file(const char* path) {
  char buf[256];
  int fd = open(path, O_RDONLY);
  CHECK(fd >= 0);
  CHECK(read(fd, buf, sizeof(buf)) > 0);
  close(fd);
}

static int child(const char* way, const char* path, int ready) {
  read_file(path);
  if (strcmp(way, "exit") == 0) exit(3);
  if (strcmp(way, "_exit") == 0) _exit(5);
  if (strcmp(way, "quick_exit") == 0) quick_exit(6);
  if (strcmp(way, "thread_exit") == 0) {
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, exit_from_thread, NULL) == 0);
    pthread_join(thread, NULL);  /* never returns: the thread ends the process */
  }
  static volatile uintptr_t nowhere = 8;  /* (a constant: the compiler warns) */
  if (strcmp(way, "segv") == 0) *(volatile int*)nowhere = 1;
  if (strcmp(way, "term") == 0 || strcmp(way, "kill") == 0) {
    CHECK(write(ready, "r", 1) == 1);  /* then waits for the parent's signal */
    for (;;) pause();
  }
  return strcmp(way, "zero") == 0 ? 0 : 4;
}

int main(int argc, char** argv) {
  CHECK(argc == 2 || argc == 3);
  if (argc == 3) {
    read_file(argv[1]);
    fflush(stdout);
    const int helper = system("/bin/false");
    printf("HELPER status=%d\n", WIFEXITED(helper) ? WEXITSTATUS(helper) : -1);
    return 0;
  }
  for (size_t i = 0; i < sizeof(kWays) / sizeof(kWays[0]); ++i) {
    int ready[2];
    CHECK(pipe(ready) == 0);
    fflush(stdout);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
      close(ready[0]);
      return child(kWays[i], argv[1], ready[1]);  /* main's return, in the child */
    }
    close(ready[1]);
    const int sig = strcmp(kWays[i], "term") == 0 ? SIGTERM
                    : strcmp(kWays[i], "kill") == 0 ? SIGKILL : 0;
    if (sig != 0) {
      char c;
      CHECK(read(ready[0], &c, 1) == 1);
      CHECK(kill(pid, sig) == 0);
    }
    close(ready[0]);
    int status;
    CHECK(waitpid(pid, &status, 0) == pid);
    printf("CHILD %d %s status=%d signal=%d\n", (int)pid, kWays[i],
           WIFEXITED(status) ? WEXITSTATUS(status) : -1,
           WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  }
  printf("PARENT %d\n", (int)getpid());
  return 1;
}
