// What dlprof-dump says of damaged input (issue: the reader's handling of
// bad input): bytes after a clean final block are no sign of a killed
// process; a damaged block whose header holds says how many events it
// lost; one file's damage is told in file order; and the summary (text,
// JSON) says what could not be decoded, as stderr and the exit status do.
// Traces are built by trace_builder, so the truth is known exactly.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <string>
#include <vector>

#include "lib/format/trace_file.h"
#include "tests/helpers/run_dump.h"
#include "tests/helpers/trace_builder.h"

namespace dlprof {
namespace {

using testing::Contains;
using testing::MakeEvent;
using testing::ScratchDir;
using testing::TraceBuilder;
using testing::TraceBytes;

using Result = testing::DumpResult;

// `args`: shell words (the scratch paths need no quoting).
Result Dump(const ScratchDir& dir, const std::string& args) { return testing::RunDump(dir, args); }

// Four blocks of 3, 4, 5 and 6 reads, a second apart; the last is final.
TraceBuilder FourBlocks() {
  TraceBuilder b;
  for (int i = 0; i < 4; ++i) {
    std::vector<Event> events;
    for (int k = 0; k < 3 + i; ++k) {
      events.push_back(MakeEvent(EventKind::Read, (i + 1) * 1000000000ull + k * 1000, 10));
    }
    b.Block().Events(1235, events);
  }
  return b;
}

size_t Lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// A trace followed by zero bytes (a file system that lost the race between
// size and data, a copy tool's padding) or by one stray byte: before, the
// reader took them for a block the process went on to write ("no end
// marker; process 1234 was killed or is still running", and a damaged
// block, exit 1), though the process had ended cleanly.
TEST(DamagedInputTest, BytesAfterTheEndMarkerLeaveTheProcessEndedCleanly) {
  ScratchDir dir;
  const TraceBytes clean = FourBlocks().Build();
  for (size_t extra : {size_t{4096}, size_t{1}, size_t{47}}) {
    std::vector<uint8_t> bytes = clean.bytes;
    bytes.resize(bytes.size() + extra, 0);
    const std::string path = dir.File("t.dlprof");
    ASSERT_TRUE(testing::WriteFile(path, bytes));
    const testing::ReadBack r = testing::ReadTrace(path);
    EXPECT_TRUE(r.saw_final) << extra;
    EXPECT_EQ(r.damaged_blocks, 0u) << extra;
    EXPECT_EQ(r.events().size(), 18u) << extra;
    const Result d = Dump(dir, "--format jsonl " + path);
    EXPECT_EQ(d.status, 0) << d.err;
    EXPECT_EQ(Lines(d.out), 18u);
    EXPECT_EQ(d.err, "warning: " + path + ": at byte " + std::to_string(clean.bytes.size()) +
                         ": " + std::to_string(extra) +
                         " trailing bytes after the end marker, no block in them; ignored (the "
                         "process ended cleanly before them)\n");
  }
  // A block begun after the end marker (its header whole, its payload torn:
  // a failed exec's process went on writing and was killed) still means
  // the process did not end there.
  std::vector<uint8_t> bytes = clean.bytes;
  const size_t last = clean.block_offsets.back();
  bytes.insert(bytes.end(), clean.bytes.begin() + static_cast<ptrdiff_t>(last),
               clean.bytes.begin() + static_cast<ptrdiff_t>(last + sizeof(BlockHeader) + 2));
  const std::string path = dir.File("torn.dlprof");
  ASSERT_TRUE(testing::WriteFile(path, bytes));
  const testing::ReadBack r = testing::ReadTrace(path);
  EXPECT_FALSE(r.saw_final);
  EXPECT_EQ(r.damaged_blocks, 1u);
}

// A block whose payload fails its checksum has a sound header, which
// counts its events: the message says how many are lost, as the torn
// block's does (before: "block checksum mismatch" alone).
TEST(DamagedInputTest, ABlockWithASoundHeaderSaysTheEventsItLost) {
  ScratchDir dir;
  TraceBytes t = FourBlocks().Build();
  testing::FlipBit(&t.bytes, t.block_offsets[1] + sizeof(BlockHeader) + 5);
  const std::string path = dir.File("t.dlprof");
  ASSERT_TRUE(testing::WriteFile(path, t.bytes));
  format::TraceReader reader;
  std::string error;
  ASSERT_TRUE(reader.Open(path, &error)) << error;
  format::DecodedBlock block;
  std::vector<std::string> errors;
  for (;;) {
    const auto status = reader.Next(&block, &error);
    if (status == format::TraceReader::Status::kEnd) break;
    if (status == format::TraceReader::Status::kDamaged) errors.push_back(error);
  }
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0], path + ": at byte " + std::to_string(t.block_offsets[1]) +
                           ": block checksum mismatch (its 4 events are lost); resuming at byte " +
                           std::to_string(t.block_offsets[2]));
  EXPECT_EQ(reader.lost_events(), 4u);
  EXPECT_EQ(reader.uncounted_damage(), 0u);
}

