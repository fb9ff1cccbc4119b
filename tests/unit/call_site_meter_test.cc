// The streaming call sites, and the exporters' streamed stacks, must be the
// in-memory ones (BuildStackIndex + TopCallSites) on random traces: stacks
// right after their calls or missing,
// at another start, twice, empty or naming no string; modules described
// before and after the stacks, overlapping; several threads and processes;
// nested calls; and calls a filter leaves out.
#include "lib/analysis/meters/call_site_meter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

#include "tests/helpers/stream_order.h"
#include "tests/helpers/trace_builder.h"
#include "lib/read/event_labels.h"
#include "lib/read/file_stream.h"
#include "tests/helpers/summary_in_memory.h"

namespace dlprof::analysis {
using namespace dlprof::read;
namespace {

std::string StackString(const std::vector<uint64_t>& addresses) {
  std::string s;
  for (uint64_t a : addresses) {
    for (int b = 0; b < 8; ++b) s.push_back(static_cast<char>(a >> (8 * b)));
  }
  return s;
}

class RandomTrace {
 public:
  explicit RandomTrace(uint64_t seed) : rng_(seed) {
    const int processes = 1 + Pick(3);
    for (int p = 0; p < processes; ++p) {
      ProcessTrace t;
      t.info.pid = 100 + p;
      t.opened = true;
      t.strings[1] = "/lib/liba.so";
      t.strings[2] = "/lib/libb.so";
      t.strings[3] = "/usr/bin/prog";
      // Stacks 10..15: one to three addresses, in or out of the modules.
      for (uint32_t id = 10; id <= 15; ++id) {
        std::vector<uint64_t> a;
        for (uint64_t n = 1 + Pick(3); n > 0; --n) a.push_back(0x1000 * (1 + Pick(5)) + Pick(64));
        t.strings[id] = StackString(a);
      }
      t.strings[16] = "";  // a stack without frames; 17 names no string
      set_.processes.push_back(std::move(t));
      for (int i = static_cast<int>(Pick(150)); i > 0; --i) AddEvent(static_cast<uint32_t>(p));
    }
    testing::MergeInStreamOrder(&set_);
    for (size_t i = 0; i < set_.merged.size(); ++i) kept_.push_back(Pick(5) != 0);
  }

  TraceSet& set() { return set_; }
  bool kept(size_t i) const { return kept_[i]; }
  const std::vector<bool>& kept() const { return kept_; }

 private:
  void Push(uint32_t process, const Event& e, int32_t tid) {
    ProcessTrace& p = set_.processes[process];
    p.events.push_back(e);
    p.tids.push_back(tid);
    p.ranks.push_back(-1);
  }
  void AddEvent(uint32_t process) {
    const int32_t tid = set_.processes[process].info.pid * 10 + static_cast<int32_t>(Pick(2));
    Event e{};
    // The file's order is the order of start here (it is nearly so in a
    // real trace): both sides then see a stack first at the same time,
    // which is when its modules are looked up.
    now_ += 10 * Pick(3);
    e.start_ns = now_;
    e.offset = -1;
    e.fd = 3;
    if (Pick(12) == 0) {  // a module: [0x1000 * k, + 0x2000), described at start_ns
      e.kind = static_cast<uint16_t>(EventKind::ModuleMap);
      e.file = static_cast<uint32_t>(1 + Pick(3));
      e.aux = 0x1000 * (1 + Pick(4));
      e.size = 0x2000;
      e.offset = static_cast<int64_t>(Pick(2) * 0x400);  // load bias
      Push(process, e, tid);
      return;
    }
    const uint64_t pick = Pick(6);
    e.kind = static_cast<uint16_t>(pick == 0   ? EventKind::Write
                                   : pick == 1 ? EventKind::Fread
                                   : pick == 2 ? EventKind::Open
                                               : EventKind::Pread64);
    e.size = Pick(4096);
    e.ret = Pick(6) == 0 ? -1 : static_cast<int64_t>(e.size);
    e.aux = e.size / 3;
    e.dur_ns = Pick(100);
    e.flags = Pick(8) == 0 ? kEventFlagNested : 0;
    Push(process, e, tid);
    if (Pick(5) == 0) return;  // no stack
    Event st{};
    st.kind = static_cast<uint16_t>(EventKind::CallStack);
    st.start_ns = Pick(10) == 0 ? e.start_ns + 1 : e.start_ns;
    st.file = static_cast<uint32_t>(10 + Pick(8));
    Push(process, st, tid);
    if (Pick(10) == 0) Push(process, st, tid);  // a second stack: ignored
  }
  uint64_t Pick(uint64_t n) { return rng_() % n; }

