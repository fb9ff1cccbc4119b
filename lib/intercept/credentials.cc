// The set-id calls: a process that changes its user, group or supplementary
// groups runs on exactly as untraced, and its trace stays writable
// (Runtime::BeforeCredentialChange; lib/core/trace_sink_credentials.cc says
// what went wrong before). Nothing is recorded for the calls themselves.
#include <grp.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>

#include "lib/intercept/describe.h"
#include "lib/intercept/wrapper.h"

using namespace dlprof::intercept;

namespace {

// The call with the runtime's preparation around it, in the process that
// started the runtime only (a vfork child shares our memory; before the
// runtime starts there is nothing to prepare). errno as the call left it.
template <typename Call>
int ChangeCredentials(Call call) {
  const int state = dlprof::core::g_state.load(std::memory_order_relaxed);
  if (state == static_cast<int>(dlprof::core::RuntimeState::kUninitialized) ||
      dlprof::core::CurrentThread().internal || !Rt().InOwnProcess()) {
    return call();
  }
  Rt().BeforeCredentialChange();
  const int r = call();
  const int err = errno;
  Rt().AfterCredentialChange();
  errno = err;
  return r;
}

}  // namespace

DLPROF_REAL(setuid)
extern "C" int setuid(uid_t uid) {
  return ChangeCredentials([&] { return real_setuid(uid); });
}
DLPROF_REAL(setgid)
extern "C" int setgid(gid_t gid) {
  return ChangeCredentials([&] { return real_setgid(gid); });
}
DLPROF_REAL(seteuid)
extern "C" int seteuid(uid_t uid) {
  return ChangeCredentials([&] { return real_seteuid(uid); });
}
DLPROF_REAL(setegid)
extern "C" int setegid(gid_t gid) {
  return ChangeCredentials([&] { return real_setegid(gid); });
}
DLPROF_REAL(setreuid)
extern "C" int setreuid(uid_t ruid, uid_t euid) {
  return ChangeCredentials([&] { return real_setreuid(ruid, euid); });
}
DLPROF_REAL(setregid)
extern "C" int setregid(gid_t rgid, gid_t egid) {
  return ChangeCredentials([&] { return real_setregid(rgid, egid); });
}
DLPROF_REAL(setresuid)
extern "C" int setresuid(uid_t ruid, uid_t euid, uid_t suid) {
  return ChangeCredentials([&] { return real_setresuid(ruid, euid, suid); });
}
DLPROF_REAL(setresgid)
extern "C" int setresgid(gid_t rgid, gid_t egid, gid_t sgid) {
  return ChangeCredentials([&] { return real_setresgid(rgid, egid, sgid); });
}
DLPROF_REAL(setgroups)
extern "C" int setgroups(size_t size, const gid_t* list) {
  return ChangeCredentials([&] { return real_setgroups(size, list); });
}
