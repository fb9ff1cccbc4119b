// The per-rank figures (lib/analysis/rank_*.h, docs/ANALYSIS_TABLES.md "Ranks") on
// constructed traces with known answers: 2 hosts x 4 ranks, each rank its
// own device and 2 DataLoader workers (one of which lost its rank), rank 5's
// loader slowed, every rank ending its steps in an NCCL all-reduce that the
// fast ranks enter early and wait in.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "lib/analysis/summary/partial_summary.h"
#include "lib/analysis/meters/rank_groups.h"
#include "lib/analysis/summarize.h"
#include "tests/helpers/trace_builder.h"
#include "tools/dump/summary_output.h"
#include "tools/dump/summary_ranks_text.h"

namespace dlprof::dump {
using namespace dlprof::analysis;
namespace {

using testing::MakeEvent;

constexpr uint64_t kBase = 100000;  // every time below is after this
constexpr uint64_t kStep = 1000;    // step k starts at kBase + k * kStep
constexpr int kSteps = 3;
constexpr int kSlowRank = 5;
constexpr uint32_t kPath = 1, kLoad = 2, kCompute = 3, kNccl = 4, kCopy = 5, kOther = 6;

Event Read(uint64_t start, uint64_t dur, int64_t bytes) {
  Event e = MakeEvent(EventKind::Pread64, kBase + start, dur);
  e.file = kPath;
  e.fd = 5;
  e.offset = 0;
  e.size = static_cast<uint64_t>(bytes);
  e.ret = bytes;
  return e;
}

Event Gpu(EventKind kind, uint32_t name, int32_t device, uint64_t start, uint64_t dur) {
  Event e = MakeEvent(kind, kBase + start, dur);
  e.file = name;
  e.fd = device;
  e.size = kind == EventKind::CudaMemcpy ? 1 << 20 : 0;
  return e;
}

Event Region(uint32_t name, uint64_t start, uint64_t dur) {
  Event e = MakeEvent(EventKind::AppRegion, kBase + start, dur);
  e.file = name;
  e.aux = 0;
  return e;
}

format::ProcessInfo Process(const std::string& host, int32_t pid, int32_t ppid, int32_t rank,
                            uint64_t start) {
  format::ProcessInfo info = testing::DefaultProcess();
  info.host = host;
  info.pid = pid;
  info.ppid = ppid;
  info.rank = rank;
  info.process_start_ns = start;
  info.flags = kHeaderFlagGpuMarked;
  return info;
}

void WriteProcess(const format::ProcessInfo& info, std::vector<Event> events,
                  testing::ScratchDir& dir, std::vector<std::string>* files) {
  std::sort(events.begin(), events.end(),
            [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; });
  testing::TraceBuilder b(info);
  b.Block()
      .String(kPath, "/data/shard.bin")
      .String(kLoad, "load_batch")
      .String(kCompute, "_Z6matmulPfS_S_")
      .String(kNccl, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)")
      .String(kCopy, "memcpy HtoD")
      .String(kOther, "fetch")
      .Events(info.pid, std::move(events));
  files->push_back(b.Write(dir.File(info.host + "-" + std::to_string(info.pid) + ".dlprof")));
}

// The job: per step T, a fast rank loads [T, T+100), computes [T+100,
// T+300), waits in the all-reduce [T+300, T+700) and copies [T+700, T+750);
// the slow rank loads [T, T+400), computes [T+400, T+600), all-reduces
// [T+600, T+700). Worker 0 reads [T+10, T+60) (slow rank: [T+10, T+360)),
// worker 1 [T+20, T+50). Worker 1's header lost the rank.
std::vector<std::string> WriteJob(testing::ScratchDir& dir) {
  std::vector<std::string> files;
  for (int32_t rank = 0; rank < 8; ++rank) {
    const std::string host = rank < 4 ? "hostA" : "hostB";
    const int32_t local = rank % 4;
    const int32_t pid = 100 + local;  // the hosts' pids collide on purpose
    const bool slow = rank == kSlowRank;
    const uint64_t load = slow ? 400 : 100;
    std::vector<Event> main, worker0, worker1;
    for (int k = 0; k < kSteps; ++k) {
      const uint64_t t = static_cast<uint64_t>(k) * kStep;
      main.push_back(Region(kLoad, t, load));
      main.push_back(Gpu(EventKind::CudaKernel, kCompute, local, t + load, 200));
      main.push_back(Gpu(EventKind::CudaKernel, kNccl, local, t + load + 200, 700 - load - 200));
      main.push_back(Gpu(EventKind::CudaMemcpy, kCopy, local, t + 700, 50));
      worker0.push_back(Read(t + 10, slow ? 350 : 50, 4096));
      worker1.push_back(Read(t + 20, 30, 1000));
    }
    WriteProcess(Process(host, pid, 1, rank, 10), main, dir, &files);
    WriteProcess(Process(host, 200 + 10 * local, pid, rank, 20), worker0, dir, &files);
    WriteProcess(Process(host, 201 + 10 * local, pid, -1, 30), worker1, dir, &files);
  }
  return files;
}

Summary SummarizeJob(const TraceCatalog& catalog, unsigned threads = 2) {
  SummarizeOptions o;
  o.selection.base_ns = catalog.base_ns();
  o.hosts_in_keys = true;
  o.threads = threads;
  return Summarize(catalog, o).summary;
}

TEST(RankGroupsTest, WorkersJoinTheirRankAlsoWithoutARankOfTheirOwn) {
  testing::ScratchDir dir;
  const TraceCatalog catalog = CatalogTraces(WriteJob(dir));
  const std::vector<int32_t> ranks = TraceRanks(catalog);
  for (size_t i = 0; i < catalog.traces.size(); ++i) EXPECT_EQ(ranks[i], static_cast<int32_t>(i / 3));
  const auto groups = GroupTraces(catalog);
  ASSERT_EQ(groups.size(), 8u);
  for (size_t g = 0; g < 8; ++g) {
    EXPECT_EQ(groups[g], (std::vector<size_t>{3 * g, 3 * g + 1, 3 * g + 2}));
    EXPECT_EQ(MainProcesses(catalog, groups[g]), (std::vector<bool>{true, false, false}));
  }
}

TEST(RankAnalysisTest, EveryFigureOfEveryRank) {
  testing::ScratchDir dir;
  const Summary s = SummarizeJob(CatalogTraces(WriteJob(dir)));
  ASSERT_EQ(s.rank_figures.size(), 8u);
  for (int32_t rank = 0; rank < 8; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const RankFigures& r = s.rank_figures[static_cast<size_t>(rank)];
    const bool slow = rank == kSlowRank;
    EXPECT_EQ(r.rank, rank);
    EXPECT_EQ(r.host, rank < 4 ? "hostA" : "hostB");
    EXPECT_EQ(r.processes, 3u);
    EXPECT_EQ(r.devices, std::vector<int32_t>{rank % 4});
    ASSERT_TRUE(r.gpu);
    EXPECT_EQ(r.gpu_first_ns, kBase + (slow ? 400 : 100));
    EXPECT_EQ(r.gpu_last_ns, kBase + 2 * kStep + 750);
    // Busy [T+load, T+750) a step; the parts: all-reduce, compute, copy.
    EXPECT_EQ(r.gpu_busy_ns, slow ? 3 * 350u : 3 * 650u);
    EXPECT_EQ(r.gpu_communication_ns, slow ? 3 * 100u : 3 * 400u);
    EXPECT_EQ(r.gpu_compute_ns, 3 * 200u);
    EXPECT_EQ(r.gpu_memory_ns, 3 * 50u);
    EXPECT_EQ(r.gpu_idle_ns(), slow ? 2350u - 1050u : 2650u - 1950u);
    EXPECT_EQ(r.batch_wait_ns, slow ? 3 * 400u : 3 * 100u);
    // Step 0's batch wait lies before the GPU window; the others all idle.
    EXPECT_EQ(r.batch_wait_gpu_idle_ns, slow ? 2 * 400u : 2 * 100u);
    // The workers' reads, union per step, with the GPU idle: steps 1 and 2
    // (step 0's end before the window opens).
    EXPECT_EQ(r.data_stall_ns, slow ? 2 * 350u : 2 * 50u);
    EXPECT_EQ(r.io_ops, 6u);
    EXPECT_EQ(r.io_ns, slow ? 3 * (350u + 30u) : 3 * (50u + 30u));
    EXPECT_EQ(r.read_bytes, 3 * (4096u + 1000u));
    // A fast rank's all-reduce [T+300, T+700) overlaps the slow rank's
    // batch wait [T, T+400) by 100 a step; nobody waits while the slow
    // rank's all-reduce runs.
    EXPECT_EQ(r.straggler_loss_ns, slow ? 0u : 300u);
    ASSERT_EQ(r.steps.size(), 3u);
    for (size_t k = 0; k < 3; ++k) {
      const RankStep& st = r.steps[k];
      EXPECT_EQ(st.step, k + 1);
      EXPECT_EQ(st.start_ns, kBase + k * kStep);
      EXPECT_EQ(st.batch_wait_ns, slow ? 400u : 100u);
      EXPECT_EQ(st.batch_wait_gpu_idle_ns, k == 0 ? 0u : slow ? 400u : 100u);
      EXPECT_EQ(st.straggler_loss_ns, slow ? 0u : 100u);
      // The rank's data stall, by step: none in step 0 (before the window).
      EXPECT_EQ(st.data_stall_ns, k == 0 ? 0u : slow ? 350u : 50u);
      // No fetches recorded: the workers' reads during the wait (their
      // union) are reading, the rest preprocessing (wait_causes.h).
      EXPECT_EQ(st.reading_ns, slow ? 350u : 50u);
      EXPECT_EQ(st.preprocessing_ns, 50u);
      EXPECT_EQ(st.handover_ns, 0u);
    }
    EXPECT_EQ(r.reading_ns, slow ? 3 * 350u : 3 * 50u);
    EXPECT_EQ(r.preprocessing_ns, 3 * 50u);
    EXPECT_EQ(r.handover_ns, 0u);
  }
  const RankJobFigures& job = s.rank_job;
  EXPECT_EQ(job.slowest_loader_rank, kSlowRank);
  EXPECT_EQ(job.batch_wait.total_ns, 7 * 300u + 1200u);
  EXPECT_EQ(job.batch_wait.min_ns, 300u);
  EXPECT_EQ(job.batch_wait.median_ns, 300u);
  EXPECT_EQ(job.batch_wait.max_ns, 1200u);
  ASSERT_EQ(job.batch_wait.top.size(), kTopRanks);
  EXPECT_EQ(job.batch_wait.top[0], (std::pair<int32_t, uint64_t>{kSlowRank, 1200}));
  EXPECT_EQ(job.batch_wait.top[1], (std::pair<int32_t, uint64_t>{0, 300}));
  EXPECT_EQ(job.data_stall.total_ns, 7 * 100u + 700u);
  EXPECT_EQ(job.data_stall.median_ns, 100u);
  EXPECT_EQ(job.data_stall.max_ns, 700u);
  EXPECT_EQ(job.straggler_loss.total_ns, 7 * 300u);
  EXPECT_EQ(job.straggler_loss.min_ns, 0u);
  EXPECT_EQ(job.straggler_loss.max_ns, 300u);
  ASSERT_EQ(job.slowest_loader_per_step.size(), 3u);
  for (size_t k = 0; k < 3; ++k) {
    const SlowestLoader& sl = job.slowest_loader_per_step[k];
    EXPECT_EQ(sl.step, k + 1);
    EXPECT_EQ(sl.rank, kSlowRank);
    EXPECT_EQ(sl.host, "hostB");
    EXPECT_EQ(sl.batch_wait_ns, 400u);
    EXPECT_EQ(sl.median_batch_wait_ns, 100u);
  }
  ASSERT_EQ(job.hosts.size(), 2u);
  EXPECT_EQ(job.hosts[0].host, "hostA");
  EXPECT_EQ(job.hosts[0].ranks, 4u);
  EXPECT_EQ(job.hosts[0].batch_wait_ns, 4 * 300u);
  EXPECT_EQ(job.hosts[1].batch_wait_ns, 3 * 300u + 1200u);
  EXPECT_EQ(job.hosts[1].data_stall_ns, 3 * 100u + 700u);
  EXPECT_EQ(job.hosts[1].gpu_communication_ns, 3 * 1200u + 300u);
  EXPECT_EQ(job.hosts[0].straggler_loss_ns, 4 * 300u);
  EXPECT_EQ(job.hosts[1].read_bytes, 4 * 3 * (4096u + 1000u));
  EXPECT_TRUE(job.gpu);
  // The job's data stall is the ranks' added up, as StallMeter measured
  // them group by group.
  EXPECT_EQ(s.data_stall_ns, 1400u);
  // Devices 0..3 of both hosts share ids, but are 8 devices: a row each,
  // by (host, device), and idle time does not wrap below zero.
  ASSERT_EQ(s.gpus.size(), 8u);
  std::multiset<uint64_t> device_1;
  for (const GpuDevice& d : s.gpus) {
    if (d.device == 1) device_1.insert(d.busy_ns);
    EXPECT_LE(d.idle_ns(), d.last_ns - d.first_ns);
  }
  EXPECT_EQ(device_1, (std::multiset<uint64_t>{1950u, 1050u}));
  // Each rank's timelines add up to its totals, and the job's GPU series to
  // the ranks' (a rank's devices as one; the job's: summed over groups).
  uint64_t gpu_sum = 0;
  for (const RankFigures& r : s.rank_figures) {
    uint64_t read = 0, busy = 0;
    for (uint64_t b : r.read_per_second) read += b;
    for (uint64_t b : r.gpu_busy_per_second) busy += b;
    EXPECT_EQ(read, r.read_bytes) << r.rank;
    EXPECT_EQ(busy, r.gpu_busy_ns) << r.rank;
    gpu_sum += busy;
  }
  uint64_t job_busy = 0;
  for (uint64_t b : s.gpu_busy_per_second) job_busy += b;
  EXPECT_EQ(job_busy, gpu_sum);
  EXPECT_NE(SummaryJson(s).find("\"timeline\":{\"bin_s\":1,\"read_bytes\":["), std::string::npos);
  EXPECT_NE(s.gpus[0].host, s.gpus[4].host);
  EXPECT_EQ(s.gpus[0].device, s.gpus[4].device);
}

TEST(RankAnalysisTest, TheSameWithAnyNumberOfThreads) {
  testing::ScratchDir dir;
  const TraceCatalog catalog = CatalogTraces(WriteJob(dir));
  const std::string one = SummaryJson(SummarizeJob(catalog, 0));
  EXPECT_EQ(SummaryJson(SummarizeJob(catalog, 3)), one);
}

TEST(RankAnalysisTest, JsonAndTextNameTheSlowLoader) {
  testing::ScratchDir dir;
  const Summary s = SummarizeJob(CatalogTraces(WriteJob(dir)));
  const std::string json = SummaryJson(s);
  EXPECT_TRUE(testing::Contains(json, "\"5\":{\"rank\":5,\"host\":\"hostB\",\"processes\":3,"
                                      "\"devices\":[1],\"batch_wait_ns\":1200,"
                                      "\"reading_ns\":1050,\"preprocessing_ns\":150,"
                                      "\"handover_ns\":0,\"worker_startup_ns\":0,\"head_of_line_ns\":0,"
                                      "\"batch_wait_gpu_idle_ns\":800,\"data_stall_ns\":700,"
                                      "\"gpu_busy_ns\":1050,\"gpu_compute_ns\":600,"
                                      "\"gpu_communication_ns\":300,\"gpu_memory_ns\":150,"
                                      "\"gpu_idle_ns\":1300,"));
  // The loop: first batch request to the last batch wait's end (no optimizer
  // steps in this job).
  EXPECT_TRUE(testing::Contains(json, "\"straggler_loss_ns\":300,\"loop_ns\":2100,\"startup_ns\":0,"
                                      "\"optimizer_steps\":0,\"collective_wait_ns\":0,"
                                      "\"collective_wait_loop_ns\":0,\"collective_late_ns\":0,"
                                      "\"checkpoint\":{\"saves\":0,"));
  EXPECT_TRUE(testing::Contains(json, "\"restore_bytes\":0},\"steps\":[{\"step\":1,"
                                      "\"request\":\"batch\","));
  EXPECT_TRUE(testing::Contains(json, "\"slowest_loader_rank\":5,\"slowest_loader_per_step\":"
                                      "[{\"step\":1,\"rank\":5,\"host\":\"hostB\","
                                      "\"batch_wait_ns\":400,\"median_batch_wait_ns\":100}"));
  EXPECT_TRUE(testing::Contains(json, "\"rank_distribution\":{\"batch_wait_ns\":{\"total_ns\":3300,"
                                      "\"min_ns\":300,\"median_ns\":300,\"max_ns\":1200,"));
  const std::string text = SummaryText(s);
  EXPECT_TRUE(testing::Contains(text, "slowest loader: rank 5 on hostB, 0.000001 s of batch wait (median rank 0.000000 s)"));
  EXPECT_TRUE(testing::Contains(text, "slowest loader per step: rank 5 in 3 of 3 steps"));
  EXPECT_TRUE(testing::Contains(text, "  host hostB: 4 ranks, batch wait 0.000002 s, data stall 0.000001 s, GPU busy"));
  EXPECT_TRUE(testing::Contains(json, "\"rank_hosts\":[{\"host\":\"hostA\",\"ranks\":4,"
                                      "\"batch_wait_ns\":1200,\"data_stall_ns\":400,"));
  // The table is sorted by batch wait: rank 5 first.
  const size_t table = text.find("stragglers\n");
  ASSERT_NE(table, std::string::npos);
  EXPECT_EQ(text.compare(table + 11, 9, "      5 h"), 0) << text.substr(table, 200);
}

TEST(RankAnalysisTest, AFilterKeepsTheRanksItSelects) {
  testing::ScratchDir dir;
  const TraceCatalog catalog = CatalogTraces(WriteJob(dir));
  SummarizeOptions o;
  o.selection.base_ns = catalog.base_ns();
  o.selection.hosts = {"hostB"};
  const Summary s = Summarize(catalog, o).summary;
  ASSERT_EQ(s.rank_figures.size(), 4u);
  EXPECT_EQ(s.rank_figures[0].rank, 4);
  EXPECT_EQ(s.rank_figures[1].batch_wait_ns, 1200u);
  EXPECT_EQ(s.rank_job.slowest_loader_rank, kSlowRank);
  // Straggler loss among the ranks kept: rank 5 still holds the others back.
  EXPECT_EQ(s.rank_figures[0].straggler_loss_ns, 300u);
}

TEST(RankAnalysisTest, TheBatchRegionCanBeNamed) {
  testing::ScratchDir dir;
  std::vector<std::string> files;
  // One rank whose loop marks its waits "fetch" (and one "load_batch" that
  // no longer counts).
  WriteProcess(Process("h", 10, 1, 0, 1),
               {Region(kOther, 0, 70), Region(kOther, 100, 30), Region(kLoad, 200, 5)}, dir,
               &files);
  const TraceCatalog catalog = CatalogTraces(files);
  SummarizeOptions o;
  o.selection.base_ns = catalog.base_ns();
  o.batch_region = "fetch";
  const Summary s = Summarize(catalog, o).summary;
  ASSERT_EQ(s.rank_figures.size(), 1u);
  EXPECT_EQ(s.rank_figures[0].batch_wait_ns, 100u);
  ASSERT_EQ(s.rank_figures[0].steps.size(), 2u);
  EXPECT_EQ(s.rank_figures[0].steps[1].batch_wait_ns, 30u);
  EXPECT_FALSE(s.rank_figures[0].gpu);
  o.batch_region = kDefaultBatchRegion;
  EXPECT_EQ(Summarize(catalog, o).summary.rank_figures[0].batch_wait_ns, 5u);
}

TEST(RankAnalysisTest, OneRankOnTwoHostsIsTwoGroups) {
  testing::ScratchDir dir;
  std::vector<std::string> files;
  WriteProcess(Process("a", 10, 1, 0, 1), {Region(kLoad, 0, 70)}, dir, &files);
  WriteProcess(Process("b", 10, 1, 0, 1), {Region(kLoad, 0, 20)}, dir, &files);
  const TraceCatalog catalog = CatalogTraces(files);
  ASSERT_EQ(GroupTraces(catalog).size(), 2u);
  SummarizeOptions o;
  o.selection.base_ns = catalog.base_ns();
  const Summary s = Summarize(catalog, o).summary;
  ASSERT_EQ(s.rank_figures.size(), 2u);
  EXPECT_EQ(s.rank_figures[1].host, "b");
  EXPECT_EQ(s.rank_figures[1].batch_wait_ns, 20u);
  const std::string json = SummaryJson(s);
  EXPECT_TRUE(testing::Contains(json, "\"0\":{\"rank\":0,\"host\":\"a\","));
  EXPECT_TRUE(testing::Contains(json, "\"0 b\":{\"rank\":0,\"host\":\"b\","));
}

TEST(RankAnalysisTest, WithoutRanksNothingChanges) {
  testing::ScratchDir dir;
  std::vector<std::string> files;
  WriteProcess(Process("h", 10, 1, -1, 1), {Region(kLoad, 0, 70), Read(10, 5, 100)}, dir, &files);
  const TraceCatalog catalog = CatalogTraces(files);
  SummarizeOptions o;
  o.selection.base_ns = catalog.base_ns();
  const Summary s = Summarize(catalog, o).summary;
  EXPECT_TRUE(s.rank_figures.empty());
  const std::string json = SummaryJson(s);
  EXPECT_TRUE(testing::Contains(json, "\"ranks\":{}"));
  EXPECT_EQ(json.find("rank_distribution"), std::string::npos);
  EXPECT_EQ(SummaryText(s).find("Per rank ("), std::string::npos);
}

TEST(RankFiguresTest, CommunicationKernelsByName) {
  for (const char* name :
       {"ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ncclKernel_Broadcast_RING_LL_Sum_int8_t",
        "_Z20cross_device_allreducePfi", "all_gather_into_tensor_kernel", "ReduceScatterKernel",
        "rcclAllToAll", "c10d::allreduce_"}) {
    EXPECT_TRUE(IsCommunicationKernel(name)) << name;
  }
  for (const char* name : {"_Z6matmulPfS_S_", "volta_sgemm_128x64_nn", "elementwise_kernel",
                           "reduce_kernel", "memcpy HtoD"}) {
    EXPECT_FALSE(IsCommunicationKernel(name)) << name;
  }
}

TEST(RankFiguresTest, StragglerLossCountsOnlyOtherRanksWaiting) {
  std::vector<RankFigures> ranks(3);
  for (int32_t i = 0; i < 3; ++i) ranks[static_cast<size_t>(i)].rank = i;
  // Rank 0 communicates [100, 300) and itself waits [150, 200): that is not
  // a loss to a straggler. Rank 1 waits [250, 400), rank 2 [120, 130).
  ranks[0].communication = {{100, 300}};
  ranks[0].waiting = {{150, 200}};
  ranks[0].steps = {{1, 0, 0, 0, 0}, {2, 260, 0, 0, 0}};
  ranks[1].waiting = {{250, 400}};
  ranks[2].waiting = {{120, 130}};
  RankJobFigures job;
  FinishRankFigures(&ranks, &job);
  EXPECT_EQ(ranks[0].straggler_loss_ns, 10u + 50u);
  EXPECT_EQ(ranks[0].steps[0].straggler_loss_ns, 10u + 10u);  // [120,130), [250,260)
  EXPECT_EQ(ranks[0].steps[1].straggler_loss_ns, 40u);        // [260, 300)
  EXPECT_TRUE(ranks[0].waiting.empty());
  EXPECT_EQ(job.straggler_loss.top.size(), 1u);
}

}  // namespace
}  // namespace dlprof::dump
