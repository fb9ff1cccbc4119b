#include "lib/core/cuda_injection.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "lib/core/child_env.h"
#include "lib/core/raw_log.h"

namespace dlprof::core {

InjectionPlan PlanCudaInjection(const InjectionInputs& in) {
  InjectionPlan plan;
  const bool set = in.current != nullptr && in.current[0] != '\0';
  if (!in.cuda_enabled) {
    // Inherited from a parent that traces cuda: spare this process CUPTI.
    if (set && in.current_is_plugin) plan.action = InjectionAction::kUnset;
    return plan;
  }
  if (set && in.current_is_plugin) {
    plan.action = InjectionAction::kKeep;
    return plan;
  }
  if (set) {
    plan.action = InjectionAction::kConflict;
    if (!in.warned_before) {
      plan.message = std::string(kCudaInjectionVar) + " is already set to " + in.current +
                     " (another CUDA tool); dlprof leaves it and does not trace GPU activity";
    }
    return plan;
  }
  if (in.plugin_exists) plan.action = InjectionAction::kSet;
  return plan;
}

std::string CuptiPluginPath() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&CuptiPluginPath), &info) == 0 || !info.dli_fname) {
    return std::string();
  }
  std::string self = info.dli_fname;
  size_t slash = self.rfind('/');
  std::string dir = slash == std::string::npos ? "." : self.substr(0, slash);
  return dir + "/" + kCuptiPluginName;
}

namespace {

// Ours: the same file, or a libdlprof_cupti.so of another dlprof build (its
// plugin finds whichever libdlprof is preloaded, through the C interface).
bool IsOurPlugin(const char* path, const std::string& plugin) {
  if (path == nullptr || path[0] == '\0') return false;
  if (plugin == path) return true;
  const char* base = strrchr(path, '/');
  if (strcmp(base ? base + 1 : path, kCuptiPluginName) == 0) return true;
  struct stat a {}, b {};
  if (stat(path, &a) != 0 || stat(plugin.c_str(), &b) != 0) return false;
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

}  // namespace

void SetUpCudaInjection(const Config& config) {
  InjectionInputs in;
  in.cuda_enabled = (config.modules & kModuleCuda) != 0;
  in.plugin = CuptiPluginPath();
  in.plugin_exists = !in.plugin.empty() && access(in.plugin.c_str(), R_OK) == 0;
  in.current = GetEnv(kCudaInjectionVar);
  in.current_is_plugin = IsOurPlugin(in.current, in.plugin);
  in.warned_before = HasChildMarker(kInjectionWarnedVar);
  InjectionPlan plan = PlanCudaInjection(in);
  switch (plan.action) {
    case InjectionAction::kSet: SetEnv(kCudaInjectionVar, in.plugin.c_str()); break;
    case InjectionAction::kUnset: UnsetEnv(kCudaInjectionVar); break;
    case InjectionAction::kConflict: AddChildMarker(kInjectionWarnedVar); break;
    case InjectionAction::kNone:
    case InjectionAction::kKeep: break;
  }
  if (!plan.message.empty()) RawLog("%s", plan.message.c_str());
}

}  // namespace dlprof::core
