// What the flusher's counters make of an annotation's name (a region's, a
// mark's or a flow's, by its string id): the names the Python bootstrap
// gives the loop's regions (python/dlprof/_torch.py, _torch_fetch.py), as
// the reader knows them (lib/read/regions.h). Looked up once a name, then
// a table read: a region comes once a batch, a name is a few bytes.
#ifndef DLPROF_LIB_CORE_REGION_ROLES_H_
#define DLPROF_LIB_CORE_REGION_ROLES_H_

#include <cstdint>
#include <vector>

namespace dlprof::core {

class StringTable;

enum class RegionRole : uint8_t {
  kUnknown = 0,  // not looked up yet
  kOther,        // none of these
  kWait,         // "load_batch": the loop waits for a batch
  kIter,         // "loader_iter": iter(loader)
  kFetch,        // "fetch_batch": a worker makes a batch
  kPin,          // "pin_batch": the pin-memory thread pins one
  kBatchFlow,    // "batch": the flow from a fetch to its wait
  kStep,         // "optimizer_step"
  kNoBatchMark,  // "end loader=L", "raised loader=L": a request no batch came out of
  kSave,         // "save_checkpoint": torch.save, dcp's and safetensors' saves
  kLoad,         // "load_checkpoint": torch.load, dcp's and safetensors' loads
};

class RegionRoles {
 public:
  explicit RegionRoles(StringTable* strings) : strings_(strings) {}
  RegionRole Of(uint32_t name);

 private:
  StringTable* strings_;
  std::vector<RegionRole> roles_;  // by string id
};

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_REGION_ROLES_H_
