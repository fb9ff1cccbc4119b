// The trace directory's layout (lib/format/trace_layout.h) as the writer
// names it and the readers list it, and a job opened from such a directory
// (lib/read/job.h): the run kept, second 0, and a stream of every trace.
#include "lib/read/job.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "lib/format/trace_layout.h"
#include "lib/read/input_loss.h"
#include "lib/read/trace_set.h"
#include "tests/helpers/trace_builder.h"

namespace dlprof::read {
namespace {

using testing::MakeEvent;
using testing::ScratchDir;
using testing::TraceBuilder;

TEST(TraceLayout, NamesAsTheWriterMakesThem) {
  EXPECT_EQ(format::LayoutName("node 1/a", "host"), "node_1_a");
  EXPECT_EQ(format::LayoutName(".hidden", "host"), "_hidden");
  EXPECT_EQ(format::LayoutName("", "run"), "run");
  EXPECT_EQ(format::RunDirectory("/t", "job-7"), "/t/job-7");
  EXPECT_EQ(format::RunDirectory("/t", ""), "/t/run");
  EXPECT_EQ(format::HostDirectory("/t", "job-7", "node 1"), "/t/job-7/node_1");
  EXPECT_EQ(format::TraceFileName("/usr/bin/python3", "node 1", 42, 0xff),
            "python3-node_1-42-ff.dlprof");
  EXPECT_EQ(format::TraceFileName("", "n", 7, 1), "process-n-7-1.dlprof");
  // And back: whose a file is, from its name alone.
  EXPECT_EQ(format::TraceFilePid("/t/r/node_1/python3-node_1-42-ff.dlprof", "node 1"), 42);
  EXPECT_EQ(format::TraceFilePid("my-tool-n-7-1.k12.dlprof", "n"), 7);
  EXPECT_EQ(format::TraceFilePid("python3-node_1-42-ff.dlprof", "node_2"), -1);
  EXPECT_EQ(format::TraceFilePid("python3-node_1-x42-ff.dlprof", "node 1"), -1);
  EXPECT_EQ(format::TraceFilePid("python3-node_1-42-ff.dlcount", "node 1"), -1);
  EXPECT_EQ(format::TraceFilePid("42-ff.dlprof", "n"), -1);
}

// Regular files ending in .dlprof at any depth, sorted; nothing else.
TEST(TraceLayout, FindsTracesAtAnyDepth) {
  ScratchDir dir;
  const std::string host = format::HostDirectory(dir.path(), "job", "node1");
  ASSERT_EQ(mkdir((dir.path() + "/job").c_str(), 0700), 0);
  ASSERT_EQ(mkdir(host.c_str(), 0700), 0);
  ASSERT_EQ(mkdir((dir.path() + "/x.dlprof").c_str(), 0700), 0);  // a directory: not a trace
  for (const std::string& f : {host + "/b.dlprof", host + "/a.dlprof", dir.File("top.dlprof"),
                              host + "/notes.txt"}) {
    ASSERT_TRUE(testing::WriteFile(f, {1}));
  }
  std::vector<std::string> found, errors;
  format::FindTraceFiles(dir.path(), &found, &errors);
  EXPECT_EQ(found, (std::vector<std::string>{host + "/a.dlprof", host + "/b.dlprof",
                                             dir.File("top.dlprof")}));
  EXPECT_TRUE(errors.empty());
  found.clear();
  format::FindTraceFiles(dir.path() + "/x.dlprof", &found, &errors);
  EXPECT_TRUE(found.empty());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_TRUE(testing::Contains(errors[0], "holds no dlprof trace"));
}

// Two runs in one directory: the job keeps the one named, its second 0 is
// its own first event, and its stream holds its events alone.
TEST(Job, KeepsOneRunAndCountsFromItsFirstEvent) {
  ScratchDir dir;
  auto write = [&](const std::string& run, int32_t pid, uint64_t first) {
    format::ProcessInfo p = testing::DefaultProcess();
    p.run_id = run;
    p.pid = pid;
    const std::string host = format::HostDirectory(dir.path(), run, p.host);
    mkdir(format::RunDirectory(dir.path(), run).c_str(), 0700);
    mkdir(host.c_str(), 0700);
    TraceBuilder b(p);
    b.Block().Events(pid, {MakeEvent(EventKind::Read, first, 5),
                           MakeEvent(EventKind::Read, first + 100, 5)});
    b.Write(host + "/" + format::TraceFileName(p.exe, p.host, pid, p.clock_mono_ns));
  };
  write("a", 10, 5000);
  write("b", 20, 7000);
  Job job({dir.path()});
  EXPECT_TRUE(job.input_errors().empty());
  ASSERT_EQ(job.catalog().traces.size(), 2u);
  EXPECT_TRUE(job.AnyReadable());
  std::string error;
  EXPECT_FALSE(job.KeepRun("none", &error));
  EXPECT_FALSE(error.empty());
  Job kept({dir.path()});
  ASSERT_TRUE(kept.KeepRun("a", &error)) << error;
  EXPECT_TRUE(testing::Contains(kept.note(), "b"));
  ASSERT_EQ(kept.catalog().traces.size(), 1u);
  EXPECT_EQ(kept.second_zero_ns(), 5000u);
  EventSelection asked;
  asked.has_from = true;
  asked.from_ns = 50;
  const EventSelection s = kept.Select(asked);
  EXPECT_EQ(s.base_ns, 5000u);
  EXPECT_EQ(s.window_start_ns(), 5050u);
  std::unique_ptr<FileStream> stream = kept.StreamAll(0);
  StreamEvent batch[8];
  size_t n = 0, got;
  while ((got = stream->Next(batch, 8)) > 0) n += got;
  EXPECT_EQ(n, 2u);
  ASSERT_EQ(stream->processes().size(), 1u);
  EXPECT_EQ(stream->processes()[0].info.pid, 10);
}

// A live bounded run: its sweep deletes an old segment after the directory
// was listed and before the catalog reads the segment's header. That is the
// note "deleted after it was listed", not an error: nothing counts as lost
// (dlprof-dump exits 0), no process is made of it, and the rest decodes. A
// file named on the command line that does not exist stays an error.
TEST(Job, ASegmentDeletedBeforeTheCatalogReadsItIsANote) {
  ScratchDir dir;
  auto write = [&](const std::string& name, uint64_t first) {
    TraceBuilder b;
    b.Block().Events(10, {MakeEvent(EventKind::Read, first, 5),
                          MakeEvent(EventKind::Read, first + 100, 5)});
    b.Write(dir.File(name));
  };
  write("python3-n-10-1.k0.dlprof", 1000);
  write("python3-n-10-1.k1.dlprof", 5000);
  std::vector<std::string> errors;
  std::vector<bool> listed;
  const std::vector<std::string> files = ExpandInputs({dir.path()}, &errors, &listed);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(listed, (std::vector<bool>{true, true}));
  ASSERT_EQ(unlink(files[0].c_str()), 0);  // the sweep, between listing and reading
  const TraceCatalog catalog = CatalogTraces(files, listed);
  EXPECT_FALSE(catalog.traces[0].opened);
  EXPECT_TRUE(catalog.traces[0].vanished);
  EXPECT_TRUE(ProcessImages(catalog)[0].later_image);  // no process of its own
  auto drain = [](FileStream* s) {
    StreamEvent batch[8];
    size_t n = 0, got;
    while ((got = s->Next(batch, 8)) > 0) n += got;
    return n;
  };
  std::unique_ptr<FileStream> stream = OpenStream(catalog, nullptr, {0, 1}, 0);
  EXPECT_EQ(drain(stream.get()), 2u);
  const ProcessTrace& gone = stream->processes()[0];
  EXPECT_TRUE(gone.vanished);
  ASSERT_EQ(gone.messages.size(), 1u);
  EXPECT_TRUE(testing::Contains(gone.messages[0], "note: ")) << gone.messages[0];
  EXPECT_TRUE(testing::Contains(gone.messages[0], "deleted after it was listed"));
  EXPECT_FALSE(InputLossOf(errors, stream->processes()).any());
  // Named, not listed: an error, and a trace unreadable.
  const TraceCatalog named = CatalogTraces({files[0], files[1]});
  EXPECT_FALSE(named.traces[0].vanished);
  std::unique_ptr<FileStream> named_stream = OpenStream(named, nullptr, {0, 1}, 0);
  EXPECT_EQ(drain(named_stream.get()), 2u);
  ASSERT_EQ(named_stream->processes()[0].messages.size(), 1u);
  EXPECT_TRUE(testing::Contains(named_stream->processes()[0].messages[0], "error: "));
  EXPECT_EQ(InputLossOf({}, named_stream->processes()).unreadable_traces, 1u);
}

}  // namespace
}  // namespace dlprof::read
