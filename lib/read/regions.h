// Application regions: which region each traced call happened in.
//
// Regions are the `region` events of the annotation API (C, Python) and,
// where asked, NVTX ranges. A call belongs to a region when it starts inside
// it (start <= call start < end). The region is looked for
//   1. on the call's own thread,
//   2. else on any thread of its process,
//   3. else in its parent process, its grandparent, ... (DataLoader workers
//      do the reading while the main process is in "epoch 3" / "step").
// At each level the outermost region holding the call wins (earliest start
// among those that hold it); AssignRegions can give the innermost instead.
//
// AssignRegions (and lib/analysis's RegionBreakdown) work on a whole trace in
// memory: they are the definition the streaming RegionMeter (summary) and
// EventLabels (exporters) are tested against.
//
//   RegionAssignment a = AssignRegions(set);
//   for (const RegionStats& r : RegionBreakdown(set, a)) ...
//   int32_t i = a.Of(ref);  // a.regions[i].name, or -1 outside every region
#ifndef DLPROF_LIB_READ_REGIONS_H_
#define DLPROF_LIB_READ_REGIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "lib/format/event_rules.h"
#include "lib/read/trace_set.h"

namespace dlprof::read {

// A thread of a stream's process as one key (the regions' per-thread indexes).
inline uint64_t ThreadKey(uint32_t process, int32_t tid) {
  return static_cast<uint64_t>(process) << 32 | static_cast<uint32_t>(tid);
}

// One region event.
struct RegionInstance {
  EventRef ref;
  int32_t pid = 0, tid = 0;
  uint64_t start_ns = 0, end_ns = 0;
  uint32_t depth = 0;  // nesting depth on its thread when it began (aux)
  bool nvtx = false;
  std::string name;
  // True when no other region of the same source on its thread holds it.
  bool outermost = false;
};

// The loader's regions: the PyTorch bootstrap records them in every job
// that iterates a DataLoader (python/dlprof/_torch.py), annotate_loader on
// request. The region that marks a batch wait unless the user names another,
// a loader worker's fetch of one batch, an iterator's start (workers, first
// prefetches), one optimizer step, and a batch pinned by the process that
// made it (num_workers=0 with pin_memory; workers' batches are pinned by a
// thread of the main process, outside any region):
constexpr const char* kDefaultBatchRegion = "load_batch";
constexpr const char* kFetchRegion = "fetch_batch";
constexpr const char* kLoaderIterRegion = "loader_iter";
constexpr const char* kOptimizerStepRegion = "optimizer_step";
constexpr const char* kPinRegion = "pin_batch";
// Inside a worker's fetch (the bootstrap's): each dataset[index] (with a
// counter of the same name holding the index), collate_fn, PIL's decode and
// each transform of a torchvision Compose ("transform GaussianBlur").
constexpr const char* kSampleRegion = "sample";
constexpr const char* kCollateRegion = "collate";
constexpr const char* kDecodeRegion = "decode";
constexpr const char* kTransformRegionPrefix = "transform";
// The counter at a fetch's end holding its thread's CPU time in it.
constexpr const char* kFetchCpuCounter = "fetch_cpu";
// A checkpoint saved or restored (torch.save, torch.load, ...).
constexpr const char* kSaveCheckpointRegion = "save_checkpoint";
constexpr const char* kLoadCheckpointRegion = "load_checkpoint";
constexpr const char* kLoopStepRegion = "step";  // dlprof.annotate_loader's step_name
// The mark inside the batch region of the request that found a pass over
// ("end loader=L", from the bootstrap and annotate_loader).
constexpr const char* kPassEndMark = "end";
// The mark inside the batch region of a request that raised ("raised
// loader=L": a worker's exception, a timeout, a worker killed).
constexpr const char* kRaisedMark = "raised";

// Whether a region's name is `region`'s: the name alone, or followed by " "
// and arguments ("load_batch loader=1").
bool IsRegionNamed(const std::string& name, const std::string& region);
// Whether it is one of the loader's regions above (not "step", which only
// the application's own annotate_loader records).
bool IsLoaderRegion(const std::string& name);
// Whether it is one of those inside a worker's fetch (sample, collate,
// decode, transform NAME): what the loader's fetch did, which the analysis
// reads (lib/analysis/meters/fetch_parts.h), not a phase of the program:
// no call is attributed to them and no region row lists them.
bool IsFetchDetailRegion(const std::string& name);

// What a region's name says of the training loop, the batch wait's region
// being `batch_region` (kDefaultBatchRegion unless the user names another):
// the rank meter and the loader workers' meter both ask it, in this order.
enum class LoopRegion : uint8_t {
  kOther, kBatchWait, kOptimizerStep, kLoopStep, kFetch, kPin, kLoaderIter, kSave, kRestore,
  kSample, kPreprocessPart
};
LoopRegion LoopRegionNamed(const std::string& name, const std::string& batch_region);

enum class RegionSource {
  // The application's own annotation regions when it has any besides the
  // loader's; else NVTX ranges when there are any; else the loader's
  // regions (AutoRegionChoice). NVTX ranges a program has win over what
  // the bootstrap records for it without being asked.
  kAuto,
  kApp,   // annotation regions only
  kNvtx,  // NVTX ranges only
  kAll,   // both
};

enum class RegionPick {
  kOutermost,  // the outermost region holding the call
  kInnermost,  // the innermost one
};

// kAuto's choice, from the regions seen in any order.
class AutoRegionChoice {
 public:
  // A region event (AppRegion or NvtxRange) and its name.
  void See(const Event& e, const std::string& name);
  // Once an own annotation region is seen, no later one changes the choice.
  bool settled() const { return own_app_; }
  RegionSource choice() const {
    return own_app_ || !nvtx_ ? RegionSource::kApp : RegionSource::kNvtx;
  }

 private:
  bool own_app_ = false, nvtx_ = false;
};

struct RegionOptions {
  RegionSource source = RegionSource::kAuto;
  RegionPick pick = RegionPick::kOutermost;
  bool inherit_from_parent = true;  // level 3 above
};

struct RegionAssignment {
  std::vector<RegionInstance> regions;  // in merged (time) order
  // [process][event index] -> index into regions, or -1.
  std::vector<std::vector<int32_t>> region_of;
  RegionPick pick = RegionPick::kOutermost;

  int32_t Of(const EventRef& r) const {
    if (r.process >= region_of.size() || r.index >= region_of[r.process].size()) return -1;
    return region_of[r.process][r.index];
  }
  // The region's name, or null outside every region.
  const std::string* NameOf(const EventRef& r) const {
    int32_t i = Of(r);
    return i < 0 ? nullptr : &regions[static_cast<size_t>(i)].name;
  }
  bool empty() const { return regions.empty(); }
};

// Finds every region and the region of every event (regions and the
// runtime's own records included; only I/O counts in the breakdown).
RegionAssignment AssignRegions(const TraceSet& set, const RegionOptions& options = {});

// True for the region events `source` takes (kAuto: both kinds).
bool IsRegionKind(uint16_t kind, RegionSource source);

// The name of the region event `e` of process `p`.
std::string RegionName(const Event& e, const ProcessTrace& p);

// Which calls count as I/O and the bytes they moved: CountsAsIo and
// BytesMoved, by the event rules (lib/format/event_rules.h).

}  // namespace dlprof::read

#endif  // DLPROF_LIB_READ_REGIONS_H_
