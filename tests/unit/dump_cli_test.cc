// End-to-end tests of the dlprof-dump binary on traces built by
// trace_builder: exact jsonl output, text lines, merging and exit statuses.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "dlprof/format.h"
#include "lib/format/crc32c.h"
#include "tests/helpers/run_dump.h"
#include "tests/helpers/trace_builder.h"

namespace dlprof {
namespace {

using testing::Contains;
using testing::MakeEvent;
using testing::ScratchDir;
using testing::TraceBuilder;

using testing::DumpBinary;
using testing::ShellQuote;

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> lines;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

struct Result {
  int status = -1;
  std::string out, err;
  std::vector<std::string> lines() const { return Lines(out); }
};

class DumpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    struct stat st;
    ASSERT_EQ(stat(DumpBinary().c_str(), &st), 0)
        << DumpBinary() << " is missing: build the dlprof-dump target";
  }

  // `args` are shell words, already quoted where needed.
  Result Run(const std::string& args) {
    testing::DumpResult d = testing::RunDump(dir_, args);
    Result r;
    r.status = d.status;
    r.out = std::move(d.out);
    r.err = std::move(d.err);
    return r;
  }
  Result Jsonl(const std::string& path) { return Run("--format jsonl " + ShellQuote(path)); }

  ScratchDir dir_;
};

Event Ev(EventKind kind, uint64_t start, uint64_t dur, uint32_t file, int32_t fd, int64_t ret) {
  Event e = MakeEvent(kind, start, dur);
  e.file = file;
  e.fd = fd;
  e.ret = ret;
  return e;
}

// The trace of the jsonl and text tests: every presentation rule once.
TraceBuilder SampleTrace() {
  TraceBuilder b;
  Event open = Ev(EventKind::Openat, 1000, 50, 1, -1, 3);
  open.aux = O_RDONLY | O_CLOEXEC;
  Event pread = Ev(EventKind::Pread64, 2000, 12, 1, 3, 4096);
  pread.offset = 8192;
  pread.size = 4096;
  Event read = Ev(EventKind::Read, 3000, 5, 1, 3, -1);
  read.size = 4096;
  read.err = EIO;
  // String 3 arrives a block before the event that uses it.
  b.Block().String(1, "/data/a.bin").String(3, "/data/missing").Events(1235, {open, pread, read});

  Event stat = Ev(EventKind::Stat, 3500, 7, 3, -1, -1);
  stat.err = ENOENT;
  Event rename = Ev(EventKind::Rename, 4000, 9, 1, -1, 0);
  rename.aux = 2;
  Event dup = Ev(EventKind::Dup2, 5000, 1, 1, 3, 7);
  dup.aux = 7;
  Event close = Ev(EventKind::Close, 6000, 2, 1, 3, 0);
  close.flags = kEventFlagNested;
  Event future = Ev(static_cast<EventKind>(400), 7000, 3, 0, -1, 0);
  future.aux = 9;
  format::BlockInfo ranked;
  ranked.rank = 5;
  b.Block(ranked).String(2, "/data/new name").Events(1236, {rename, dup, close, future});
  b.Events(1237, {stat});
  return b;
}

