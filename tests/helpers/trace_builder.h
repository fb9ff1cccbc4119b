// Builds trace files from a list of events, with the same encoder, framer and
// header code the runtime uses, and can damage them on purpose. For decoder,
// dlprof-dump and runtime tests alike.
#ifndef DLPROF_TESTS_HELPERS_TRACE_BUILDER_H_
#define DLPROF_TESTS_HELPERS_TRACE_BUILDER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "dlprof/format.h"
#include "lib/format/block_codec.h"
#include "lib/format/trace_file.h"

namespace dlprof::testing {

// An event that carries nothing yet: no file, fd -1, offset -1.
Event MakeEvent(EventKind kind, uint64_t start_ns, uint64_t dur_ns = 0);

// pid 1234, ppid 1, no rank, host "node1", exe "/usr/bin/python3", cmdline
// "python3\0train.py".
format::ProcessInfo DefaultProcess();

struct ThreadRun {
  int32_t tid = 0;
  std::vector<Event> events;
};

struct BlockSpec {
  format::BlockInfo info;
  std::vector<format::StringEntry> strings;
  std::vector<ThreadRun> runs;
  uint32_t flags = 0;  // kBlockFlag*; see TraceSpec::final_block
  // Overrides for malformed blocks: the header's event count (default: the
  // events in `runs`) and the raw payload (default: encoded from the above).
  std::optional<uint32_t> event_count;
  std::optional<std::vector<uint8_t>> payload;

  size_t events() const;
};

struct TraceSpec {
  format::ProcessInfo process = DefaultProcess();
  std::vector<BlockSpec> blocks;
  bool final_block = true;  // flag the last block kBlockFlagFinal (clean exit)
  int zstd_level = 3;
};

// An encoded file and where its parts start, for tests that damage it.
struct TraceBytes {
  std::vector<uint8_t> bytes;
  size_t header_size = 0;
  std::vector<size_t> block_offsets;  // each block's BlockHeader
};

// Encodes `block` as the runtime would (BlockEncoder).
std::vector<uint8_t> EncodePayload(const BlockSpec& block);
TraceBytes BuildTrace(const TraceSpec& spec);

// Damage.
void FlipBit(std::vector<uint8_t>* bytes, size_t offset, int bit = 0);
// Edits the BlockHeader at `offset` and recomputes its header checksum, so
// the block gets past the header check and fails where the test wants.
void EditBlockHeader(std::vector<uint8_t>* bytes, size_t offset,
                     const std::function<void(BlockHeader*)>& edit);

// Fluent front end: blocks are started with Block() and filled in order.
//
//   TraceBuilder b;
//   b.Block().String(1, "/data/a").Events(1235, {e1, e2});
//   b.Block().Events(1235, {e3});
//   b.Write(dir.File("a.dlprof"));
class TraceBuilder {
 public:
  explicit TraceBuilder(format::ProcessInfo process = DefaultProcess());
  TraceBuilder& Block(const format::BlockInfo& info = {});
  TraceBuilder& String(uint32_t id, std::string text);
  TraceBuilder& Events(int32_t tid, std::vector<Event> events);
  TraceBuilder& NoFinal();  // as if the process was killed
  TraceSpec& spec() { return spec_; }
  BlockSpec& last_block();
  TraceBytes Build() const { return BuildTrace(spec_); }
  // Builds and writes to `path`; returns `path`. Fails the test on error.
  std::string Write(const std::string& path) const;

 private:
  TraceSpec spec_;
};

bool WriteFile(const std::string& path, const std::vector<uint8_t>& bytes);
// Reads a whole file; empty if it cannot be read.
std::vector<uint8_t> ReadFile(const std::string& path);

// What TraceReader makes of a file, collected for assertions.
struct ReadBack {
  bool opened = false;
  std::string open_error;
  format::ProcessInfo process;
  std::vector<format::DecodedBlock> blocks;
  std::vector<std::string> errors;  // one per damaged block
  uint64_t damaged_blocks = 0;
  bool saw_final = false;

  std::vector<Event> events() const;  // all blocks' events in file order
};
ReadBack ReadTrace(const std::string& path);

// EXPECT_TRUE(Contains(text, part)) prints both on failure (the tests link
// GoogleTest without gmock, so there is no HasSubstr).
::testing::AssertionResult Contains(const std::string& text, const std::string& part);

// A fresh directory under $TMPDIR (or /tmp), removed with its contents by
// the destructor.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  std::string File(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace dlprof::testing

#endif  // DLPROF_TESTS_HELPERS_TRACE_BUILDER_H_
