// The CUPTI record translator on synthetic buffers of real CUPTI structs:
// every supported kind, every field, the clock, the zero-timestamp case,
// dropped records, and a run of records split across two buffers.
#include "lib/cupti/activity_translator.h"

#include <gtest/gtest.h>

#include <iterator>
#include <map>
#include <string>
#include <utility>

#include "tests/helpers/fake_sink.h"
#include "lib/cupti/synthetic_buffer.h"

namespace dlprof::cupti {
namespace {

using dlprof::testing::FakeEventSink;
using dlprof::testing::FakeStrings;
using dlprof::testing::SameEvent;
using synthetic::ActivityBuffer;

class TestHost : public TranslatorHost {
 public:
  uint32_t Intern(const char* text, size_t len) override { return strings.Intern(text, len); }
  void Record(const Event& e) override { sink.Record(e); }
  void CountDropped(uint64_t n) override { sink.CountDropped(n); }
  const char* ApiName(ApiDomain domain, uint32_t cbid) override {
    ++api_name_calls;
    auto it = api_names.find({domain, cbid});
    return it == api_names.end() ? nullptr : it->second.c_str();
  }

  FakeStrings strings;
  FakeEventSink sink;
  std::map<std::pair<ApiDomain, uint32_t>, std::string> api_names;
  int api_name_calls = 0;
};

// Record makers: every field the translator reads, set to a distinct value.
KernelRecord Kernel(uint64_t start, uint64_t end, const char* name = "_Z6vecAddPKfS0_Pfi",
                    uint32_t correlation = 42) {
  KernelRecord k;
  std::memset(&k, 0, sizeof(k));
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = start;
  k.end = end;
  k.deviceId = 1;
  k.contextId = 3;
  k.streamId = 7;
  k.gridX = 128; k.gridY = 2; k.gridZ = 1;
  k.blockX = 256; k.blockY = 1; k.blockZ = 1;
  k.registersPerThread = 32;
  k.staticSharedMemory = 1024;
  k.dynamicSharedMemory = 3072;
  k.correlationId = correlation;
  k.name = name;
  return k;
}

MemcpyRecord Memcpy(uint64_t start, uint64_t end, uint8_t copy_kind, uint8_t src, uint8_t dst) {
  MemcpyRecord m;
  std::memset(&m, 0, sizeof(m));
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = copy_kind;
  m.srcKind = src;
  m.dstKind = dst;
  m.bytes = 1 << 20;
  m.start = start;
  m.end = end;
  m.deviceId = 0;
  m.contextId = 1;
  m.streamId = 13;
  m.correlationId = 99;
  m.runtimeCorrelationId = 98;
  m.copyCount = 1;
  return m;
}

MemcpyP2PRecord PeerCopy(uint64_t start, uint64_t end) {
  MemcpyP2PRecord m;
  std::memset(&m, 0, sizeof(m));
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.bytes = 4096;
  m.start = start;
  m.end = end;
  m.deviceId = 0;
  m.contextId = 1;
  m.streamId = 14;
  m.srcDeviceId = 0;
  m.dstDeviceId = 1;
  m.correlationId = 100;
  return m;
}

MemsetRecord Memset(uint64_t start, uint64_t end) {
  MemsetRecord m;
  std::memset(&m, 0, sizeof(m));
  m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  m.value = 0;
  m.bytes = 512;
  m.start = start;
  m.end = end;
  m.deviceId = 2;
  m.contextId = 4;
  m.streamId = 15;
  m.correlationId = 101;
  m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  return m;
}

SyncRecord Sync(uint64_t start, uint64_t end, CUpti_ActivitySynchronizationType type,
                uint32_t stream) {
  SyncRecord s;
  std::memset(&s, 0, sizeof(s));
  s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  s.type = type;
  s.start = start;
  s.end = end;
  s.correlationId = 102;
  s.contextId = 1;
  s.streamId = stream;
  s.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  s.returnValue = 0;
  return s;
}

ApiRecord Api(CUpti_ActivityKind kind, uint32_t cbid, uint64_t start, uint64_t end) {
  ApiRecord a;
  std::memset(&a, 0, sizeof(a));
  a.kind = kind;
  a.cbid = cbid;
  a.start = start;
  a.end = end;
  a.processId = 1234;
  a.threadId = 5678;
  a.correlationId = 42;
  a.returnValue = 3;
  return a;
}

Event Expected(EventKind kind, uint64_t start, uint64_t dur) {
  Event e;
  std::memset(&e, 0, sizeof(e));
  e.kind = static_cast<uint16_t>(kind);
  e.start_ns = start;
  e.dur_ns = dur;
  e.fd = -1;
  e.offset = -1;
  return e;
}

class TranslatorTest : public ::testing::Test {
 protected:
  size_t Run(ActivityBuffer& b, uint64_t dropped = 0) {
    return t.TranslateBuffer(b.data(), b.size(), ActivityBuffer::NextRecord, dropped);
  }
  uint32_t Id(const std::string& text) {
    return host.strings.Intern(text.data(), text.size());
  }
  std::string Text(uint32_t id) const { return host.strings.Text(id); }

