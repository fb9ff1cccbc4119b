// Inside the loader's fetches (docs/ANALYSIS_LOADER.md, "Inside the loader"): what
// a worker's fetch of a batch spent its time on, from the regions the
// PyTorch bootstrap records inside it (python/dlprof/_torch.py):
//
//   fetch_batch [.................................................]
//     sample [..... decode [...] transform Resize [..] ...] sample [...] collate [..]
//     (counter "sample" = the index, at each sample's start)
//
// Each fetch's preprocessing (its time less its reading: the data I/O in
// it, calls and page faults on mapped data files) is split into parts: a
// transform's, `decode`'s and `collate`'s time less the parts nested in
// them and the reading inside them, and the rest,
// the dataset's own code (`dataset`: __getitem__ beyond what the bootstrap
// names, a custom pipeline). Each sample is kept with its index, duration,
// pass and the files it read, the slowest of the rank in a bounded list
// (kKeptSamples) and the slowest of each fetch in its record.
//
// A FetchParts lives inside the rank meter (rank_meter.h) and sees the
// group's events in stream order; a fetch's record is ready once the stream
// has passed its end (Advance), and is taken once (Take) by the wait that
// received its batch (wait_causes.h). Memory: the regions open on each
// thread, the records not yet taken (at most kKeptRecords) and the kept
// samples; never the events.
#ifndef DLPROF_LIB_ANALYSIS_FETCH_PARTS_H_
#define DLPROF_LIB_ANALYSIS_FETCH_PARTS_H_

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "lib/read/event_source.h"

namespace dlprof::analysis {
using namespace dlprof::read;

// One sample a worker made: dataset[index] inside a fetch.
struct SampleRecord {
  int64_t index = -1;      // -1: not known (a dataset of batches, an iterable one)
  uint64_t ns = 0;         // how long dataset[index] took
  uint64_t pass = 0;       // the rank's pass over its loader (loader_iter regions before it)
  int32_t pid = 0;         // the worker
  uint64_t start_ns = 0;
  std::vector<std::string> files;  // data files it read, by calls or maps (at most kSampleFiles)
};

// What one fetch spent its time on.
struct FetchRecord {
  uint32_t process = 0;
  uint64_t start = 0, end = 0;
  uint64_t reading_ns = 0;  // data I/O in it
  // Its preprocessing by part (index into FetchParts::part_names()): they
  // add up to its length less reading_ns.
  std::vector<std::pair<uint32_t, uint64_t>> parts;
  uint64_t samples = 0;
  SampleRecord slowest;  // its slowest sample
  uint64_t batch_bytes = 0;  // its tensors' bytes (the bootstrap's batch_bytes counter)
};

class FetchParts {
 public:
  static constexpr size_t kKeptSamples = 256;  // the rank's slowest
  static constexpr size_t kKeptRecords = 1024;  // records waiting to be taken
  static constexpr size_t kSampleFiles = 2;
  // Part 0 is the dataset's own code.
  static constexpr uint32_t kDatasetPart = 0;

  explicit FetchParts(const std::vector<ProcessTrace>& processes);

  // Before each event, with its start: closes the regions that ended.
  void Advance(uint64_t now);
  // The regions of a worker's fetch, in stream order: the fetch itself, and
  // those inside it (`sample`, `collate`, `decode`, `transform NAME`).
  void AddFetch(const StreamEvent& e);
  void AddRegion(const StreamEvent& e, bool sample);
  // A counter event (the bootstrap's `sample` counter holds the index).
  void AddCounter(const StreamEvent& e);
  // A data I/O call, or a page fault on a mapped data file (wait_causes.h's:
  // reading), on the thread that made it.
  void AddDataIo(const StreamEvent& e);
  // The pass the next samples belong to.
  void set_pass(uint64_t pass) { pass_ = pass; }

  // The record of `process`'s fetch that began at `start`, once it ended;
  // false when there is none (not a recorded fetch, or already taken).
  bool Take(uint32_t process, uint64_t start, FetchRecord* out);
  const std::vector<std::string>& part_names() const { return part_names_; }
  // The rank's slowest samples, slowest first.
  std::vector<SampleRecord> SlowestSamples() const;

 private:
  enum class Kind : uint8_t { kFetch, kSample, kPart };
  struct Open {
    Open(Kind k, uint64_t s, uint64_t e) : kind(k), start(s), end(e) {}
    Kind kind;
    uint64_t start, end;
    uint32_t part = 0;        // kPart: its part
    uint64_t nested_ns = 0;   // kPart: the parts inside it
    uint64_t io_ns = 0;       // kPart: the reading inside it, outside nested parts
    SampleRecord sample;      // kSample
    FetchRecord fetch;        // kFetch
    std::vector<uint32_t> files;  // kSample: string ids read
  };
  using Stack = std::vector<Open>;  // one thread's open regions, outermost first

  Stack& ThreadStack(const StreamEvent& e);
  void Close(uint32_t process, Stack* stack);  // pops its innermost region
  uint32_t PartOf(const StreamEvent& e);       // a part region's part
  void KeepSample(const SampleRecord& s);

  const std::vector<ProcessTrace>& processes_;
  std::unordered_map<uint64_t, std::pair<uint32_t, Stack>>
      threads_;  // ThreadKey -> (process, regions)
  std::vector<std::string> part_names_;
  std::unordered_map<std::string, uint32_t> part_ids_;
  std::unordered_map<uint64_t, uint32_t> region_parts_;  // (process, string) -> part
  // (process, string) -> which counter: 0 another, 1 "sample", 2 "batch_bytes".
  std::unordered_map<uint64_t, uint8_t> counters_;
  std::deque<FetchRecord> records_;  // by end, not yet taken
  std::vector<SampleRecord> slowest_;  // a heap, the fastest on top, at most kKeptSamples
  uint64_t pass_ = 0;
  uint64_t next_close_ = UINT64_MAX;  // the earliest end of a region still open
};

}  // namespace dlprof::analysis

#endif  // DLPROF_LIB_ANALYSIS_FETCH_PARTS_H_