// The sample's process gains rank 5 in its second block (MPI initialised
// after tracing began): it is a process of rank 5, its first block's events
// too (docs/FORMAT.md, "Rank").
TEST_F(DumpTest, JsonlKeysAndValues) {
  Result r = Jsonl(SampleTrace().Write(dir_.File("a.dlprof")));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const std::string p = R"("pid":1234,"ppid":1,)";
  const std::string h = R"("host":"node1","cat":"posix",)";
  const std::vector<std::string> want = {
      R"({"ts":1000,"dur":50,)" + p + R"("tid":1235,"rank":5,)" + h +
          R"("name":"openat","path":"/data/a.bin","ret":3,"errno":0})",
      R"({"ts":2000,"dur":12,)" + p + R"("tid":1235,"rank":5,)" + h +
          R"("name":"pread64","path":"/data/a.bin","fd":3,"offset":8192,"size":4096,"bytes":4096,"ret":4096,"errno":0})",
      R"({"ts":3000,"dur":5,)" + p + R"("tid":1235,"rank":5,)" + h +
          R"("name":"read","path":"/data/a.bin","fd":3,"size":4096,"bytes":0,"ret":-1,"errno":5})",
      R"({"ts":3500,"dur":7,)" + p + R"("tid":1237,"rank":5,)" + h +
          R"("name":"stat","path":"/data/missing","ret":-1,"errno":2})",
      R"({"ts":4000,"dur":9,)" + p + R"("tid":1236,"rank":5,)" + h +
          R"("name":"rename","path":"/data/a.bin","path2":"/data/new name","ret":0,"errno":0})",
      R"({"ts":5000,"dur":1,)" + p + R"("tid":1236,"rank":5,)" + h +
          R"("name":"dup2","path":"/data/a.bin","fd":3,"newfd":7,"ret":7,"errno":0})",
      R"({"ts":6000,"dur":2,)" + p + R"("tid":1236,"rank":5,)" + h +
          R"("name":"close","path":"/data/a.bin","fd":3,"ret":0,"errno":0,"nested":true})",
      R"({"ts":7000,"dur":3,)" + p + R"("tid":1236,"rank":5,"host":"node1",)" +
          R"("cat":"unknown","name":"kind_400","ret":0,"errno":0,"aux":9})",
  };
  EXPECT_EQ(r.lines(), want);
}

TEST_F(DumpTest, JsonlEscapesStrings) {
  format::ProcessInfo proc = testing::DefaultProcess();
  proc.host = "tab\there";
  TraceBuilder b(proc);
  b.Block().String(1, std::string("q\"b\\c\nd\x01" "e\xff\xc3\xa9\x7f", 13));
  b.Events(1, {Ev(EventKind::Unlink, 10, 1, 1, -1, 0)});
  Result r = Jsonl(b.Write(dir_.File("a.dlprof")));
  ASSERT_EQ(r.lines().size(), 1u);
  EXPECT_TRUE(Contains(r.out, R"("host":"tab\there")"));
  EXPECT_TRUE(Contains(r.out, "\"path\":\"q\\\"b\\\\c\\nd\\u0001e\\u00ff\xc3\xa9\x7f\""));
}

TEST_F(DumpTest, TextLines) {
  Result r = Run(ShellQuote(SampleTrace().Write(dir_.File("a.dlprof"))));
  EXPECT_EQ(r.status, 0) << r.err;
  std::vector<std::string> lines = r.lines();
  ASSERT_EQ(lines.size(), 9u) << r.out;
  EXPECT_EQ(lines[0], "# pid 1234 ppid 1 rank 5 host \"node1\" exe \"/usr/bin/python3\" cmdline python3 "
                      "train.py trace \"" + dir_.File("a.dlprof") + "\"");
  EXPECT_EQ(lines[1], "    0.000000000 pid 1234/1235 openat(\"/data/a.bin\", O_RDONLY|O_CLOEXEC)"
                      " = 3 <0.000000050>");
  EXPECT_EQ(lines[2], "    0.000001000 pid 1234/1235 pread64(3</data/a.bin>, 4096, @8192) = 4096"
                      " <0.000000012>");
  EXPECT_EQ(lines[3], "    0.000002000 pid 1234/1235 read(3</data/a.bin>, 4096) = -1"
                      " <0.000000005> errno=EIO");
  EXPECT_EQ(lines[5], "    0.000003000 pid 1234/1236 rename(\"/data/a.bin\", \"/data/new name\")"
                      " = 0 <0.000000009>");
  EXPECT_EQ(lines[7], "    0.000005000 pid 1234/1236 close(3</data/a.bin>) = 0 <0.000000002>"
                      " [nested]");
  EXPECT_EQ(lines[8], "    0.000006000 pid 1234/1236 kind_400(aux=9) = 0 <0.000000003>");
}

// Pulls an integer field out of one jsonl line.
int64_t Field(const std::string& line, const std::string& key) {
  size_t at = line.find("\"" + key + "\":");
  if (at == std::string::npos) return INT64_MIN;
  return std::strtoll(line.c_str() + at + key.size() + 3, nullptr, 10);
}

