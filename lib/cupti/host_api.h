// libdlprof.so's plugin interface (include/dlprof/plugin.h), found at run
// time. The plugin has no link dependency on libdlprof: the CUDA driver may
// load it into a process where dlprof is not preloaded (an inherited
// CUDA_INJECTION64_PATH), and there it must do nothing.
#ifndef DLPROF_LIB_CUPTI_HOST_API_H_
#define DLPROF_LIB_CUPTI_HOST_API_H_

#include <cstddef>
#include <cstdint>

#include "lib/cupti/activity_translator.h"

namespace dlprof::cupti {

struct HostApi {
  uint64_t (*now_ns)(void) = nullptr;
  uint32_t (*intern)(const char*, size_t) = nullptr;
  int (*record)(const void*) = nullptr;
  void (*count_dropped)(uint64_t) = nullptr;
  int (*module_enabled)(const char*) = nullptr;
  const char* (*cuda_kinds)(void) = nullptr;
  void (*flush)(void) = nullptr;
  void (*log)(const char*) = nullptr;
  void (*gpu_attached)(void) = nullptr;  // optional: null in an older libdlprof

  // Looks every function up in the process (dlsym RTLD_DEFAULT); false
  // unless all but the optional ones are there.
  bool Load();
};

// The translator's outlet into the running tracer.
class PluginHost : public TranslatorHost {
 public:
  explicit PluginHost(const HostApi* api) : api_(api) {}
  uint32_t Intern(const char* text, size_t len) override { return api_->intern(text, len); }
  void Record(const Event& event) override { api_->record(&event); }
  void CountDropped(uint64_t count) override { api_->count_dropped(count); }
  const char* ApiName(ApiDomain domain, uint32_t cbid) override;

 private:
  const HostApi* api_;
};

}  // namespace dlprof::cupti

#endif  // DLPROF_LIB_CUPTI_HOST_API_H_
