// DLPROF_CUDA: which GPU record kinds are asked for.
#include "lib/cupti/cuda_kinds.h"

#include <gtest/gtest.h>

namespace dlprof::cupti {
namespace {

TEST(CudaKindsTest, DefaultWhenUnset) {
  std::string w;
  EXPECT_EQ(ParseCudaKinds(nullptr, &w), kDefaultCudaKinds);
  EXPECT_EQ(ParseCudaKinds("", &w), kDefaultCudaKinds);
  EXPECT_TRUE(w.empty());
  EXPECT_EQ(kDefaultCudaKinds, kCudaKernel | kCudaMemcpy | kCudaMemset | kCudaSync);
}

TEST(CudaKindsTest, Words) {
  std::string w;
  EXPECT_EQ(ParseCudaKinds("kernel", &w), kCudaKernel);
  EXPECT_EQ(ParseCudaKinds("kernel,memcpy,memset,sync", &w), kDefaultCudaKinds);
  EXPECT_EQ(ParseCudaKinds("synchronization", &w), kCudaSync);
  EXPECT_EQ(ParseCudaKinds("runtime,driver", &w), kCudaRuntime | kCudaDriver);
  EXPECT_EQ(ParseCudaKinds("nvtx", &w), kCudaNvtx);
  EXPECT_EQ(ParseCudaKinds("all", &w), kCudaAll);
  // "all" is what CUPTI records: not nvtx, whose ranges come through NVTX
  // injection (the plugin told DLPROF_CUDA=all they were not recorded).
  EXPECT_EQ(kCudaAll & kCudaNvtx, 0u);
  EXPECT_EQ(kCudaAll, kDefaultCudaKinds | kCudaRuntime | kCudaDriver);
  EXPECT_EQ(ParseCudaKinds(" kernel, runtime ,", &w), kCudaKernel | kCudaRuntime);
  EXPECT_TRUE(w.empty());
}

TEST(CudaKindsTest, UnknownWordsAreNamed) {
  std::string w;
  EXPECT_EQ(ParseCudaKinds("kernel,kernels,gpu", &w), kCudaKernel);
  EXPECT_NE(w.find("DLPROF_CUDA"), std::string::npos);
  EXPECT_NE(w.find("kernels,gpu"), std::string::npos);
  // Nothing usable: the default, and the warning says so.
  EXPECT_EQ(ParseCudaKinds("everything", &w), kDefaultCudaKinds);
  EXPECT_NE(w.find("using kernel,memcpy,memset,sync"), std::string::npos);
}

}  // namespace
}  // namespace dlprof::cupti