  TestHost host;
  ActivityTranslator t{&host};
};

TEST_F(TranslatorTest, KernelEveryField) {
  t.SetClock(ClockMethod::kCallback, 0);
  ActivityBuffer b;
  b.Add(Kernel(1000, 1500));
  EXPECT_EQ(Run(b), 1u);
  ASSERT_EQ(host.sink.events().size(), 1u);
  const Event& got = host.sink.events()[0];
  Event want = Expected(EventKind::CudaKernel, 1000, 500);
  want.file = Id("vecAdd(float const*, float const*, float*, int)");
  want.fd = 1;
  want.offset = 7;
  want.aux = 42;
  want.ret = Id("grid=(128,2,1) block=(256,1,1) regs=32 smem=4096 ctx=3");
  EXPECT_TRUE(SameEvent(got, want));
  EXPECT_EQ(t.stats().recorded, 1u);
  EXPECT_EQ(host.sink.dropped(), 0u);
}

TEST_F(TranslatorTest, KernelNamesAndConfigsAreInternedOncePerDistinctValue) {
  t.SetClock(ClockMethod::kCallback, 0);
  ActivityBuffer b;
  for (int i = 0; i < 50; ++i) b.Add(Kernel(1000 + i * 10, 1005 + i * 10));
  KernelRecord other = Kernel(5000, 5100, "plain_c_kernel");
  other.blockX = 128;
  b.Add(other);
  EXPECT_EQ(Run(b), 51u);
  // Two names and two launch configurations: four strings, four interns.
  EXPECT_EQ(host.strings.distinct(), 4u);
  EXPECT_EQ(host.strings.calls(), 4u);
  const Event& last = host.sink.events().back();
  EXPECT_EQ(Text(last.file), "plain_c_kernel");
  EXPECT_EQ(Text(last.ret), "grid=(128,2,1) block=(128,1,1) regs=32 smem=4096 ctx=3");
}

TEST_F(TranslatorTest, KernelNameTextNotPointerDecides) {
  // A buffer reused by CUPTI after a module unload may hold another name at
  // the same address: the id must follow the text.
  t.SetClock(ClockMethod::kCallback, 0);
  char name[32] = "first_kernel";
  ActivityBuffer b1;
  b1.Add(Kernel(10, 20, name));
  Run(b1);
  std::strcpy(name, "second_kernel");
  ActivityBuffer b2;
  b2.Add(Kernel(30, 40, name));
  Run(b2);
  ASSERT_EQ(host.sink.events().size(), 2u);
  EXPECT_EQ(Text(host.sink.events()[0].file), "first_kernel");
  EXPECT_EQ(Text(host.sink.events()[1].file), "second_kernel");
}

TEST_F(TranslatorTest, MemcpyEveryKind) {
  t.SetClock(ClockMethod::kCallback, 0);
  struct Case {
    uint8_t kind, src, dst;
    const char* name;
    const char* desc;
  } cases[] = {
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
       CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, "memcpy HtoD", "kind=HtoD src=pageable dst=device ctx=1"},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
       CUPTI_ACTIVITY_MEMORY_KIND_PINNED, "memcpy DtoH", "kind=DtoH src=device dst=pinned ctx=1"},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
       CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, "memcpy DtoD", "kind=DtoD src=device dst=device ctx=1"},
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
       CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, "memcpy HtoH", "kind=HtoH src=pinned dst=pageable ctx=1"},
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOA, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
       CUPTI_ACTIVITY_MEMORY_KIND_ARRAY, "memcpy HtoA", "kind=HtoA src=pageable dst=array ctx=1"},
      {CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED,
       CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN, "memcpy unknown",
       "kind=unknown src=managed dst=unknown ctx=1"},
  };
  ActivityBuffer b;
  for (const Case& c : cases) b.Add(Memcpy(2000, 2600, c.kind, c.src, c.dst));
  Run(b);
  ASSERT_EQ(host.sink.events().size(), std::size(cases));
  for (size_t i = 0; i < std::size(cases); ++i) {
    Event want = Expected(EventKind::CudaMemcpy, 2000, 600);
    want.file = Id(cases[i].name);
    want.ret = Id(cases[i].desc);
    want.fd = 0;
    want.offset = 13;
    want.size = 1 << 20;
    want.aux = 99;
    EXPECT_TRUE(SameEvent(host.sink.events()[i], want)) << cases[i].name;
  }
}

