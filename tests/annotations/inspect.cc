// dlprof_annotations_inspect: prints what tools/dump/stacks.cc and
// tools/dump/regions.cc make of a trace, as JSON lines, for the tests in this
// directory (and as a model of how dlprof-dump presents them).
//
//   dlprof_annotations_inspect [--no-addr2line] [--innermost] TRACE_OR_DIR...
//
// One object per event that is not a stack record:
//   {"type":"event","ts":..,"dur":..,"pid":..,"tid":..,"cat":"posix","name":"pread64",
//    "path":"..","bytes":N,"aux":N,"region":"epoch 0"|null,"stack":["f (mod+0x..)",..]}
// then {"type":"region_stats",...} rows and {"type":"call_site",...} rows
// (by function and by module, sorted by bytes).
#include <cstdio>
#include <string>
#include <vector>

#include "dlprof/catalogue.h"
#include "lib/text/text.h"
#include "lib/analysis/summary/call_sites.h"
#include "tests/helpers/region_breakdown.h"
#include "lib/read/regions.h"
#include "lib/read/stacks.h"
#include "lib/read/trace_set.h"
#include "tests/helpers/summary_in_memory.h"

using namespace dlprof;
using namespace dlprof::read;
using namespace dlprof::analysis;
using namespace dlprof::text;

namespace {

std::string Json(const std::string& s) {
  std::string out;
  AppendJsonString(&out, s);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  SymbolizeOptions sym;
  RegionOptions ro;
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--no-addr2line") {
      sym.use_addr2line = false;
    } else if (a == "--innermost") {
      ro.pick = RegionPick::kInnermost;
    } else if (a == "--nvtx") {
      ro.source = RegionSource::kNvtx;
    } else {
      inputs.push_back(a);
    }
  }
  std::vector<std::string> errors;
  std::vector<std::string> files = ExpandInputs(inputs, &errors);
  for (const auto& e : errors) fprintf(stderr, "%s\n", e.c_str());
  TraceSet set = LoadTraceSet(files);
  for (const auto& p : set.processes) {
    for (const auto& m : p.messages) fprintf(stderr, "%s: %s\n", p.path.c_str(), m.c_str());
  }
  StackIndex stacks = BuildStackIndex(set, sym);
  RegionAssignment regions = AssignRegions(set, ro);

  std::string line;
  for (const EventRef& r : set.merged) {
    const ProcessTrace& p = set.processes[r.process];
    const Event& e = p.events[r.index];
    if (IsStackRecord(e.kind)) continue;
    const EventKindInfo* k = LookupKind(e.kind);
    line = "{\"type\":\"event\",\"ts\":" + std::to_string(e.start_ns) +
           ",\"dur\":" + std::to_string(e.dur_ns) + ",\"pid\":" + std::to_string(p.info.pid) +
           ",\"ppid\":" + std::to_string(p.info.ppid) + ",\"tid\":" +
           std::to_string(p.tids[r.index]) + ",\"cat\":" +
           Json(k ? CategoryName(k->category) : "unknown") + ",\"name\":" +
           Json(k ? k->name : "kind_" + std::to_string(e.kind));
    if (e.file != 0) {
      auto s = p.strings.find(e.file);
      line += ",\"path\":" + Json(s != p.strings.end() ? s->second : "?");
    }
    line += ",\"fd\":" + std::to_string(e.fd) + ",\"offset\":" + std::to_string(e.offset) +
            ",\"size\":" + std::to_string(e.size) + ",\"ret\":" + std::to_string(e.ret) +
            ",\"aux\":" + std::to_string(e.aux) + ",\"nested\":" +
            ((e.flags & kEventFlagNested) ? "true" : "false") + ",\"io\":" +
            (CountsAsIo(e) ? "true" : "false");
    if (CountsAsIo(e)) line += ",\"bytes\":" + std::to_string(BytesMoved(e));
    const std::string* region = regions.NameOf(r);
    line += ",\"region\":" + (region ? Json(*region) : std::string("null"));
    if (const Stack* st = stacks.Of(r)) {
      line += ",\"stack\":[";
      for (size_t i = 0; i < st->frames.size(); ++i) {
        line += (i ? "," : "") + Json(st->frames[i].Format());
      }
      line += "],\"site\":" + Json(st->frames.empty() ? "" : st->frames[0].Site());
    }
    line += "}\n";
    fputs(line.c_str(), stdout);
  }
  for (const RegionStats& s : RegionBreakdown(set, regions)) {
    printf("{\"type\":\"region_stats\",\"name\":%s,\"outside\":%s,\"instances\":%llu,"
           "\"region_ns\":%llu,\"io_ops\":%llu,\"io_ns\":%llu,\"read_ops\":%llu,"
           "\"write_ops\":%llu,\"read_bytes\":%llu,\"write_bytes\":%llu,\"io_busy_ns\":%llu,"
           "\"stall_ns\":%llu}\n",
           Json(s.name).c_str(), s.outside ? "true" : "false",
           (unsigned long long)s.instances, (unsigned long long)s.region_ns,
           (unsigned long long)s.io_ops, (unsigned long long)s.io_ns,
           (unsigned long long)s.read_ops, (unsigned long long)s.write_ops,
           (unsigned long long)s.read_bytes, (unsigned long long)s.write_bytes,
           (unsigned long long)s.io_busy_ns, (unsigned long long)s.stall_ns);
  }
  for (CallSiteKey key : {CallSiteKey::kFunction, CallSiteKey::kModule}) {
    for (const CallSiteStats& c : TopCallSites(set, stacks, key, /*by_bytes=*/true, 0)) {
      printf("{\"type\":\"call_site\",\"by\":\"%s\",\"site\":%s,\"ops\":%llu,\"bytes\":%llu,"
             "\"time_ns\":%llu,\"read_bytes\":%llu,\"write_bytes\":%llu}\n",
             key == CallSiteKey::kFunction ? "function" : "module", Json(c.site).c_str(),
             (unsigned long long)c.ops, (unsigned long long)c.bytes,
             (unsigned long long)c.time_ns, (unsigned long long)c.read_bytes,
             (unsigned long long)c.write_bytes);
    }
  }
  printf("{\"type\":\"totals\",\"stacks\":%zu,\"regions\":%zu,\"processes\":%zu}\n",
         stacks.stack_count(), regions.regions.size(), set.processes.size());
  return set.clean() && errors.empty() ? 0 : 1;
}
