// Unit tests of the decoder side of annotations and stacks
// (tools/dump/regions.cc, tools/dump/stacks.cc), the NVTX injection plan and
// the annotation header in a process without dlprof.
#include <gtest/gtest.h>
#include <link.h>
#include <unistd.h>

#include <cerrno>

#include <cstring>
#include <string>
#include <vector>

#include "dlprof/catalogue.h"
#include "dlprof/dlprof.h"
#include "lib/core/nvtx_injection.h"
#include "lib/analysis/summary/call_sites.h"
#include "tests/helpers/region_breakdown.h"
#include "lib/read/regions.h"
#include "lib/read/stacks.h"
#include "lib/read/trace_set.h"
#include "tests/helpers/summary_in_memory.h"

extern "C" __attribute__((noinline, used)) int dlprof_unit_marker_function(int x) {
  return x * 3 + 1;
}

namespace dlprof {
namespace {

using read::AssignRegions;
using read::RegionAssignment;
using analysis::RegionBreakdown;
using read::RegionOptions;
using read::RegionPick;
using analysis::RegionStats;
using read::TraceSet;

// --- building synthetic traces ----------------------------------------------------

struct Builder {
  TraceSet set;

  uint32_t Process(int32_t pid, int32_t ppid) {
    read::ProcessTrace p;
    p.info.pid = pid;
    p.info.ppid = ppid;
    p.opened = true;
    set.processes.push_back(std::move(p));
    return static_cast<uint32_t>(set.processes.size() - 1);
  }
  uint32_t String(uint32_t process, const std::string& s) {
    auto& strings = set.processes[process].strings;
    for (auto& [id, text] : strings) {
      if (text == s) return id;
    }
    uint32_t id = static_cast<uint32_t>(strings.size() + 1);
    strings[id] = s;
    return id;
  }
  Event& Add(uint32_t process, int32_t tid, EventKind kind, uint64_t start, uint64_t dur) {
    auto& p = set.processes[process];
    Event e{};
    e.kind = static_cast<uint16_t>(kind);
    e.start_ns = start;
    e.dur_ns = dur;
    e.offset = -1;
    e.fd = -1;
    p.events.push_back(e);
    p.tids.push_back(tid);
    p.ranks.push_back(-1);
    return p.events.back();
  }
  void Region(uint32_t process, int32_t tid, const std::string& name, uint64_t start,
              uint64_t end, uint64_t depth) {
    uint32_t id = String(process, name);
    Event& e = Add(process, tid, EventKind::AppRegion, start, end - start);
    e.file = id;
    e.aux = depth;
  }
  void Read(uint32_t process, int32_t tid, uint64_t start, uint64_t dur, int64_t bytes) {
    Event& e = Add(process, tid, EventKind::Pread64, start, dur);
    e.ret = bytes;
    e.size = static_cast<uint64_t>(bytes);
    e.fd = 3;
    e.offset = 0;
  }
  // Sorts every process's events by time (regions are recorded at their end,
  // but the order the decoder merges by is the start) and merges.
  TraceSet& Done() {
    set.merged.clear();
    for (uint32_t p = 0; p < set.processes.size(); ++p) {
      for (uint32_t i = 0; i < set.processes[p].events.size(); ++i) set.merged.push_back({p, i});
    }
    std::stable_sort(set.merged.begin(), set.merged.end(), [this](const auto& a, const auto& b) {
      return set.event(a).start_ns < set.event(b).start_ns;
    });
    return set;
  }
};

const RegionStats* Row(const std::vector<RegionStats>& rows, const std::string& name,
                       bool outside = false) {
  for (const auto& r : rows) {
    if (r.outside == outside && (outside || r.name == name)) return &r;
  }
  return nullptr;
}

std::string RegionOfEvent(const RegionAssignment& a, uint32_t process, uint32_t index) {
  const std::string* n = a.NameOf({process, index});
  return n ? *n : "<none>";
}

// --- regions --------------------------------------------------------------------------

TEST(Regions, NestedOnOneThreadOutermostAndInnermost) {
  Builder b;
  uint32_t p = b.Process(100, 1);
  b.Region(p, 100, "epoch 0", 1000, 5000, 0);
  b.Region(p, 100, "load_batch", 1100, 2000, 1);
  b.Read(p, 100, 1200, 100, 4096);   // idx 2: in load_batch
  b.Region(p, 100, "step", 2000, 4000, 1);
  b.Read(p, 100, 2500, 50, 8192);    // idx 4: in step
  b.Read(p, 100, 4500, 10, 10);      // idx 5: in epoch only
  b.Read(p, 100, 6000, 10, 100);     // idx 6: outside
  TraceSet& set = b.Done();

  RegionAssignment outer = AssignRegions(set);
  EXPECT_EQ(RegionOfEvent(outer, p, 2), "epoch 0");
  EXPECT_EQ(RegionOfEvent(outer, p, 4), "epoch 0");
  EXPECT_EQ(RegionOfEvent(outer, p, 6), "<none>");
  auto rows = RegionBreakdown(set, outer);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].name, "epoch 0");
  EXPECT_EQ(rows[0].instances, 1u);
  EXPECT_EQ(rows[0].region_ns, 4000u);
  EXPECT_EQ(rows[0].read_ops, 3u);
  EXPECT_EQ(rows[0].read_bytes, 4096u + 8192u + 10u);
  EXPECT_EQ(rows[0].io_ns, 160u);
  EXPECT_TRUE(rows[1].outside);
  EXPECT_EQ(rows[1].read_bytes, 100u);
  EXPECT_EQ(rows[0].stall_ns, 0u);  // no GPU in the trace