TEST_F(TranslatorTest, PeerToPeerMemcpy) {
  t.SetClock(ClockMethod::kCallback, 0);
  ActivityBuffer b;
  b.Add(PeerCopy(3000, 3300));
  Run(b);
  ASSERT_EQ(host.sink.events().size(), 1u);
  Event want = Expected(EventKind::CudaMemcpyP2P, 3000, 300);
  want.file = Id("memcpy PtoP");
  want.ret = Id("kind=PtoP src=device dst=device srcdev=0 dstdev=1 ctx=1");
  want.fd = 0;
  want.offset = 14;
  want.size = 4096;
  want.aux = 100;
  EXPECT_TRUE(SameEvent(host.sink.events()[0], want));
}

TEST_F(TranslatorTest, Memset) {
  t.SetClock(ClockMethod::kCallback, 0);
  ActivityBuffer b;
  b.Add(Memset(4000, 4010));
  Run(b);
  ASSERT_EQ(host.sink.events().size(), 1u);
  Event want = Expected(EventKind::CudaMemset, 4000, 10);
  want.file = Id("memset");
  want.ret = Id("mem=device ctx=4");
  want.fd = 2;
  want.offset = 15;
  want.size = 512;
  want.aux = 101;
  EXPECT_TRUE(SameEvent(host.sink.events()[0], want));
}

TEST_F(TranslatorTest, Synchronization) {
  t.SetClock(ClockMethod::kCallback, 0);
  ActivityBuffer b;
  b.Add(Sync(5000, 5900, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 7));
  SyncRecord ctx = Sync(6000, 6100, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE,
                        CUPTI_SYNCHRONIZATION_INVALID_VALUE);
  ctx.returnValue = 700;
  b.Add(ctx);
  b.Add(Sync(6200, 6300, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, 7));
  b.Add(Sync(6400, 6500, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, 8));
  Run(b);
  ASSERT_EQ(host.sink.events().size(), 4u);
  Event want = Expected(EventKind::CudaSync, 5000, 900);
  want.file = Id("stream synchronize");
  want.offset = 7;
  want.aux = 102;
  EXPECT_TRUE(SameEvent(host.sink.events()[0], want));
  want = Expected(EventKind::CudaSync, 6000, 100);
  want.file = Id("context synchronize");
  want.aux = 102;
  want.ret = 700;  // the CUDA return code
  EXPECT_TRUE(SameEvent(host.sink.events()[1], want));
  EXPECT_EQ(Text(host.sink.events()[2].file), "event synchronize");
  EXPECT_EQ(Text(host.sink.events()[3].file), "stream wait event");
  EXPECT_EQ(host.sink.events()[3].offset, 8);
}

