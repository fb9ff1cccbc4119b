/* Starts PROGRAM ARGS... in the way MODE names, to check what environment
 * each way hands the child (tests/integration/test_child_env.py).
 *
 * usage: start_child MODE PROGRAM ARGS...
 *
 *   execve execv execvp execvpe execl execlp execle fexecve
 *                  the image is replaced (the environment: environ; the
 *                  execl family passes PROGRAM alone)
 *   execve_own     execve with an environment of the program's own making:
 *                  LD_PRELOAD, PATH and PYTHONPATH of environ, nothing else
 *   posix_spawn posix_spawnp
 *                  the child is waited for; exits with its status
 *   system popen   "PROGRAM ARGS..." through the shell; popen's output is
 *                  copied to stdout, and pclose's status printed as
 *                  "PCLOSE <status>"
 *   popen_w        the same command opened for writing: "data\n" goes to
 *                  its stdin; prints "PCLOSE <status>"
 *   popen_two      the command opened for writing twice at once; "one\n"
 *                  to the first, which is closed first: its child sees the
 *                  end of its input only if the second child does not hold
 *                  the first pipe (popen closes it there)
 *   popen_mkstemp  the command's output read and its pipe closed, then a
 *                  file made by mkstemp(PROGRAM "XXXXXX") on the number the
 *                  pipe had, written 10 x 100 bytes; prints "MADE <path>" */
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include "common.h"

extern char** environ;

static int exit_status(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(int argc, char** argv) {
  CHECK(argc >= 3);
  const char* mode = argv[1];
  char** args = argv + 2;
  fflush(stdout);
  if (strcmp(mode, "execve") == 0) {
    execve(args[0], args, environ);
  } else if (strcmp(mode, "execv") == 0) {
    execv(args[0], args);
  } else if (strcmp(mode, "execvp") == 0) {
    execvp(args[0], args);
  } else if (strcmp(mode, "execvpe") == 0) {
    execvpe(args[0], args, environ);
  } else if (strcmp(mode, "execl") == 0) {
    execl(args[0], args[0], (char*)NULL);
  } else if (strcmp(mode, "execlp") == 0) {
    execlp(args[0], args[0], (char*)NULL);
  } else if (strcmp(mode, "execle") == 0) {
    execle(args[0], args[0], (char*)NULL, environ);
  } else if (strcmp(mode, "fexecve") == 0) {
    int fd = open(args[0], O_RDONLY | O_CLOEXEC);
    CHECK(fd >= 0);
    fexecve(fd, args, environ);
  } else if (strcmp(mode, "execve_own") == 0) {
    static char* own[4];
    int n = 0;
    for (char** e = environ; *e; ++e) {
      if (strncmp(*e, "LD_PRELOAD=", 11) == 0 || strncmp(*e, "PATH=", 5) == 0 ||
          strncmp(*e, "PYTHONPATH=", 11) == 0) {
        if (n < 3) own[n++] = *e;
      }
    }
    own[n] = NULL;
    execve(args[0], args, own);
  } else if (strcmp(mode, "posix_spawn") == 0 || strcmp(mode, "posix_spawnp") == 0) {
    pid_t pid;
    int rc = mode[11] == 'p' ? posix_spawnp(&pid, args[0], NULL, NULL, args, environ)
                             : posix_spawn(&pid, args[0], NULL, NULL, args, environ);
    CHECK(rc == 0);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    return exit_status(status);
  } else if (strcmp(mode, "system") == 0 || strncmp(mode, "popen", 5) == 0) {
    char line[8192] = "";
    for (char** a = args; *a; ++a) {
      if (a != args) strcat(line, " ");
      CHECK(strlen(line) + strlen(*a) + 2 < sizeof(line));
      strcat(line, *a);
    }
    if (mode[0] == 's') {
      int status = system(line);
      CHECK(status != -1);
      return exit_status(status);
    }
    if (strcmp(mode, "popen_two") == 0) {
      FILE* a = popen(line, "w");
      CHECK(a != NULL);
      FILE* b = popen(line, "w");
      CHECK(b != NULL);
      CHECK(fputs("one\n", a) >= 0);
      printf("PCLOSE %d\n", pclose(a));
      CHECK(fputs("two\n", b) >= 0);
      printf("PCLOSE %d\n", pclose(b));
      return 0;
    }
    if (strcmp(mode, "popen_mkstemp") == 0) {
      FILE* p = popen("echo hi", "r");
      CHECK(p != NULL);
      char buf[100] = "";
      CHECK(fgets(buf, sizeof(buf), p) != NULL);  // (the pipe seen through stdio)
      CHECK(pclose(p) == 0);
      char path[4096];
      snprintf(path, sizeof(path), "%sXXXXXX", args[0]);
      int fd = mkstemp(path);  // glibc's own open: no wrapper sees it
      CHECK(fd >= 0);
      for (int i = 0; i < 10; ++i) CHECK(write(fd, buf, 100) == 100);
      CHECK(close(fd) == 0);
      printf("MADE %s\n", path);
      return 0;
    }
    if (strcmp(mode, "popen_w") == 0) {
      FILE* w = popen(line, "w");
      CHECK(w != NULL);
      CHECK(fputs("data\n", w) >= 0);
      printf("PCLOSE %d\n", pclose(w));
      return 0;
    }
    FILE* p = popen(line, "r");
    CHECK(p != NULL);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0) fwrite(buf, 1, n, stdout);
    int status = pclose(p);
    printf("PCLOSE %d\n", status);
    return 0;
  } else {
    fprintf(stderr, "unknown mode %s\n", mode);
    return 2;
  }
  fprintf(stderr, "%s failed: %s\n", mode, strerror(errno));
  return 98;
}
