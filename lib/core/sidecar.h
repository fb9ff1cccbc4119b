// The writer's side of the rings sidecar (lib/format/sidecar.h): the file
// beside the trace whose MAP_SHARED pages hold the per-thread rings and a log
// of new strings, so that what the process recorded but has not written yet
// survives SIGKILL and the OOM killer in the page cache.
//
// No descriptor is held: the file is opened, sized, mapped and closed again
// each time it grows (at start, and when a thread needs a new ring), so the
// program never sees it. Every part of the file is allocated (fallocate)
// before it is mapped: a store into the mapping can never meet a full disk
// (which would be a SIGBUS in the program). Where the file cannot be had
// (no room, RLIMIT_FSIZE, a read-only directory), the rings go into
// anonymous memory as before, silently: tracing works, only crash recovery
// is lost.
#ifndef DLPROF_LIB_CORE_SIDECAR_H_
#define DLPROF_LIB_CORE_SIDECAR_H_

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "lib/format/sidecar.h"

namespace dlprof::core {

class Sidecar {
 public:
  // Creates "<trace_path>.rings" (0600, O_EXCL|O_NOFOLLOW) for rings of
  // `ring_capacity` events, each region `region_bytes` long. False when it
  // cannot be had; then active() stays false.
  bool Create(const std::string& trace_path, int32_t pid, int32_t rank, uint64_t ring_capacity,
              uint64_t region_header_bytes, uint64_t region_bytes);
  bool active() const { return header_ != nullptr; }
  format::SidecarHeader* header() const { return header_; }

  // A new ring region of the file, mapped MAP_SHARED (at `fixed` when it is
  // not null, replacing what was there); nullptr when the file cannot grow.
  void* MapRegion(void* fixed);

  // Appends a string the process just interned to the log (lock-free; from
  // any thread, also inside a signal handler). The log keeps the newest
  // kStringLogBytes of strings.
  void AppendString(uint32_t id, const char* text, size_t len);

  // The trace is complete: the file goes (its mappings stay valid).
  void Remove();

  // A bounded trace went on in a new segment (trace_segments.cc): the file
  // is renamed to sit beside it, where a reader of a killed process looks.
  // Its mappings stay valid. The name Remove() uses changes atomically
  // between two buffers: a signal handler may be reading the other.
  void MoveWithTrace(const std::string& trace_path);

  // Across a change of credentials or mount namespace (Runtime::
  // BeforeCredentialChange): the file is opened while its path still
  // names it and new regions are mapped from that descriptor (one at fd
  // 100 or above) until ReleaseFd, where the path opens it again.
  void KeepFd();
  void ReleaseFd();

  // In a forked child: the parent's file is the parent's. Unmaps it
  // (regions mapped from it are the registry's to replace) and forgets it.
  void ForgetAfterFork();

 private:
  std::string path_;
  std::string moved_[2];           // names after MoveWithTrace, alternately
  std::atomic<int> current_{-1};   // which of moved_ names the file; -1: path_
  format::SidecarHeader* header_ = nullptr;
  uint8_t* log_ = nullptr;
  uint64_t region_bytes_ = 0;
  uint64_t next_region_ = 0;  // under grow_mu_
  std::atomic<bool> removed_{false};
  pthread_mutex_t grow_mu_ = PTHREAD_MUTEX_INITIALIZER;
  int kept_fd_ = -1;  // KeepFd's; under grow_mu_
  uint64_t kept_dev_ = 0, kept_ino_ = 0;  // what it named (the program may reuse the number)
};

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_SIDECAR_H_
