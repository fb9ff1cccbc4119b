// The summary's call sites (TopCallSites' rows) in one pass over the merged
// stream, for traces too large to hold.
//
// A `call_stack` record follows its event on the same thread with the same
// start, so each thread's last event is kept until its stack comes. The
// I/O is added up per distinct stack of a process (the stack string), and
// only those stacks' innermost frames are symbolised, at the end: memory
// grows with the threads, modules and distinct stacks, not with the trace.
#ifndef DLPROF_LIB_ANALYSIS_CALL_SITE_METER_H_
#define DLPROF_LIB_ANALYSIS_CALL_SITE_METER_H_

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "lib/read/event_source.h"
#include "lib/read/regions.h"
#include "lib/analysis/summary/call_sites.h"
#include "lib/read/stacks.h"

namespace dlprof::analysis {
using namespace dlprof::read;

class CallSiteMeter : public EventObserver {
 public:
  // `processes` must outlive the meter (a source's processes()).
  explicit CallSiteMeter(const std::vector<ProcessTrace>& processes,
                         const SymbolizeOptions& options = {});

  void Add(const StreamEvent& e, bool counted = true) override;

  // As TopCallSites(set, BuildStackIndex(set, options), key, by_bytes, limit)
  // gives them; the first call symbolises.
  std::vector<CallSiteStats> Top(CallSiteKey key, bool by_bytes, size_t limit);
  // The same rows, by site, before ranking (to merge with other meters').
  std::unordered_map<std::string, CallSiteStats> Sites(CallSiteKey key);
  bool any_stack() const { return !stacks_.empty(); }

 private:
  struct Owner {  // what a thread's last event did, for its stack
    bool io = false;       // a counted read or write, not nested
    bool read = false;
    uint64_t bytes = 0, dur_ns = 0;
  };
  struct DistinctStack {
    uint32_t process = 0;
    uint64_t first_ns = 0;  // its first appearance: modules are looked up then
    bool has_frames = false;
    uint64_t top_address = 0;
    ResolvedFrame top;
    CallSiteStats io;  // site left empty
  };

  const std::vector<ProcessTrace>& processes_;
  const SymbolizeOptions options_;
  std::vector<std::vector<ModuleRecord>> modules_;  // per process
  std::vector<StackOwners> owners_;  // per process
  std::unordered_map<uint64_t, Owner> owner_of_thread_;
  Owner* last_owner_ = nullptr;
  uint64_t last_thread_ = 0;
  std::unordered_map<uint64_t, DistinctStack> stacks_;  // (process, string id)
  bool symbolised_ = false;
};

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_CALL_SITE_METER_H_