  RegionOptions inner;
  inner.pick = RegionPick::kInnermost;
  RegionAssignment in = AssignRegions(set, inner);
  EXPECT_EQ(RegionOfEvent(in, p, 2), "load_batch");
  EXPECT_EQ(RegionOfEvent(in, p, 4), "step");
  EXPECT_EQ(RegionOfEvent(in, p, 5), "epoch 0");
  auto irows = RegionBreakdown(set, in);
  ASSERT_NE(Row(irows, "load_batch"), nullptr);
  EXPECT_EQ(Row(irows, "load_batch")->read_bytes, 4096u);
  EXPECT_EQ(Row(irows, "step")->read_bytes, 8192u);
  EXPECT_EQ(Row(irows, "epoch 0")->read_bytes, 10u);
}

TEST(Regions, OtherThreadsAndChildProcessesFallBackToTheProcessAndParent) {
  Builder b;
  uint32_t parent = b.Process(100, 1);
  uint32_t child = b.Process(200, 100);
  uint32_t stranger = b.Process(300, 1);
  b.Region(parent, 100, "epoch 1", 1000, 9000, 0);
  b.Region(parent, 101, "prefetch", 2000, 3000, 0);
  b.Read(parent, 101, 2500, 10, 1);  // its own thread's region wins
  b.Read(parent, 102, 2500, 10, 2);  // another thread: the process's outermost
  b.Read(child, 200, 5000, 10, 3);   // a worker: the parent's region
  b.Read(stranger, 300, 5000, 10, 4);
  TraceSet& set = b.Done();
  RegionAssignment a = AssignRegions(set);
  EXPECT_EQ(RegionOfEvent(a, parent, 2), "prefetch");
  EXPECT_EQ(RegionOfEvent(a, parent, 3), "epoch 1");
  EXPECT_EQ(RegionOfEvent(a, child, 0), "epoch 1");
  EXPECT_EQ(RegionOfEvent(a, stranger, 0), "<none>");

  RegionOptions no_parent;
  no_parent.inherit_from_parent = false;
  RegionAssignment b2 = AssignRegions(set, no_parent);
  EXPECT_EQ(RegionOfEvent(b2, child, 0), "<none>");
}

