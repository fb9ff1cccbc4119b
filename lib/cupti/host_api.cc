#include "lib/cupti/host_api.h"

#include <dlfcn.h>

#include <cupti.h>

namespace dlprof::cupti {
namespace {

template <typename Fn>
bool Find(const char* name, Fn* fn) {
  *fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
  return *fn != nullptr;
}

}  // namespace

bool HostApi::Load() {
  Find("dlprof_plugin_gpu_attached", &gpu_attached);
  return Find("dlprof_plugin_now_ns", &now_ns) && Find("dlprof_plugin_intern", &intern) &&
         Find("dlprof_plugin_record", &record) &&
         Find("dlprof_plugin_count_dropped", &count_dropped) &&
         Find("dlprof_plugin_module_enabled", &module_enabled) &&
         Find("dlprof_plugin_cuda_kinds", &cuda_kinds) && Find("dlprof_plugin_flush", &flush) &&
         Find("dlprof_plugin_log", &log);
}

const char* PluginHost::ApiName(ApiDomain domain, uint32_t cbid) {
  const char* name = nullptr;
  CUpti_CallbackDomain d =
      domain == ApiDomain::kDriver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
  if (cuptiGetCallbackName(d, cbid, &name) != CUPTI_SUCCESS) return nullptr;
  return name;
}

}  // namespace dlprof::cupti