  std::mt19937_64 rng_;
  TraceSet set_;
  std::vector<bool> kept_;
  uint64_t now_ = 0;
};

void ExpectSameSites(const std::vector<CallSiteStats>& want, const std::vector<CallSiteStats>& got,
                     const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(what + ", row " + std::to_string(i));
    EXPECT_EQ(got[i].site, want[i].site);
    EXPECT_EQ(got[i].ops, want[i].ops);
    EXPECT_EQ(got[i].bytes, want[i].bytes);
    EXPECT_EQ(got[i].time_ns, want[i].time_ns);
    EXPECT_EQ(got[i].read_bytes, want[i].read_bytes);
    EXPECT_EQ(got[i].write_bytes, want[i].write_bytes);
  }
}

TEST(CallSiteMeter, MatchesTheInMemoryCallSitesOnRandomTraces) {
  SymbolizeOptions options;
  options.use_addr2line = false;
  size_t rows = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    RandomTrace trace(seed);
    TraceSet& set = trace.set();
    const bool filtered = seed % 2 == 0;
    CallSiteMeter meter(set.processes, options);
    TraceSetSource source(set);
    size_t i = 0;
    ForEachEvent(source, [&](const StreamEvent& e) { meter.Add(e, !filtered || trace.kept(i++)); });

    const StackIndex index = BuildStackIndex(set, options);
    if (filtered) testing::KeepOnly(&set, trace.kept());
    const std::string what = "seed " + std::to_string(seed);
    for (CallSiteKey key : {CallSiteKey::kFunction, CallSiteKey::kModule}) {
      for (bool by_bytes : {false, true}) {
        const auto want = TopCallSites(set, index, key, by_bytes, seed % 3 == 0 ? 2 : 0);
        ExpectSameSites(want, meter.Top(key, by_bytes, seed % 3 == 0 ? 2 : 0), what);
        rows += want.size();
      }
    }
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GT(rows, 1000u);  // the traces do have call sites
}

}  // namespace
}  // namespace dlprof::analysis

namespace dlprof::analysis {
namespace {

// The exporters' stacks, streamed from trace files (EventLabels over
// BuildStackTable), against the in-memory index of the same files: each
// event's frames. Stacks follow their calls on a thread's run, with
// modules described before and after them; blocks split runs.
TEST(EventLabels, StacksMatchTheInMemoryIndexOnRandomFiles) {
  testing::ScratchDir dir;
  SymbolizeOptions options;
  options.use_addr2line = false;
  size_t with_stack = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    auto pick = [&rng](uint64_t n) { return rng() % n; };
    std::vector<std::string> files;
    for (int p = 0; p < 2; ++p) {
      format::ProcessInfo info = testing::DefaultProcess();
      info.pid = 100 + p;
      testing::TraceBuilder b(info);
      b.Block().String(1, "/lib/liba.so").String(2, "/usr/bin/prog");
      for (uint32_t id = 10; id <= 14; ++id) {
        std::vector<uint64_t> a;
        for (uint64_t n = 1 + pick(3); n > 0; --n) a.push_back(0x1000 * (1 + pick(4)) + pick(64));
        b.String(id, StackString(a));
      }
      uint64_t now = 1000;
      for (int block = 0; block < 4; ++block) {
        if (block > 0) b.Block();
        for (int32_t tid : {info.pid, info.pid + 1}) {
          std::vector<Event> run;
          for (int i = 0; i < 30; ++i) {
            now += 10 * pick(3);
            Event e = testing::MakeEvent(pick(10) == 0 ? EventKind::ModuleMap : EventKind::Pread64,
                                         now, pick(50));
            if (e.kind == static_cast<uint16_t>(EventKind::ModuleMap)) {
              e.file = static_cast<uint32_t>(1 + pick(2));
              e.aux = 0x1000 * (1 + pick(3));
              e.size = 0x2000;
              e.offset = 0;
              run.push_back(e);
              continue;
            }
            run.push_back(e);
            if (pick(4) == 0) continue;
            Event st = testing::MakeEvent(EventKind::CallStack, e.start_ns, 0);
            st.file = static_cast<uint32_t>(10 + pick(5));
            run.push_back(st);
          }
          b.Events(tid, run);
        }
      }
      files.push_back(b.Write(dir.File("s" + std::to_string(seed) + "-" + std::to_string(p) +
                                       ".dlprof")));
    }
    TraceSet set = LoadTraceSet(files, kMaxInMemoryEvents, 0);
    const StackIndex index = BuildStackIndex(set, options);
    FileStream stream(files, 0);
    const StackTable table = BuildStackTable(stream.processes(), options);
    EventLabels labels(&stream, nullptr, &table);
    size_t i = 0;
    ForEachEvent(labels, [&](const StreamEvent& e) {
      ASSERT_LT(i, set.merged.size());
      const Stack* want = index.Of(set.merged[i]);
      ASSERT_EQ(e.stack != nullptr, want != nullptr) << "seed " << seed << ", event " << i;
      if (want != nullptr) {
        ASSERT_EQ(e.stack->frames.size(), want->frames.size());
        for (size_t f = 0; f < want->frames.size(); ++f) {
          EXPECT_EQ(e.stack->frames[f].Format(), want->frames[f].Format()) << "seed " << seed;
        }
        ++with_stack;
      }
      ++i;
    });
    EXPECT_EQ(i, set.merged.size());
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_GT(with_stack, 5000u);
}

}  // namespace
}  // namespace dlprof::analysis
