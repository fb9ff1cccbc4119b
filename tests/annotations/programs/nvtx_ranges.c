/* NVTX ranges and marks around known I/O (tests/annotations): NVTX 3 is
 * header-only; the ranges reach dlprof through NVTX_INJECTION64_PATH, which
 * the tracer sets.
 *
 *   nvtx_ranges FILE
 *     push "outer":  pread 100
 *       push "inner" (Ex, ASCII): pread 200
 *       pop
 *     pop
 *     mark "checkpoint"
 *     start/end "async": pread 300, ended on another thread
 *     domain "mydomain", registered string "registered": push/pop around pread 400
 *     push (wide) "wide": pop
 * Prints "ok depth=D" with the depth nvtxRangePushA returned for "inner". */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>

#include "nvtx3/nvToolsExt.h"

static char buf[4096];
static nvtxRangeId_t async_id;

static void* end_async(void* arg) {
  (void)arg;
  nvtxRangeEnd(async_id);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  int fd = open(argv[1], O_RDONLY);
  if (fd < 0) return 2;

  nvtxRangePushA("outer");
  if (pread(fd, buf, 100, 0) != 100) return 2;
  nvtxEventAttributes_t a;
  memset(&a, 0, sizeof(a));
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = "inner";
  int depth = nvtxRangePushEx(&a);
  if (pread(fd, buf, 200, 0) != 200) return 2;
  nvtxRangePop();
  nvtxRangePop();
  nvtxMarkA("checkpoint");

  async_id = nvtxRangeStartA("async");
  if (pread(fd, buf, 300, 0) != 300) return 2;
  pthread_t t;
  pthread_create(&t, NULL, end_async, NULL);
  pthread_join(t, NULL);

  nvtxDomainHandle_t d = nvtxDomainCreateA("mydomain");
  nvtxStringHandle_t s = nvtxDomainRegisterStringA(d, "registered");
  nvtxEventAttributes_t r;
  memset(&r, 0, sizeof(r));
  r.version = NVTX_VERSION;
  r.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  r.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  r.message.registered = s;
  nvtxDomainRangePushEx(d, &r);
  if (pread(fd, buf, 400, 0) != 400) return 2;
  nvtxDomainRangePop(d);

  nvtxRangePushW(L"wide \u00e9");
  nvtxRangePop();

  close(fd);
  printf("ok depth=%d\n", depth);
  return 0;
}
