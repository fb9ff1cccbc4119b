// CPU cost of what the CUPTI plugin (lib/cupti) does per GPU record, in
// ns/record, on the CPU alone (issue 22: where does a traced GPU job's
// overhead go?). CUPTI's own cost, on the launching threads and the GPU, is
// not here: that needs the GPU benchmark (bench/gpu_overhead.py).
//
//   BM_Walk              only the buffer walk (the NextRecord contract of
//                        cuptiActivityGetNextRecord, here the tests' version):
//                        the floor under every translation figure.
//   BM_Translate/<kind>  ActivityTranslator::TranslateBuffer over a full
//                        2 MiB buffer (the plugin's buffer size) of one record
//                        kind: kernel (PyTorch-like mangled names, 16 distinct),
//                        memcpy, memset, sync, runtime API, and a training-step
//                        mix (kernels, copies, a memset, a synchronization).
//                        The host interns into a hash map and copies each
//                        event into a preallocated array (the ring push costs
//                        what ring_bench measures, not counted here).
//   BM_TranslateConvert  the mix with the `convert` clock (offset added).
//   BM_QueueCycle        CompletedQueue Push + Pop: what the completion
//                        callback costs CUPTI's thread per buffer when the
//                        translate thread translates (BM_Translate x records
//                        per buffer when it translates in place).
//   BM_PoolCycle         BufferPool Acquire + Release (once per 2 MiB buffer
//                        on CUPTI's threads), on 1 and 2 threads.
//   BM_OurClock          dlprof's clock read: what CUPTI calls per timestamp
//                        with the `callback` clock method.
//   BM_MeasureOffset     one offset measurement of the `convert` method
//                        (32 brackets; once a second).
//
// Run: build/bench/cupti_bench; bench/cupti_compare.py OLD NEW compares two
// builds in one run (bench/RESULTS_GPU.md, "GPU tracing").
#include <benchmark/benchmark.h>

#include <time.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "lib/cupti/activity_translator.h"
#include "lib/cupti/buffer_pool.h"
#include "lib/cupti/clock_sync.h"
#include "lib/cupti/completed_queue.h"
#include "lib/cupti/tuning.h"
#include "lib/cupti/synthetic_buffer.h"

namespace dlprof::cupti {
namespace {

using synthetic::ActivityBuffer;

const size_t kBufferBytes = PluginTuning{}.buffer_bytes;  // the plugin's default

// Kernel names as PyTorch's launch-bound loops produce them.
const char* const kKernelNames[] = {
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1"
    "EEEEviT0_T1_",
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_15CUDAFunctor_addIfEESt5arrayIP"
    "cLm3EEEEviT0_T1_",
    "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_23direct_copy_kernel_cudaERN"
    "S_18TensorIteratorBaseEENKUlvE1_clEvENKUlvE5_clEvEUlfE_St5arrayIPcLm2EEEEviT0_T1_",
    "_ZN2at6native18elementwise_kernelILi128ELi2EZNS0_22gpu_kernel_impl_nocastIZZZNS0_23d"
    "irect_copy_kernel_cudaERNS_18TensorIteratorBaseEENKUlvE1_clEvENKUlvE5_clEvEUlfE_EEvS"
    "4_RKT_EUliE_EEviT1_",
    "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_14func_wrapper_tIfZNS0_11s"
    "um_functorIfffEclERNS_14TensorIteratorEEUlffE_EEjfLi4ELi4EEEEEvT1_",
    "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_21threshold_kernel_implERNS_"
    "18TensorIteratorBaseERKN3c106ScalarES7_ENKUlvE_clEvENKUlvE5_clEvEUlffE_St5arrayIPcLm"
    "3EEEEviT0_T1_",
    "_ZN2at6native24index_elementwise_kernelILi128ELi4EZNS0_22gpu_index_kernelIZNS0_17ind"
    "ex_kernel_implINS0_10OpaqueTypeILi4EEEEEvRNS_18TensorIteratorBaseEN3c108ArrayRefIlEE"
    "SA_EUlPcPKclE_EEvS7_SA_SA_RKT_bEUliE_EEviT1_",
    "_ZN2at6native12_GLOBAL__N_125multi_tensor_apply_kernelINS1_18TensorListMetadataILi3E"
    "EENS1_20FloatFunctorIfLi3ELi2ELi2EEEJSt4plusIfEfEEEvT_T0_DpT1_",
    "ampere_sgemm_32x32_sliced1x4_tn",
    "ampere_sgemm_64x32_sliced1x4_nn",
    "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize64x64x32_warpgroupsize1x1x1_execute_s"
    "egment_k_off_kernel__5x_cublas",
    "_ZN7cutlass7Kernel2I65cutlass_80_simt_sgemm_64x64_8x5_nn_align1EEvNT_6ParamsE",
    "_ZN2at6native43_GLOBAL__N__d5d4ed28_10_SoftMax_cu_9f978f6324cunn_SoftMaxForwardILi4E"
    "fffNS1_25LogSoftMaxForwardEpilogueEEEvPT2_PKT0_i",
    "_ZN2at6native43_GLOBAL__N__d5d4ed28_10_SoftMax_cu_9f978f6325cunn_SoftMaxBackwardILi4"
    "EfffNS1_26LogSoftMaxBackwardEpilogueEEEvPT0_PKT2_SA_i",
    "_ZN2at6native27unrolled_elementwise_kernelINS0_21compare_scalar_kernelIfEESt5arrayIP"
    "cLm2EELi4E23TrivialOffsetCalculatorILi1EjESA_NS0_6memory15LoadWithoutCastENSB_16Stor"
    "eWithoutCastEEEviT_T0_T2_T3_T4_T5_",
    "_ZN2at6native18elementwise_kernelILi128ELi4EZNS0_22gpu_kernel_impl_nocastINS0_13Bina"
    "ryFunctorIfffNS0_15binary_internal10MulFunctorIfEEEEEEvRNS_18TensorIteratorBaseERKT_"
    "EUliE_EEviT1_",
};
constexpr int kNames = sizeof(kKernelNames) / sizeof(kKernelNames[0]);

// What the plugin's host does, minus libdlprof: intern into a map, copy the
// event out.
class BenchHost : public TranslatorHost {
 public:
  BenchHost() : events_(4096) {}
  uint32_t Intern(const char* text, size_t len) override {
    auto it = ids_.emplace(std::string(text, len), static_cast<uint32_t>(ids_.size() + 1));
    return it.first->second;
  }
  void Record(const Event& e) override {
    std::memcpy(&events_[next_++ & 4095], &e, sizeof(e));
  }
  void CountDropped(uint64_t n) override { dropped_ += n; }
  const char* ApiName(ApiDomain, uint32_t) override { return "cudaLaunchKernel_v7000"; }
  uint64_t recorded() const { return next_; }