TEST(Regions, AWorkersOwnRegionYieldsToItsParentsOutermost) {
  // A DataLoader worker reads inside its own fetch_batch: while its parent
  // is in an epoch, the outermost region holding the read is the epoch
  // (grandparent first: the furthest ancestor holding one); innermost, it
  // is fetch_batch; while no ancestor holds a region, fetch_batch either way.
  Builder b;
  uint32_t launcher = b.Process(50, 1);
  uint32_t loop = b.Process(100, 50);
  uint32_t worker = b.Process(200, 100);
  b.Region(launcher, 50, "job", 500, 6000, 0);
  b.Region(loop, 100, "epoch 0", 1000, 5000, 0);
  b.Region(worker, 200, "fetch_batch", 2000, 3000, 0);
  b.Region(worker, 200, "fetch_batch", 7000, 8000, 0);
  b.Read(worker, 200, 2500, 10, 1);  // under job > epoch 0 > fetch_batch
  b.Read(worker, 200, 7500, 10, 2);  // no ancestor region open
  b.Read(loop, 100, 4000, 10, 3);    // the loop's own: under job > epoch 0
  TraceSet& set = b.Done();
  RegionAssignment out = AssignRegions(set);
  EXPECT_EQ(RegionOfEvent(out, worker, 2), "job");
  EXPECT_EQ(RegionOfEvent(out, worker, 3), "fetch_batch");
  EXPECT_EQ(RegionOfEvent(out, loop, 1), "job");
  RegionOptions innermost;
  innermost.pick = RegionPick::kInnermost;
  RegionAssignment in = AssignRegions(set, innermost);
  EXPECT_EQ(RegionOfEvent(in, worker, 2), "fetch_batch");
  EXPECT_EQ(RegionOfEvent(in, worker, 3), "fetch_batch");
  EXPECT_EQ(RegionOfEvent(in, loop, 1), "epoch 0");
}

TEST(Regions, DataStallIsTheRegionsIoWhileNoGpuIsBusy) {
  Builder b;
  uint32_t p = b.Process(100, 1);
  b.Region(p, 100, "step", 0, 10000, 0);
  Event& k = b.Add(p, 100, EventKind::CudaKernel, 1000, 2000);  // busy 1000..3000
  k.fd = 0;
  Event& k2 = b.Add(p, 100, EventKind::CudaKernel, 8000, 1000);  // window ends 9000
  k2.fd = 0;
  b.Read(p, 100, 2000, 2000, 64);  // 2000..4000: 1000 busy, 1000 stall
  b.Read(p, 101, 3500, 1000, 64);  // 3500..4500 overlaps: union 2000..4500
  TraceSet& set = b.Done();
  auto rows = RegionBreakdown(set, AssignRegions(set));
  const RegionStats* step = Row(rows, "step");
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(step->io_busy_ns, 2500u);
  EXPECT_EQ(step->stall_ns, 1500u);
  EXPECT_EQ(step->io_ns, 3000u);
}

TEST(Regions, NvtxRangesWhenNoAnnotationRegions) {
  Builder b;
  uint32_t p = b.Process(100, 1);
  uint32_t id = b.String(p, "forward");
  Event& e = b.Add(p, 100, EventKind::NvtxRange, 100, 1000);
  e.file = id;
  b.Read(p, 100, 500, 10, 7);
  TraceSet& set = b.Done();
  RegionAssignment a = AssignRegions(set);
  EXPECT_EQ(RegionOfEvent(a, p, 1), "forward");
  ASSERT_EQ(a.regions.size(), 1u);
  EXPECT_TRUE(a.regions[0].nvtx);
  RegionOptions app_only;
  app_only.source = read::RegionSource::kApp;
  EXPECT_TRUE(AssignRegions(set, app_only).regions.empty());
}