TEST_F(DumpTest, DirectoryMergesProcessesByTimePidAndTid) {
  ScratchDir& d = dir_;
  ASSERT_EQ(mkdir(d.File("run").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(d.File("run/workers").c_str(), 0755), 0);
  auto proc = [](int32_t pid) {
    format::ProcessInfo p = testing::DefaultProcess();
    p.pid = pid;
    return p;
  };
  auto ev = [](uint64_t t) { return MakeEvent(EventKind::Fsync, t, 1); };
  TraceBuilder(proc(20)).Block().Events(21, {ev(100), ev(300)}).Events(22, {ev(150), ev(300)})
      .Write(d.File("run/p20.dlprof"));
  TraceBuilder(proc(10)).Block().Events(11, {ev(100), ev(200)}).Write(d.File("run/p10.dlprof"));
  TraceBuilder(proc(30)).Block().Events(31, {ev(50)}).Write(d.File("run/workers/p30.dlprof"));
  ASSERT_TRUE(testing::WriteFile(d.File("run/notes.txt"), {'x'}));

  // The file named as well as its directory is read once.
  Result r = Run("--format=jsonl " + ShellQuote(d.File("run")) + " " +
                 ShellQuote(d.File("run/p10.dlprof")));
  EXPECT_EQ(r.status, 0) << r.err;
  std::vector<std::tuple<int64_t, int64_t, int64_t>> got;
  for (const auto& l : r.lines()) got.emplace_back(Field(l, "ts"), Field(l, "pid"), Field(l, "tid"));
  std::vector<std::tuple<int64_t, int64_t, int64_t>> want = {
      {50, 30, 31},  {100, 10, 11}, {100, 20, 21}, {150, 20, 22},
      {200, 10, 11}, {300, 20, 21}, {300, 20, 22}};
  EXPECT_EQ(got, want);
}

TEST_F(DumpTest, ManyFilesAreAllRead) {
  for (int k = 0; k < 24; ++k) {
    format::ProcessInfo p = testing::DefaultProcess();
    p.pid = 1000 + k;
    std::vector<Event> events;
    for (int i = 0; i < 50; ++i) events.push_back(MakeEvent(EventKind::Read, i * 100 + k, 1));
    TraceBuilder(p).Block().Events(p.pid, events).Write(dir_.File(std::to_string(k) + ".dlprof"));
  }
  Result r = Run("--format jsonl -o " + ShellQuote(dir_.File("out.jsonl")) + " " +
                 ShellQuote(dir_.path()));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "");
  std::vector<uint8_t> bytes = testing::ReadFile(dir_.File("out.jsonl"));
  std::vector<std::string> lines = Lines(std::string(bytes.begin(), bytes.end()));
  ASSERT_EQ(lines.size(), 24u * 50);
  for (size_t i = 0; i < lines.size(); ++i) {
    EXPECT_EQ(Field(lines[i], "ts"), int64_t(i / 24 * 100 + i % 24)) << i;
  }
}

TEST_F(DumpTest, KilledProcessIsANoteNotAnError) {
  std::string path = SampleTrace().NoFinal().Write(dir_.File("k.dlprof"));
  Result r = Jsonl(path);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.err, "note: " + path + ": no end marker; process 1234 was killed or is still "
                   "running; decoded 2 blocks\n");
  EXPECT_EQ(r.lines().size(), 8u);
}

TEST_F(DumpTest, DroppedEventsAreAWarning) {
  format::BlockInfo a, b;
  a.dropped_events = 5;
  b.dropped_events = 7;
  std::string path = TraceBuilder()
                         .Block(a).Events(1, {MakeEvent(EventKind::Read, 1, 1)})
                         .Block(b).Events(1, {MakeEvent(EventKind::Read, 2, 1)})
                         .Write(dir_.File("d.dlprof"));
  Result r = Jsonl(path);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.err, "warning: " + path +
                       ": 12 events were dropped (full buffers with DLPROF_ON_FULL=drop, GPU "
                       "records CUPTI lost, page-fault records the kernel's buffers "
                       "could not hold, or calls on files first seen after the tracer's "
                       "table of paths was full: its stderr said which)\n");
  EXPECT_EQ(r.lines().size(), 2u);
}

