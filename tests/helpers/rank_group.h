// A rank group built by hand in memory for the rank meter's tests
// (wait_causes_test.cc, checkpoint_meter_test.cc): process 0 is the main
// process, 1.. its loader workers; each event is added with the name of what
// it is (a batch wait, a fetch, a read of a data file, a save...) and
// Measure() hands them to a RankMeter in stream order.
#ifndef DLPROF_TESTS_HELPERS_RANK_GROUP_H_
#define DLPROF_TESTS_HELPERS_RANK_GROUP_H_

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "lib/analysis/findings/verdict.h"
#include "lib/analysis/meters/rank_meter.h"
#include "lib/read/trace_set.h"
#include "tests/helpers/trace_builder.h"

namespace dlprof::testing {
using namespace dlprof::analysis;
using namespace dlprof::read;

namespace rank_group {
// The strings every process of a RankGroup has, by id.
constexpr uint32_t kLoad = 1, kFetch = 2, kBatch = 3, kData = 4, kCode = 5, kOther = 6, kPin = 7,
                   kIter = 8, kEnd = 9, kFirstPass = 10, kSecondPass = 11, kStep = 12,
                   kSave = 13, kRestore = 14, kCheckpoint = 15, kSample = 16, kCollate = 17,
                   kDecode = 18, kBlur = 19, kCrop = 20, kFirstPersistentPass = 21,
                   kSecondPersistentPass = 22;
}  // namespace rank_group
using namespace rank_group;

// A rank group held in memory: process 0 is the main process, 1.. workers.
class RankGroup {
 public:
  explicit RankGroup(int workers) {
    for (int i = 0; i <= workers; ++i) {
      ProcessTrace p;
      p.info.pid = 100 + i;
      p.info.ppid = i == 0 ? 1 : 100;
      p.strings[kLoad] = "load_batch";
      p.strings[kFetch] = "fetch_batch";
      p.strings[kBatch] = "batch";
      p.strings[kData] = "/data/train/shard" + std::to_string(i) + ".bin";
      p.strings[kCode] = "/usr/lib/python3/dist-packages/torch/__init__.py";
      p.strings[kOther] = "other_flow";
      p.strings[kPin] = "pin_batch";
      p.strings[kIter] = "loader_iter";
      p.strings[kEnd] = "end loader=0";
      p.strings[kFirstPass] = "epoch loader=0 pass=0";
      p.strings[kSecondPass] = "epoch loader=0 pass=1";
      p.strings[kFirstPersistentPass] = "epoch loader=0 pass=0 persistent=1";
      p.strings[kSecondPersistentPass] = "epoch loader=0 pass=1 persistent=1";
      p.strings[kStep] = "optimizer_step";
      p.strings[kSave] = "save_checkpoint";
      p.strings[kRestore] = "load_checkpoint";
      p.strings[kCheckpoint] = "/runs/job/checkpoint.pt";
      p.strings[kSample] = "sample";
      p.strings[kCollate] = "collate";
      p.strings[kDecode] = "decode";
      p.strings[kBlur] = "transform GaussianBlur";
      p.strings[kCrop] = "transform RandomResizedCrop";
      set_.processes.push_back(std::move(p));
    }
  }

