// Brings in the CUPTI plugin (lib/cupti) only where CUDA is used: the CUDA
// driver loads the library named by CUDA_INJECTION64_PATH during cuInit
// and calls its InitializeInjection, so a process that never initialises
// CUDA never loads the plugin or CUPTI.
#ifndef DLPROF_LIB_CORE_CUDA_INJECTION_H_
#define DLPROF_LIB_CORE_CUDA_INJECTION_H_

#include <string>

#include "lib/core/config.h"

namespace dlprof::core {

constexpr char kCudaInjectionVar[] = "CUDA_INJECTION64_PATH";
constexpr char kCuptiPluginName[] = "libdlprof_cupti.so";
// Passed to children once the conflict has been reported, so they do not
// repeat it (child_env.h).
constexpr char kInjectionWarnedVar[] = "DLPROF_CUDA_INJECTION_WARNED";

enum class InjectionAction {
  kNone,      // nothing to do (cuda not traced, or no plugin built)
  kSet,       // set the variable to our plugin
  kKeep,      // it already names our plugin (inherited from a traced parent)
  kUnset,     // it names our plugin but this process does not trace cuda
  kConflict,  // it names another library: leave it, GPU goes untraced
};

struct InjectionPlan {
  InjectionAction action = InjectionAction::kNone;
  std::string message;  // for stderr; empty when there is nothing to say
};

struct InjectionInputs {
  bool cuda_enabled = false;   // DLPROF_TRACE includes cuda
  std::string plugin;          // our plugin's path
  bool plugin_exists = false;
  const char* current = nullptr;    // CUDA_INJECTION64_PATH now, or null
  bool current_is_plugin = false;   // it names our plugin (same file)
  bool warned_before = false;       // kInjectionWarnedVar is set
};

// The decision alone, for tests.
InjectionPlan PlanCudaInjection(const InjectionInputs& in);

// libdlprof_cupti.so next to the shared object holding this code.
std::string CuptiPluginPath();

// Reads the environment, applies the plan, says what it must. Called once
// from Runtime::Initialize.
void SetUpCudaInjection(const Config& config);

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_CUDA_INJECTION_H_
