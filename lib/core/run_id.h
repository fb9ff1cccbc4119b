// The run a traced process belongs to (docs/USER_GUIDE.md, "Runs"): one job
// of a batch system or launcher, or one tree of processes that a traced
// process (or `dlprof run`) started. Every trace header names it, and the
// traces of a run go to DLPROF_DIR/<run id>/<host>/.
//
// The id is resolved once, at start, from the environment:
//
//   1. DLPROF_RUN_ID as set by the user or by `dlprof run`;
//   2. the batch system's job id: SLURM_JOB_ID, PBS_JOBID, COBALT_JOBID,
//      FLUX_JOB_ID, LSB_JOBID (with LSB_JOBINDEX);
//   3. the job identity a launcher gives all its ranks: PMIX_NAMESPACE,
//      OMPI_MCA_ess_base_jobid, TORCHELASTIC_RUN_ID (not "none");
//   4. the run id a traced ancestor resolved and handed on (child_env.h:
//      DLPROF_INHERITED_RUN_ID with DLPROF_INHERITED_RUN_ID_AUTO, which the
//      runtime reads as DLPROF_RUN_ID with DLPROF_RUN_ID_AUTO holding the
//      same value; `dlprof run` sets the pair itself for a job's id);
//   5. a launcher that names no job (MPICH's Hydra, torchrun without
//      --rdzv_id): the launcher process on this host that started us;
//   6. a new id: host, time, pid.
//
// A made-up id (4 to 6) ranks below a job id (2, 3), so that a traced
// `mpirun` cannot hand its local ranks another run than the remote ranks
// get from the launcher. The made-up id the job id overrode is kept as the
// process's parent run: the traced launcher is in that run, and a reader
// joins it to the run its ranks went to (lib/read/runs.h).
#ifndef DLPROF_LIB_CORE_RUN_ID_H_
#define DLPROF_LIB_CORE_RUN_ID_H_

#include <cstdint>
#include <string>

#include "lib/core/config.h"

namespace dlprof::core {

constexpr size_t kMaxRunIdBytes = 128;

// Bytes outside [A-Za-z0-9._-] become '_', a leading '.' too (the id is a
// directory name: never "..", never hidden), clipped to kMaxRunIdBytes.
std::string SanitizeRunId(const std::string& raw);

enum class RunIdSource {
  kNone,
  kExplicit,       // 1
  kBatch,          // 2
  kLauncher,       // 3
  kInherited,      // 4
  kLauncherLocal,  // 5
  kGenerated,      // 6
};

struct RunId {
  std::string id;
  RunIdSource source = RunIdSource::kNone;
  // Steps 2 and 3: the id a traced ancestor made (step 4's) when it differs;
  // else empty.
  std::string parent;
};

// Steps 1 to 4, from `env` alone; source kNone when none applies.
RunId RunIdFromEnvironment(const EnvLookup& env);

// Steps 1 to 6 for the calling process on `host`. Reads /proc for step 5.
RunId ResolveRunId(const EnvLookup& env, const std::string& host);

// A new id for a run that this process starts: <host>-<YYYYmmdd>-<HHMMSS>-<pid>-<4 hex>.
std::string NewRunId(const std::string& host);

// The runtime's own: resolved at start, kept by forked children, passed on
// to exec'ed and spawned ones in their environment (child_env.h) as step 4
// expects.
// `env` reads the process's environment as the runtime sees it (child_env.h's
// RuntimeEnv: what a traced parent handed on included).
void ResolveProcessRunId(const EnvLookup& env, const std::string& host);
const char* ProcessRunId();
const char* ProcessParentRunId();  // RunId::parent; "" when none
// Whether it is the user's (step 1): it goes on without DLPROF_RUN_ID_AUTO.
bool ProcessRunIdIsUsers();

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_RUN_ID_H_
