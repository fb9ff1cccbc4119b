/* What cuInit does with CUDA_INJECTION64_PATH, for the programs that run
 * against the fake libcupti (fake_cuda_app.c, bench/perfetto_mixed_app.c):
 * loads the CUPTI plugin and calls its InitializeInjection. Returns 0, or 2
 * after saying why on stderr. */
#ifndef DLPROF_TESTS_GPU_FAKE_CUPTI_FAKE_INJECTION_H_
#define DLPROF_TESTS_GPU_FAKE_CUPTI_FAKE_INJECTION_H_

#include <dlfcn.h>
#include <stdio.h>

static int fake_inject(const char* plugin_path) {
  void* plugin = dlopen(plugin_path, RTLD_NOW | RTLD_LOCAL);
  int (*init)(void) = plugin ? (int (*)(void))dlsym(plugin, "InitializeInjection") : NULL;
  if (!init) {
    fprintf(stderr, "cannot load %s: %s\n", plugin_path, dlerror());
    return 2;
  }
  init();
  return 0;
}

#endif /* DLPROF_TESTS_GPU_FAKE_CUPTI_FAKE_INJECTION_H_ */
