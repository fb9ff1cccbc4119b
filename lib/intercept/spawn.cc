// Spawning: posix_spawn, posix_spawnp, system, popen and pclose hand the
// child the environment the runtime passes on (lib/core/child_env.h), as
// the exec wrappers of process.cc do.
//
// glibc's system() and popen() start their shell through internal calls
// (__posix_spawn with __environ) that no preloaded library can see, so they
// are written here again, on the public posix_spawn, the way glibc 2.36
// writes them: system() ignores SIGINT and SIGQUIT and blocks SIGCHLD while
// it waits (counted across threads), resets them in the child, kills and
// reaps the child when the calling thread is cancelled, and returns 127<<8
// when the shell cannot be started; popen() gives the child one end of a
// pipe, closes the other popen streams' descriptors in it, and honours 'e'
// (close-on-exec); pclose() waits for the child and returns its status.
// A popen stream here is an fdopen stream: fclose() on it, which the
// program should not call (pclose is the call), closes it without
// reaping the child, where glibc's fclose would have waited.
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <new>

#include "lib/intercept/child_env_call.h"
#include "lib/intercept/describe.h"
#include "lib/intercept/wrapper.h"

using namespace dlprof::intercept;

DLPROF_REAL(posix_spawn)
extern "C" int posix_spawn(pid_t* pid, const char* path, const posix_spawn_file_actions_t* actions,
                           const posix_spawnattr_t* attr, char* const argv[],
                           char* const envp[]) {
  return WithChildEnv(envp, [&](char* const* env) {
    return real_posix_spawn(pid, path, actions, attr, argv, env);
  });
}

DLPROF_REAL(posix_spawnp)
extern "C" int posix_spawnp(pid_t* pid, const char* file, const posix_spawn_file_actions_t* actions,
                            const posix_spawnattr_t* attr, char* const argv[],
                            char* const envp[]) {
  return WithChildEnv(envp, [&](char* const* env) {
    return real_posix_spawnp(pid, file, actions, attr, argv, env);
  });
}

namespace {

constexpr char kShellPath[] = "/bin/sh";

// Whether a shell started now gets anything of ours: where it would not
// (the tracer is off, or the program took LD_PRELOAD out of its
// environment), libc's own system and popen do the work.
bool ShellGetsOurs() {
  const dlprof::core::ChildEnvSpec* spec = dlprof::core::ProcessChildEnv();
  return spec != nullptr && dlprof::core::ChildEnvBytes(*spec, environ) != 0;
}

int SpawnShell(pid_t* pid, const posix_spawn_file_actions_t* actions,
               const posix_spawnattr_t* attr, const char* command) {
  char* const argv[] = {const_cast<char*>("sh"), const_cast<char*>("-c"),
                        const_cast<char*>("--"), const_cast<char*>(command), nullptr};
  return WithChildEnv(environ, [&](char* const* env) {
    return real_posix_spawn(pid, kShellPath, actions, attr, argv, env);
  });
}

// --- system -------------------------------------------------------------

DLPROF_REAL_AS(sigaction, int (*)(int, const struct sigaction*, struct sigaction*), nullptr)

// Shared by the threads in system() at once, as in glibc: the first one in
// ignores SIGINT and SIGQUIT, the last one out restores them.
pthread_mutex_t g_system_lock = PTHREAD_MUTEX_INITIALIZER;
int g_system_users = 0;
struct sigaction g_saved_intr, g_saved_quit;

void LeaveSystem() {
  pthread_mutex_lock(&g_system_lock);
  if (--g_system_users == 0) {
    real_sigaction(SIGQUIT, &g_saved_quit, nullptr);
    real_sigaction(SIGINT, &g_saved_intr, nullptr);
  }
  pthread_mutex_unlock(&g_system_lock);
}

// The calling thread was cancelled while it waited: the child goes too.
void OnSystemCancelled(void* arg) {
  const pid_t pid = *static_cast<pid_t*>(arg);
  const int saved = errno;
  syscall(SYS_kill, pid, SIGKILL);
  int state;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state);
  while (waitpid(pid, nullptr, 0) == -1 && errno == EINTR) {
  }
  pthread_setcancelstate(state, nullptr);
  errno = saved;
  LeaveSystem();
}

int RunSystem(const char* line) {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  pthread_mutex_lock(&g_system_lock);
  if (g_system_users++ == 0) {
    real_sigaction(SIGINT, &ignore, &g_saved_intr);
    real_sigaction(SIGQUIT, &ignore, &g_saved_quit);
  }
  pthread_mutex_unlock(&g_system_lock);

  sigset_t block, old_mask, reset;
  sigemptyset(&block);
  sigaddset(&block, SIGCHLD);
  pthread_sigmask(SIG_BLOCK, &block, &old_mask);
  sigemptyset(&reset);
  if (g_saved_intr.sa_handler != SIG_IGN) sigaddset(&reset, SIGINT);
  if (g_saved_quit.sa_handler != SIG_IGN) sigaddset(&reset, SIGQUIT);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setsigmask(&attr, &old_mask);
  posix_spawnattr_setsigdefault(&attr, &reset);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  pid_t pid = 0;
  const int ret = SpawnShell(&pid, nullptr, &attr, line);
  posix_spawnattr_destroy(&attr);

  int status = -1;
  if (ret == 0) {
    pthread_cleanup_push(OnSystemCancelled, &pid);
    pid_t r;
    while ((r = waitpid(pid, &status, 0)) == -1 && errno == EINTR) {
    }
    if (r != pid) status = -1;
    pthread_cleanup_pop(0);
  } else {
    status = 127 << 8;  // as if the shell had exited with 127
  }
  LeaveSystem();
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  if (ret != 0) errno = ret;
  return status;
}

}  // namespace

