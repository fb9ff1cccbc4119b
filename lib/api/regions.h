// Regions, marks, counters and flows on the calling thread's events: what
// the C API (annotations.cc) and NVTX (nvtx.cc) share. Internal to
// libdlprof.so.
//
// Event layout (catalogue kinds 230-236):
//   region / nvtx_range  start..end of the region; file = name id;
//                        aux = nesting depth on its thread (0 = outermost;
//                        an NVTX push/pop range's in its domain; 0 for
//                        NVTX start/end ranges, which need not nest)
//   mark / nvtx_mark     instant; file = name id; aux = regions open around it
//   counter              instant; file = name id; aux = the value: ret 0: an
//                        int64, ret 1: the bits of an IEEE-754 double
//   flow_start / _finish instant; file = name id; aux = the flow's id
// fd and offset are -1, size 0 (docs/FORMAT.md, category `app`).
//
// In a process that maps a traced file (lib/core/map_faults.h), a region
// also takes its thread's major faults and CPU time (getrusage and the
// thread's CPU clock at each end) and, when it faulted, closes with a
// `region_faults` record: file = name id, size = major faults, ret = ns off
// the CPU, aux = ns on it, fd = 1 when the thread's faults are also
// major_fault events.
#ifndef DLPROF_LIB_API_REGIONS_H_
#define DLPROF_LIB_API_REGIONS_H_

#include <cstddef>
#include <cstdint>

#include "dlprof/format.h"
#include "lib/core/runtime.h"

namespace dlprof::api {

constexpr size_t kMaxNameBytes = 4096;

// A per-thread stack of open regions: trivially constructed, so that each
// user's thread_local needs no initialisation (default TLS model: it works
// whether libdlprof.so was preloaded or dlopen'ed by NVTX).
struct RegionStack {
  static constexpr uint32_t kMaxDepth = 64;
  uint32_t depth;
  uint32_t overflow;  // begins past kMaxDepth, not recorded
  struct Frame {
    uint32_t name;
    bool counted;  // the thread's faults and CPU time below were taken
    uint64_t start_ns;
    uint64_t major_faults, cpu_ns;
  } frames[kMaxDepth];

  void Push(uint32_t name, uint64_t start) {
    if (depth >= kMaxDepth) {
      ++overflow;
      return;
    }
    frames[depth++] = {name, false, start, 0, 0};
  }
  // False when there is nothing to record (unmatched or overflowed).
  bool Pop(Frame* f) {
    if (overflow > 0) {
      --overflow;
      return false;
    }
    if (depth == 0) return false;
    *f = frames[--depth];
    return true;
  }
  // In a forked child: the open regions are the parent's, begun before the
  // child existed, and recorded by the parent when it ends them. Their
  // frames stay, so that the child's ends still match its begins, but they
  // record nothing (the child's calls inside them fall in the parent's).
  void ForgetNames() {
    for (uint32_t i = 0; i < depth; ++i) {
      frames[i].name = 0;
      frames[i].counted = false;
    }
  }
};

// Whether events of `kind` are recorded on this thread now.
bool AppEnabled(const core::ThreadContext& t, EventKind kind);

// A name's string id; 0 for none (a null name, or the table full).
uint32_t InternName(const char* name, size_t len);
uint32_t InternCString(const char* name);  // up to kMaxNameBytes

// Records one annotation event on the calling thread.
void Emit(core::ThreadContext& t, EventKind kind, uint32_t name, uint64_t start, uint64_t dur,
          int64_t offset, int64_t ret, uint64_t aux);

// A region opens on `stack`; pushed even when not recorded, so that begins
// and ends keep matching.
void Begin(RegionStack& stack, EventKind kind, const char* name, size_t len);
// Returns the depth of the region ended, or -1 if none was open.
int End(RegionStack& stack, EventKind kind);
// Records a region popped off its stack, at `depth`, ending at `now`.
void EndFrame(const RegionStack::Frame& f, EventKind kind, uint64_t now, int depth);
// Ends every region open on `stack`, innermost first (the process exits).
void EndAll(RegionStack& stack, EventKind kind);

// Installs, once, what the calling process needs for regions: the forked
// child's forgetting of its parent's open regions, and the ending of the
// exiting thread's open regions at exit(). Called by each begin and push.
void EnsureRegionHooks();

// nvtx.cc's side of those hooks, on the calling thread's push/pop stacks.
void NvtxForgetAfterFork();
void NvtxEndAllAtExit();

}  // namespace dlprof::api

#endif  // DLPROF_LIB_API_REGIONS_H_
