// dlprof-dump's command line: usage errors, and a value never taken from
// the next option (tools/common/option_value.h, the launcher's rule too).
// End-to-end on the built binary (run_dump.h), as dump_cli_test is.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "tests/helpers/run_dump.h"
#include "tests/helpers/trace_builder.h"

namespace dlprof {
namespace {

using testing::Contains;
using testing::DumpResult;
using testing::RunDump;
using testing::ScratchDir;
using testing::ShellQuote;

// A trace of one pread64 of /data/a.bin, written in `dir`.
std::string OneRead(const ScratchDir& dir) {
  Event e = testing::MakeEvent(EventKind::Pread64, 1000, 10);
  e.file = 1;
  e.fd = 3;
  e.size = 64;
  e.ret = 64;
  return testing::TraceBuilder().Block().String(1, "/data/a.bin").Events(1234, {e})
      .Write(dir.File("a.dlprof"));
}

TEST(DumpOptionsTest, UsageErrorsExitTwo) {
  ScratchDir dir;
  for (const char* args : {"", "--format", "--format xml a.dlprof", "--bogus a.dlprof", "-o"}) {
    DumpResult r = RunDump(dir, args);
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_TRUE(Contains(r.err, "dlprof-dump: ")) << args;
    EXPECT_EQ(r.out, "") << args;
  }
}

// An option that needs a value does not take the next option as one:
// "--batch-region --summary DIR" summarised with a batch region named
// "--summary". A value that begins with '-' goes as --option=VALUE.
TEST(DumpOptionsTest, OptionValueIsNoOption) {
  ScratchDir dir;
  const std::string trace = ShellQuote(OneRead(dir));
  for (const char* option : {"--batch-region", "--format", "--run", "--top", "--from", "--pid",
                             "--path", "-o", "--output"}) {
    DumpResult r = RunDump(dir, std::string(option) + " --summary " + trace);
    EXPECT_EQ(r.status, 2) << option << ": " << r.err;
    EXPECT_TRUE(Contains(r.err, std::string("option ") + option + " needs")) << r.err;
    EXPECT_TRUE(Contains(r.err, "'--summary', is an option")) << r.err;
    EXPECT_EQ(r.out, "") << option;
  }
  // One dash and a letter is an option too, as dlprof run reads them
  // (tools/common/option_value.h): "--path -q" took "-q" as a glob.
  for (const char* option : {"--path -q", "--run -x", "-o -q"}) {
    DumpResult r = RunDump(dir, std::string(option) + " " + trace);
    EXPECT_EQ(r.status, 2) << option << ": " << r.err;
    EXPECT_TRUE(Contains(r.err, "is an option; a value that begins with '-' goes as ")) << r.err;
    EXPECT_EQ(r.out, "") << option;
  }
  // Taken as values (globs that match no file): the events are filtered out.
  ASSERT_TRUE(Contains(RunDump(dir, trace).out, "pread64"));
  for (const char* option : {"--path=--odd", "--path=-x", "--path -5x"}) {  // -5: no option
    DumpResult r = RunDump(dir, std::string(option) + " " + trace);
    EXPECT_EQ(r.status, 0) << option << ": " << r.err;
    EXPECT_FALSE(Contains(r.out, "pread64")) << option << ": " << r.out;
  }
}

// --compare's two runs are the next two arguments, and an option there is
// misplaced: "--compare --format json A B" said "--compare: before
// (--format): no run '--format'".
TEST(DumpOptionsTest, CompareTakesNoOptionAsARun) {
  ScratchDir dir;
  const std::string a = ShellQuote(dir.File("a")), b = ShellQuote(dir.File("b"));
  for (const auto& [args, misplaced] : std::vector<std::pair<std::string, std::string>>{
           {"--compare --format json " + a + " " + b, "--format"},
           {"--compare " + a + " --top 5 " + b, "--top"}, {"--compare " + a + " -q", "-q"}}) {
    DumpResult r = RunDump(dir, args);
    EXPECT_EQ(r.status, 2) << args << ": " << r.err;
    EXPECT_TRUE(Contains(r.err, "dlprof-dump: option --compare needs BEFORE and AFTER right after "
                                "it, but '" + misplaced + "' is an option: give it before "
                                "--compare or after the two runs"))
        << args << ": " << r.err;
    EXPECT_EQ(r.out, "") << args;
  }
}

}  // namespace
}  // namespace dlprof