// Damage in a block header is found when the file is listed, damage in a
// payload when the block is decoded: before, the later block's error came
// first.
TEST(DamagedInputTest, OneFilesDamageIsToldInFileOrder) {
  ScratchDir dir;
  TraceBytes t = FourBlocks().Build();
  testing::FlipBit(&t.bytes, t.block_offsets[1] + sizeof(BlockHeader) + 5);  // payload
  testing::FlipBit(&t.bytes, t.block_offsets[2] + 1);                        // magic
  const std::string path = dir.File("t.dlprof");
  ASSERT_TRUE(testing::WriteFile(path, t.bytes));
  const Result d = Dump(dir, "--format jsonl " + path);
  EXPECT_EQ(d.status, 1);
  EXPECT_EQ(Lines(d.out), 3u + 6u);
  const size_t payload = d.err.find("at byte " + std::to_string(t.block_offsets[1]) + ": ");
  const size_t header = d.err.find("at byte " + std::to_string(t.block_offsets[2]) + ": ");
  ASSERT_NE(payload, std::string::npos) << d.err;
  ASSERT_NE(header, std::string::npos) << d.err;
  EXPECT_LT(payload, header) << d.err;
  EXPECT_TRUE(Contains(d.err, "2 damaged block(s) skipped (at least 4 events lost)"));
}

// A directory of one sound trace, one damaged (a block of 4 events lost)
// and one empty file (a process killed as it started): the summary counts
// two processes, and says what was lost in its text, first, and in its
// JSON's "input". Before: "3 processes" (the empty file one, "pid 0 ()"),
// and nothing of the loss but on stderr.
TEST(DamagedInputTest, TheSummarySaysWhatWasNotDecoded) {
  ScratchDir dir;
  format::ProcessInfo other = testing::DefaultProcess();
  other.pid = 4321;
  TraceBuilder(other).Block().Events(4321, {MakeEvent(EventKind::Read, 500, 10)})
      .Write(dir.File("b.dlprof"));
  TraceBytes t = FourBlocks().Build();
  testing::FlipBit(&t.bytes, t.block_offsets[1] + sizeof(BlockHeader) + 5);
  ASSERT_TRUE(testing::WriteFile(dir.File("c.dlprof"), t.bytes));
  ASSERT_TRUE(testing::WriteFile(dir.File("a-empty.dlprof"), {}));
  Result d = Dump(dir, "--summary --format json " + dir.path());
  EXPECT_EQ(d.status, 1);
  EXPECT_TRUE(Contains(d.out, "{\"processes\":2,\"events\":15,"));
  EXPECT_TRUE(Contains(d.out, "\"input\":{\"complete\":false,\"inputs_without_traces\":0,"
                              "\"unreadable_traces\":1,\"damaged_blocks\":1,\"events_lost\":4,"
                              "\"uncounted_blocks\":0,\"events_dropped\":0}"));
  d = Dump(dir, "--summary " + dir.path());
  EXPECT_EQ(d.status, 1);
  EXPECT_EQ(d.out.substr(0, d.out.find('\n') + 1),
            "input: 1 trace unreadable, 1 damaged block (4 events lost): figures are of what "
            "could be decoded\n");
  EXPECT_TRUE(Contains(d.out, ", 2 processes ("));
  // --pid of one: one process, the empty file none (the summary said 0
  // processes beside the process's own row: the empty file, "not kept",
  // was taken off the count too).
  d = Dump(dir, "--summary --format json --pid 4321 " + dir.path());
  EXPECT_TRUE(Contains(d.out, "{\"processes\":1,\"events\":1,")) << d.out.substr(0, 200);
  // Whole input: nothing said, and "complete".
  ASSERT_EQ(unlink(dir.File("a-empty.dlprof").c_str()), 0);
  ASSERT_EQ(unlink(dir.File("c.dlprof").c_str()), 0);
  d = Dump(dir, "--summary --format json " + dir.path());
  EXPECT_EQ(d.status, 0) << d.err;
  EXPECT_TRUE(Contains(d.out, "\"input\":{\"complete\":true,"));
  d = Dump(dir, "--summary " + dir.path());
  EXPECT_EQ(d.out.find("input:"), std::string::npos);
}

