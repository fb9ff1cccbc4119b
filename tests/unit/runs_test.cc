// Which run dlprof-dump shows when a directory holds several (lib/read/runs.h):
// the run with the most events among those that overlap the latest in time,
// so that a few-event run a stray process started inside a job never hides
// the job, while runs one after another still give the latest.
#include "lib/read/runs.h"

#include <gtest/gtest.h>

namespace dlprof::read {
namespace {

constexpr uint64_t kSec = 1000000000ull;

// A trace of run `run` whose events span [start_s, end_s] seconds of wall
// clock, `events` of them.
CatalogEntry Trace(const std::string& run, uint64_t start_s, uint64_t end_s, uint64_t events) {
  CatalogEntry t;
  t.opened = true;
  t.info.run_id = run;
  t.info.clock_mono_ns = 5 * kSec;                  // the monotonic clock at open ...
  t.info.clock_real_ns = 1700000000 * kSec + start_s * kSec;  // ... and the wall clock
  t.events = events;
  t.first_start_ns = 5 * kSec;
  t.last_end_ns = 5 * kSec + (end_s - start_s) * kSec;
  return t;
}

std::string Kept(std::vector<CatalogEntry> traces, std::string* note = nullptr) {
  TraceCatalog c;
  for (auto& t : traces) c.Add(std::move(t));
  std::string n, error;
  EXPECT_TRUE(SelectRun(&c, "", &n, &error)) << error;
  if (note) *note = n;
  return c.traces.empty() ? "" : c.traces[0].info.run_id;
}

TEST(Runs, SpansComeFromTheHeadersClockPair) {
  TraceCatalog c;
  c.Add(Trace("job", 10, 70, 50000));
  c.Add(Trace("job", 12, 80, 10));
  const std::vector<RunInfo> runs = ListRuns(c);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].start_real_ns, 1700000010 * kSec);
  EXPECT_EQ(runs[0].end_real_ns, 1700000080 * kSec);
  EXPECT_EQ(runs[0].events, 50010u);
  EXPECT_EQ(runs[0].traces, 2u);
}

// A bash that lost the job's run id: 4 events, started last, inside the job.
TEST(Runs, AStrayRunInsideAJobDoesNotHideIt) {
  std::string note;
  EXPECT_EQ(Kept({Trace("job", 10, 70, 50000), Trace("job", 11, 69, 1800),
                  Trace("bash-run", 30, 31, 4)},
                 &note),
            "job");
  EXPECT_NE(note.find("this is run job (2 traces, 51800 events), the largest of the runs that "
                      "overlap the latest (bash-run, 4 events)"),
            std::string::npos)
      << note;
  EXPECT_NE(note.find("the others: bash-run (1 traces)"), std::string::npos) << note;
}

// The stray outlives the job (a background process): it still overlaps.
TEST(Runs, AStrayRunThatOutlivesTheJobDoesNotHideIt) {
  EXPECT_EQ(Kept({Trace("job", 10, 70, 50000), Trace("late", 60, 90, 15)}), "job");
}

// Yesterday's big job and today's small one: today's, the latest.
TEST(Runs, RunsOneAfterAnotherGiveTheLatest) {
  std::string note;
  EXPECT_EQ(Kept({Trace("old", 10, 70, 90000), Trace("new", 100, 130, 20)}, &note), "new");
  EXPECT_NE(note.find("this is run new (1 traces, 20 events), the latest;"), std::string::npos)
      << note;
  // A stray inside the older job changes nothing.
  EXPECT_EQ(Kept({Trace("old", 10, 70, 90000), Trace("stray", 20, 21, 3),
                  Trace("new", 100, 130, 20)}),
            "new");
}

// Equal events: more traces, then the later start.
TEST(Runs, TiesGoToMoreTracesThenTheLaterStart) {
  EXPECT_EQ(Kept({Trace("a", 10, 70, 100), Trace("b", 20, 60, 60), Trace("b", 21, 60, 40)}),
            "b");
  EXPECT_EQ(Kept({Trace("a", 10, 70, 100), Trace("b", 20, 60, 100)}), "b");
}

// --run still picks any run, the small one too.
TEST(Runs, RunPicksAnyRun) {
  TraceCatalog c;
  c.Add(Trace("job", 10, 70, 50000));
  c.Add(Trace("bash-run", 30, 31, 4));
  std::string note, error;
  ASSERT_TRUE(SelectRun(&c, "bash-run", &note, &error)) << error;
  ASSERT_EQ(c.traces.size(), 1u);
  EXPECT_EQ(c.traces[0].info.run_id, "bash-run");
  EXPECT_NE(note.find("this is run bash-run (1 traces, 4 events); the others: job"),
            std::string::npos)
      << note;
}