  // Another process of the rank with process 0's strings (a later
  // attempt's main process, one its launcher restarted): its index.
  uint32_t AddProcess(int32_t pid, int32_t ppid) {
    ProcessTrace p;
    p.info.pid = pid;
    p.info.ppid = ppid;
    p.strings = set_.processes[0].strings;
    set_.processes.push_back(std::move(p));
    return static_cast<uint32_t>(set_.processes.size() - 1);
  }
  // Gives string `id` the text `name` in every process (a test's own marks).
  void Name(uint32_t id, const std::string& name) {
    for (ProcessTrace& p : set_.processes) p.strings[id] = name;
  }
  // (`main`: the main process it is in, 0 or one AddProcess made.)
  void Wait(uint64_t start, uint64_t end, uint32_t main = 0) {
    Add(main, EventKind::AppRegion, start, end - start, kLoad);
  }
  // iter(loader) in the main process, and the mark naming its pass.
  void Iter(uint64_t start, uint64_t end, uint32_t pass_mark, uint32_t main = 0) {
    Add(main, EventKind::AppRegion, start, end - start, kIter);
    Add(main, EventKind::AppMark, start + 1, 0, pass_mark);
  }
  // The mark of a request that found its pass over, inside its wait.
  void PassEnd(uint64_t at, uint32_t main = 0) { Add(main, EventKind::AppMark, at, 0, kEnd); }
  void Step(uint64_t start, uint64_t end) { Add(0, EventKind::AppRegion, start, end - start, kStep); }
  void Fetch(uint32_t worker, uint64_t start, uint64_t end) {
    Add(worker, EventKind::AppRegion, start, end - start, kFetch);
  }
  void Pin(uint32_t process, uint64_t start, uint64_t end) {
    Add(process, EventKind::AppRegion, start, end - start, kPin);
  }
  void Read(uint32_t process, uint64_t start, uint64_t end, uint32_t file = kData,
            int32_t tid = 0) {
    Add(process, EventKind::Pread64, start, end - start, file, 0, tid);
  }
  void Write(uint32_t process, uint64_t start, uint64_t end, uint32_t file = kData,
             uint64_t bytes = 4096, int32_t tid = 0) {
    Add(process, EventKind::Pwrite64, start, end - start, file, 0, tid, bytes);
  }
  // A page fault on a mapped file (issue 49), held [start, end).
  void Fault(uint32_t process, uint64_t start, uint64_t end, uint32_t file = kData) {
    Add(process, EventKind::MajorFault, start, end - start, file);
  }
  // dataset[index] in a worker: the bootstrap's sample region and counter.
  void Sample(uint32_t worker, uint64_t start, uint64_t end, int64_t index) {
    Add(worker, EventKind::AppRegion, start, end - start, kSample);
    Add(worker, EventKind::AppCounter, start + 1, 0, kSample, static_cast<uint64_t>(index));
  }
  // Any event: a region (`file` its name), a mark, a call on a file.
  void Call(uint32_t process, EventKind kind, uint64_t start, uint64_t end, uint32_t file,
            int32_t tid = 0) {
    Add(process, kind, start, end - start, file, 0, tid);
  }
  // A sendfile of `bytes` from file `from` into file `to`.
  void Copy(uint32_t process, uint64_t start, uint64_t end, uint32_t from, uint32_t to,
            uint64_t bytes) {
    Add(process, EventKind::Sendfile64, start, end - start, from, to, 0, bytes);
  }
  // An open of `file` with the call's O_* `flags`.
  void Open(uint32_t process, uint64_t start, uint64_t end, uint32_t file, uint64_t flags) {
    Add(process, EventKind::Openat, start, end - start, file, flags);
  }
  // A batch flow: started in a worker's fetch, finished in the wait.
  void Flow(uint32_t worker, uint64_t started, uint64_t finished, uint64_t id,
            uint32_t name = kBatch) {
    Add(worker, EventKind::AppFlowStart, started, 0, name, id);
    Add(0, EventKind::AppFlowFinish, finished, 0, name, id);
  }

  // The group's figures, as the rank meter measures its merged stream.
  RankFigures Measure() {
    std::vector<std::pair<uint64_t, EventRef>> order;
    for (uint32_t p = 0; p < set_.processes.size(); ++p) {
      const auto& events = set_.processes[p].events;
      for (uint32_t i = 0; i < events.size(); ++i) order.push_back({events[i].start_ns, {p, i}});
    }
    std::stable_sort(order.begin(), order.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [t, r] : order) set_.merged.push_back(r);
    TraceSetSource source(set_);
    RankMeter meter(source.processes(), 0, "h", kDefaultBatchRegion);
    ForEachEvent(source, [&](const StreamEvent& e) { meter.Add(e, true); });
    return meter.Finish();
  }

 private:
  // `tid` 0: the process's main thread.
  void Add(uint32_t process, EventKind kind, uint64_t start, uint64_t dur, uint32_t file,
           uint64_t aux = 0, int32_t tid = 0, uint64_t bytes = 4096) {
    Event e = MakeEvent(kind, start, dur);
    e.file = file;
    e.aux = aux;
    e.fd = 3;
    e.size = bytes;
    e.ret = static_cast<int64_t>(bytes);
    ProcessTrace& p = set_.processes[process];
    p.events.push_back(e);
    p.tids.push_back(tid != 0 ? tid : p.info.pid);
    p.ranks.push_back(0);
  }

  TraceSet set_;
};

// The verdict of a run from 0 to `run_end_ns` whose one rank (0) measured `f`.
inline Verdict VerdictOfOneRank(const RankFigures& f, uint64_t run_end_ns) {
  Summary s;
  s.run_start_ns = 0;
  s.run_end_ns = run_end_ns;
  s.rank_figures.push_back(f);
  s.rank_figures[0].rank = 0;
  return ComputeVerdict(s);
}

// The finding of rule `rule` in `v` (the first), or null.
inline const Finding* FindingOf(const Verdict& v, const std::string& rule) {
  for (const Finding& x : v.findings) {
    if (x.rule == rule) return &x;
  }
  return nullptr;
}

}  // namespace dlprof::testing

#endif  // DLPROF_TESTS_HELPERS_RANK_GROUP_H_
