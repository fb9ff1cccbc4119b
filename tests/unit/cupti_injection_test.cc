// When libdlprof points CUDA_INJECTION64_PATH at the CUPTI plugin
// (lib/core/cuda_injection).
#include "lib/core/cuda_injection.h"

#include <gtest/gtest.h>

namespace dlprof::core {
namespace {

InjectionInputs Inputs(bool cuda, bool exists, const char* current, bool is_plugin = false,
                       bool warned = false) {
  InjectionInputs in;
  in.cuda_enabled = cuda;
  in.plugin = "/opt/dlprof/lib/libdlprof_cupti.so";
  in.plugin_exists = exists;
  in.current = current;
  in.current_is_plugin = is_plugin;
  in.warned_before = warned;
  return in;
}

TEST(CudaInjectionTest, SetsThePluginWhenFree) {
  InjectionPlan p = PlanCudaInjection(Inputs(true, true, nullptr));
  EXPECT_EQ(p.action, InjectionAction::kSet);
  EXPECT_TRUE(p.message.empty());
  EXPECT_EQ(PlanCudaInjection(Inputs(true, true, "")).action, InjectionAction::kSet);
}

TEST(CudaInjectionTest, NothingWithoutPluginOrCuda) {
  // A build without CUDA has no plugin: nothing to say, nothing to set.
  InjectionPlan p = PlanCudaInjection(Inputs(true, false, nullptr));
  EXPECT_EQ(p.action, InjectionAction::kNone);
  EXPECT_TRUE(p.message.empty());
  EXPECT_EQ(PlanCudaInjection(Inputs(false, true, nullptr)).action, InjectionAction::kNone);
  // Someone else's injection in a process that does not trace cuda: theirs.
  EXPECT_EQ(PlanCudaInjection(Inputs(false, true, "/x/libother.so")).action,
            InjectionAction::kNone);
}

TEST(CudaInjectionTest, InheritedFromATracedParent) {
  EXPECT_EQ(PlanCudaInjection(Inputs(true, true, "/opt/dlprof/lib/libdlprof_cupti.so", true))
                .action,
            InjectionAction::kKeep);
  // The child does not trace cuda: spare it CUPTI.
  EXPECT_EQ(PlanCudaInjection(Inputs(false, true, "/opt/dlprof/lib/libdlprof_cupti.so", true))
                .action,
            InjectionAction::kUnset);
}

TEST(CudaInjectionTest, AnotherToolsInjectionIsLeftAndReportedOnce) {
  InjectionPlan p = PlanCudaInjection(Inputs(true, true, "/opt/nsight/libToolsInjection64.so"));
  EXPECT_EQ(p.action, InjectionAction::kConflict);
  EXPECT_NE(p.message.find("CUDA_INJECTION64_PATH"), std::string::npos);
  EXPECT_NE(p.message.find("/opt/nsight/libToolsInjection64.so"), std::string::npos);
  p = PlanCudaInjection(Inputs(true, true, "/opt/nsight/libToolsInjection64.so", false, true));
  EXPECT_EQ(p.action, InjectionAction::kConflict);
  EXPECT_TRUE(p.message.empty());
}

TEST(CudaInjectionTest, PluginPathIsNextToThisCode) {
  std::string path = CuptiPluginPath();
  ASSERT_FALSE(path.empty());
  EXPECT_EQ(path.substr(path.rfind('/') + 1), "libdlprof_cupti.so");
}

}  // namespace
}  // namespace dlprof::core