TEST_F(TranslatorTest, RuntimeAndDriverApi) {
  t.SetClock(ClockMethod::kCallback, 0);
  host.api_names[{ApiDomain::kRuntime, 211}] = "cudaLaunchKernel_v7000";
  host.api_names[{ApiDomain::kDriver, 307}] = "cuLaunchKernel";
  host.api_names[{ApiDomain::kDriver, 279}] = "cuMemcpyHtoD_v2";
  ActivityBuffer b;
  b.Add(Api(CUPTI_ACTIVITY_KIND_RUNTIME, 211, 900, 990));
  b.Add(Api(CUPTI_ACTIVITY_KIND_DRIVER, 307, 910, 980));
  b.Add(Api(CUPTI_ACTIVITY_KIND_DRIVER, 279, 1000, 1100));
  b.Add(Api(CUPTI_ACTIVITY_KIND_RUNTIME, 9999, 1200, 1300));  // no name known
  b.Add(Api(CUPTI_ACTIVITY_KIND_RUNTIME, 211, 1400, 1490));
  Run(b);
  ASSERT_EQ(host.sink.events().size(), 5u);
  Event want = Expected(EventKind::CudaRuntimeApi, 900, 90);
  want.file = Id("cudaLaunchKernel");
  want.offset = 5678;  // the calling thread
  want.aux = 42;
  want.ret = 3;
  EXPECT_TRUE(SameEvent(host.sink.events()[0], want));
  want = Expected(EventKind::CudaDriverApi, 910, 70);
  want.file = Id("cuLaunchKernel");
  want.offset = 5678;
  want.aux = 42;
  want.ret = 3;
  EXPECT_TRUE(SameEvent(host.sink.events()[1], want));
  EXPECT_EQ(Text(host.sink.events()[2].file), "cuMemcpyHtoD_v2");
  EXPECT_EQ(Text(host.sink.events()[3].file), "runtime_cbid_9999");
  // Names are asked for once per function.
  EXPECT_EQ(host.api_name_calls, 4);
}

TEST_F(TranslatorTest, ConvertAddsTheOffset) {
  // CUPTI's own clock is CLOCK_REALTIME: far ahead of CLOCK_MONOTONIC_RAW,
  // so the offset is large and negative.
  const uint64_t realtime = 1700000000000000000ull;
  const int64_t offset = -1699999000000000000ll;
  t.SetClock(ClockMethod::kConvert, offset);
  ActivityBuffer b;
  b.Add(Kernel(realtime + 100, realtime + 350));
  b.Add(Api(CUPTI_ACTIVITY_KIND_RUNTIME, 1, realtime + 50, realtime + 60));
  Run(b);
  ASSERT_EQ(host.sink.events().size(), 2u);
  EXPECT_EQ(host.sink.events()[0].start_ns, 1000000000000ull + 100);
  EXPECT_EQ(host.sink.events()[0].dur_ns, 250u);
  EXPECT_EQ(host.sink.events()[1].start_ns, 1000000000000ull + 50);
  // A timestamp the offset would take below zero cannot be placed.
  ActivityBuffer early;
  early.Add(Kernel(5, 10));
  Run(early);
  EXPECT_EQ(host.sink.events().size(), 2u);
  EXPECT_EQ(host.sink.dropped(), 1u);
}

