// The rank and world size that launchers and batch systems hand each process
// of a job in its environment, in one place for the runtime (the trace
// header's rank) and for the `dlprof` launcher (whether it runs one rank of
// several). The first variable set to a whole number wins, in this order:
//
//   RANK, WORLD_SIZE            torchrun, and any launcher following PyTorch
//   OMPI_COMM_WORLD_*           Open MPI's mpirun
//   PMI_RANK, PMI_SIZE          MPICH's Hydra, Intel MPI, Cray PMI
//   PMIX_RANK, PMIX_SIZE        PMIx launchers (prterun, srun --mpi=pmix)
//   PALS_RANKID, PALS_SIZE      HPE Cray PALS (PBS on Polaris, Aurora)
//   FLUX_TASK_RANK, FLUX_JOB_SIZE  Flux
//   JSM_NAMESPACE_RANK, _SIZE   IBM LSF's jsrun
//   MV2_COMM_WORLD_RANK, _SIZE  MVAPICH2's mpirun_rsh
//   SLURM_PROCID, SLURM_NTASKS  srun
//   ALPS_APP_PE                 Cray ALPS's aprun (no size variable)
//
// The launcher nearest the process first: under torchrun in a Slurm job,
// SLURM_PROCID numbers the node's torchrun, RANK the process; under mpirun
// (or a Flux instance) inside an allocation, every rank inherits the batch
// step's SLURM_PROCID (0) and SLURM_NTASKS, and the MPI launcher's variables
// say which rank it is.
#ifndef DLPROF_LIB_CORE_LAUNCH_ENV_H_
#define DLPROF_LIB_CORE_LAUNCH_ENV_H_

#include <cstdint>

#include "lib/core/config.h"

namespace dlprof::core {

inline constexpr const char* kRankVariables[] = {
    "RANK",           "OMPI_COMM_WORLD_RANK", "PMI_RANK",          "PMIX_RANK",
    "PALS_RANKID",    "FLUX_TASK_RANK",       "JSM_NAMESPACE_RANK", "MV2_COMM_WORLD_RANK",
    "SLURM_PROCID",   "ALPS_APP_PE"};
inline constexpr const char* kWorldSizeVariables[] = {
    "WORLD_SIZE",    "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",           "PMIX_SIZE",
    "PALS_SIZE",     "FLUX_JOB_SIZE",        "JSM_NAMESPACE_SIZE", "MV2_COMM_WORLD_SIZE",
    "SLURM_NTASKS"};

// The process's rank, -1 if no launcher gave one. A variable that is set
// but holds no rank (empty, not a number, negative, 2^30 or more) is passed
// over.
int32_t LaunchRank(const EnvLookup& env);
// The job's number of ranks, -1 if no launcher says (0 is passed over).
int64_t LaunchWorldSize(const EnvLookup& env);

}  // namespace dlprof::core

#endif  // DLPROF_LIB_CORE_LAUNCH_ENV_H_
