// Configuration from DLPROF_* environment variables, read once at start.
// A value that does not parse produces one warning naming the variable and
// the default is used: the tracer's configuration never stops the program.
#ifndef DLPROF_LIB_CORE_CONFIG_H_
#define DLPROF_LIB_CORE_CONFIG_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dlprof::core {

enum class OnFull { kWait, kDrop };

// DLPROF_CLOCK: what a traced call reads its times from (tsc_clock.h).
enum class ClockSetting { kAuto, kTsc, kClockGettime };

// DLPROF_MAP_FAULTS: what a process may do about page faults on its
// mapped files (lib/core/map_faults.h).
enum class MapFaultsSetting : uint8_t { kEvents, kCounts, kOff };

// Bits of DLPROF_TRACE.
enum Module : uint32_t {
  kModulePosix = 1u << 0,
  kModuleStdio = 1u << 1,
  kModuleMpiio = 1u << 2,
  kModuleCuda = 1u << 3,
  kModuleApp = 1u << 4,
  kModuleGds = 1u << 5,  // GPUDirect Storage (cuFile)
  kModuleAio = 1u << 6,  // asynchronous I/O: io_uring, Linux AIO, POSIX AIO
  kModuleAll = (1u << 7) - 1,
};

struct Config {
  bool enabled = true;
  std::string dir = "dlprof-traces";
  uint32_t modules = kModuleAll;
  std::vector<std::string> include;  // DLPROF_INCLUDE
  std::vector<std::string> exclude;  // DLPROF_EXCLUDE, or the system dirs
  uint32_t buffer_kb = 512;          // per-thread ring (bench/README.md)
  uint32_t flush_ms = 200;           // longest time an event waits in memory
  OnFull on_full = OnFull::kWait;
  ClockSetting clock = ClockSetting::kAuto;
  bool stacks = false;
  bool mpi_clock = true;             // DLPROF_MPI_CLOCK: measure clock offsets through MPI
  bool quiet = false;                // DLPROF_QUIET=1: every line of ours silenced
  bool quiet_exit = false;           // =1 or =exit: the line at exit ("N events written")
  bool python = true;                // DLPROF_PYTHON: the Python bootstrap (child_env.h)
  std::string cuda = "kernel,memcpy,memset,sync";
  // DLPROF_MAP_FAULTS: page faults on mapped files as events where the
  // kernel allows it, else counted per region (map_faults.h).
  MapFaultsSetting map_faults = MapFaultsSetting::kEvents;
  // DLPROF_KEEP: a bounded trace keeps the full events of the last this
  // many ms, and counters for the whole run (trace_segments.cc); 0: off,
  // the trace keeps every event.
  uint64_t keep_ms = 0;
  // DLPROF_KEEP_WHEN=batch_wait>N%: a window is kept whole when the batch
  // wait passes N % of an interval; -1: no rule.
  double keep_when_batch_wait = -1;
  // DLPROF_MAX_STRINGS: how many distinct paths and names the process may
  // intern (string_table.h); 0: the default, 85 * 2^20. Lower only to test
  // what happens when the table is full.
  uint32_t max_strings = 0;
};

// "5s", "500ms", "10m", "2h", "1d" (a bare number: seconds) in ms, from
// 1 s to 30 days; false otherwise.
bool ParseKeepDuration(const std::string& v, uint64_t* ms);
// "batch_wait>25%" (or "batch_wait>25"): the share, above 0 and below 100.
bool ParseKeepWhen(const std::string& v, double* percent);

// The directories skipped unless DLPROF_EXCLUDE says otherwise: the
// interpreter's imports and the system's own files would drown the data.
const std::vector<std::string>& DefaultExcludes();

using EnvLookup = std::function<const char*(const char*)>;
using WarningSink = std::function<void(const std::string&)>;

Config ParseConfig(const EnvLookup& getenv_fn, const WarningSink& warn);

// Splits a colon-separated list, dropping empty items.
std::vector<std::string> SplitList(const std::string& s, char sep);

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_CONFIG_H_
