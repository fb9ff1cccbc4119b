// The verdict (lib/analysis/findings/verdict.h): each rule fires on a summary that
// crosses its threshold (docs/ANALYSIS.md, "Verdict") and stays quiet on one
// just below it; the findings come most costly first; processes get their
// roles.
#include "lib/analysis/findings/verdict.h"

#include <gtest/gtest.h>

#include <map>
#include <utility>
#include <string>
#include <vector>

namespace dlprof::analysis {
namespace {

constexpr uint64_t kMs = 1000000;

Summary RunOf(uint64_t length_ns) {
  Summary s;
  s.run_start_ns = 1000 * kMs;
  s.run_end_ns = s.run_start_ns + length_ns;
  return s;
}

std::vector<std::string> Rules(const Verdict& v) {
  std::vector<std::string> rules;
  for (const Finding& f : v.findings) rules.push_back(f.rule);
  return rules;
}

// A data file read in `ops` reads of `size` bytes, `extent` bytes of it.
void AddDataFile(Summary* s, const std::string& path, uint64_t ops, uint64_t size,
                 uint64_t extent, uint64_t time_ns) {
  IoStats& f = s->files[path];
  f.read.ops = ops;
  f.read.bytes = ops * size;
  f.read.small_ops = size < 64 * 1024 ? ops : 0;
  f.read.small_time_ns = size < 64 * 1024 ? time_ns : 0;
  f.read.time_ns = time_ns;
  f.ops[static_cast<int>(OpGroup::Read)] = ops;
  f.time_ns[static_cast<int>(OpGroup::Read)] = time_ns;
  f.read_extent = extent;
}

Summary WithBatchWait(uint64_t run_ns, uint64_t wait_ns) {
  Summary s = RunOf(run_ns);
  RegionStats r;
  r.name = "load_batch";
  r.instances = 40;
  r.region_ns = wait_ns;
  s.regions.push_back(r);
  return s;
}

TEST(VerdictTest, BatchWaitFromTheLoaderAnnotation) {
  const Verdict above = ComputeVerdict(WithBatchWait(1000 * kMs, 100 * kMs));
  EXPECT_TRUE(above.has_batch_wait);
  EXPECT_EQ(above.steps, 40u);
  EXPECT_EQ(PerMille(above.batch_wait_ns, above.loop_ns), 100u);
  EXPECT_EQ(Rules(above), std::vector<std::string>{"batch_wait"});
  EXPECT_NE(above.findings[0].what.find("10.0 %"), std::string::npos) << above.findings[0].what;
  EXPECT_TRUE(Rules(ComputeVerdict(WithBatchWait(1000 * kMs, 99 * kMs))).empty());
  EXPECT_FALSE(ComputeVerdict(RunOf(1000 * kMs)).has_batch_wait);
}

TEST(VerdictTest, DataStallAgainstTheGpuWindow) {
  Summary s = RunOf(1000 * kMs);
  s.gpus.push_back(GpuDevice{});
  s.gpu_first_ns = s.run_start_ns;
  s.gpu_last_ns = s.gpu_first_ns + 500 * kMs;
  s.data_stall_ns = 50 * kMs;
  EXPECT_EQ(Rules(ComputeVerdict(s)), std::vector<std::string>{"data_stall"});
  s.data_stall_ns = 49 * kMs;
  EXPECT_TRUE(Rules(ComputeVerdict(s)).empty());
}

TEST(VerdictTest, SmallReadsAndRereadsOfTheDataSet) {
  Summary s = RunOf(1000 * kMs);
  // 100 reads of 4 KiB over a 200 KiB file: small, and read twice over, but
  // 400 KiB in all: under the re-read rule's 1 MiB.
  AddDataFile(&s, "/data/a.bin", 100, 4096, 200 * 1024, 20 * kMs);
  EXPECT_EQ(Rules(ComputeVerdict(s)), std::vector<std::string>{"small_reads"});
  // Whole files and end-of-file probes (no data moved): no small reads; then
  // 600 of the 1200 that moved data small, 30 ms: 50.0 %, 30 ms.
  s.files.clear();
  AddDataFile(&s, "/data/a.bin", 2400, 128 * 1024, 1200 * 256 * 1024, 700 * kMs);
  s.files["/data/a.bin"].read.empty_ops = 1200;
  EXPECT_TRUE(Rules(ComputeVerdict(s)).empty());
  s.files["/data/a.bin"].read.small_ops = 600, s.files["/data/a.bin"].read.small_time_ns = 30 * kMs;
  EXPECT_EQ(ComputeVerdict(s).findings.at(0).cost_ns, 30 * kMs);
  EXPECT_NE(ComputeVerdict(s).findings[0].what.find("50.0 % of the 1200 data"), std::string::npos);
  s.files.clear();  // 99 reads: under the rule's 100.
  AddDataFile(&s, "/data/a.bin", 99, 4096, 99 * 4096, 20 * kMs);
  EXPECT_TRUE(Rules(ComputeVerdict(s)).empty());
  // 100 small reads worth 9 ms of a 1 s loop: under 1 % of it, not shown.
  s.files.clear();
  AddDataFile(&s, "/data/a.bin", 100, 4096, 200 * 1024, 9 * kMs);
  EXPECT_TRUE(Rules(ComputeVerdict(s)).empty());
  // Large reads of 2 MiB, 3 MiB read for 1 MiB of data... re-read.
  s.files.clear();
  AddDataFile(&s, "/data/b.bin", 3, 1 << 20, 1 << 20, 30 * kMs);
  const Verdict v = ComputeVerdict(s);
  EXPECT_EQ(Rules(v), std::vector<std::string>{"reread"});
  EXPECT_NE(v.findings[0].what.find("3.0 times over"), std::string::npos) << v.findings[0].what;
  // Code is not data: the same reads of a shared library say nothing.
  s.files.clear();
  AddDataFile(&s, "/opt/lib/libx.so", 3, 1 << 20, 1 << 20, 30 * kMs);
  AddDataFile(&s, "/opt/lib/y.py", 200, 100, 100, 30 * kMs);
  EXPECT_TRUE(Rules(ComputeVerdict(s)).empty());
}

TEST(VerdictTest, AFewFilesTakeMostOfTheTime) {
  Summary s = RunOf(1000 * kMs);
  for (int i = 0; i < 10; ++i) {
    AddDataFile(&s, "/data/f" + std::to_string(i), 1, 1 << 20, 1 << 20, (i < 3 ? 100 : 10) * kMs);
  }
  EXPECT_EQ(Rules(ComputeVerdict(s)), std::vector<std::string>{"few_files"});
  // The same shares in a run 100 times longer: 0.3 % of it, not worth a finding.
  Summary longer = s;
  longer.run_end_ns = longer.run_start_ns + 100000 * kMs;
  EXPECT_TRUE(Rules(ComputeVerdict(longer)).empty());
  s.files.erase("/data/f9");  // 9 files: under the rule's 10
  EXPECT_TRUE(Rules(ComputeVerdict(s)).empty());
}

TEST(VerdictTest, AFewFilesSlowThroughTheirMaps) {
  // 17 shards warmed by one read each (1 ms) and 3 read only through their
  // maps, a page fault at a time (80, 70 and 60 ms): the three are the slow
  // ones. Counting read calls alone named a warm shard read once.
  Summary s = RunOf(1000 * kMs);
  for (int i = 0; i < 20; ++i) {
    const std::string path = "/data/s" + std::to_string(100 + i);
    if (i % 7 != 3) {
      AddDataFile(&s, path, 1, 2 << 20, 2 << 20, 1 * kMs);
      continue;
    }
    MapReads& m = s.files[path].maps;
    m.faults = 512;
    m.bytes = 2 << 20;
    m.sequential = 511;  // in order, each past the one before
    m.first = 1;
    m.time_ns = (80 - 10 * (i / 7)) * kMs;
  }
  const Verdict v = ComputeVerdict(s);
  ASSERT_EQ(Rules(v), std::vector<std::string>{"few_files"}) << VerdictJson(v);
  const Finding* f = &v.findings[0];
  EXPECT_EQ(f->what,
            "3 of 20 data files take 92.5 % of the data read time; the slowest to read is "
            "/data/s103 (80.0 ms in reads and page faults).");
  EXPECT_EQ(f->cost_ns, 210 * kMs);
  // Without faults the words stay those of reads.
  for (auto& [path, io] : s.files) io.maps = MapReads();
  for (int i : {3, 10, 17}) AddDataFile(&s, "/data/s" + std::to_string(100 + i), 1, 1, 1, 30 * kMs);
  const Verdict reads = ComputeVerdict(s);
  ASSERT_EQ(Rules(reads), std::vector<std::string>{"few_files"});
  EXPECT_NE(reads.findings[0].what.find("/data/s103 (30.0 ms in reads)."), std::string::npos)
      << reads.findings[0].what;
}

TEST(VerdictTest, MetadataStormOnTheDataSet) {
  Summary s = RunOf(1000 * kMs);
  AddDataFile(&s, "/data/a.bin", 10, 1 << 20, 10 << 20, 70 * kMs);
  IoStats& a = s.files["/data/a.bin"];
  a.ops[static_cast<int>(OpGroup::Meta)] = 1000;
  a.time_ns[static_cast<int>(OpGroup::Meta)] = 30 * kMs;
  EXPECT_EQ(Rules(ComputeVerdict(s)), std::vector<std::string>{"metadata"});
  a.ops[static_cast<int>(OpGroup::Meta)] = 999;
  EXPECT_TRUE(Rules(ComputeVerdict(s)).empty());
  // Python's imports: thousands of stats of code files are no data finding,
  // but start-up's own.
  a.ops[static_cast<int>(OpGroup::Meta)] = 0;
  a.time_ns[static_cast<int>(OpGroup::Meta)] = 0;
  IoStats& code = s.files["/env/lib/python3.11/site-packages/torch/__init__.py"];
  code.ops[static_cast<int>(OpGroup::Meta)] = 40000;
  code.time_ns[static_cast<int>(OpGroup::Meta)] = 300 * kMs;
  const Verdict v = ComputeVerdict(s);
  EXPECT_EQ(Rules(v), std::vector<std::string>{"startup"});
  EXPECT_EQ(v.findings[0].cost_ns, 300 * kMs);
}

TEST(VerdictTest, OneSlowRankIsNamedAndFindingsComeMostCostlyFirst) {
  Summary s = RunOf(10000 * kMs);
  for (int32_t rank = 0; rank < 3; ++rank) {
    RankFigures r;
    r.rank = rank;
    r.host = rank == 2 ? "node2" : "node1";
    r.batch_wait_ns = (rank == 2 ? 5000 : 1000) * kMs;
    r.steps.resize(10);
    r.loop = true;
    r.loop_start_ns = s.run_start_ns;
    r.loop_end_ns = s.run_end_ns;
    s.rank_figures.push_back(r);
  }
  s.rank_job.batch_wait = {7000 * kMs, 1000 * kMs, 1000 * kMs, 5000 * kMs, {{2, 5000 * kMs}}};
  const Verdict v = ComputeVerdict(s);
  EXPECT_EQ(v.batch_wait_ns, 7000 * kMs);
  EXPECT_EQ(v.loop_ns, 30000 * kMs);
  EXPECT_EQ(v.steps, 30u);
  // batch wait (7 s) before the slow rank (5 s - 1 s).
  ASSERT_EQ(Rules(v), (std::vector<std::string>{"batch_wait", "slow_rank"}));
  EXPECT_NE(v.findings[1].what.find("Rank 2 (node2)"), std::string::npos) << v.findings[1].what;
  // Ranks that wait alike: no slow rank.
  s.rank_job.batch_wait = {7000 * kMs, 2000 * kMs, 2000 * kMs, 3000 * kMs, {{2, 3000 * kMs}}};
  EXPECT_EQ(Rules(ComputeVerdict(s)), std::vector<std::string>{"batch_wait"});
}

// A rank's loop: 1 s of a 9 s run (imports and CUDA initialisation before
// it). `wait_ms` of batch wait, `busy_ms` of GPU busy inside the loop.
Summary OneLoop(uint64_t wait_ms, uint64_t busy_ms, bool ranked) {
  Summary s = RunOf(9000 * kMs);
  RankFigures r;
  r.rank = ranked ? 0 : -1;
  r.first_ns = s.run_start_ns;
  r.loop = true;
  r.loop_start_ns = s.run_start_ns + 8000 * kMs;
  r.loop_end_ns = r.loop_start_ns + 1000 * kMs;
  r.optimizer_steps = 34;
  r.steps.resize(35);
  r.batch_wait_ns = wait_ms * kMs;
  r.gpu = true;
  r.gpu_first_ns = s.run_start_ns + 4000 * kMs;
  r.gpu_last_ns = r.loop_end_ns;
  r.gpu_busy_before_loop_ns = 10 * kMs;
  r.gpu_busy_ns = busy_ms * kMs + r.gpu_busy_before_loop_ns;
  if (ranked) {
    s.rank_figures.push_back(r);
  } else {
    s.has_unranked_group = true;
    s.unranked_group = r;
  }
  return s;
}

TEST(VerdictTest, TheLoopIsTheYardstick) {
  for (bool ranked : {false, true}) {
    const Verdict v = ComputeVerdict(OneLoop(145, 800, ranked));
    EXPECT_EQ(v.loop_basis, LoopBasis::kDataLoader);
    EXPECT_EQ(v.loop_ns, 1000 * kMs);
    EXPECT_EQ(v.startup_ns, 8000 * kMs);
    EXPECT_EQ(v.loop_steps, 34u);
    EXPECT_TRUE(v.optimizer_steps);
    EXPECT_EQ(v.steps, 35u);
    // 145 ms of a 1 s loop, not of the 9 s run.
    EXPECT_EQ(PerMille(v.batch_wait_ns, v.wait_loop_ns), 145u);
    EXPECT_EQ(v.bound, Bound::kData);
    EXPECT_EQ(v.gpu_busy_ns, 800 * kMs);  // the 10 ms before the loop left out
    EXPECT_EQ(Rules(v), std::vector<std::string>{"batch_wait"});
    const std::string j = VerdictJson(v);
    EXPECT_NE(j.find("\"loop\":{\"ns\":1000000000,\"steps\":34,\"startup_ns\":8000000000"),
              std::string::npos)
        << j;
    EXPECT_NE(j.find("\"batch_wait\":{\"ns\":145000000,\"loop_ns\":1000000000"),
              std::string::npos)
        << j;
  }
}

TEST(VerdictTest, TheLoadersThatWaitedLongestAreListed) {
  // A loader made anew each of 20 epochs is a loader L each: the 8 that
  // waited longest are listed, in order of L, the others counted with
  // their wait (the list grew with the epochs, past --top).
  Summary s = OneLoop(145, 800, true);
  for (int64_t l = 0; l < 20; ++l) {
    s.rank_figures[0].loader_waits.push_back({l, static_cast<uint64_t>(l % 10 + 1) * kMs, 3});
  }
  const Verdict v = ComputeVerdict(s);
  std::vector<int64_t> listed;
  for (const LoaderWait& w : v.loader_waits) listed.push_back(w.loader);
  EXPECT_EQ(listed, (std::vector<int64_t>{6, 7, 8, 9, 16, 17, 18, 19}));
  EXPECT_EQ(v.loaders_left_out, 12u);
  EXPECT_EQ(v.loaders_left_out_ns, 2 * (1 + 2 + 3 + 4 + 5 + 6) * kMs);
  EXPECT_NE(VerdictJson(v).find("\"loaders_left_out\":12,\"loaders_left_out_ns\":42000000"),
            std::string::npos);
}

TEST(VerdictTest, HeldBackByTheHostWhenTheGpuIdlesWithoutWaiting) {
  // 5 % batch wait, GPU busy 30 % of the loop: the host.
  EXPECT_EQ(ComputeVerdict(OneLoop(50, 300, false)).bound, Bound::kHost);
  // Busy 60 %: neither.
  EXPECT_EQ(ComputeVerdict(OneLoop(50, 600, false)).bound, Bound::kNeither);
  // Waiting comes first: 20 % batch wait with an idle GPU is data.
  EXPECT_EQ(ComputeVerdict(OneLoop(200, 100, false)).bound, Bound::kData);
  // No batch seen: the GPU's window is the loop, and the summary says why.
  Summary s = OneLoop(0, 300, false);
  s.unranked_group.loop = false;
  s.unranked_group.steps.clear();
  s.unranked_group.gpu_busy_before_loop_ns = 0;
  const Verdict v = ComputeVerdict(s);
  EXPECT_EQ(v.loop_basis, LoopBasis::kGpu);
  EXPECT_EQ(v.loop_ns, 5000 * kMs);
  EXPECT_FALSE(v.has_batch_wait);
  EXPECT_NE(v.batch_wait_missing.find("no DataLoader iteration"), std::string::npos);
  EXPECT_EQ(ComputeVerdict(RunOf(kMs)).bound, Bound::kUnknown);
}

TEST(VerdictTest, AStepLoopsWaitItCannotSeeIsNotMeasured) {
  // A loop of steps (no DataLoader), 5 % waited in data calls, GPU busy 60
  // %: neither. Other threads read data files 100 ms of the 1 s loop (a
  // prefetcher), or the steps' reads lay spread over 100 ms more than the
  // wait (work between reads more than the join apart): the wait is not
  // measured, the bound unknown, and the text says so and how to annotate.
  auto steps_loop = [](uint64_t other_ms, uint64_t unjoined_ms) {
    Summary s = OneLoop(50, 600, false);
    s.unranked_group.loop_of_steps = true;
    s.unranked_group.other_threads_io_ns = other_ms * kMs;
    s.unranked_group.steps_unjoined_ns = unjoined_ms * kMs;
    return s;
  };
  EXPECT_EQ(ComputeVerdict(steps_loop(99, 99)).bound, Bound::kNeither);
  for (const auto& [other, unjoined] : {std::pair<uint64_t, uint64_t>{100, 0}, {0, 100}}) {
    const Verdict v = ComputeVerdict(steps_loop(other, unjoined));
    EXPECT_EQ(v.loop_basis, LoopBasis::kSteps);
    EXPECT_EQ(v.bound, Bound::kUnknown);
    EXPECT_TRUE(v.wait_unmeasured);
    EXPECT_FALSE(v.has_batch_wait);
    EXPECT_NE(v.batch_wait_missing.find(other > 0 ? "another thread" : "spread out"),
              std::string::npos)
        << v.batch_wait_missing;
    EXPECT_NE(v.batch_wait_missing.find("dlprof.region"), std::string::npos);
    const std::string j = VerdictJson(v);
    EXPECT_NE(j.find("\"bound\":\"unknown\""), std::string::npos) << j;
    EXPECT_NE(j.find("\"batch_wait_missing\":"), std::string::npos) << j;
  }
  // Waiting 20 % already: data, whatever else went unseen.
  Summary data = steps_loop(500, 500);
  data.unranked_group.batch_wait_ns = 200 * kMs;
  EXPECT_EQ(ComputeVerdict(data).bound, Bound::kData);
}

TEST(VerdictTest, WhyBatchWaitIsMissing) {
  Summary s = RunOf(1000 * kMs);
  Summary::ProcessId p{"h", 11, 10, -1, "python3"};
  p.python_isolated = true;
  s.process_ids["pid 11 (python3)"] = p;
  const Verdict v = ComputeVerdict(s);
  EXPECT_NE(v.batch_wait_missing.find("-I, -E or -S"), std::string::npos) << v.batch_wait_missing;
  EXPECT_NE(VerdictJson(v).find("\"batch_wait_missing\":"), std::string::npos);
}

TEST(VerdictTest, RolesByWhatProcessesDid) {
  // timeout forked and exec'd the training script, which forked two loader
  // workers and launched kernels; bash started timeout; the script also ran
  // gzip.
  Summary s;
  s.process_ids["pid 9 (bash)"] = {"h", 9, 1, -1, "bash"};
  s.process_ids["pid 10 (timeout)"] = {"h", 10, 9, -1, "timeout"};
  Summary::ProcessId main{"h", 11, 10, -1, "python3", true};
  main.batch_waits = 35;
  main.gpu_records = 100;
  s.process_ids["pid 11 (timeout -> python3) forked"] = main;
  Summary::ProcessId worker{"h", 12, 11, -1, "python3", true};
  worker.batch_fetches = 17;
  s.process_ids["pid 12 (python3) forked"] = worker;
  s.process_ids["pid 13 (python3) forked"] = {"h", 13, 11, -1, "python3", true};
  s.process_ids["pid 14 (gzip)"] = {"h", 14, 11, -1, "gzip"};
  s.process_ids["pid 15 (cat)"] = {"h", 15, 1, -1, "cat"};
  const std::map<std::string, std::string> roles = ProcessRoles(s);
  EXPECT_EQ(roles.at("pid 9 (bash)"), "launcher");
  EXPECT_EQ(roles.at("pid 10 (timeout)"), "launcher");
  EXPECT_EQ(roles.at("pid 11 (timeout -> python3) forked"), "main");
  EXPECT_EQ(roles.at("pid 12 (python3) forked"), "loader workers");
  EXPECT_EQ(roles.at("pid 13 (python3) forked"), "loader workers");  // forked by the main one
  EXPECT_EQ(roles.at("pid 14 (gzip)"), "other");
  EXPECT_EQ(roles.at("pid 15 (cat)"), "other");
}

// Ranks in lockstep whose steps of one index fall at other times: rank 1
// waits [100k, 100k + 90) ms for its batches (k = 0..9, 900 ms of its 1 s
// loop); rank 0 waits for iter() [0, 50) and then its batches
// [100k + 10, 100k + 60), inside rank 1's waits but an index later. Each
// index's longest wait summed counted 950 ms; the time in which a rank
// waited is rank 1's 900. With rank 0's saves of 100 ms, wait and save
// never add up to more than the loop.
TEST(VerdictTest, RanksInLockstepWaitOnceForOverlappingWaits) {
  auto job = [](uint64_t save_ns) {
    Summary s = RunOf(2000 * kMs);
    const uint64_t t0 = s.run_start_ns;
    for (int32_t rank = 0; rank < 2; ++rank) {
      RankFigures r;
      r.rank = rank;
      r.host = "node1";
      r.loop = true;
      r.loop_start_ns = t0;
      r.loop_end_ns = t0 + 1000 * kMs;
      auto wait = [&](uint64_t start, uint64_t ns, StepRequest request) {
        RankStep step;
        step.step = r.steps.size() + 1;
        step.start_ns = t0 + start;
        step.batch_wait_ns = ns;
        step.request = request;
        r.steps.push_back(step);
        r.batch_wait_ns += ns;
      };
      if (rank == 0) wait(0, 50 * kMs, StepRequest::kIter);
      for (uint64_t k = 0; k < 10; ++k) {
        if (rank == 1) wait(100 * k * kMs, 90 * kMs, StepRequest::kBatch);
        if (rank == 0) wait((100 * k + 10) * kMs, 50 * kMs, StepRequest::kBatch);
      }
      if (rank == 0) r.checkpoint.blocking_ns = save_ns;
      s.rank_figures.push_back(r);
    }
    for (size_t n = 0; n < 11; ++n) {
      const uint64_t w = n < 10 ? 90 * kMs : 50 * kMs;
      s.rank_job.slowest_loader_per_step.push_back({n + 1, n < 10 ? 1 : 0, "node1", w, w});
    }
    return ComputeVerdict(s);
  };
  const Verdict v = job(0);
  ASSERT_TRUE(v.lockstep.found);
  EXPECT_EQ(v.lockstep.loop_ns, 1000 * kMs);
  EXPECT_EQ(v.lockstep.wait_ns, 900 * kMs);
  EXPECT_EQ(v.wait_per_mille(), 900u);
  const Verdict saving = job(100 * kMs);
  ASSERT_TRUE(saving.lockstep.found);
  EXPECT_EQ(saving.lockstep.save_ns, 100 * kMs);
  EXPECT_LE(saving.lockstep.wait_ns + saving.lockstep.save_ns, saving.lockstep.loop_ns);
  EXPECT_LE(saving.wait_per_mille() + saving.save_per_mille(), 1000u);
}

// Loader workers started anew each epoch: 4 over two epochs, 2 at a time
// (one ending where the next starts does not overlap it).
// Ranks that step together: one rank's wait (or rank 0's saves) stops
// them all, so their loops stay alike while what each stopped for differs;
// ranks at their own pace run loops that differ by it instead.
TEST(VerdictTest, RanksThatStepTogetherAreJudgedByTheCriticalPath) {
  auto job = [](bool lockstep, bool saves) {
    Summary s = RunOf(2000 * kMs);
    for (int32_t rank = 0; rank < 4; ++rank) {
      RankFigures r;
      r.rank = rank;
      r.host = "node1";
      const uint64_t stop = rank == 1 ? 300 * kMs : 0;  // rank 1 (or rank 0's saves)
      (saves ? r.checkpoint.blocking_ns : r.batch_wait_ns) = stop;
      r.checkpoint.saves = saves && stop > 0 ? 3 : 0;
      r.steps.resize(10);
      r.loop = true;
      r.loop_start_ns = s.run_start_ns;
      // 1 s of its own work, plus its stops or, in lockstep, rank 1's.
      r.loop_end_ns = r.loop_start_ns + 1000 * kMs + (lockstep ? 300 * kMs : stop);
      s.rank_figures.push_back(r);
    }
    s.rank_job.batch_wait = {saves ? 0 : 300 * kMs, 0, 0, saves ? 0 : 300 * kMs,
                             {{1, saves ? 0 : 300 * kMs}}};
    for (uint64_t step = 1; step <= 10; ++step) {
      s.rank_job.slowest_loader_per_step.push_back(
          {step, 1, "node1", saves ? 0 : 30 * kMs, 0});
    }
    return ComputeVerdict(s);
  };
  const Verdict lockstep = job(true, false);
  ASSERT_TRUE(lockstep.lockstep.found);
  EXPECT_EQ(lockstep.lockstep.ranks, 4u);
  EXPECT_EQ(lockstep.lockstep.loop_ns, 1300 * kMs);
  EXPECT_EQ(lockstep.lockstep.wait_ns, 300 * kMs);
  EXPECT_EQ(lockstep.wait_per_mille(), 230u);  // 300 of 1300 ms, where summed 300 of 5200
  EXPECT_EQ(lockstep.bound, Bound::kData);
  const Verdict free = job(false, false);
  EXPECT_FALSE(free.lockstep.found);
  EXPECT_EQ(free.wait_per_mille(), 69u);  // 300 of 4300 ms
  EXPECT_EQ(free.bound, Bound::kNeither);
  const Verdict saving = job(true, true);
  ASSERT_TRUE(saving.lockstep.found);
  EXPECT_EQ(saving.lockstep.save_ns, 300 * kMs);
  EXPECT_EQ(saving.save_per_mille(), 230u);
  EXPECT_EQ(saving.bound, Bound::kCheckpoint);
  EXPECT_FALSE(job(false, true).lockstep.found);
}

TEST(VerdictTest, WorkersAtATime) {
  Summary s;
  Summary::ProcessId main{"h", 11, 1, -1, "python3"};
  main.batch_waits = 8;
  s.process_ids["pid 11 (python3)"] = main;
  s.processes_stats["pid 11 (python3)"].first_ns = 0;
  s.processes_stats["pid 11 (python3)"].last_ns = 1000;
  const uint64_t lives[4][2] = {{100, 400}, {110, 500}, {500, 900}, {510, 950}};
  for (int i = 0; i < 4; ++i) {
    const std::string key = "pid " + std::to_string(12 + i) + " (python3) forked";
    s.process_ids[key] = {"h", 12 + i, 11, -1, "python3", true};
    s.processes_stats[key].first_ns = lives[i][0];
    s.processes_stats[key].last_ns = lives[i][1];
  }
  const Verdict v = ComputeVerdict(s);
  for (const RoleShare& r : v.roles) {
    if (r.role == "loader workers") {
      EXPECT_EQ(r.processes, 4u);
      EXPECT_EQ(r.at_once, 2u);
    } else if (r.role == "main") {
      EXPECT_EQ(r.at_once, 1u);
    }
  }
}

// `timeout cat FILE` with no timed event in either process (issue 51 item
// 8): each role alone, not "1 launcher (0 at a time)".
TEST(VerdictTest, ProcessesWithNoTimedEventAreAlone) {
  Summary s;
  s.process_ids["pid 10 (timeout)"] = {"h", 10, 1, -1, "timeout"};
  s.process_ids["pid 11 (cat)"] = {"h", 11, 10, -1, "cat"};
  s.processes_stats["pid 10 (timeout)"];  // first_ns past last_ns: nothing timed
  s.processes_stats["pid 11 (cat)"];
  const Verdict v = ComputeVerdict(s);
  uint64_t roles = 0;
  for (const RoleShare& r : v.roles) {
    EXPECT_EQ(r.at_once, r.processes > 0 ? 1u : 0u) << r.role;
    roles += r.processes;
  }
  EXPECT_EQ(roles, 2u);
}

TEST(VerdictTest, RolesOfProcesses) {
  Summary s;
  s.process_ids["pid 10 (mpirun)"] = {"h", 10, 1, -1, "mpirun"};
  s.process_ids["pid 11 (python3)"] = {"h", 11, 10, 0, "python3"};
  s.process_ids["pid 12 (python3) forked"] = {"h", 12, 11, 0, "python3", true};
  s.process_ids["pid 13 (gzip)"] = {"h", 13, 11, 0, "gzip"};
  s.process_ids["pid 14 (sh -> python3)"] = {"h", 14, 1, -1, "python3"};
  EXPECT_EQ(ProcessRole(s, "pid 10 (mpirun)"), "launcher");
  EXPECT_EQ(ProcessRole(s, "pid 11 (python3)"), "main");
  EXPECT_EQ(ProcessRole(s, "pid 12 (python3) forked"), "loader workers");
  EXPECT_EQ(ProcessRole(s, "pid 13 (gzip)"), "other");
  EXPECT_EQ(ProcessRole(s, "pid 14 (sh -> python3)"), "main");
  // A traced launcher's fork children are the ranks it launched.
  s.process_ids["pid 20 (orterun)"] = {"h", 20, 1, -1, "orterun"};
  s.process_ids["pid 21 (orterun -> mpi_io) forked"] = {"h", 21, 20, 0, "mpi_io", true};
  EXPECT_EQ(ProcessRole(s, "pid 21 (orterun -> mpi_io) forked"), "main");
  EXPECT_EQ(ProcessRole(s, "pid 20 (orterun)"), "launcher");
}

TEST(VerdictTest, JsonEscapesWhatAFindingQuotes) {
  Verdict v;
  v.findings.push_back({"few_files", std::string("a \"path\"\x01\xff", 10), "try", 1});
  const std::string j = VerdictJson(v);
  EXPECT_NE(j.find("\"what\":\"a \\\"path\\\"\\u0001\\u00ff\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"batch_wait\":null,\"batch_wait_missing\":"), std::string::npos) << j;
  EXPECT_NE(j.find("\"data_stall\":null,\"gpu_busy\":null"), std::string::npos) << j;
}

TEST(VerdictTest, NumbersAsTheTextShowsThem) {
  EXPECT_EQ(DurationText(2345 * kMs), "2.35 s");
  EXPECT_EQ(DurationText(41200000), "41.2 ms");
  EXPECT_EQ(DurationText(730500), "730 us");
  EXPECT_EQ(ByteText(8 << 20), "8.0 MiB");
  EXPECT_EQ(PerMilleText(234), "23.4 %");
  EXPECT_EQ(PerMille(1, 3), 333u);
}

// A loop that waited for preprocessing (the workers' fetches, no I/O in
// them): "busy on the CPU" only where the workers' own CPU clock says they
// were (the bootstrap's fetch_cpu, every fetch). Workers 10 % on a CPU
// were sleeping or waiting (a 600 ms sleep in a sample), and were told to
// make their transforms cheaper.
TEST(VerdictTest, PreprocessingOffTheCpuIsAWaitNotWork) {
  for (const uint64_t cpu_ms : {900, 100}) {
    RankFigures r;
    r.rank = 0;
    r.loop = true;
    r.loop_end_ns = 1000 * kMs;
    for (uint64_t i = 0; i < 10; ++i) {
      RankStep step;
      step.step = i + 1;
      step.batch_wait_ns = 50 * kMs;
      r.steps.push_back(step);
    }
    r.batch_wait_ns = 500 * kMs;
    r.preprocessing_ns = 500 * kMs;
    r.workers.workers = 2;
    r.workers.fetches = r.workers.cpu_fetches = 10;
    r.workers.fetch_ns = 1000 * kMs;
    r.workers.fetch_cpu_ns = cpu_ms * kMs;
    Summary s;
    s.run_end_ns = 1000 * kMs;
    s.rank_figures.push_back(r);
    const Verdict v = ComputeVerdict(s);
    ASSERT_FALSE(v.findings.empty());
    const std::string& advice = v.findings[0].advice;
    EXPECT_EQ(v.findings[0].rule, "batch_wait");
    if (cpu_ms == 900) {
      EXPECT_EQ(advice.find("the loader was busy on the CPU"), 0u) << advice;
    } else {
      EXPECT_EQ(advice.find("the loader's workers waited more than they computed (10.0 % on a "
                            "CPU of the 1.00 s their fetches spent outside I/O calls)"),
                0u)
          << advice;
      // Workers whose fetches were shorter than the wait for preprocessing
      // cannot be what it waited for (a num_workers=0 loader's own work in
      // the main process, beside a validation loader's sleeping workers).
      s.rank_figures[0].workers.fetch_ns = 400 * kMs;
      s.rank_figures[0].workers.fetch_cpu_ns = 40 * kMs;
      const Verdict mixed = ComputeVerdict(s);
      EXPECT_EQ(mixed.findings[0].advice.find("the loader was busy on the CPU"), 0u)
          << mixed.findings[0].advice;
    }
  }
}

}  // namespace
}  // namespace dlprof::analysis
