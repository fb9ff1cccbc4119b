// Turning paths and file descriptors into file ids (string ids of absolute
// paths), with the path filter applied: FdTable::kIgnored means "do not
// trace", FdTable::kLost "traced, but the path could not be kept".
#ifndef DLPROF_LIB_CORE_FILE_IDS_H_
#define DLPROF_LIB_CORE_FILE_IDS_H_

#include <cstdint>

#include "lib/core/runtime.h"

namespace dlprof::core {

class Runtime;

// An event on a file the string table had no room for (FdTable::kLost):
// not recorded, counted as dropped, so the trace says it is incomplete.
void CountLostEvent(Runtime& rt);

// File id of `path` as seen from `dirfd` (AT_FDCWD for the working dir).
uint32_t ResolvePath(Runtime& rt, int dirfd, const char* path);

// File id of an fd the tracer has not seen opened: asks /proc once and
// remembers the answer (with the current position) in the fd table. In a
// vfork child, kIgnored and nothing remembered: its fds are not its
// parent's.
uint32_t IdentifyFd(Runtime& rt, int fd);

// The fd's file id, identifying it on first sight. Inline: every read and
// write asks.
inline uint32_t FileOfFd(Runtime& rt, int fd) {
  uint32_t file = rt.fds().File(fd);
  return __builtin_expect(file != FdTable::kUnknown, 1) ? file : IdentifyFd(rt, fd);
}

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_FILE_IDS_H_
