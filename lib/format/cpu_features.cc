#include "lib/format/cpu_features.h"

#include <atomic>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace dlprof::format {
namespace {

enum Feature : unsigned { kSse42 = 1u << 0, kFastPext = 1u << 1, kAsked = 1u << 31 };

#if defined(__x86_64__)
unsigned AskCpuid() {
  unsigned features = 0;
  unsigned a, b, c, d;
  if (!__get_cpuid(0, &a, &b, &c, &d)) return features;
  const unsigned max_leaf = a;
  char vendor[12];
  std::memcpy(vendor, &b, 4);
  std::memcpy(vendor + 4, &d, 4);
  std::memcpy(vendor + 8, &c, 4);
  const bool amd_like = std::memcmp(vendor, "AuthenticAMD", 12) == 0 ||
                        std::memcmp(vendor, "HygonGenuine", 12) == 0;
  __get_cpuid(1, &a, &b, &c, &d);
  if (c & bit_SSE4_2) features |= kSse42;
  const unsigned family = ((a >> 8) & 0xf) == 0xf ? 0xf + ((a >> 20) & 0xff) : (a >> 8) & 0xf;
  if (max_leaf >= 7) {
    __cpuid_count(7, 0, a, b, c, d);
    // Zen 3 is family 0x19; Zen 1 and 2 (and Hygon's) microcode PEXT.
    if ((b & bit_BMI2) && !(amd_like && family < 0x19)) features |= kFastPext;
  }
  return features;
}
#else
unsigned AskCpuid() { return 0; }
#endif

// Cached without a guard variable: threads that race store the same answer.
unsigned Features() {
  static std::atomic<unsigned> known{0};
  unsigned v = known.load(std::memory_order_relaxed);
  if (v == 0) {
    v = AskCpuid() | kAsked;
    known.store(v, std::memory_order_relaxed);
  }
  return v;
}

}  // namespace

bool HasSse42() { return Features() & kSse42; }
bool HasFastPext() { return Features() & kFastPext; }

}  // namespace dlprof::format