// `export LD_PRELOAD` before mpirun: the launcher made a run id before the
// job had one ("mpirun-run"); its ranks took the launcher's job id and name
// the launcher's run as their parent. One job: the launcher's run joins.
CatalogEntry Rank(uint64_t start_s, const std::string& parent) {
  CatalogEntry t = Trace("pmix-job", start_s, 60, 5000);
  t.info.parent_run_id = parent;
  return t;
}

TEST(Runs, ALaunchersRunJoinsTheRunItsRanksNameAsParent) {
  std::string note;
  TraceCatalog c;
  c.Add(Trace("mpirun-run", 10, 61, 300));
  c.Add(Rank(11, "mpirun-run"));
  c.Add(Rank(11, "mpirun-run"));
  const std::vector<RunInfo> runs = ListRuns(c);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].id, "pmix-job");
  EXPECT_EQ(runs[0].traces, 3u);
  EXPECT_EQ(runs[0].events, 10300u);
  EXPECT_EQ(runs[0].start_real_ns, 1700000010 * kSec);  // the launcher's start
  std::string error;
  ASSERT_TRUE(SelectRun(&c, "", &note, &error)) << error;
  EXPECT_EQ(c.traces.size(), 3u);
  EXPECT_EQ(note, "");
  // The launcher's own id names the job too.
  TraceCatalog again;
  again.Add(Trace("mpirun-run", 10, 61, 300));
  again.Add(Rank(11, "mpirun-run"));
  ASSERT_TRUE(SelectRun(&again, "mpirun-run", &note, &error)) << error;
  EXPECT_EQ(again.traces.size(), 2u);
}

// Two jobs launched from one traced script both name the script's run: it
// stays a run of its own (which job would it be?); a loop of parents
// (forged headers) ends.
TEST(Runs, ARunTwoRunsNameStaysApartAndLoopsEnd) {
  TraceCatalog c;
  c.Add(Trace("script", 10, 90, 300));
  c.Add(Rank(11, "script"));
  CatalogEntry other = Trace("pmix-other", 70, 80, 5000);
  other.info.parent_run_id = "script";
  c.Add(std::move(other));
  EXPECT_EQ(ListRuns(c).size(), 3u);
  TraceCatalog loop;
  CatalogEntry a = Trace("a", 10, 20, 5), b = Trace("b", 10, 20, 5);
  a.info.parent_run_id = "b";
  b.info.parent_run_id = "a";
  loop.Add(std::move(a));
  loop.Add(std::move(b));
  EXPECT_EQ(ListRuns(loop).size(), 2u);
}

// --run with a batch system's job id alone ("101" for slurm-101): the run it
// names where it names one; where it could be several, an error naming
// them; an id that is no run's whole id nor a job of one, today's error.
TEST(Runs, RunTakesABareJobIdWhereItNamesOneRun) {
  auto catalog = [] {
    TraceCatalog c;
    for (const char* run : {"slurm-101", "slurm-102", "pbs-102.sched", "lsf-7_1", "lsf-7_2",
                            "x-9", "slurm-1010"}) {
      c.Add(Trace(run, 10, 20, 5));
    }
    return c;
  };
  std::string note, error;
  for (const auto& [asked, kept] : std::vector<std::pair<std::string, std::string>>{
           {"101", "slurm-101"}, {"102.sched", "pbs-102.sched"}, {"7_2", "lsf-7_2"},
           {"1010", "slurm-1010"}}) {
    TraceCatalog c = catalog();
    ASSERT_TRUE(SelectRun(&c, asked, &note, &error)) << asked << ": " << error;
    ASSERT_EQ(c.traces.size(), 1u) << asked;
    EXPECT_EQ(c.traces[0].info.run_id, kept) << asked;
    EXPECT_NE(note.find("this is run " + kept + " (1 traces"), std::string::npos) << note;
  }
  for (const auto& [asked, want] : std::vector<std::pair<std::string, std::string>>{
           {"102", "no single run '102' in the input: it could be pbs-102.sched slurm-102 "
                   "(--run takes the whole run id)"},
           {"7", "no single run '7' in the input: it could be lsf-7_1 lsf-7_2 "
                 "(--run takes the whole run id)"}}) {
    TraceCatalog c = catalog();
    EXPECT_FALSE(SelectRun(&c, asked, &note, &error)) << asked;
    EXPECT_EQ(error, want);
  }
  // Not a job id of a batch system's run ("x-9"), nor a part of one.
  for (const char* asked : {"9", "10", "sched"}) {
    TraceCatalog c = catalog();
    EXPECT_FALSE(SelectRun(&c, asked, &note, &error)) << asked;
    EXPECT_EQ(error.rfind(std::string("no run '") + asked + "' in the input (runs:", 0), 0u)
        << error;
  }
}

}  // namespace
}  // namespace dlprof::read
