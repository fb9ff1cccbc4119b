// Runs an exec or spawn with the environment the runtime hands the child
// (lib/core/child_env.h): the program's, plus the run id, the trace
// directory, the markers and the Python bootstrap, where the child is
// traced. The new environment lives on the stack (a large one in a private
// mapping): exec runs in vfork children and after fork in threaded
// programs, where malloc may deadlock. errno is the real call's.
#ifndef DLPROF_LIB_INTERCEPT_CHILD_ENV_CALL_H_
#define DLPROF_LIB_INTERCEPT_CHILD_ENV_CALL_H_

#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>

#include "lib/core/child_env.h"
#include "lib/core/raw_map.h"

namespace dlprof::intercept {

// Above this, the environment goes into a mapping instead of the stack
// (a thread's stack may be small).
constexpr size_t kChildEnvStackBytes = 32 * 1024;

template <typename Call>
__attribute__((noinline)) auto WithChildEnv(char* const* envp, Call&& call)
    -> decltype(call(envp)) {
  const core::ChildEnvSpec* spec = core::ProcessChildEnv();
  const size_t bytes = spec ? core::ChildEnvBytes(*spec, envp) : 0;
  if (bytes == 0) return call(envp);
  if (bytes <= kChildEnvStackBytes) {
    void* memory = __builtin_alloca(bytes);
    return call(core::BuildChildEnv(*spec, envp, memory, bytes));
  }
  const int saved = errno;
  void* memory =
      core::RawMmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  errno = saved;
  if (memory == MAP_FAILED) return call(envp);  // the child misses ours, but runs
  auto r = call(core::BuildChildEnv(*spec, envp, memory, bytes));
  const int err = errno;
  core::RawMunmap(memory, bytes);
  errno = err;
  return r;
}

}  // namespace dlprof::intercept

#endif  // DLPROF_LIB_INTERCEPT_CHILD_ENV_CALL_H_
