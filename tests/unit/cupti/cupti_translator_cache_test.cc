// The translator's id caches (id_cache.h, the kernel-name front cache and the
// per-kernel launch configuration): whatever order records come in, every
// event carries the strings of its own record, and each distinct string is
// interned once. bench/cupti_bench.cc measures what the caches save.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "lib/cupti/activity_translator.h"
#include "lib/cupti/id_cache.h"
#include "tests/helpers/fake_sink.h"
#include "lib/cupti/synthetic_buffer.h"

namespace dlprof::cupti {
namespace {

using synthetic::ActivityBuffer;

class Host : public TranslatorHost {
 public:
  uint32_t Intern(const char* text, size_t len) override {
    if (refuse > 0) {
      --refuse;
      return 0;  // as dlprof_plugin_intern before tracing runs
    }
    return strings.Intern(text, len);
  }
  void Record(const Event& e) override { sink.Record(e); }
  void CountDropped(uint64_t n) override { sink.CountDropped(n); }
  const char* ApiName(ApiDomain, uint32_t) override { return nullptr; }

  dlprof::testing::FakeStrings strings;
  dlprof::testing::FakeEventSink sink;
  int refuse = 0;
};

template <typename R>
R Zeroed(CUpti_ActivityKind kind, uint64_t start) {
  R r;
  std::memset(&r, 0, sizeof(r));
  r.kind = kind;
  r.start = start;
  r.end = start + 10;
  return r;
}

KernelRecord Kernel(uint64_t t, const char* name, int32_t grid, uint32_t ctx = 1) {
  auto k = Zeroed<KernelRecord>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, t);
  k.name = name;
  k.gridX = grid; k.gridY = 1; k.gridZ = 1;
  k.blockX = 64; k.blockY = 1; k.blockZ = 1;
  k.registersPerThread = 16;
  k.contextId = ctx;
  return k;
}

std::string Config(int grid, unsigned ctx = 1) {
  return "grid=(" + std::to_string(grid) + ",1,1) block=(64,1,1) regs=16 smem=0 ctx=" +
         std::to_string(ctx);
}

class CacheTest : public ::testing::Test {
 protected:
  void Run(ActivityBuffer& b) {
    t.TranslateBuffer(b.data(), b.size(), ActivityBuffer::NextRecord);
  }
  std::string File(size_t i) { return host.strings.Text(host.sink.events().at(i).file); }
  std::string Ret(size_t i) {
    return host.strings.Text(static_cast<uint32_t>(host.sink.events().at(i).ret));
  }
  Host host;
  ActivityTranslator t{&host};
};

TEST_F(CacheTest, OneKernelWithAlternatingLaunchConfigs) {
  ActivityBuffer b;
  const int grids[] = {1, 7, 1, 300, 7, 7, 1};
  for (int round = 0; round < 5; ++round) {
    for (int g : grids) b.Add(Kernel(100 + b.size(), "alpha", g));
    b.Add(Kernel(100 + b.size(), "beta", 7, /*ctx=*/4000000000u));
  }
  Run(b);
  ASSERT_EQ(host.sink.events().size(), 40u);
  for (size_t i = 0; i < 40; ++i) {
    const bool beta = i % 8 == 7;
    EXPECT_EQ(File(i), beta ? "beta" : "alpha") << i;
    EXPECT_EQ(Ret(i), beta ? Config(7, 4000000000u) : Config(grids[i % 8])) << i;
  }
  // alpha, beta, grids 1, 7 and 300 in context 1, grid 7 in the other.
  EXPECT_EQ(host.strings.calls(), 6u);
}

TEST_F(CacheTest, ReusedNamePointerStartsAfresh) {
  char name[16] = "first";
  ActivityBuffer b1;
  b1.Add(Kernel(10, name, 5));
  Run(b1);
  std::strcpy(name, "second");
  ActivityBuffer b2;
  b2.Add(Kernel(20, name, 5));
  b2.Add(Kernel(30, name, 9));
  Run(b2);
  ASSERT_EQ(host.sink.events().size(), 3u);
  EXPECT_EQ(File(0), "first");
  EXPECT_EQ(File(1), "second");
  EXPECT_EQ(Ret(1), Config(5));
  EXPECT_EQ(File(2), "second");
  EXPECT_EQ(Ret(2), Config(9));
}

TEST_F(CacheTest, MoreKernelsThanFrontSlots) {
  std::vector<std::string> names;
  for (int i = 0; i < 2000; ++i) names.push_back("kernel_" + std::to_string(i));
  ActivityBuffer b;
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 2000; ++i) b.Add(Kernel(1 + b.size(), names[(i * 7) % 2000].c_str(), 3));
  }
  Run(b);
  ASSERT_EQ(host.sink.events().size(), 4000u);
  for (size_t i = 0; i < 4000; ++i) ASSERT_EQ(File(i), names[(i % 2000) * 7 % 2000]) << i;
  EXPECT_EQ(host.strings.calls(), 2001u);  // each name once, one configuration
}

