// Trace files read as one time-ordered stream, with memory bounded by the
// blocks that overlap in time rather than by the size of the trace.
//
// Each file's block headers state the time span of their events
// (docs/FORMAT.md). A file is merged from the blocks it has decoded so far,
// each sorted on its own; a block is decoded only when the merge reaches the
// start of its span, and freed when its last event has gone out:
//
//   file A  [blk0 ....][blk1 .....][blk2 .........]      decoded: the blocks
//   file B     [blk0 .......][blk1 ....]                 whose span holds
//                          ^ merge position              the merge position
//
// A block that holds an early long call (a read of a pipe that waited for
// seconds) is decoded early and kept until drained; blocks around it still
// come and go. Within one file the order is (start_ns, tid, file order);
// across files (start_ns, pid, tid, input order): the same on every run.
//
// Worker threads decode each file's next blocks (up to 64 Ki events ahead)
// while the calling thread merges: many files decode in parallel.
//
// A hostile file could state spans that make every block due at once: the
// blocks held for one file stop growing at its share of kMaxWindowEvents
// (the whole stream's; at least kMinWindowEvents a file), and the file is
// then merged out of order with a warning. The read-ahead is shared out the
// same way, so that a thousand files do not each decode 64 Ki events ahead.
//
// Traces of other clock domains (clock_domains.h) are merged on the job's
// time base: each file may have a DomainMap that its events' starts, and its
// blocks' spans, go through as they are read.
#ifndef DLPROF_LIB_READ_FILE_STREAM_H_
#define DLPROF_LIB_READ_FILE_STREAM_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lib/read/clock_domains.h"
#include "lib/read/event_source.h"

namespace dlprof::read {

// Events the files of one stream may hold decoded at once (about 300 MB),
// shared out among them, but never below kMinWindowEvents for one file.
constexpr size_t kMaxWindowEvents = size_t{4} << 20;
constexpr size_t kMinWindowEvents = size_t{8} << 10;  // a block of the default ring
// Bytes of strings (paths, names) kept for the files of one stream (shared
// out among them, never below kMinStringBytesPerFile for one file).
constexpr size_t kMaxStringBytesPerFile = size_t{256} << 20;
constexpr size_t kMinStringBytesPerFile = size_t{4} << 20;

class DecodePool;  // decode_pool.h

// One fewer than the processors: the calling thread merges and analyses.
unsigned DefaultDecodeThreads();

class FileStream : public EventSource {
 public:
  // Opens every file, reads its block headers (no payload yet) and closes
  // it: a file is open again only from its first block decoded to its last,
  // so the files open at once are those whose blocks overlap in time (not
  // every file of a job of ten thousand processes). A file that cannot be
  // opened gets an error message and holds no events; one gone by the time
  // its blocks are due, a note (below), as one gone before.
  // `threads` workers decode each file's next block ahead of the merge (0:
  // everything on the calling thread).
  // `maps` (optional, one per file, null entries allowed) place each file's
  // events on the job's time base; they must outlive the stream.
  // `ranks` (optional, one per file): the rank of a file whose header has
  // none, as the catalog found it (the rank the process gained later,
  // trace_catalog.h); events of blocks without a rank take their process's.
  // `read_before` (optional, one per file): the catalog read its header, or
  // listed it from a directory (CatalogEntry::vanished); one gone by now
  // was deleted since (a bounded trace's sweep drops old
  // segments as the job runs): a note, not an error.
  explicit FileStream(const std::vector<std::string>& files,
                      unsigned threads = DefaultDecodeThreads(),
                      size_t window_events = kMaxWindowEvents,
                      std::vector<const DomainMap*> maps = {},
                      const std::vector<int32_t>& ranks = {},
                      const std::vector<bool>& read_before = {});
  ~FileStream() override;

  const std::vector<ProcessTrace>& processes() const override { return processes_; }
  size_t Next(StreamEvent* out, size_t max) override;

  // kBlockFlag* of any block of any file, from the headers.
  uint32_t block_flags() const { return block_flags_; }
  // Events the headers announce (damaged blocks will not deliver theirs).
  uint64_t announced_events() const { return announced_events_; }
  // The most events one file held decoded at once so far.
  size_t peak_window_events() const;
  // The most files that held decoded blocks at once so far (as of the last
  // call of Next): a file's are decoded once the merge reaches its first
  // event and freed once it has handed out its last.
  size_t peak_files_decoded() const { return peak_files_decoded_; }

 private:
  class FileMerge;
  // A file's place in the merge: its next event's (start, pid, tid), or,
  // until the merge reaches it, a bound below that (`settled` false): its
  // first block's earliest start, with tid INT32_MIN. A file is decoded
  // only once its bound comes to the top, so that a job of ten thousand
  // traces that each span the run does not hold ten thousand blocks.
  struct Head {
    uint64_t start;
    int32_t pid, tid;
    uint32_t process;
    bool settled;  // not part of the order
    bool operator>(const Head& o) const;
  };
  Head HeadOf(uint32_t process) const;
  void SiftDown();

  std::vector<ProcessTrace> processes_;
  std::unique_ptr<DecodePool> pool_;  // before files_: they point to it
  std::vector<std::unique_ptr<FileMerge>> files_;
  std::vector<Head> heap_;  // min-heap of the files' next events
  std::vector<uint32_t> entered_;  // files decoding or decoded, memory not yet released
  bool started_ = false;
  size_t peak_files_decoded_ = 0;
  uint32_t block_flags_ = 0;
  uint64_t announced_events_ = 0;
};

}  // namespace dlprof::read

#endif  // DLPROF_LIB_READ_FILE_STREAM_H_