TEST_F(TranslatorTest, RecordsWithoutTimestampsAreCountedNotRecorded) {
  t.SetClock(ClockMethod::kConvert, 0);
  ActivityBuffer b;
  b.Add(Kernel(0, 0));         // no timing information
  b.Add(Kernel(0, 500));       // start missing
  b.Add(Kernel(900, 800));     // end before start
  b.Add(Memcpy(0, 0, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 1, 3));
  b.Add(Memset(700, 0));
  b.Add(Kernel(1000, 1000));   // zero duration is fine
  EXPECT_EQ(Run(b), 6u);
  EXPECT_EQ(host.sink.events().size(), 1u);
  EXPECT_EQ(host.sink.dropped(), 5u);
  EXPECT_EQ(t.stats().no_timestamps, 5u);
  EXPECT_EQ(t.stats().recorded, 1u);
}

TEST_F(TranslatorTest, ZeroKernelTimestampsWithCallbackTripTheDetector) {
  t.SetClock(ClockMethod::kCallback, 0);
  ActivityBuffer b;
  // What CUDA 12.6u2-13.0 deliver with a timestamp callback: API records
  // fine, every kernel zero.
  for (int i = 0; i < 4; ++i) {
    b.Add(Api(CUPTI_ACTIVITY_KIND_RUNTIME, 211, 100 + i, 110 + i));
    b.Add(Kernel(0, 0));
  }
  Run(b);
  EXPECT_TRUE(t.zero_timestamps_detected());
  EXPECT_EQ(t.detector().zero(), 4u);
  EXPECT_EQ(host.sink.OfKind(EventKind::CudaKernel).size(), 0u);
  EXPECT_EQ(host.sink.OfKind(EventKind::CudaRuntimeApi).size(), 4u);
  EXPECT_EQ(host.sink.dropped(), 4u);
}

TEST_F(TranslatorTest, OccasionalZeroTimestampsDoNotTripTheDetector) {
  t.SetClock(ClockMethod::kCallback, 0);
  ActivityBuffer b;
  for (int i = 0; i < 20; ++i) b.Add(Kernel(1000 + i, 2000 + i));
  for (int i = 0; i < 5; ++i) b.Add(Kernel(0, 0));  // CUPTI documents these
  Run(b);
  EXPECT_FALSE(t.zero_timestamps_detected());
  EXPECT_EQ(host.sink.OfKind(EventKind::CudaKernel).size(), 20u);
}

TEST_F(TranslatorTest, DetectorOnlyWatchesTheCallbackMethod) {
  t.SetClock(ClockMethod::kConvert, 0);
  ActivityBuffer b;
  for (int i = 0; i < 10; ++i) b.Add(Kernel(0, 0));
  Run(b);
  EXPECT_FALSE(t.zero_timestamps_detected());
  EXPECT_EQ(host.sink.dropped(), 10u);
}

TEST_F(TranslatorTest, CuptiDroppedRecordsAreCounted) {
  ActivityBuffer b;
  b.Add(Kernel(10, 20));
  Run(b, /*dropped=*/17);
  EXPECT_EQ(host.sink.dropped(), 17u);
  EXPECT_EQ(t.stats().dropped_by_cupti, 17u);
  EXPECT_EQ(t.TranslateBuffer(nullptr, 0, ActivityBuffer::NextRecord, 3), 0u);
  EXPECT_EQ(host.sink.dropped(), 20u);
  EXPECT_EQ(host.sink.events().size(), 1u);
}

TEST_F(TranslatorTest, OtherKindsAreSkipped) {
  ActivityBuffer b;
  b.Add(Kernel(10, 20));
  CUpti_ActivityContext3 ctx;
  std::memset(&ctx, 0, sizeof(ctx));
  ctx.kind = CUPTI_ACTIVITY_KIND_CONTEXT;
  b.Add(ctx);
  b.Add(Memset(30, 40));
  EXPECT_EQ(Run(b), 3u);
  EXPECT_EQ(host.sink.events().size(), 2u);
  EXPECT_EQ(t.stats().other_kinds, 1u);
}