// Events the tracer dropped while it recorded (DLPROF_ON_FULL=drop, lost
// GPU or page-fault records), as its blocks count them: the input decodes
// whole (exit status 0), but the summary's figures are short of the run,
// and it says so first, and in its JSON's "input" -- of the processes it
// summarises. Before: only a warning on stderr; the summary said
// "complete" and counted 2 reads of 14.
TEST(DamagedInputTest, TheSummarySaysWhatTheTracerDropped) {
  ScratchDir dir;
  format::BlockInfo a, b;
  a.dropped_events = 5;
  b.dropped_events = 7;
  TraceBuilder().Block(a).Events(1234, {MakeEvent(EventKind::Read, 500, 10)})
      .Block(b).Events(1234, {MakeEvent(EventKind::Read, 900, 10)})
      .Write(dir.File("d.dlprof"));
  Result d = Dump(dir, "--summary --format json " + dir.path());
  EXPECT_EQ(d.status, 0) << d.err;
  EXPECT_TRUE(Contains(d.out, "\"input\":{\"complete\":false,\"inputs_without_traces\":0,"
                              "\"unreadable_traces\":0,\"damaged_blocks\":0,\"events_lost\":0,"
                              "\"uncounted_blocks\":0,\"events_dropped\":12}"))
      << d.out.substr(0, 400);
  d = Dump(dir, "--summary " + dir.path());
  EXPECT_EQ(d.status, 0);
  EXPECT_EQ(d.out.substr(0, d.out.find('\n') + 1),
            "input: 12 events dropped while tracing: figures are of what was recorded\n");
  // Another process, which dropped nothing, alone (--pid): its summary is
  // whole (it said the other's 12 dropped).
  format::ProcessInfo other = testing::DefaultProcess();
  other.pid = 4321;
  TraceBuilder(other).Block().Events(4321, {MakeEvent(EventKind::Read, 700, 10)})
      .Write(dir.File("e.dlprof"));
  d = Dump(dir, "--summary --format json --pid 4321 " + dir.path());
  EXPECT_TRUE(Contains(d.out, "\"input\":{\"complete\":true,")) << d.out.substr(0, 400);
  d = Dump(dir, "--summary --format json " + dir.path());
  EXPECT_TRUE(Contains(d.out, "\"events_dropped\":12}")) << d.out.substr(0, 400);
}

// A trace that did not open, in the directory of another run than the one
// summarised (DLPROF_DIR/<run id>/<host>/): that run's, not this one's. It
// was kept with whichever run was chosen, whose summary then said "input: 1
// trace unreadable" of a run that decoded whole.
TEST(DamagedInputTest, AnUnreadableTraceOfAnotherRunIsThatRunsLoss) {
  ScratchDir dir;
  for (const char* run : {"old-run", "new-run"}) {
    ASSERT_EQ(mkdir(dir.File(run).c_str(), 0700), 0);
    ASSERT_EQ(mkdir(dir.File(std::string(run) + "/node1").c_str(), 0700), 0);
  }
  format::ProcessInfo old_process = testing::DefaultProcess(), new_process = old_process;
  old_process.run_id = "old-run";
  new_process.run_id = "new-run";
  new_process.pid = 4321;
  new_process.clock_real_ns += 3600ull * 1000000000ull;  // an hour later
  TraceBuilder(old_process).Block().Events(1234, {MakeEvent(EventKind::Read, 500, 10)})
      .Write(dir.File("old-run/node1/a.dlprof"));
  TraceBuilder(new_process).Block().Events(4321, {MakeEvent(EventKind::Read, 500, 10)})
      .Write(dir.File("new-run/node1/b.dlprof"));
  ASSERT_TRUE(testing::WriteFile(dir.File("old-run/node1/empty.dlprof"), {}));
  Result d = Dump(dir, "--summary --format json --run new-run " + dir.path());
  EXPECT_TRUE(Contains(d.out, "\"input\":{\"complete\":true,")) << d.out.substr(0, 300);
  d = Dump(dir, "--summary --format json --run old-run " + dir.path());
  EXPECT_TRUE(Contains(d.out, "\"unreadable_traces\":1,")) << d.out.substr(0, 300);
}

}  // namespace
}  // namespace dlprof