 private:
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<Event> events_;
  uint64_t next_ = 0;
  uint64_t dropped_ = 0;
};

template <typename R>
R Zeroed(CUpti_ActivityKind kind) {
  R r;
  std::memset(&r, 0, sizeof(r));
  r.kind = kind;
  return r;
}

KernelRecord Kernel(uint64_t t, int i) {
  auto k = Zeroed<KernelRecord>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  k.start = t;
  k.end = t + 3000;
  k.deviceId = 0;
  k.contextId = 1;
  k.streamId = 7;
  k.gridX = 1 + (i % 4) * 64; k.gridY = 1; k.gridZ = 1;
  k.blockX = 128; k.blockY = 1; k.blockZ = 1;
  k.registersPerThread = 32;
  k.correlationId = static_cast<uint32_t>(t);
  k.name = kKernelNames[i % kNames];
  return k;
}

MemcpyRecord Memcpy(uint64_t t, bool to_device) {
  auto m = Zeroed<MemcpyRecord>(CUPTI_ACTIVITY_KIND_MEMCPY);
  m.copyKind = to_device ? CUPTI_ACTIVITY_MEMCPY_KIND_HTOD : CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
  m.srcKind = to_device ? CUPTI_ACTIVITY_MEMORY_KIND_PINNED : CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.dstKind = to_device ? CUPTI_ACTIVITY_MEMORY_KIND_DEVICE : CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  m.bytes = to_device ? 65536 : 4;
  m.start = t;
  m.end = t + 2000;
  m.contextId = 1;
  m.streamId = 7;
  m.correlationId = static_cast<uint32_t>(t);
  return m;
}

MemsetRecord Memset(uint64_t t) {
  auto m = Zeroed<MemsetRecord>(CUPTI_ACTIVITY_KIND_MEMSET);
  m.bytes = 4096;
  m.start = t;
  m.end = t + 1000;
  m.contextId = 1;
  m.streamId = 7;
  m.correlationId = static_cast<uint32_t>(t);
  m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  return m;
}

SyncRecord Sync(uint64_t t) {
  auto s = Zeroed<SyncRecord>(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  s.start = t;
  s.end = t + 50000;
  s.contextId = 1;
  s.streamId = 7;
  s.cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
  s.correlationId = static_cast<uint32_t>(t);
  return s;
}

ApiRecord Runtime(uint64_t t) {
  auto a = Zeroed<ApiRecord>(CUPTI_ACTIVITY_KIND_RUNTIME);
  a.cbid = 211;
  a.start = t;
  a.end = t + 4000;
  a.threadId = 4242;
  a.correlationId = static_cast<uint32_t>(t);
  return a;
}

enum Mix { kKernels, kMemcpys, kMemsets, kSyncs, kRuntime, kStep };

// A buffer as full as CUPTI would make a 2 MiB one.
ActivityBuffer MakeBuffer(Mix mix) {
  ActivityBuffer b;
  uint64_t t = 1000000000;
  for (int i = 0; b.size() + 1024 < kBufferBytes; ++i, t += 5000) {
    switch (mix) {
      case kKernels: b.Add(Kernel(t, i)); break;
      case kMemcpys: b.Add(Memcpy(t, i % 2 == 0)); break;
      case kMemsets: b.Add(Memset(t)); break;
      case kSyncs: b.Add(Sync(t)); break;
      case kRuntime: b.Add(Runtime(t)); break;
      case kStep:
        // One step of a launch-bound loop: two copies in, a memset, 40
        // kernels, the loss copied out after a synchronization.
        switch (i % 45) {
          case 0: case 1: b.Add(Memcpy(t, true)); break;
          case 2: b.Add(Memset(t)); break;
          case 43: b.Add(Sync(t)); break;
          case 44: b.Add(Memcpy(t, false)); break;
          default: b.Add(Kernel(t, i)); break;
        }
        break;
    }
  }
  return b;
}

void BM_Walk(benchmark::State& state) {
  ActivityBuffer b = MakeBuffer(kStep);
  uint8_t* data = b.data();
  size_t n = 0;
  for (auto _ : state) {
    CUpti_Activity* r = nullptr;
    n = 0;
    while (ActivityBuffer::NextRecord(data, b.size(), &r) == CUPTI_SUCCESS) {
      CUpti_ActivityKind kind = r->kind;
      benchmark::DoNotOptimize(kind);
      ++n;
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
  state.counters["records_per_buffer"] = static_cast<double>(n);
}
BENCHMARK(BM_Walk);

void Translate(benchmark::State& state, Mix mix, ClockMethod method) {
  ActivityBuffer b = MakeBuffer(mix);
  uint8_t* data = b.data();
  BenchHost host;
  ActivityTranslator t(&host);
  t.SetClock(method, method == ClockMethod::kConvert ? -1000 : 0);
  size_t n = 0;
  for (auto _ : state) {
    n = t.TranslateBuffer(data, b.size(), ActivityBuffer::NextRecord);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
  state.counters["records_per_buffer"] = static_cast<double>(n);
  if (t.stats().recorded != state.iterations() * n) state.SkipWithError("records not recorded");
}

void BM_Translate(benchmark::State& state) {
  Translate(state, static_cast<Mix>(state.range(0)), ClockMethod::kCallback);
}
BENCHMARK(BM_Translate)
    ->ArgName("kind")  // 0 kernel, 1 memcpy, 2 memset, 3 sync, 4 runtime, 5 step mix
    ->DenseRange(kKernels, kStep);

void BM_TranslateConvert(benchmark::State& state) {
  Translate(state, kStep, ClockMethod::kConvert);
}
BENCHMARK(BM_TranslateConvert);

void BM_QueueCycle(benchmark::State& state) {
  CompletedQueue q(33);
  CompletedBuffer b{nullptr, 4096, 0}, out;
  for (auto _ : state) {
    q.Push(b);
    q.Pop(&out);
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_QueueCycle);

void BM_PoolCycle(benchmark::State& state) {
  static BufferPool pool(kBufferBytes, 32);  // shared by the threads, as in the plugin
  for (auto _ : state) {
    uint8_t* b = pool.Acquire();
    benchmark::DoNotOptimize(b);
    pool.Release(b);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_PoolCycle)->Threads(1)->Threads(2);

void BM_OurClock(benchmark::State& state) {
  for (auto _ : state) {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    benchmark::DoNotOptimize(ts);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_OurClock);

uint64_t ReadClock(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u + static_cast<uint64_t>(ts.tv_nsec);
}

void BM_MeasureOffset(benchmark::State& state) {
  for (auto _ : state) {
    OffsetSample s = MeasureOffset([] { return ReadClock(CLOCK_MONOTONIC_RAW); },
                                   [] { return ReadClock(CLOCK_REALTIME); }, 32);
    benchmark::DoNotOptimize(s);
  }
}
BENCHMARK(BM_MeasureOffset);

}  // namespace
}  // namespace dlprof::cupti

BENCHMARK_MAIN();