TEST_F(DumpTest, MissingFileFailsButOthersArePrinted) {
  std::string good = SampleTrace().Write(dir_.File("a.dlprof"));
  std::string missing = dir_.File("nope.dlprof");
  Result r = Run("--format jsonl " + ShellQuote(missing) + " " + ShellQuote(good));
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.lines().size(), 8u);
  EXPECT_TRUE(Contains(r.err, "error: " + missing + ": cannot open: No such file or directory\n"));
  EXPECT_TRUE(Contains(r.err, "dlprof-dump: not all input decoded: 1 trace(s) unreadable"));
}

TEST_F(DumpTest, DamagedBlockFailsAndTheRestIsDecoded) {
  testing::TraceBytes t = SampleTrace().Build();
  testing::FlipBit(&t.bytes, t.block_offsets[0] + sizeof(BlockHeader) + 5);
  std::string path = dir_.File("bad.dlprof");
  ASSERT_TRUE(testing::WriteFile(path, t.bytes));
  Result r = Jsonl(path);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.lines().size(), 5u);  // the second block's events
  EXPECT_TRUE(Contains(r.err, "error: " + path + ": at byte " +
                                  std::to_string(t.block_offsets[0]) +
                                  ": block checksum mismatch (its 3 events are lost); "
                                  "resuming at byte " +
                                  std::to_string(t.block_offsets[1]) + "\n"));
  EXPECT_TRUE(Contains(r.err, "1 damaged block(s) skipped"));
}

TEST_F(DumpTest, NotATraceAndNewerVersionFail) {
  std::string junk = dir_.File("junk.dlprof");
  ASSERT_TRUE(testing::WriteFile(junk, {'h', 'e', 'l', 'l', 'o'}));
  Result r = Jsonl(junk);
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Contains(r.err, "error: " + junk + ": not a dlprof trace"));

  // A newer writer's header: version 9, its checksum right (one that does
  // not match is a damaged version field: trace_file_test.cc).
  testing::TraceBytes t = SampleTrace().Build();
  FileHeader h;
  std::memcpy(&h, t.bytes.data(), sizeof h);
  h.version = 9;
  h.header_crc = 0;
  std::memcpy(t.bytes.data(), &h, sizeof h);
  h.header_crc = format::Crc32c(t.bytes.data(), h.header_size);
  std::memcpy(t.bytes.data(), &h, sizeof h);
  std::string newer = dir_.File("newer.dlprof");
  ASSERT_TRUE(testing::WriteFile(newer, t.bytes));
  r = Jsonl(newer);
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Contains(r.err, "error: " + newer + ": trace format version 9 is newer"));
}

// A rings sidecar passed for its trace: said so, and which file to pass (it
// said "not a dlprof trace (bad magic at byte 0)").
TEST_F(DumpTest, RingsSidecarNamesItsTrace) {
  std::vector<uint8_t> bytes(4096, 0);
  const char magic[] = "DLPRINGS";  // lib/format/sidecar.h, kSidecarMagic
  std::copy(magic, magic + 8, bytes.begin());
  const std::string rings = dir_.File("x.dlprof.rings"), renamed = dir_.File("copy.bin");
  ASSERT_TRUE(testing::WriteFile(rings, bytes));
  ASSERT_TRUE(testing::WriteFile(renamed, bytes));
  const std::string sidecar = ": a rings sidecar (the events its process still held in memory, "
                              "read with its trace), not a trace";
  const std::string trace = dir_.File("x.dlprof");
  Result r = Run(ShellQuote(rings));
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Contains(r.err, "error: " + rings + sidecar + "; its trace, " + trace +
                                  ", is not there, and the sidecar alone cannot be read\n"))
      << r.err;
  SampleTrace().Write(trace);
  r = Run(ShellQuote(rings));
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Contains(r.err, rings + sidecar + ": pass " + trace + " or its directory\n"))
      << r.err;
  r = Run(ShellQuote(renamed));
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Contains(r.err, renamed + sidecar + ": pass the .dlprof file beside it or its dir"))
      << r.err;
}

TEST_F(DumpTest, DirectoryWithoutTracesFails) {
  Result r = Run(ShellQuote(dir_.path()));
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(Contains(r.err, "error: " + dir_.path() + ": holds no dlprof trace (no *.dlprof "
                              "file below it)\n"));
}

