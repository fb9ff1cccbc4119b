// The rank and world size a launcher gives a process (lib/core/launch_env.h):
// every launcher's variable is read, the first one holding a number wins,
// and values that are no rank are passed over.
#include "lib/core/launch_env.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <map>
#include <string>

namespace dlprof::core {
namespace {

EnvLookup Env(const std::map<std::string, std::string>& vars) {
  return [vars](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(LaunchEnv, EachLaunchersRank) {
  for (const char* var : kRankVariables) {
    SCOPED_TRACE(var);
    EXPECT_EQ(LaunchRank(Env({{var, "17"}})), 17);
  }
  for (const char* var : kWorldSizeVariables) {
    SCOPED_TRACE(var);
    EXPECT_EQ(LaunchWorldSize(Env({{var, "64"}})), 64);
  }
  // Those of jsrun, mpirun_rsh and aprun among them.
  EXPECT_EQ(LaunchRank(Env({{"JSM_NAMESPACE_RANK", "5"}})), 5);
  EXPECT_EQ(LaunchRank(Env({{"MV2_COMM_WORLD_RANK", "6"}})), 6);
  EXPECT_EQ(LaunchRank(Env({{"ALPS_APP_PE", "7"}})), 7);
  EXPECT_EQ(LaunchWorldSize(Env({{"JSM_NAMESPACE_SIZE", "8"}})), 8);
}

TEST(LaunchEnv, NoneIsMinusOne) {
  EXPECT_EQ(LaunchRank(Env({})), -1);
  EXPECT_EQ(LaunchWorldSize(Env({{"LOCAL_RANK", "1"}})), -1);
}

TEST(LaunchEnv, TorchrunsRankBeforeSlurms) {
  // torchrun under srun: SLURM_PROCID numbers the node's torchrun.
  EXPECT_EQ(LaunchRank(Env({{"SLURM_PROCID", "1"}, {"RANK", "9"}})), 9);
  EXPECT_EQ(LaunchWorldSize(Env({{"SLURM_NTASKS", "2"}, {"WORLD_SIZE", "16"}})), 16);
}

TEST(LaunchEnv, MpirunsRankBeforeTheAllocations) {
  // mpirun (or mpiexec, or a Flux instance) inside an sbatch/salloc
  // allocation: every rank inherits the batch step's SLURM_PROCID and
  // SLURM_NTASKS.
  for (const auto& [rank, size] :
       {std::pair{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}, {"PMI_RANK", "PMI_SIZE"},
        {"PMIX_RANK", "PMIX_SIZE"}, {"FLUX_TASK_RANK", "FLUX_JOB_SIZE"}}) {
    SCOPED_TRACE(rank);
    EXPECT_EQ(LaunchRank(Env({{"SLURM_PROCID", "0"}, {rank, "3"}})), 3);
    EXPECT_EQ(LaunchWorldSize(Env({{"SLURM_NTASKS", "1"}, {size, "4"}})), 4);
  }
}

TEST(LaunchEnv, ValuesThatAreNoRankArePassedOver) {
  for (const char* bad : {"", "x", "3x", "-1", "1073741824", "99999999999999999999"}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(LaunchRank(Env({{"RANK", bad}, {"PMI_RANK", "4"}})), 4);
  }
  EXPECT_EQ(LaunchRank(Env({{"RANK", "0"}})), 0);
  // errno stays the program's, overflow or not.
  errno = EINTR;
  EXPECT_EQ(LaunchRank(Env({{"RANK", "99999999999999999999"}})), -1);
  EXPECT_EQ(errno, EINTR);
  EXPECT_EQ(LaunchWorldSize(Env({{"WORLD_SIZE", "0"}, {"PMI_SIZE", "2"}})), 2);
}

}  // namespace
}  // namespace dlprof::core