DLPROF_REAL(system)
extern "C" int system(const char* line) {
  if (!ShellGetsOurs()) return real_system(line);
  if (line == nullptr) return RunSystem("exit 0") == 0;  // is there a shell?
  return RunSystem(line);
}

// --- popen, pclose ------------------------------------------------------

DLPROF_REAL(fdopen)
DLPROF_REAL(fclose)
DLPROF_REAL(pclose)

namespace {

// The open popen streams, newest first: a child closes the others' ends.
struct PopenStream {
  FILE* stream;
  pid_t pid;
  int fd;
  dev_t dev;  // the pipe's: a stream fclose()d rather than pclose()d left
  ino_t ino;  // its entry here, and its fd number may be another file now
  PopenStream* next;
};
pthread_mutex_t g_popen_lock = PTHREAD_MUTEX_INITIALIZER;
PopenStream* g_popen_streams = nullptr;

int CloseFd(int fd) { return static_cast<int>(syscall(SYS_close, fd)); }

bool StillOpen(const PopenStream& p) {
  struct stat st {};
  return syscall(SYS_fstat, p.fd, &st) == 0 && st.st_dev == p.dev && st.st_ino == p.ino;
}

}  // namespace

DLPROF_REAL(popen)
extern "C" FILE* popen(const char* command, const char* mode) {
  if (!ShellGetsOurs()) return real_popen(command, mode);
  bool read = false, write = false, cloexec = false;
  for (const char* m = mode; *m; ++m) {
    if (*m == 'r') read = true;
    else if (*m == 'w') write = true;
    else if (*m == 'e') cloexec = true;
    else {
      errno = EINVAL;
      return nullptr;
    }
  }
  if (read == write) {
    errno = EINVAL;
    return nullptr;
  }
  auto* entry = new (std::nothrow) PopenStream{};
  if (entry == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  // Both ends close-on-exec at first, so that a concurrent fork leaks
  // neither; the child's end is dup2'ed into place in the child.
  int fds[2];
  if (syscall(SYS_pipe2, fds, O_CLOEXEC) != 0) {
    delete entry;
    return nullptr;
  }
  const int parent_end = read ? 0 : 1;
  const int child_target = read ? 1 : 0;
  int child_fd = fds[1 - parent_end];
  const int parent_fd = fds[parent_end];
  auto fail = [&](FILE* stream, int err) -> FILE* {
    ForgetBeforeClose(parent_fd);
    if (stream) real_fclose(stream);
    else CloseFd(parent_fd);
    CloseFd(child_fd);
    delete entry;
    errno = err;
    return nullptr;
  };
  // The child's end is the very descriptor it must become: move it, or
  // dup2 would leave it close-on-exec.
  if (child_fd == child_target) {
    const int moved = static_cast<int>(syscall(SYS_fcntl, child_fd, F_DUPFD_CLOEXEC, 0));
    if (moved < 0) return fail(nullptr, errno);
    CloseFd(child_fd);
    child_fd = moved;
  }
  FILE* stream = real_fdopen(parent_fd, read ? "r" : "w");
  if (stream == nullptr) return fail(nullptr, errno);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  bool ok = posix_spawn_file_actions_adddup2(&actions, child_fd, child_target) == 0;
  struct stat pipe_st {};
  syscall(SYS_fstat, parent_fd, &pipe_st);
  pthread_mutex_lock(&g_popen_lock);
  for (PopenStream** p = &g_popen_streams; *p && ok;) {
    if (!StillOpen(**p)) {  // fclose()d: forget it, close nothing of the program's
      PopenStream* gone = *p;
      *p = gone->next;
      delete gone;
      continue;
    }
    if ((*p)->fd != child_target) ok = posix_spawn_file_actions_addclose(&actions, (*p)->fd) == 0;
    p = &(*p)->next;
  }
  pid_t pid = 0;
  ok = ok && SpawnShell(&pid, &actions, nullptr, command) == 0;
  if (ok) {
    *entry = PopenStream{stream, pid, parent_fd, pipe_st.st_dev, pipe_st.st_ino, g_popen_streams};
    g_popen_streams = entry;
  }
  pthread_mutex_unlock(&g_popen_lock);
  posix_spawn_file_actions_destroy(&actions);
  if (!ok) return fail(stream, ENOMEM);  // glibc says ENOMEM whatever failed
  CloseFd(child_fd);
  if (!cloexec) syscall(SYS_fcntl, parent_fd, F_SETFD, 0);
  return stream;
}

extern "C" int pclose(FILE* stream) {
  PopenStream* found = nullptr;
  pthread_mutex_lock(&g_popen_lock);
  for (PopenStream** p = &g_popen_streams; *p; p = &(*p)->next) {
    if ((*p)->stream == stream) {
      found = *p;
      *p = found->next;
      break;
    }
  }
  pthread_mutex_unlock(&g_popen_lock);
  // The pipe's number is free after the close: the fd table must not keep
  // it as a pipe (ignored), or the file glibc opens next on that number
  // where no wrapper sees it (mkstemp, tmpfile) would go untraced.
  if (stream != nullptr) ForgetBeforeClose(fileno(stream));
  if (found == nullptr) return real_pclose(stream);  // not one of ours: libc's
  const pid_t pid = found->pid;
  delete found;
  const int closed = real_fclose(stream);
  int status = 0;
  pid_t r;
  do {
    int state;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state);
    r = waitpid(pid, &status, 0);
    pthread_setcancelstate(state, nullptr);
  } while (r == -1 && errno == EINTR);
  if (r == -1) return -1;
  return status != 0 ? status : closed;
}