// --- stacks ---------------------------------------------------------------------------

std::string StackBytes(const std::vector<uint64_t>& a) {
  std::string s(a.size() * 8, '\0');
  for (size_t i = 0; i < a.size(); ++i) std::memcpy(&s[i * 8], &a[i], 8);
  return s;
}

TEST(Stacks, AddressesRoundTrip) {
  std::vector<uint64_t> a = {0x1122334455667788ull, 0, 0x7f0000001000ull};
  EXPECT_EQ(read::StackAddresses(StackBytes(a)), a);
  EXPECT_TRUE(read::StackAddresses("abc").empty());
}

TEST(Stacks, FindModulePrefersTheLatestDescribedBeforeTheStack) {
  std::vector<read::ModuleRecord> m = {
      {"/a.so", 0x1000, 0x1000, 0x1000, 100},
      {"/b.so", 0x1000, 0x1000, 0x1000, 300},  // loaded at the same place later
      {"/c.so", 0x5000, 0x5000, 0x100, 500},
  };
  EXPECT_EQ(read::FindModule(m, 0x1800, 200)->path, "/a.so");
  EXPECT_EQ(read::FindModule(m, 0x1800, 400)->path, "/b.so");
  EXPECT_EQ(read::FindModule(m, 0x1800, 50)->path, "/a.so");  // described after: earliest
  EXPECT_EQ(read::FindModule(m, 0x5050, 0)->path, "/c.so");
  EXPECT_EQ(read::FindModule(m, 0x9000, 0), nullptr);
}

int FindExe(dl_phdr_info* info, size_t, void* data) {
  *static_cast<uint64_t*>(data) = info->dlpi_addr;
  return 1;  // the first entry is the executable
}

TEST(Stacks, ElfSymbolsOfThisExecutable) {
  read::ElfSymbols syms;
  ASSERT_TRUE(syms.Load("/proc/self/exe"));
  syms.Finish();
  EXPECT_GT(syms.size(), 10u);
  uint64_t bias = 0;
  dl_iterate_phdr(FindExe, &bias);
  const uint64_t addr = reinterpret_cast<uint64_t>(&dlprof_unit_marker_function);
  const std::string* name = syms.Lookup(addr - bias + 3);  // inside the function
  ASSERT_NE(name, nullptr);
  EXPECT_EQ(*name, "dlprof_unit_marker_function");
  EXPECT_EQ(read::Demangle("_ZN6dlprof4read8DemangleERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"),
            "dlprof::read::Demangle(std::__cxx11::basic_string<char, std::char_traits<char>, "
            "std::allocator<char> > const&)");
  EXPECT_EQ(read::Demangle("read"), "read");
  EXPECT_FALSE(syms.Load("/nonexistent/file"));
}

