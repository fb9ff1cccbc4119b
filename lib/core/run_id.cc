// Resolving the run id (run_id.h has the order and the reasons for it).
#include "lib/core/run_id.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace dlprof::core {
namespace {

// POD storage: set by the constructor-time Initialize, which may run before
// this file's dynamic initialisers would.
char g_run_id[kMaxRunIdBytes + 1];
char g_parent_run_id[kMaxRunIdBytes + 1];
bool g_run_id_users = false;

const char* Get(const EnvLookup& env, const char* name) {
  const char* v = env(name);
  return (v && *v) ? v : nullptr;
}

RunId Make(const std::string& prefix, const char* value, RunIdSource source) {
  std::string raw = prefix;
  // Flux prints job ids in F58 with a leading U+0192 (ƒ); keep it readable.
  if (strncmp(value, "\xc6\x92", 2) == 0) {
    raw += 'f';
    value += 2;
  }
  raw += value;
  return {SanitizeRunId(raw), source, {}};
}

// Field 22 of /proc/<pid>/stat: the process's start in clock ticks since
// boot, which with the pid names one process of this host for good.
std::string StartTicks(int pid) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  int fd = static_cast<int>(syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC));
  if (fd < 0) return std::string();
  char buf[1024];
  long n = syscall(SYS_read, fd, buf, sizeof(buf) - 1);
  syscall(SYS_close, fd);
  if (n <= 0) return std::string();
  buf[n] = '\0';
  const char* p = strrchr(buf, ')');  // the command name may hold spaces
  if (!p) return std::string();
  // After ")" come fields 3, 4, ...: skip to field 22.
  for (int field = 2; field < 22 && *p; ++p) {
    if (*p == ' ') ++field;
  }
  std::string out;
  while (*p >= '0' && *p <= '9') out += *p++;
  return out;
}

// Steps 2 and 3: the batch system's or the launcher's job id.
RunId JobRunId(const EnvLookup& env) {
  // Batch systems. PALS runs under PBS, whose job id it shares.
  static const struct {
    const char* var;
    const char* prefix;
  } kBatch[] = {{"SLURM_JOB_ID", "slurm-"}, {"PBS_JOBID", "pbs-"},
                {"COBALT_JOBID", "cobalt-"}, {"FLUX_JOB_ID", "flux-"}};
  for (const auto& b : kBatch) {
    if (const char* v = Get(env, b.var)) return Make(b.prefix, v, RunIdSource::kBatch);
  }
  if (const char* v = Get(env, "LSB_JOBID")) {
    // The elements of an LSF job array share LSB_JOBID; each is its own run.
    std::string id = v;
    const char* index = Get(env, "LSB_JOBINDEX");
    if (index && strcmp(index, "0") != 0) id += std::string("_") + index;
    return Make("lsf-", id.c_str(), RunIdSource::kBatch);
  }
  // Launchers that give all ranks of a job one name: Open MPI 4/5 and
  // other PMIx launchers, Open MPI's ORTE, torchrun with a rendezvous id.
  if (const char* v = Get(env, "PMIX_NAMESPACE")) return Make("pmix-", v, RunIdSource::kLauncher);
  if (const char* v = Get(env, "OMPI_MCA_ess_base_jobid")) {
    return Make("ompi-", v, RunIdSource::kLauncher);
  }
  if (const char* v = Get(env, "TORCHELASTIC_RUN_ID")) {
    if (strcmp(v, "none") != 0) return Make("torchrun-", v, RunIdSource::kLauncher);
  }
  return RunId{};
}

}  // namespace

std::string SanitizeRunId(const std::string& raw) {
  std::string out;
  for (char c : raw) {
    if (out.size() == kMaxRunIdBytes) break;
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    out += ok ? c : '_';
  }
  if (!out.empty() && out[0] == '.') out[0] = '_';
  return out;
}

