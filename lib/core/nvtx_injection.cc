#include "lib/core/nvtx_injection.h"

#include <dlfcn.h>
#include <limits.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>

#include "lib/core/child_env.h"
#include "lib/core/raw_log.h"

namespace dlprof::core {

NvtxInjectionPlan PlanNvtxInjection(const NvtxInjectionInputs& in) {
  NvtxInjectionPlan plan;
  const bool set = in.current != nullptr && in.current[0] != '\0';
  if (!in.app_enabled) {
    // Inherited from a parent that records NVTX: spare this process.
    if (set && in.current_is_self) plan.action = NvtxInjectionAction::kUnset;
    return plan;
  }
  if (set && in.current_is_self) {
    plan.action = NvtxInjectionAction::kKeep;
    return plan;
  }
  if (set) {
    plan.action = NvtxInjectionAction::kConflict;
    if (!in.warned_before) {
      plan.message = std::string(kNvtxInjectionVar) + " is already set to " + in.current +
                     " (another NVTX tool); dlprof leaves it and does not record NVTX ranges";
    }
    return plan;
  }
  if (!in.self.empty()) plan.action = NvtxInjectionAction::kSet;
  return plan;
}

std::string SelfLibraryPath() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&SelfLibraryPath), &info) == 0 || !info.dli_fname ||
      !info.dli_fname[0]) {
    return std::string();
  }
  // LD_PRELOAD may name it relative to a directory a child leaves.
  char abs[PATH_MAX];
  if (realpath(info.dli_fname, abs) == nullptr) return std::string();
  return abs;
}

namespace {

// Ours: the same file, or a libdlprof.so of another dlprof build (it records
// into whichever runtime the process runs).
bool IsSelf(const char* path, const std::string& self) {
  if (path == nullptr || path[0] == '\0') return false;
  if (self == path) return true;
  const char* base = strrchr(path, '/');
  if (strcmp(base ? base + 1 : path, "libdlprof.so") == 0) return true;
  struct stat a {}, b {};
  if (self.empty() || stat(path, &a) != 0 || stat(self.c_str(), &b) != 0) return false;
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

}  // namespace

void SetUpNvtxInjection(const Config& config) {
  NvtxInjectionInputs in;
  in.app_enabled = (config.modules & kModuleApp) != 0;
  in.self = SelfLibraryPath();
  in.current = GetEnv(kNvtxInjectionVar);
  in.current_is_self = IsSelf(in.current, in.self);
  in.warned_before = HasChildMarker(kNvtxInjectionWarnedVar);
  NvtxInjectionPlan plan = PlanNvtxInjection(in);
  switch (plan.action) {
    case NvtxInjectionAction::kSet: SetEnv(kNvtxInjectionVar, in.self.c_str()); break;
    case NvtxInjectionAction::kUnset: UnsetEnv(kNvtxInjectionVar); break;
    case NvtxInjectionAction::kConflict: AddChildMarker(kNvtxInjectionWarnedVar); break;
    case NvtxInjectionAction::kNone:
    case NvtxInjectionAction::kKeep: break;
  }
  if (!plan.message.empty()) RawLog("%s", plan.message.c_str());
}

}  // namespace dlprof::core
