// Micro-benchmarks of the two halves of the recording path, in events/s:
//
//   BM_RingPush            EventRing::TryPush on one thread while a consumer
//                          thread drains the ring, as the flusher does (the
//                          producer spins when the ring is full).
//   BM_RingPushThenDrain   the same ring filled and drained by one thread in
//                          batches: the push cost without cache lines moving
//                          between cores.
//   BM_PacedPush/BM_PacedWork
//                          ~1 us of work per event (about one cached 4 KiB
//                          pread), with and without a push, while a consumer
//                          drains every ~1 ms as the flusher does; the time
//                          difference is the push's cost in place, cache
//                          misses on slots the consumer read included.
//   BM_Encode*             BlockEncoder::AddEvents + Finish, then (Framed) the
//                          zstd frame BlockFramer writes, over synthetic pread
//                          events (sequential or random 4 KiB offsets, timing
//                          jitter of a real run); counter bytes_per_event is
//                          the framed size.
//   BM_EncodeSeqDirect*    a prototype of AddEvents writing varints through a
//                          pointer into pre-sized columns instead of
//                          vector::insert per value; output checked identical
//                          to BlockEncoder's (a suggestion, not the runtime).
//
// Run: build/bench/ring_bench [--benchmark_filter=...] (see bench/README.md).
#include <benchmark/benchmark.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <cstdint>
#include <thread>
#include <vector>

#include "dlprof/format.h"
#include "lib/core/ring.h"
#include "lib/format/block_codec.h"
#include "lib/format/trace_file.h"
#include "lib/format/varint.h"

namespace {

using dlprof::Event;
using dlprof::core::EventRing;

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

Event SampleEvent(uint64_t i) {
  Event e{};
  e.kind = static_cast<uint16_t>(dlprof::EventKind::Pread64);
  e.start_ns = 1000 * i;
  e.dur_ns = 700;
  e.ret = 4096;
  e.offset = static_cast<int64_t>(i * 4096);
  e.size = 4096;
  e.file = 7;
  e.fd = 3;
  return e;
}

void BM_RingPush(benchmark::State& state) {
  const uint64_t capacity = static_cast<uint64_t>(state.range(0));
  std::vector<Event> slots(capacity);
  EventRing ring;
  ring.Init(slots.data(), capacity);
  std::atomic<bool> stop{false};
  uint64_t consumed = 0;
  std::thread consumer([&] {
    uint64_t seen = 0;
    for (;;) {
      uint64_t n = ring.Drain([&](const Event* ev, size_t k) {
        // Touch what a flusher touches: every event once.
        for (size_t i = 0; i < k; ++i) seen += ev[i].size;
      });
      if (n == 0) {
        if (stop.load(std::memory_order_acquire) && ring.Readable() == 0) break;
        CpuRelax();
      }
    }
    consumed = seen;
  });
  Event e = SampleEvent(1);
  uint64_t full = 0;
  for (auto _ : state) {
    e.start_ns += 1000;
    while (!ring.TryPush(e)) {
      ++full;
      CpuRelax();
    }
  }
  stop.store(true, std::memory_order_release);
  consumer.join();
  benchmark::DoNotOptimize(consumed);
  state.SetItemsProcessed(state.iterations());
  state.counters["full_spins_per_push"] =
      benchmark::Counter(static_cast<double>(full) / static_cast<double>(state.iterations()));
}
// 4096 slots is the runtime's default (DLPROF_BUFFER_KB=256, 64-byte slots).
BENCHMARK(BM_RingPush)->Arg(256)->Arg(4096)->Arg(65536)->UseRealTime();

void BM_RingPushThenDrain(benchmark::State& state) {
  const uint64_t capacity = 4096;
  const uint64_t batch = static_cast<uint64_t>(state.range(0));
  std::vector<Event> slots(capacity);
  EventRing ring;
  ring.Init(slots.data(), capacity);
  Event e = SampleEvent(1);
  uint64_t seen = 0;
  for (auto _ : state) {
    for (uint64_t i = 0; i < batch; ++i) {
      e.start_ns += 1000;
      if (!ring.TryPush(e)) state.SkipWithError("ring full");
    }
    ring.Drain([&](const Event* ev, size_t k) { seen += k; });
  }
  benchmark::DoNotOptimize(seen);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(batch));
}
BENCHMARK(BM_RingPushThenDrain)->Arg(2048);