// Where nothing decodes (a path that is not there, a directory without
// traces, a file that is no trace), every output format prints the error
// only: no summary of nothing, no empty listing, no output file.
TEST_F(DumpTest, NothingDecodedPrintsTheErrorOnly) {
  const std::string empty = dir_.File("empty-dir"), junk = dir_.File("junk.dlprof");
  ASSERT_EQ(mkdir(empty.c_str(), 0755), 0);
  ASSERT_TRUE(testing::WriteFile(junk, {'h', 'e', 'l', 'l', 'o'}));
  const std::string missing = dir_.File("no/such/dir");
  const struct {
    std::string input, error;
  } inputs[] = {
      {missing, "error: " + missing + ": cannot open: No such file or directory\n"},
      {empty, "error: " + empty + ": holds no dlprof trace (no *.dlprof file below it)\n"},
      {junk, "error: " + junk + ": not a dlprof trace (bad magic at byte 0)\n"},
  };
  const std::string out_file = dir_.File("out");
  for (const auto& in : inputs) {
    for (const char* format :
         {"", "--format text", "--format jsonl", "--format chrome", "--format perfetto",
          "--format html", "--summary", "--summary --details", "--summary --format json"}) {
      const std::string args = std::string(format) + " " + ShellQuote(in.input);
      Result r = Run(args);
      EXPECT_EQ(r.status, 1) << args;
      EXPECT_EQ(r.out, "") << args;
      if (Contains(r.err, "built without the charting library")) continue;  // no html here
      EXPECT_TRUE(Contains(r.err, in.error)) << args << "\n" << r.err;
      EXPECT_TRUE(Contains(r.err, "dlprof-dump: nothing to decode: ")) << args << "\n" << r.err;
      EXPECT_FALSE(Contains(r.err, "decoded 0 blocks")) << args << "\n" << r.err;
      r = Run(args + " -o " + ShellQuote(out_file));
      EXPECT_EQ(r.status, 1) << args;
      struct stat st;
      EXPECT_NE(stat(out_file.c_str(), &st), 0) << args << ": the output file was created";
    }
  }
  // A directory holding no trace beside one that does: the trace is read,
  // and the directory named.
  TraceBuilder b;
  b.Block().Events(1235, {Ev(EventKind::Close, 1000, 2, 0, 3, 0)});
  const std::string trace = dir_.File("one.dlprof");
  b.Write(trace);
  Result r = Run("--format jsonl " + ShellQuote(empty) + " " + ShellQuote(trace));
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(r.lines().size(), 1u);
  EXPECT_TRUE(Contains(r.err, empty + ": holds no dlprof trace"));
}

// An option that goes with another one, given without it, changes nothing
// and says so (it was taken silently, exit status 0, for
// --perfetto-compression without --format perfetto).
TEST_F(DumpTest, OptionWithoutItsFormatIsNoted) {
  const std::string trace = ShellQuote(SampleTrace().Write(dir_.File("a.dlprof")));
  Result r = Run("--perfetto-compression zstd " + trace);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(Contains(r.err, "note: --perfetto-compression goes with --format perfetto"))
      << r.err;
  EXPECT_TRUE(Contains(r.out, "pread64")) << r.out;
  r = Run("--format perfetto --perfetto-compression zstd -o " +
          ShellQuote(dir_.File("t.pftrace")) + " " + trace);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(Contains(r.err, "note:")) << r.err;
}