TEST(Stacks, AttachesEachStackToThePrecedingEventOfItsThread) {
  Builder b;
  uint32_t p = b.Process(100, 1);
  uint64_t bias = 0;
  dl_iterate_phdr(FindExe, &bias);
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  ASSERT_GT(n, 0);
  exe[n] = '\0';
  const uint64_t fn = reinterpret_cast<uint64_t>(&dlprof_unit_marker_function);
  // The module map: this executable, a big range around the function.
  Event& m = b.Add(p, 100, EventKind::ModuleMap, 50, 0);
  m.file = b.String(p, exe);
  m.offset = static_cast<int64_t>(bias);
  m.aux = fn - 0x1000;
  m.size = 0x100000;
  b.Read(p, 100, 100, 10, 1);                    // 1: gets stack A
  // Add() may grow the event vector: keep no reference across calls.
  const uint32_t stack_a = b.String(p, StackBytes({fn + 4, 0x10}));
  b.Add(p, 100, EventKind::CallStack, 100, 0).file = stack_a;
  b.Read(p, 101, 150, 10, 2);                    // 3: another thread, no stack
  b.Read(p, 100, 200, 10, 3);                    // 4: gets stack A again (same id)
  b.Add(p, 100, EventKind::CallStack, 200, 0).file = stack_a;
  b.Read(p, 100, 300, 10, 4);                    // 6: no stack: next one has another time
  b.Add(p, 100, EventKind::CallStack, 999, 0).file = stack_a;
  TraceSet& set = b.Done();
  read::SymbolizeOptions o;
  o.use_addr2line = false;
  read::StackIndex idx = read::BuildStackIndex(set, o);
  EXPECT_EQ(idx.stack_count(), 1u);
  const read::Stack* a = idx.Of({p, 1});
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(idx.Of({p, 4}), a);
  EXPECT_EQ(idx.Of({p, 3}), nullptr);
  EXPECT_EQ(idx.Of({p, 6}), nullptr);
  ASSERT_EQ(a->frames.size(), 2u);
  EXPECT_EQ(a->frames[0].function, "dlprof_unit_marker_function");
  EXPECT_EQ(a->frames[0].offset, fn + 4 - bias);
  EXPECT_EQ(a->frames[0].Site(),
            "dlprof_unit_marker_function (" + a->frames[0].ModuleName() + ")");
  EXPECT_EQ(a->frames[1].Format(), "?? (0x10)");

  auto sites = analysis::TopCallSites(set, idx, analysis::CallSiteKey::kFunction, true, 0);
  ASSERT_EQ(sites.size(), 1u);
  EXPECT_EQ(sites[0].ops, 2u);
  EXPECT_EQ(sites[0].bytes, 4u);
}

// --- NVTX injection plan --------------------------------------------------------------

TEST(NvtxInjection, Plan) {
  core::NvtxInjectionInputs in;
  in.app_enabled = true;
  in.self = "/opt/dlprof/lib/libdlprof.so";
  EXPECT_EQ(core::PlanNvtxInjection(in).action, core::NvtxInjectionAction::kSet);
  in.current = "/opt/dlprof/lib/libdlprof.so";
  in.current_is_self = true;
  EXPECT_EQ(core::PlanNvtxInjection(in).action, core::NvtxInjectionAction::kKeep);
  in.current = "/opt/nsight/libToolsInjection64.so";
  in.current_is_self = false;
  auto plan = core::PlanNvtxInjection(in);
  EXPECT_EQ(plan.action, core::NvtxInjectionAction::kConflict);
  EXPECT_NE(plan.message.find("NVTX_INJECTION64_PATH"), std::string::npos);
  in.warned_before = true;
  EXPECT_TRUE(core::PlanNvtxInjection(in).message.empty());
  in.app_enabled = false;
  EXPECT_EQ(core::PlanNvtxInjection(in).action, core::NvtxInjectionAction::kNone);
  in.current = "/opt/dlprof/lib/libdlprof.so";
  in.current_is_self = true;
  EXPECT_EQ(core::PlanNvtxInjection(in).action, core::NvtxInjectionAction::kUnset);
  in.app_enabled = true;
  in.current = nullptr;
  in.current_is_self = false;
  in.self.clear();
  EXPECT_EQ(core::PlanNvtxInjection(in).action, core::NvtxInjectionAction::kNone);
}

// --- the header without the library ---------------------------------------------------

TEST(Header, EveryCallIsANoOpWithoutTheLibrary) {
  errno = 42;
  dlprof_region_begin("x");
  dlprof_mark("m");
  dlprof_counter("c", 1);
  dlprof_counter_double("d", 0.5);
  dlprof_flow_start("f", 1);
  dlprof_flow_finish("f", 1);
  dlprof_region_end();
  dlprof_region_end();
  { dlprof::Region r("scope"); }
  EXPECT_EQ(dlprof_active(), 0);
  EXPECT_EQ(errno, 42);
}

}  // namespace
}  // namespace dlprof
