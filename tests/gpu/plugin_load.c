/* Loads the CUPTI plugin as the CUDA driver would (dlopen, then
 * InitializeInjection) in a process without a GPU, and prints what the
 * tracer left in the environment. For plugin_load_test.py.
 *
 *   plugin_load PLUGIN   -> "INIT <ret>" and "INJECTION <CUDA_INJECTION64_PATH>" */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  const char* env = getenv("CUDA_INJECTION64_PATH");
  printf("INJECTION %s\n", env ? env : "(unset)");
  if (argc < 2) return 0;
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    printf("DLOPEN %s\n", dlerror());
    return 3;
  }
  int (*init)(void) = (int (*)(void))dlsym(h, "InitializeInjection");
  if (init == NULL) {
    printf("NOSYM\n");
    return 4;
  }
  printf("INIT %d\n", init());
  printf("INIT %d\n", init()); /* the driver calls it once; a second call is harmless */
  return 0;
}