TEST_F(CacheTest, AnIdNotHadIsAskedForAgain) {
  host.refuse = 2;  // the first name and configuration cannot be interned
  ActivityBuffer b;
  b.Add(Kernel(10, "gamma", 2));
  b.Add(Kernel(20, "gamma", 2));
  Run(b);
  ASSERT_EQ(host.sink.events().size(), 2u);
  EXPECT_EQ(host.sink.events()[0].file, 0u);
  EXPECT_EQ(host.sink.events()[0].ret, 0);
  EXPECT_EQ(File(1), "gamma");
  EXPECT_EQ(Ret(1), Config(2));
}

TEST_F(CacheTest, MemsetsByMemoryKindAndContext) {
  const uint16_t mems[] = {CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
                           CUPTI_ACTIVITY_MEMORY_KIND_MANAGED};
  const uint32_t ctxs[] = {1, 2, 70000};
  ActivityBuffer b;
  for (int round = 0; round < 3; ++round) {
    for (uint32_t c : ctxs) {
      for (uint16_t m : mems) {
        auto r = Zeroed<MemsetRecord>(CUPTI_ACTIVITY_KIND_MEMSET, 1 + b.size());
        r.memoryKind = m;
        r.contextId = c;
        b.Add(r);
      }
    }
  }
  Run(b);
  ASSERT_EQ(host.sink.events().size(), 27u);
  for (size_t i = 0; i < 27; ++i) {
    EXPECT_EQ(File(i), "memset");
    EXPECT_EQ(Ret(i), std::string("mem=") + MemoryKindName(mems[i % 3]) +
                          " ctx=" + std::to_string(ctxs[(i / 3) % 3]));
  }
  EXPECT_EQ(host.strings.calls(), 10u);  // "memset" and nine descriptions
}

TEST_F(CacheTest, SynchronizationTypes) {
  const uint32_t types[] = {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE,
                            CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE,
                            CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, 99};
  ActivityBuffer b;
  for (int round = 0; round < 4; ++round) {
    for (uint32_t ty : types) {
      auto s = Zeroed<SyncRecord>(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, 1 + b.size());
      s.type = static_cast<CUpti_ActivitySynchronizationType>(ty);
      b.Add(s);
    }
  }
  Run(b);
  ASSERT_EQ(host.sink.events().size(), 16u);
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(File(i), SyncTypeName(types[i % 4]));
  EXPECT_EQ(host.strings.calls(), 4u);
}

TEST(IdCacheTest, CollidingKeysKeepTheirOwnIds) {
  IdCache c;
  EXPECT_EQ(c.Find(5), 0u);
  c.Put(5, 0);  // not an id: nothing stored
  EXPECT_EQ(c.size(), 0u);
  // Far more keys than slots: every slot is shared many times over.
  for (uint64_t k = 0; k < 1000; ++k) c.Put(k * 0x10001, static_cast<uint32_t>(k + 1));
  for (int pass = 0; pass < 2; ++pass) {
    for (uint64_t k = 0; k < 1000; ++k) ASSERT_EQ(c.Find(k * 0x10001), k + 1) << k;
  }
  EXPECT_EQ(c.Find(3), 0u);
  EXPECT_EQ(c.size(), 1000u);
}

}  // namespace
}  // namespace dlprof::cupti