RunId RunIdFromEnvironment(const EnvLookup& env) {
  const char* own = Get(env, "DLPROF_RUN_ID");
  const char* auto_id = Get(env, "DLPROF_RUN_ID_AUTO");
  const bool inherited = own && auto_id && strcmp(own, auto_id) == 0;
  if (own && !inherited) {
    RunId r{SanitizeRunId(own), RunIdSource::kExplicit, {}};
    if (!r.id.empty()) return r;
  }
  RunId job = JobRunId(env);
  if (job.source != RunIdSource::kNone) {
    // The made-up id of a traced ancestor (mpirun, a job script) that the
    // job's id overrides: the ancestor's run, which joins this one.
    if (inherited) {
      const std::string parent = SanitizeRunId(own);
      if (parent != job.id) job.parent = parent;
    }
    return job;
  }
  if (inherited) {
    RunId r{SanitizeRunId(own), RunIdSource::kInherited, {}};
    if (!r.id.empty()) return r;
  }
  return RunId{};
}

std::string NewRunId(const std::string& host) {
  struct timespec real {}, mono {};
  clock_gettime(CLOCK_REALTIME, &real);
  clock_gettime(CLOCK_MONOTONIC_RAW, &mono);
  struct tm tm {};
  time_t secs = real.tv_sec;
  gmtime_r(&secs, &tm);
  char stamp[32];
  strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
  // Two runs started in one second by processes of one pid on one host
  // name (pid namespaces, containers) still differ in these bits.
  unsigned salt =
      static_cast<unsigned>((mono.tv_nsec ^ real.tv_nsec ^ (mono.tv_sec << 7)) & 0xffff);
  char tail[64];
  snprintf(tail, sizeof(tail), "-%s-%ld-%04x", stamp, static_cast<long>(syscall(SYS_getpid)),
           salt);
  return SanitizeRunId((host.empty() ? std::string("host") : host) + tail);
}

RunId ResolveRunId(const EnvLookup& env, const std::string& host) {
  RunId r = RunIdFromEnvironment(env);
  if (r.source != RunIdSource::kNone) return r;
  // Step 5. MPICH's Hydra (mpiexec.mpich) gives a rank PMI_RANK, PMI_SIZE,
  // PMI_FD and HYDI_CONTROL_FD, but no job name (the KVS name is only to
  // be had over the PMI socket, which is MPI's). torchrun without
  // --rdzv_id says TORCHELASTIC_RUN_ID=none. In both, the ranks of a host
  // are children of one launcher process: its identity joins them.
  const char* kind = nullptr;
  if (Get(env, "PMI_RANK") && (Get(env, "HYDI_CONTROL_FD") || Get(env, "PMI_FD"))) {
    kind = "hydra-";
  } else if (Get(env, "TORCHELASTIC_RUN_ID")) {
    kind = "torchrun-";
  }
  if (kind) {
    int ppid = static_cast<int>(syscall(SYS_getppid));
    std::string start = StartTicks(ppid);
    if (ppid > 1 && !start.empty()) {
      return {SanitizeRunId(kind + host + "-" + std::to_string(ppid) + "-" + start),
              RunIdSource::kLauncherLocal, {}};
    }
  }
  return {NewRunId(host), RunIdSource::kGenerated, {}};
}

void ResolveProcessRunId(const EnvLookup& env, const std::string& host) {
  RunId r = ResolveRunId(env, host);
  snprintf(g_run_id, sizeof(g_run_id), "%s", r.id.c_str());
  snprintf(g_parent_run_id, sizeof(g_parent_run_id), "%s", r.parent.c_str());
  // Children and exec'ed images must land in the same run: the id goes into
  // the environment of each child (child_env.h), not into this process's,
  // where the program would see it. An id made here (or taken from the
  // job) goes on marked as made, so that it ranks below a job id a child
  // may see (run_id.h); one set by the user goes on as the user's.
  g_run_id_users = r.source == RunIdSource::kExplicit;
}

const char* ProcessRunId() { return g_run_id; }
const char* ProcessParentRunId() { return g_parent_run_id; }
bool ProcessRunIdIsUsers() { return g_run_id_users; }

}  // namespace dlprof::core