// CUDA records in the timeline (found on a real H100 run): an API call sits on
// the track of the thread that made it (offset), not CUPTI's thread; kernels
// show their configuration; flow arrows join the call to its kernel, and a
// process whose API calls were not recorded gets no dangling flow ends.
TEST_F(DumpTest, ChromeCudaTracksConfigAndFlows) {
  auto cuda = [](EventKind kind, uint64_t start, uint64_t dur, uint32_t name) {
    Event e = MakeEvent(kind, start, dur);
    e.file = name;
    return e;
  };
  Event api = cuda(EventKind::CudaRuntimeApi, 1000, 50, 1);
  api.offset = 4321;  // the calling thread
  api.aux = 77;       // correlation id
  Event kernel = cuda(EventKind::CudaKernel, 1100, 500, 2);
  kernel.fd = 0;      // device
  kernel.offset = 7;  // stream
  kernel.ret = 3;     // configuration string
  kernel.aux = 77;
  Event clock = cuda(EventKind::CudaClockSync, 900, 20, 4);
  clock.fd = 0;  // reason: start
  clock.offset = -5000;
  clock.size = 9;
  clock.aux = 130001;
  // A call that launches nothing, and work whose call was not recorded: no
  // flow events for either (a PyTorch loop makes ~19 such calls per launch).
  Event idle_api = cuda(EventKind::CudaRuntimeApi, 1060, 5, 5);
  idle_api.offset = 4321;
  idle_api.aux = 78;
  Event orphan = cuda(EventKind::CudaKernel, 1700, 100, 2);
  orphan.fd = 0;
  orphan.offset = 7;
  orphan.ret = 3;
  orphan.aux = 79;
  TraceBuilder with_api;
  with_api.Block()
      .String(1, "cudaLaunchKernel")
      .String(2, "gemm")
      .String(3, "grid (4,1,1) block (128,1,1)")
      .String(4, "callback")
      .String(5, "cudaGetDevice")
      .Events(999, {clock, api, idle_api, kernel, orphan});
  const std::string a = with_api.Write(dir_.File("api.dlprof"));
  Result r = Run("--format chrome " + ShellQuote(a));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "\"name\":\"cudaLaunchKernel\",\"pid\":1234,\"tid\":4321,"));
  EXPECT_TRUE(Contains(r.out, "\"config\":\"grid (4,1,1) block (128,1,1)\""));
  EXPECT_TRUE(Contains(r.out, "\"offset_ns\":-5000,\"uncertainty_ns\":20,\"reason\":\"start\""));
  EXPECT_TRUE(Contains(r.out, "{\"ph\":\"s\",\"cat\":\"launch\",\"name\":\"launch\",\"id\":\"1234:77\","));
  EXPECT_TRUE(Contains(r.out, "{\"ph\":\"f\",\"cat\":\"launch\",\"name\":\"launch\",\"id\":\"1234:77\","));
  EXPECT_FALSE(Contains(r.out, "\"id\":\"1234:78\""));
  EXPECT_FALSE(Contains(r.out, "\"id\":\"1234:79\""));
  EXPECT_TRUE(Contains(r.out, "\"name\":\"cudaGetDevice\",\"pid\":1234,\"tid\":4321,"));
  EXPECT_TRUE(Contains(r.out, "\"thread_name\",\"pid\":1234,\"tid\":4321,"));
  r = Run(ShellQuote(a));
  EXPECT_TRUE(Contains(r.out, " pid 1234/4321 cuda_runtime(\"cudaLaunchKernel\", correlation 77)"))
      << r.out;

  TraceBuilder without_api;
  without_api.Block().String(2, "gemm").String(3, "cfg").Events(999, {kernel});
  const std::string b = without_api.Write(dir_.File("noapi.dlprof"));
  r = Run("--format chrome " + ShellQuote(b));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "\"name\":\"gemm\""));
  EXPECT_FALSE(Contains(r.out, "\"ph\":\"f\""));
}

