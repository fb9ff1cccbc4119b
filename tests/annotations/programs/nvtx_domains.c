/* NVTX push/pop ranges of two domains interleaved (tests/annotations):
 * NVTX nests push/pop per domain, so a domain's pop ends its own latest
 * push. Timed by the program's own clock (CLOCK_MONOTONIC).
 *
 *   nvtx_domains
 *     push "outer" (default domain)
 *       push A "a_range"; 10 ms; push B "b_range"; 10 ms
 *       pop A (ends a_range); 20 ms; pop B (ends b_range)
 *     pop
 * Prints "a_ns=N b_ns=N pop_a=L pop_b=L push_b=L" (NVTX's returned levels). */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "nvtx3/nvToolsExt.h"

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void sleep_ms(int ms) {
  struct timespec t = {0, ms * 1000000L};
  nanosleep(&t, NULL);
}

static nvtxEventAttributes_t ascii(const char* m) {
  nvtxEventAttributes_t a;
  memset(&a, 0, sizeof(a));
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = m;
  return a;
}

int main(void) {
  nvtxDomainHandle_t A = nvtxDomainCreateA("libA");
  nvtxDomainHandle_t B = nvtxDomainCreateA("libB");
  nvtxEventAttributes_t ea = ascii("a_range"), eb = ascii("b_range");
  nvtxRangePushA("outer");
  long long a0 = now_ns();
  nvtxDomainRangePushEx(A, &ea);
  sleep_ms(10);
  long long b0 = now_ns();
  int push_b = nvtxDomainRangePushEx(B, &eb);
  sleep_ms(10);
  int pop_a = nvtxDomainRangePop(A);
  long long a1 = now_ns();
  sleep_ms(20);
  int pop_b = nvtxDomainRangePop(B);
  long long b1 = now_ns();
  nvtxRangePop();
  printf("a_ns=%lld b_ns=%lld pop_a=%d pop_b=%d push_b=%d\n", a1 - a0, b1 - b0, pop_a, pop_b,
         push_b);
  return 0;
}
