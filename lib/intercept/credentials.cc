// The set-id calls: a process that changes its user, group or supplementary
// groups runs on exactly as untraced, and its trace stays writable
// (without_flusher.h, Runtime::BeforeCredentialChange;
// lib/core/trace_sink_credentials.cc says what went wrong before). Nothing
// is recorded for the calls themselves.
#include <grp.h>
#include <sys/types.h>
#include <unistd.h>

#include "lib/intercept/without_flusher.h"
#include "lib/intercept/wrapper.h"

using namespace dlprof::intercept;

DLPROF_REAL(setuid)
extern "C" int setuid(uid_t uid) {
  return WithoutFlusher([&] { return real_setuid(uid); });
}
DLPROF_REAL(setgid)
extern "C" int setgid(gid_t gid) {
  return WithoutFlusher([&] { return real_setgid(gid); });
}
DLPROF_REAL(seteuid)
extern "C" int seteuid(uid_t uid) {
  return WithoutFlusher([&] { return real_seteuid(uid); });
}
DLPROF_REAL(setegid)
extern "C" int setegid(gid_t gid) {
  return WithoutFlusher([&] { return real_setegid(gid); });
}
DLPROF_REAL(setreuid)
extern "C" int setreuid(uid_t ruid, uid_t euid) {
  return WithoutFlusher([&] { return real_setreuid(ruid, euid); });
}
DLPROF_REAL(setregid)
extern "C" int setregid(gid_t rgid, gid_t egid) {
  return WithoutFlusher([&] { return real_setregid(rgid, egid); });
}
DLPROF_REAL(setresuid)
extern "C" int setresuid(uid_t ruid, uid_t euid, uid_t suid) {
  return WithoutFlusher([&] { return real_setresuid(ruid, euid, suid); });
}
DLPROF_REAL(setresgid)
extern "C" int setresgid(gid_t rgid, gid_t egid, gid_t sgid) {
  return WithoutFlusher([&] { return real_setresgid(rgid, egid, sgid); });
}
DLPROF_REAL(setgroups)
extern "C" int setgroups(size_t size, const gid_t* list) {
  return WithoutFlusher([&] { return real_setgroups(size, list); });
}
