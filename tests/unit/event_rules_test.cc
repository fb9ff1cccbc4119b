// The event rules (lib/format/event_rules.h) against the rules each reader
// used to work out for itself from the catalogue: the summary's KindRoleTable,
// the region and rank meters, the bandwidth counters, dlprof-dump's KindView,
// the timelines' placement and the Python package's columns. The table took
// their place; this keeps it to what they said, kind by kind, so that the
// move changed no output. And the reader's C ABI gives the same rules.
#include "lib/format/event_rules.h"

#include <gtest/gtest.h>

#include "dlprof/reader.h"

#include <string>

namespace dlprof {
namespace {

bool Is(const EventKindInfo* k, Category c) { return k != nullptr && k->category == c; }
bool Is(const EventKindInfo* k, OpClass o) { return k != nullptr && k->op_class == o; }

TEST(EventRules, SayWhatEachReaderWorkedOutBefore) {
  for (uint32_t code = 0; code < kEventKindLimit; ++code) {
    SCOPED_TRACE("kind " + std::to_string(code));
    const EventKindInfo* k = LookupKind(code);
    const EventRules& r = RulesFor(code);
    EXPECT_EQ(r.known, k != nullptr);
    const bool cuda = Is(k, Category::Cuda);
    // GPUDirect Storage's cuFile calls (issue 34) are traced I/O calls too.
    const bool gds = Is(k, Category::Gds);
    // Asynchronous I/O (issue 52): requests are I/O, no calls; of the calls
    // on rings, io_uring_enter is one, io_uring_ring (a ring's life) none.
    const bool aio = Is(k, Category::Aio);
    const bool ring = code == static_cast<uint32_t>(EventKind::UringRing);
    const bool request = aio && !ring && code != static_cast<uint32_t>(EventKind::UringEnter);
    EXPECT_EQ(r.async, request);
    // A page fault (issue 49) is no call, though its category is POSIX.
    const bool fault = Is(k, OpClass::Fault);
    const bool traced = ((Is(k, Category::Posix) || Is(k, Category::Stdio) ||
                          Is(k, Category::Mpiio) || gds) && !fault) || (aio && !request && !ring);
    const bool rw = Is(k, OpClass::Read) || Is(k, OpClass::Write);
    // analysis.cc, KindRoleTable.
    EXPECT_EQ(r.context, code == static_cast<uint32_t>(EventKind::CallStack) ||
                             code == static_cast<uint32_t>(EventKind::ModuleMap));
    EXPECT_EQ(r.traced_call, traced);
    EXPECT_EQ(r.mpiio_data, Is(k, Category::Mpiio) && rw);
    EXPECT_EQ(r.gpu_work, cuda && (Is(k, OpClass::Kernel) || Is(k, OpClass::Memcpy) ||
                                   Is(k, OpClass::Memset)));
    // regions.cc, CountsAsIo (less its nested test).
    const bool io = (Is(k, Category::Posix) && !fault) || Is(k, Category::Stdio) || gds ||
                    (Is(k, Category::Mpiio) && !Is(k, OpClass::Other)) || (aio && !ring);
    EXPECT_EQ(r.map_read, fault);
    EXPECT_EQ(r.io, io);
    // timeline_counters.cc, BandwidthOf (less its nested test).
    EXPECT_EQ(r.bandwidth, k != nullptr && rw && !cuda);
    // kinds.cc, KindView.
    EXPECT_EQ(r.data, rw);
    EXPECT_EQ(r.bytes_at == BytesAt::kRet, (rw && (Is(k, Category::Posix) || gds || aio)) || fault);
    EXPECT_EQ(r.bytes_at == BytesAt::kAux, rw && (Is(k, Category::Stdio) || Is(k, Category::Mpiio)));
    EXPECT_EQ(r.named, cuda || Is(k, Category::App) ||
                           code == static_cast<uint32_t>(EventKind::RegionFaults));
    EXPECT_EQ(r.config, r.gpu_work);
    EXPECT_EQ(r.flow, Is(k, OpClass::FlowStart) ? 1 : Is(k, OpClass::FlowFinish) ? -1 : 0);
    // chrome_output.cc, Place; perfetto_output.cc, KindInfo.
    const bool on_stream = cuda && !Is(k, OpClass::Api) && !Is(k, OpClass::Other);
    EXPECT_EQ(r.gpu_api, cuda && Is(k, OpClass::Api));
    EXPECT_EQ(r.gpu_clock, cuda && Is(k, OpClass::Other));
    EXPECT_EQ(r.thread, on_stream ? ThreadOf::kStream
                        : r.gpu_api ? ThreadOf::kCaller
                                    : ThreadOf::kRecord);
    // jsonl_output.cc and _events.py: GPU copies' and memsets' bytes are size.
    EXPECT_EQ(r.bytes_at == BytesAt::kSize,
              cuda && (Is(k, OpClass::Memcpy) || Is(k, OpClass::Memset)));
  }
}

TEST(EventRules, CodesPastTheCatalogueAreUnknown) {
  for (uint32_t code : {0u, 197u, 255u, 269u, 319u, 383u, 384u, 400u, 1000u, 65535u}) {
    const EventRules& r = RulesFor(code);
    EXPECT_FALSE(r.known || r.io || r.gpu_work || r.gpu_api || r.context) << code;
    EXPECT_EQ(r.bytes_at, BytesAt::kNone) << code;
  }
}

TEST(EventRules, BytesMovedIsWhereTheRulesSay) {
  Event e{};
  e.ret = 7;
  e.aux = 11;
  e.size = 13;
  e.kind = static_cast<uint16_t>(EventKind::Pread64);
  EXPECT_EQ(BytesMoved(e), 7u);
  e.ret = -1;  // a failed read moved nothing
  EXPECT_EQ(BytesMoved(e), 0u);
  e.kind = static_cast<uint16_t>(EventKind::Fread);
  EXPECT_EQ(BytesMoved(e), 11u);
  // A cuFile read's bytes are its result, as a pread's (-5027: a cuFile error).
  e.kind = static_cast<uint16_t>(EventKind::CufileBatchRead);
  e.ret = 4096;
  EXPECT_EQ(BytesMoved(e), 4096u);
  e.kind = static_cast<uint16_t>(EventKind::CufileRead);
  e.ret = -5027;
  EXPECT_EQ(BytesMoved(e), 0u);
  e.ret = 7;
  e.kind = static_cast<uint16_t>(EventKind::MpiFileWriteAtAll);
  EXPECT_EQ(BytesMoved(e), 11u);
  e.kind = static_cast<uint16_t>(EventKind::CudaMemset);
  EXPECT_EQ(BytesMoved(e), 13u);
  e.kind = static_cast<uint16_t>(EventKind::CudaKernel);
  EXPECT_EQ(BytesMoved(e), 0u);
  // An asynchronous request's bytes are its result; -errno moved nothing.
  e.kind = static_cast<uint16_t>(EventKind::UringRead);
  e.ret = 4096;
  EXPECT_EQ(BytesMoved(e), 4096u);
  e.ret = -125;
  EXPECT_EQ(BytesMoved(e), 0u);
  e.kind = static_cast<uint16_t>(EventKind::AioWrite);
  e.ret = 100;
  EXPECT_EQ(BytesMoved(e), 100u);
}

TEST(EventRules, AsyncAuxPacksSubmitterOpcodeAndReaping) {
  const uint64_t aux = PackAsyncAux(12'345'678, 22, 4'194'303);
  const AsyncAux a = UnpackAsyncAux(aux);
  EXPECT_EQ(a.reaped_after_us, 12'345u);
  EXPECT_EQ(a.opcode, 22);
  EXPECT_EQ(a.submit_tid, 4'194'303);
  EXPECT_EQ(aux >> 62, 0u);
  // Reaped more than 2^32 us (71 min) after: saturated, the rest intact.
  const AsyncAux late = UnpackAsyncAux(PackAsyncAux(~uint64_t{0}, 255, 7));
  EXPECT_EQ(late.reaped_after_us, 0xffffffffu);
  EXPECT_EQ(late.opcode, 255);
  EXPECT_EQ(late.submit_tid, 7);
}

TEST(EventRules, NestedCallsDoNotCountAsIo) {
  Event e{};
  e.kind = static_cast<uint16_t>(EventKind::Pread);
  EXPECT_TRUE(CountsAsIo(e));
  e.flags = kEventFlagNested;
  EXPECT_FALSE(CountsAsIo(e));
  e.flags = 0;
  e.kind = static_cast<uint16_t>(EventKind::MpiFinalize);
  EXPECT_FALSE(CountsAsIo(e));
}

TEST(EventRules, TheCAbiGivesTheTable) {
  for (uint32_t code = 0; code <= UINT16_MAX; ++code) {
    const EventRules& r = RulesFor(code);
    const uint32_t traits = dlprof_kind_traits(static_cast<uint16_t>(code));
    auto has = [&](uint32_t bit) { return (traits & bit) != 0; };
    ASSERT_EQ(has(DLPROF_KIND_IO), r.io) << code;
    ASSERT_EQ(has(DLPROF_KIND_DATA), r.data) << code;
    ASSERT_EQ(has(DLPROF_KIND_BANDWIDTH), r.bandwidth) << code;
    ASSERT_EQ(has(DLPROF_KIND_GPU_WORK), r.gpu_work) << code;
    ASSERT_EQ(has(DLPROF_KIND_GPU_API), r.gpu_api) << code;
    ASSERT_EQ(has(DLPROF_KIND_ASYNC), r.async) << code;
    ASSERT_EQ(has(DLPROF_KIND_GPU_CLOCK), r.gpu_clock) << code;
    ASSERT_EQ(has(DLPROF_KIND_NAMED), r.named) << code;
    ASSERT_EQ(has(DLPROF_KIND_CONFIG), r.config) << code;
    ASSERT_EQ(has(DLPROF_KIND_FLOW_START), r.flow > 0) << code;
    ASSERT_EQ(has(DLPROF_KIND_FLOW_FINISH), r.flow < 0) << code;
    ASSERT_EQ(has(DLPROF_KIND_CONTEXT), r.context) << code;
    ASSERT_EQ(has(DLPROF_KIND_TRACED_CALL), r.traced_call) << code;
    ASSERT_EQ(dlprof_kind_bytes(static_cast<uint16_t>(code)), static_cast<int>(r.bytes_at)) << code;
    ASSERT_EQ(dlprof_kind_thread(static_cast<uint16_t>(code)), static_cast<int>(r.thread)) << code;
  }
  EXPECT_EQ(dlprof_kind_bytes(static_cast<uint16_t>(EventKind::Fgets)), DLPROF_BYTES_AUX);
  EXPECT_EQ(dlprof_kind_thread(static_cast<uint16_t>(EventKind::CudaRuntimeApi)),
            DLPROF_THREAD_CALLER);
  EXPECT_EQ(dlprof_kind_traits(static_cast<uint16_t>(EventKind::CudaMemset)),
            DLPROF_KIND_GPU_WORK | DLPROF_KIND_NAMED | DLPROF_KIND_CONFIG);
}

}  // namespace
}  // namespace dlprof