// The records of one run delivered in one buffer, or split across two
// completions (a flush in between), give the same events: the translator's
// state (string caches, clock, detector) carries over.
TEST(TranslatorSplitTest, BufferSplitAcrossTwoCompletions) {
  auto fill = [](ActivityBuffer* a, ActivityBuffer* b) {
    a->Add(Api(CUPTI_ACTIVITY_KIND_RUNTIME, 211, 100, 120));
    a->Add(Kernel(130, 200));
    a->Add(Memcpy(210, 300, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 1, 3));
    a->Add(Kernel(0, 0));
    a->Add(Kernel(0, 0));
    b->Add(Kernel(0, 0));
    b->Add(Kernel(0, 0));
    b->Add(Kernel(310, 400));
    b->Add(Memcpy(410, 500, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 1, 3));
    b->Add(Sync(500, 600, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, 0));
  };
  TestHost one_host;
  one_host.api_names[{ApiDomain::kRuntime, 211}] = "cudaLaunchKernel_v7000";
  ActivityTranslator one(&one_host);
  ActivityBuffer whole;
  fill(&whole, &whole);
  one.TranslateBuffer(whole.data(), whole.size(), ActivityBuffer::NextRecord);

  TestHost two_host;
  two_host.api_names[{ApiDomain::kRuntime, 211}] = "cudaLaunchKernel_v7000";
  ActivityTranslator two(&two_host);
  ActivityBuffer first, second;
  fill(&first, &second);
  two.TranslateBuffer(first.data(), first.size(), ActivityBuffer::NextRecord);
  EXPECT_FALSE(two.zero_timestamps_detected());  // 2 zero vs 2 good so far
  two.TranslateBuffer(second.data(), second.size(), ActivityBuffer::NextRecord);

  ASSERT_EQ(one_host.sink.events().size(), 6u);
  ASSERT_EQ(two_host.sink.events().size(), one_host.sink.events().size());
  for (size_t i = 0; i < one_host.sink.events().size(); ++i) {
    EXPECT_TRUE(SameEvent(two_host.sink.events()[i], one_host.sink.events()[i])) << i;
  }
  // Same strings, each interned once however the records were split.
  EXPECT_EQ(two_host.strings.calls(), one_host.strings.calls());
  EXPECT_EQ(two_host.strings.distinct(), one_host.strings.distinct());
  EXPECT_EQ(two_host.sink.dropped(), 4u);
  // 4 zero kernels against 3 good GPU records: the detector trips in both.
  EXPECT_TRUE(one.zero_timestamps_detected());
  EXPECT_TRUE(two.zero_timestamps_detected());
}

TEST(TranslatorHelpersTest, Demangle) {
  EXPECT_EQ(DemangleKernelName("_Z6vecAddPKfS0_Pfi"),
            "vecAdd(float const*, float const*, float*, int)");
  EXPECT_EQ(DemangleKernelName(
                "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEENS_"
                "6detail5ArrayIPcLi1EEEEEviT0_T1_"),
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
            "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, "
            "at::detail::Array<char*, 1>)");
  EXPECT_EQ(DemangleKernelName("my_c_kernel"), "my_c_kernel");
  EXPECT_EQ(DemangleKernelName("_Znot a mangled name"), "_Znot a mangled name");
  EXPECT_EQ(DemangleKernelName(nullptr), "(unnamed kernel)");
  EXPECT_EQ(DemangleKernelName(""), "(unnamed kernel)");
}

TEST(TranslatorHelpersTest, CleanApiName) {
  EXPECT_EQ(CleanApiName("cudaMemcpy_v3020"), "cudaMemcpy");
  EXPECT_EQ(CleanApiName("cudaLaunchKernel_ptsz_v7000"), "cudaLaunchKernel_ptsz");
  EXPECT_EQ(CleanApiName("cuMemcpyHtoD_v2"), "cuMemcpyHtoD_v2");
  EXPECT_EQ(CleanApiName("cuCtxCreate_v4"), "cuCtxCreate_v4");
  EXPECT_EQ(CleanApiName("cuInit"), "cuInit");
  EXPECT_EQ(CleanApiName("cudaFoo_vABCD"), "cudaFoo_vABCD");
  EXPECT_EQ(CleanApiName(nullptr), "");
}

}  // namespace
}  // namespace dlprof::cupti
