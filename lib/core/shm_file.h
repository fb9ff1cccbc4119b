// The tracer's own named shared memory: a file in /dev/shm that processes
// started by exec can map by its name, where an anonymous mapping reaches
// forked children only (rank_io_map.h: a GPU process's loader workers
// started by `spawn` or `forkserver`).
//
// As the tracer's other files (own_fd.h, sidecar.h): no descriptor is held
// (opened, sized, mapped, closed), every call is a raw system call (never
// traced), and every page is allocated before it is mapped, so that a store
// into the mapping can never meet a full tmpfs (a SIGBUS in the program).
//
// Names: "/dev/shm/dlprof-<kind>-<pid namespace>-<pid>-<unique>". A file
// is its maker's: the maker removes it when it finishes, and a file left
// by a process that died without finishing (SIGKILL, _exit) is removed by
// the next maker of the same kind in the same pid namespace that finds its
// pid gone (SweepShmFiles).
#ifndef DLPROF_LIB_CORE_SHM_FILE_H_
#define DLPROF_LIB_CORE_SHM_FILE_H_

#include <cstddef>

namespace dlprof::core {

// The longest name a ShmFile holds, with its null.
constexpr size_t kShmPathBytes = 96;

struct ShmFile {
  void* map = nullptr;  // MAP_SHARED, `bytes` long, zeroed when created
  char path[kShmPathBytes] = {};
};

// Creates a file of `kind` of `bytes` (0600, O_EXCL|O_NOFOLLOW), allocated
// and mapped, first removing the files of `kind` whose makers are gone.
// `dir` is /dev/shm but in tests. map is null where it cannot be had (no
// tmpfs there, no room): the caller goes on without it.
ShmFile CreateShmFile(const char* kind, size_t bytes, const char* dir = "/dev/shm");

// Maps the file `path` names, where it is a regular file of this user of
// exactly `bytes`; null otherwise.
void* OpenShmFile(const char* path, size_t bytes);

// Removes `path` (its mappings stay valid).
void RemoveShmFile(const char* path);

// Removes the files of `kind` in `dir` made in this pid namespace by
// processes no longer alive; returns how many.
int SweepShmFiles(const char* kind, const char* dir = "/dev/shm");

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_SHM_FILE_H_
