// Rank and world size from the launcher's environment (launch_env.h).
#include "lib/core/launch_env.h"

#include <cerrno>
#include <cstdlib>

namespace dlprof::core {
namespace {

// The first of `names` whose value is a whole number in [lowest, 2^30).
// errno is left as it was (strtoll sets it on overflow): the runtime reads
// the rank inside the program's calls (fork).
template <size_t N>
int64_t FirstNumber(const EnvLookup& env, const char* const (&names)[N], int64_t lowest) {
  const int saved_errno = errno;
  int64_t found = -1;
  for (const char* name : names) {
    const char* v = env(name);
    if (v == nullptr || *v == '\0') continue;
    char* end = nullptr;
    const long long n = strtoll(v, &end, 10);
    if (*end == '\0' && n >= lowest && n < (1ll << 30)) {
      found = n;
      break;
    }
  }
  errno = saved_errno;
  return found;
}

}  // namespace

int32_t LaunchRank(const EnvLookup& env) {
  return static_cast<int32_t>(FirstNumber(env, kRankVariables, 0));
}

int64_t LaunchWorldSize(const EnvLookup& env) { return FirstNumber(env, kWorldSizeVariables, 1); }

}  // namespace dlprof::core