TEST_F(DumpTest, HelpAndVersion) {
  Result r = Run("--help");
  EXPECT_EQ(r.status, 0);
  // Every option the help explains is in its usage lines (the text up to the
  // first blank line); -o stands for --output there.
  const std::string usage = r.out.substr(0, r.out.find("\n\n"));
  const std::string listing = r.out.substr(usage.size());
  size_t explained = 0;
  for (const std::string& line : Lines(listing)) {
    for (size_t at = line.find("--"); at != std::string::npos; at = line.find("--", at + 2)) {
      if (at < 2 || line.compare(0, 2, "  ") != 0 || line.find_first_not_of(' ') + 4 < at) break;
      const std::string name = line.substr(at, line.find_first_of(" ,=", at) - at);
      if (name == "--help" || name == "--version" || name == "--output") continue;
      ++explained;
      EXPECT_TRUE(Contains(usage, "[" + name) || Contains(usage, " " + name))
          << name << " is explained but not in the usage lines";
    }
  }
  EXPECT_GT(explained, 15u);
  EXPECT_TRUE(Contains(r.out, "usage: dlprof-dump [--format text|jsonl|chrome|perfetto|json"));
  EXPECT_TRUE(Contains(r.out, "--format chrome"));
  EXPECT_TRUE(Contains(r.out, "--format perfetto"));
  r = Run("--version");
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(Contains(r.out, "dlprof-dump "));
  EXPECT_TRUE(Contains(r.out, "(trace format 3)"));
}

}  // namespace
// Two jobs traced into one directory are never summed: the latest run is
// read and the other named; --run picks one; an unknown run is an error.
TEST_F(DumpTest, RunsOfOneDirectoryAreReadOneAtATime) {
  auto trace = [&](const std::string& name, const std::string& run, uint64_t wall, int pid,
                   int reads) {
    format::ProcessInfo info = testing::DefaultProcess();
    info.run_id = run;
    info.clock_real_ns = wall;
    info.pid = pid;
    TraceBuilder b(info);
    std::vector<Event> events;
    for (int i = 0; i < reads; ++i) events.push_back(Ev(EventKind::Pread64, 1000 + i, 5, 1, 3, 8));
    b.Block().String(1, "/data/x").Events(pid, events);
    b.Write(dir_.File(name));
  };
  trace("a.dlprof", "slurm-1", 1000, 11, 2);
  trace("b.dlprof", "slurm-1", 1500, 12, 3);
  trace("c.dlprof", "slurm-2", 9000, 21, 7);  // the later job
  const std::string dir = ShellQuote(dir_.path());
  Result latest = Run("--summary --format json " + dir);
  EXPECT_EQ(latest.status, 0) << latest.err;
  EXPECT_TRUE(testing::Contains(latest.out, "\"processes\":1,"));
  EXPECT_TRUE(testing::Contains(latest.out, "\"read\":7,"));
  EXPECT_TRUE(
      testing::Contains(latest.err, "2 runs; this is run slurm-2 (1 traces, 7 events), the latest"));
  EXPECT_TRUE(testing::Contains(latest.err, "slurm-1 (2 traces)"));
  Result first = Run("--run slurm-1 --format jsonl " + dir);
  EXPECT_EQ(first.status, 0) << first.err;
  EXPECT_EQ(first.lines().size(), 5u);
  EXPECT_TRUE(
      testing::Contains(first.err, "this is run slurm-1 (2 traces, 5 events); the others: slurm-2"));
  Result unknown = Run("--run slurm-9 " + dir);
  EXPECT_EQ(unknown.status, 1);
  EXPECT_TRUE(testing::Contains(unknown.err, "no run 'slurm-9' in the input (runs: slurm-2 slurm-1)"));
  EXPECT_EQ(unknown.out, "");
}

// --host keeps the events of the processes of that host, in every output;
// an empty --host is a usage error.
TEST_F(DumpTest, HostFilterKeepsOneHostsEvents) {
  for (const char* host : {"nodeA", "nodeB"}) {
    format::ProcessInfo info = testing::DefaultProcess();
    info.host = host;
    info.pid = 7;  // the same pid on both hosts
    TraceBuilder b(info);
    b.Block().String(1, "/data/x").Events(7, {Ev(EventKind::Pread64, host[4] == 'A' ? 100 : 200,
                                                   5, 1, 3, 8)});
    b.Write(dir_.File(std::string(host) + ".dlprof"));
  }
  const std::string dir = ShellQuote(dir_.path());
  Result b = Run("--host nodeB --format jsonl " + dir);
  EXPECT_EQ(b.status, 0) << b.err;
  ASSERT_EQ(b.lines().size(), 1u);
  EXPECT_TRUE(testing::Contains(b.lines()[0], "\"host\":\"nodeB\""));
  Result both = Run("--host nodeB --host=nodeA --format jsonl " + dir);
  EXPECT_EQ(both.lines().size(), 2u);
  Result summary = Run("--host nodeA --summary --format json " + dir);
  EXPECT_TRUE(testing::Contains(summary.out, "\"events\":1,"));
  EXPECT_TRUE(testing::Contains(summary.out, "\"nodeA: pid 7 (python3)\""));
  EXPECT_EQ(Run("--host= " + dir).status, 2);
}

}  // namespace dlprof