// About `units` x 10 dependent multiply-adds of work standing in for the pread.
inline uint64_t Work(uint64_t units, uint64_t x) {
  for (uint64_t i = 0; i < units * 10; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  return x;
}

void Paced(benchmark::State& state, bool push) {
  const uint64_t capacity = 4096;
  std::vector<Event> slots(capacity);
  EventRing ring;
  ring.Init(slots.data(), capacity);
  std::atomic<bool> stop{false};
  std::thread consumer([&] {
    uint64_t seen = 0;
    while (!stop.load(std::memory_order_acquire)) {
      ring.Drain([&](const Event* ev, size_t k) {
        for (size_t i = 0; i < k; ++i) seen += ev[i].size;
      });
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ring.Drain([&](const Event*, size_t) {});
    benchmark::DoNotOptimize(seen);
  });
  Event e = SampleEvent(1);
  uint64_t x = 1;
  const uint64_t units = static_cast<uint64_t>(state.range(0));
  for (auto _ : state) {
    x = Work(units, x);
    if (push) {
      e.start_ns = x;
      while (!ring.TryPush(e)) CpuRelax();
    }
  }
  benchmark::DoNotOptimize(x);
  stop.store(true, std::memory_order_release);
  consumer.join();
  state.SetItemsProcessed(state.iterations());
}
void BM_PacedWork(benchmark::State& s) { Paced(s, false); }
void BM_PacedPush(benchmark::State& s) { Paced(s, true); }
BENCHMARK(BM_PacedWork)->Arg(100);
BENCHMARK(BM_PacedPush)->Arg(100);

// Pread events as a 4 KiB read loop over a page-cached 64 MiB file records
// them: ~700 ns calls with jitter, ~60 ns between calls.
std::vector<Event> PreadEvents(size_t n, bool random) {
  std::vector<Event> v(n);
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  auto next = [&] {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
  };
  const uint64_t blocks = (64u << 20) / 4096;
  uint64_t t = 1000000000;
  for (size_t i = 0; i < n; ++i) {
    Event& e = v[i];
    e = SampleEvent(i);
    e.start_ns = t;
    e.dur_ns = 650 + next() % 128;
    t += e.dur_ns + 50 + next() % 32;
    e.offset = static_cast<int64_t>((random ? next() % blocks : i % blocks) * 4096);
  }
  return v;
}

void EncodeBench(benchmark::State& state, bool random, bool framed) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<Event> events = PreadEvents(n, random);
  dlprof::format::BlockEncoder enc;
  dlprof::format::BlockFramer framer(3);  // the runtime's level
  std::vector<uint8_t> raw, out;
  size_t bytes = 0;
  for (auto _ : state) {
    enc.Begin({});
    enc.AddString(7, "/data/train/shard-00000.bin", 27);
    enc.AddEvents(4242, events.data(), events.size());
    enc.Finish(&raw);
    if (framed) {
      framer.Frame(raw, static_cast<uint32_t>(n), 0, enc.span(), &out);
      bytes = out.size();
    } else {
      bytes = raw.size();
    }
    benchmark::DoNotOptimize(bytes);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
  state.counters["bytes_per_event"] =
      benchmark::Counter(static_cast<double>(bytes) / static_cast<double>(n));
}

void BM_EncodeSeq(benchmark::State& s) { EncodeBench(s, false, false); }
void BM_EncodeSeqFramed(benchmark::State& s) { EncodeBench(s, false, true); }
void BM_EncodeRandom(benchmark::State& s) { EncodeBench(s, true, false); }
void BM_EncodeRandomFramed(benchmark::State& s) { EncodeBench(s, true, true); }
BENCHMARK(BM_EncodeSeq)->Arg(2048)->Arg(65536);
BENCHMARK(BM_EncodeSeqFramed)->Arg(2048)->Arg(16384)->Arg(65536);
BENCHMARK(BM_EncodeRandom)->Arg(2048)->Arg(65536);
BENCHMARK(BM_EncodeRandomFramed)->Arg(2048)->Arg(16384)->Arg(65536);

// --- prototype: AddEvents with direct varint writes -------------------------
//
// Same columns, same predictor, same bytes as BlockEncoder (checked below),
// but each column is grown once per call by count x 10 bytes and varints are
// written through a pointer; the raw payload is assembled as in Finish().

using dlprof::format::BlockPredictor;
using dlprof::format::PutVarint;
using dlprof::format::ZigZag;

inline uint8_t* WriteVarint(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

class DirectEncoder {
 public:
  void Begin() {
    pred_ = BlockPredictor{};
    for (auto& c : cols_) c.clear();
    runs_.clear();
    strings_.clear();
    string_count_ = 0;
  }
  void AddString(uint32_t id, const char* text, size_t size) {
    PutVarint(strings_, id);
    PutVarint(strings_, size);
    strings_.insert(strings_.end(), text, text + size);
    ++string_count_;
  }
  void AddEvents(int32_t tid, const Event* ev, size_t n) {
    if (!runs_.empty() && runs_.back().first == tid) {
      runs_.back().second += n;
    } else {
      runs_.emplace_back(tid, n);
    }
    uint8_t* p[dlprof::kColumnCount];
    size_t used[dlprof::kColumnCount];
    for (int c = 0; c < dlprof::kColumnCount; ++c) {
      used[c] = cols_[c].size();
      cols_[c].resize(used[c] + n * 10);
      p[c] = cols_[c].data() + used[c];
    }
    auto d = [](uint64_t a, uint64_t b) { return ZigZag(static_cast<int64_t>(a - b)); };
    for (size_t i = 0; i < n; ++i) {
      const Event& e = ev[i];
      const Event& q = pred_.prev;
      p[0] = WriteVarint(p[0], e.kind);
      p[1] = WriteVarint(p[1], e.flags);
      p[2] = WriteVarint(p[2], d(e.start_ns, pred_.prev_end_ns));
      p[3] = WriteVarint(p[3], e.dur_ns);
      p[4] = WriteVarint(p[4], d(e.file, q.file));
      p[5] = WriteVarint(p[5], d(static_cast<uint64_t>(e.fd), static_cast<uint64_t>(q.fd)));
      p[6] = WriteVarint(p[6], d(static_cast<uint64_t>(e.offset), pred_.PredictOffset(e.file)));
      p[7] = WriteVarint(p[7], d(e.size, q.size));
      p[8] = WriteVarint(p[8], d(static_cast<uint64_t>(e.ret), e.size));
      p[9] = WriteVarint(p[9], ZigZag(e.err));
      p[10] = WriteVarint(p[10], d(e.aux, q.aux));
      pred_.Advance(e);
    }
    for (int c = 0; c < dlprof::kColumnCount; ++c) {
      cols_[c].resize(static_cast<size_t>(p[c] - cols_[c].data()));
    }
  }
  void Finish(std::vector<uint8_t>* raw) {
    raw->clear();
    // BlockInfo{} as in the benchmarks: clocks 0, rank -1 (zigzag 1), 0 dropped.
    for (uint64_t v : {0, 0, 1, 0}) PutVarint(*raw, v);
    PutVarint(*raw, string_count_);
    raw->insert(raw->end(), strings_.begin(), strings_.end());
    PutVarint(*raw, runs_.size());
    for (const auto& [tid, k] : runs_) {
      PutVarint(*raw, ZigZag(tid));
      PutVarint(*raw, k);
    }
    for (const auto& c : cols_) {
      PutVarint(*raw, c.size());
      raw->insert(raw->end(), c.begin(), c.end());
    }
  }

 private:
  BlockPredictor pred_;
  std::vector<uint8_t> cols_[dlprof::kColumnCount];
  std::vector<uint8_t> strings_;
  uint64_t string_count_ = 0;
  std::vector<std::pair<int32_t, uint64_t>> runs_;
};

void DirectBench(benchmark::State& state, bool random, bool framed) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::vector<Event> events = PreadEvents(n, random);
  {
    // The prototype must write exactly what the library writes.
    dlprof::format::BlockEncoder ref;
    ref.Begin({});
    ref.AddString(7, "/data/train/shard-00000.bin", 27);
    ref.AddEvents(4242, events.data(), n);
    std::vector<uint8_t> want, got;
    ref.Finish(&want);
    DirectEncoder enc;
    enc.Begin();
    enc.AddString(7, "/data/train/shard-00000.bin", 27);
    enc.AddEvents(4242, events.data(), n);
    enc.Finish(&got);
    if (got != want) {
      state.SkipWithError("prototype output differs from BlockEncoder");
      return;
    }
  }
  DirectEncoder enc;
  dlprof::format::BlockFramer framer(3);
  std::vector<uint8_t> raw, out;
  size_t bytes = 0;
  for (auto _ : state) {
    enc.Begin();
    enc.AddString(7, "/data/train/shard-00000.bin", 27);
    enc.AddEvents(4242, events.data(), events.size());
    enc.Finish(&raw);
    if (framed) {
      const dlprof::format::BlockSpan span{events.front().start_ns,
                                           events.back().start_ns + events.back().dur_ns, 0};
      framer.Frame(raw, static_cast<uint32_t>(n), 0, span, &out);
      bytes = out.size();
    } else {
      bytes = raw.size();
    }
    benchmark::DoNotOptimize(bytes);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
  state.counters["bytes_per_event"] =
      benchmark::Counter(static_cast<double>(bytes) / static_cast<double>(n));
}
void BM_EncodeSeqDirect(benchmark::State& s) { DirectBench(s, false, false); }
void BM_EncodeSeqDirectFramed(benchmark::State& s) { DirectBench(s, false, true); }
BENCHMARK(BM_EncodeSeqDirect)->Arg(2048)->Arg(65536);
BENCHMARK(BM_EncodeSeqDirectFramed)->Arg(2048)->Arg(16384)->Arg(65536);

}  // namespace

BENCHMARK_MAIN();
