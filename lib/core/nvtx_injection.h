// Brings NVTX ranges and marks (PyTorch's torch.cuda.nvtx, emit_nvtx, CUDA
// libraries) into the trace: every NVTX instance in the process, on its first
// call, loads the library named by NVTX_INJECTION64_PATH and calls its
// InitializeInjectionNvtx2, which fills NVTX's function tables. libdlprof.so
// is that library (lib/api/nvtx.cc): the variable names libdlprof.so
// itself, which is already loaded, so nothing new is loaded.
#ifndef DLPROF_LIB_CORE_NVTX_INJECTION_H_
#define DLPROF_LIB_CORE_NVTX_INJECTION_H_

#include <string>

#include "lib/core/config.h"

namespace dlprof::core {

constexpr char kNvtxInjectionVar[] = "NVTX_INJECTION64_PATH";
// Set once the conflict has been reported, so children do not repeat it.
constexpr char kNvtxInjectionWarnedVar[] = "DLPROF_NVTX_INJECTION_WARNED";

enum class NvtxInjectionAction {
  kNone,      // nothing to do (app events not traced, or no path for ourselves)
  kSet,       // set the variable to libdlprof.so
  kKeep,      // it already names libdlprof.so (inherited from a traced parent)
  kUnset,     // it names libdlprof.so but this process does not trace app events
  kConflict,  // it names another tool (Nsight Systems): leave it, NVTX goes untraced
};

struct NvtxInjectionPlan {
  NvtxInjectionAction action = NvtxInjectionAction::kNone;
  std::string message;  // for stderr; empty when there is nothing to say
};

struct NvtxInjectionInputs {
  bool app_enabled = false;       // DLPROF_TRACE includes app
  std::string self;               // libdlprof.so's absolute path ("" if unknown)
  const char* current = nullptr;  // NVTX_INJECTION64_PATH now, or null
  bool current_is_self = false;   // it names a libdlprof.so
  bool warned_before = false;     // kNvtxInjectionWarnedVar is set
};

// The decision alone, for tests.
NvtxInjectionPlan PlanNvtxInjection(const NvtxInjectionInputs& in);

// The absolute path of the shared object holding this code.
std::string SelfLibraryPath();

// Reads the environment, applies the plan, says what it must. Called once
// from Runtime::Initialize.
void SetUpNvtxInjection(const Config& config);

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_NVTX_INJECTION_H_
