// File classes (lib/analysis/summary/file_classes.h), the path globs of
// EventSelection (lib/read/event_filter.h), which nested calls the summary
// counts (lib/analysis/meters/nested_calls.h), and the lists of the text summary
// ending with what they left out.
#include "lib/analysis/summary/file_classes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "lib/analysis/findings/summary_figures.h"
#include "lib/read/event_filter.h"
#include "tools/dump/summary_output.h"
#include "tests/helpers/summary_in_memory.h"

namespace dlprof::dump {
using namespace dlprof::read;
using namespace dlprof::analysis;
namespace {

IoStats Reads(uint64_t ops) {
  IoStats s;
  s.read.ops = ops;
  s.read.bytes = ops * 100;
  return s;
}

IoStats Writes(uint64_t ops) {
  IoStats s;
  s.write.ops = ops;
  s.write.bytes = ops * 100;
  return s;
}

TEST(FileClassesTest, PathRules) {
  for (const char* code :
       {"/usr/lib/python3.11/os.py", "/home/u/proj/train.py", "/x/__pycache__/a.cpython-311.pyc",
        "/opt/venv/lib/python3.11/site-packages/numpy/core/_multiarray_umath.so",
        "/usr/lib/python3/dist-packages/torch/version.txt", "/lib/x86_64-linux-gnu/libc.so.6",
        "/usr/lib/x86_64-linux-gnu/libzstd.so.1.5.4", "/w/libfoo.so",
        "/opt/conda/lib/python3.10/json/decoder.json", "/a/pkg-1.0.dist-info/METADATA",
        "/a/b/thing.egg-info/PKG-INFO"}) {
    EXPECT_EQ(ClassOfPath(code), FileClass::kCode) << code;
  }
  for (const char* system :
       {"/proc/self/maps", "/sys/devices/system/cpu/online", "/dev/shm/vader_segment.1",
        "/etc/nsswitch.conf", "/usr/share/zoneinfo/UTC", "/run/user/0/x", "/var/lib/dpkg/status",
        "/tmp/ompi.vm.0/pid.1699/1/shared.dat_cid-0-1735.sm", "/tmp/ompi.vm.0",
        "/tmp/prte.node1.1000/dvm", "/root/.openmpi/mca-params.conf", "/root/.pmix/components",
        "/tmp/pmix-12345/x", "pipe:[1234]", "socket:[99]", "anon_inode:[eventfd]", "",
        "/usr/local/lib/libmpi.a.txt", "/usr/bin/python3", "/data/.words.dat.shfp.78352.12584",
        "/data/words.dat.locktest.0", "/home/u/.nv/ComputeCache/index",
        "/home/u/.triton/cache/ab/kernel.cubin", "/home/u/.cache/torch/hub/x.pt",
        "/tmp/pymp-3k1x_9q/listener-abc", "/dev/shm/torch_1234_5678_0",
        "/memfd:shm_ring (deleted)"}) {
    EXPECT_EQ(ClassOfPath(system), FileClass::kSystem) << system;
  }
  // Decided by use: data sets look like anything else.
  for (const char* other :
       {"/data/imagenet/train/n01440764/x.JPEG", "/scratch/shard-00001.npz",
        "/usr/local/data/set.bin", "/home/u/pmixer.h5", "/home/u/sober.txt",
        "/home/u/.cache/data/x.bin", "/data/nv/x.bin", "/data/torch/x.bin",
        "/data/py/readme", "/data/x.so.bak", "/data/x.sock", "/tmp/ompi_data.npz"}) {
    EXPECT_EQ(ClassOfPath(other), FileClass::kOther) << other;
  }
}

TEST(FileClassesTest, UseDecidesTheRest) {
  EXPECT_EQ(ClassifyFile("/data/a.npz", Reads(3)), FileClass::kData);
  // A data set made by the job and then read (the quickstart does this).
  IoStats made_then_read = Writes(2);
  made_then_read.read.ops = 4;
  EXPECT_EQ(ClassifyFile("/data/a.npz", made_then_read), FileClass::kData);
  EXPECT_EQ(ClassifyFile("/out/ckpt-100.pt", Writes(5)), FileClass::kOutputs);
  EXPECT_EQ(ClassifyFile("/data/never-read.npz", IoStats{}), FileClass::kOther);
  // The path wins over the use.
  EXPECT_EQ(ClassifyFile("/proj/model.py", Reads(3)), FileClass::kCode);
  EXPECT_EQ(ClassifyFile("/proc/self/status", Reads(1)), FileClass::kSystem);
  EXPECT_EQ(ClassifyFile("/x/__pycache__/m.pyc", Writes(1)), FileClass::kCode);
}

TEST(FileClassesTest, AFileTheJobWroteAndOnlyCopiedIsAnOutput) {
  // torch.save, then shutil.copyfile to model_best (sendfile): the copy's
  // read of the checkpoint made it a data file ("the data set read at ...").
  IoStats saved_then_copied = Writes(16);
  saved_then_copied.read.ops = 2;
  saved_then_copied.copied_out_ops = 2;
  EXPECT_EQ(ClassifyFile("/out/checkpoint.pth.tar", saved_then_copied), FileClass::kOutputs);
  // Read by the job too (a torch.load of it): data, as before.
  IoStats also_read = saved_then_copied;
  also_read.read.ops = 5;
  EXPECT_EQ(ClassifyFile("/out/checkpoint.pth.tar", also_read), FileClass::kData);
  // Never written by the job: a data set staged to a local disk is data.
  IoStats staged = Reads(3);
  staged.copied_out_ops = 3;
  EXPECT_EQ(ClassifyFile("/nfs/data/shard0.npy", staged), FileClass::kData);
}

TEST(FileClassesTest, TotalsByClassAddUp) {
  Summary s;
  s.files["/data/a.npz"] = Reads(3);
  s.files["/data/b.npz"] = Reads(5);
  s.files["/m/train.py"] = Reads(1);
  s.files["/out/log.txt"] = Writes(7);
  s.files["/proc/self/maps"] = Reads(2);
  s.files["/data/c.npz"] = IoStats{};
  const auto t = TotalsByClass(s);
  auto of = [&t](FileClass c) { return t[static_cast<int>(c)]; };
  EXPECT_EQ(of(FileClass::kData).files, 2u);
  EXPECT_EQ(of(FileClass::kData).io.read.ops, 8u);
  EXPECT_EQ(of(FileClass::kData).io.read.bytes, 800u);
  EXPECT_EQ(of(FileClass::kCode).files, 1u);
  EXPECT_EQ(of(FileClass::kOutputs).files, 1u);
  EXPECT_EQ(of(FileClass::kOutputs).io.write.bytes, 700u);
  EXPECT_EQ(of(FileClass::kSystem).files, 1u);
  EXPECT_EQ(of(FileClass::kOther).files, 1u);
  uint64_t files = 0;
  for (const auto& c : t) files += c.files;
  EXPECT_EQ(files, s.files.size());
  EXPECT_STREQ(FileClassName(FileClass::kOutputs), "outputs");
}

TEST(PathGlobTest, KeepsPath) {
  EventSelection all;
  EXPECT_TRUE(all.KeepsPath("/anything"));
  EXPECT_FALSE(all.active());

  EventSelection npz;
  npz.paths = {"*.npz"};
  EXPECT_TRUE(npz.active());
  EXPECT_TRUE(npz.KeepsPath("/data/a/b.npz"));  // '*' crosses '/'
  EXPECT_FALSE(npz.KeepsPath("/data/a/b.npy"));
  EXPECT_FALSE(npz.KeepsPath(""));

  EventSelection dir;
  dir.paths = {"/data", "/scratch/"};
  EXPECT_TRUE(dir.KeepsPath("/data"));
  EXPECT_TRUE(dir.KeepsPath("/data/x/y.bin"));  // a directory keeps what is below it
  EXPECT_TRUE(dir.KeepsPath("/scratch/z"));
  EXPECT_FALSE(dir.KeepsPath("/database/x"));

  EventSelection both;
  both.paths = {"/data"};
  both.exclude_paths = {"*/val/*", "*.tmp"};
  EXPECT_TRUE(both.KeepsPath("/data/train/1.bin"));
  EXPECT_FALSE(both.KeepsPath("/data/val/1.bin"));
  EXPECT_FALSE(both.KeepsPath("/data/train/1.tmp"));
  EXPECT_FALSE(both.KeepsPath("/etc/passwd"));

  EventSelection only_exclude;
  only_exclude.exclude_paths = {"/usr", "*.py[co]"};
  EXPECT_TRUE(only_exclude.KeepsPath("/data/a"));
  EXPECT_FALSE(only_exclude.KeepsPath("/usr/lib/libc.so.6"));
  EXPECT_FALSE(only_exclude.KeepsPath("/x/m.pyc"));
  EXPECT_TRUE(only_exclude.KeepsPath("/x/m.py"));
}

// Events of one process, fed to Analyze in start order.
class Events : public EventSource {
 public:
  Events() {
    ProcessTrace p;
    p.info.pid = 7;
    p.info.exe = "/bin/prog";
    p.opened = p.saw_final = true;
    processes_.push_back(std::move(p));
  }
  void Name(uint32_t id, const std::string& path) { processes_[0].strings[id] = path; }
  void Add(EventKind kind, uint64_t start, uint64_t dur, uint32_t file, uint64_t bytes,
           bool nested, int32_t tid = 7) {
    Event e{};
    e.kind = static_cast<uint16_t>(kind);
    e.start_ns = start;
    e.dur_ns = dur;
    e.file = file;
    e.offset = -1;
    e.size = bytes;
    e.ret = static_cast<int64_t>(bytes);
    e.aux = bytes;
    e.flags = nested ? kEventFlagNested : 0;
    events_.push_back(e);
    tids_.push_back(tid);
  }
  const std::vector<ProcessTrace>& processes() const override { return processes_; }
  size_t Next(StreamEvent* out, size_t max) override {
    size_t n = 0;
    for (; n < max && next_ < events_.size(); ++n, ++next_) {
      out[n] = StreamEvent{};
      out[n].event = &events_[next_];
      out[n].process = 0;
      out[n].tid = tids_[next_];
      out[n].rank = -1;
    }
    return n;
  }

 private:
  std::vector<ProcessTrace> processes_;
  std::vector<Event> events_;
  std::vector<int32_t> tids_;
  size_t next_ = 0;
};

TEST(NestedCallsTest, OnlyRepeatsOfTheCallAroundAreLeftOut) {
  Events ev;
  ev.Name(1, "/data/shared.dat");
  ev.Name(2, "/dev/shm/vader_segment.vm.1");
  ev.Name(3, "/data/a.bin");  // the fd's id of the FILE's path
  ev.Name(4, "/data/a.bin");
  ev.Name(5, "/out/log.txt");
  // MPI_Init (not I/O) around a 4 KiB read of MPI's own file: counts.
  ev.Add(EventKind::MpiInit, 0, 1000, 0, 0, false);
  ev.Add(EventKind::Pread64, 100, 10, 2, 4096, true);
  // MPI_File_read_at around a pread of the same file: left out.
  ev.Add(EventKind::MpiFileReadAt, 2000, 500, 1, 1000, false);
  ev.Add(EventKind::Pread64, 2100, 50, 1, 1000, true);
  // fread (file id 4) around a read of the same path (id 3): left out.
  ev.Add(EventKind::Fread, 3000, 500, 4, 300, false);
  ev.Add(EventKind::Read, 3100, 50, 3, 300, true);
  // An fread around a write to another file (a log): counts.
  ev.Add(EventKind::Fread, 4000, 500, 4, 200, false);
  ev.Add(EventKind::Write, 4100, 50, 5, 20, true);
  // A nested call on another thread is judged against that thread's call:
  // none, so it counts.
  ev.Add(EventKind::Fread, 5000, 500, 4, 100, false, 7);
  ev.Add(EventKind::Read, 5100, 50, 3, 100, true, 8);
  // Two threads' freads in one run of calls (one kind, process and file):
  // the read nested in thread 7's is a repeat.
  ev.Add(EventKind::Fread, 6000, 500, 4, 50, false, 7);
  ev.Add(EventKind::Fread, 6010, 500, 4, 50, false, 8);
  ev.Add(EventKind::Read, 6100, 50, 3, 50, true, 7);
  Summary s = Analyze(ev);
  EXPECT_EQ(s.nested_events, 3u);
  // 4096 (inside MPI_Init) + 1000 + 300 + 200 + 100 (fread) + 100 (thread
  // 8) + 50 + 50.
  EXPECT_EQ(s.run.read.bytes, 4096u + 1000 + 300 + 200 + 100 + 100 + 50 + 50);
  EXPECT_EQ(s.run.write.bytes, 20u);
  EXPECT_EQ(s.files.at("/dev/shm/vader_segment.vm.1").read.bytes, 4096u);
  EXPECT_EQ(s.files.at("/data/shared.dat").read.bytes, 1000u);
  EXPECT_EQ(s.files.at("/data/shared.dat").read.ops, 1u);
}

TEST(SummaryListsTest, CutListsSayWhatIsLeftOut) {
  Summary s;
  for (int i = 0; i < 5; ++i) {
    IoStats st = Reads(1);
    st.opens = 1;
    st.read.bytes = 100 * (i + 1);
    s.files["/data/f" + std::to_string(i)] = st;
    IoStats never;
    never.opens = static_cast<uint64_t>(i + 1);
    s.files["/data/n" + std::to_string(i)] = never;
    IoStats reread = Reads(4);
    reread.read_extent = 100;
    reread.read.bytes = 100 * (2 + static_cast<uint64_t>(i));
    s.files["/data/r" + std::to_string(i)] = reread;
  }
  s.run.ops[static_cast<int>(OpGroup::Read)] = 25;
  const std::string text = SummaryText(s, 2);
  // Files: 15, 2 shown.
  EXPECT_NE(text.find("  ... and 13 more (--top N)\n\nFiles opened and never read: 5"),
            std::string::npos) << text;
  // Never read, most opened first.
  const size_t never = text.find("Files opened and never read: 5 (by opens)\n"
                                 "       5 opens  /data/n4\n       4 opens  /data/n3\n"
                                 "  ... and 3 more (--top N)\n");
  EXPECT_NE(never, std::string::npos) << text;
  // Re-reads, most re-read first.
  EXPECT_NE(text.find("most re-read first): 5\n  6.0x  /data/r4\n  5.0x  /data/r3\n"
                      "  ... and 3 more (--top N)\n"),
            std::string::npos) << text;
  // The slowest calls: none recorded here, 25 calls counted.
  EXPECT_NE(text.find("Slowest operations\n  ... and 25 more (--top N)\n"), std::string::npos)
      << text;
  // The data set and the classes.
  EXPECT_NE(text.find("data set: 10 of 15 files"), std::string::npos) << text;
  EXPECT_NE(text.find("other          5"), std::string::npos) << text;
}

// The JSON's lists (issue 31): each class's top files by bytes and by I/O
// time, "left_out" counting the rest; --details every file. A directory
// with files below it is never a row, but is counted in its class.
TEST(SummaryListsTest, JsonListsTopFilesOfEachClass) {
  Summary s;
  for (int i = 0; i < 6; ++i) {
    IoStats data = Reads(1);
    data.read.bytes = 100 * (i + 1);
    data.time_ns[static_cast<int>(OpGroup::Read)] = 60 - 10 * i;  // f0 the slowest
    s.files["/data/f" + std::to_string(i)] = data;
    IoStats code = Reads(1);
    code.read.bytes = 10 * (i + 1);
    s.files["/env/site-packages/torch/m" + std::to_string(i) + ".py"] = code;
  }
  IoStats dir;
  dir.opens = 3;
  s.files["/data"] = dir;                // a directory of data files: class other
  s.files["/env/site-packages/torch"] = dir;  // an import's: code
  s.files["/data/ff"] = IoStats{};  // looked up only: other, a file
  SummaryJsonOptions top2;
  top2.top = 2;
  const std::string json = SummaryJson(s, top2);
  auto listed = [&](const std::string& path) {
    return json.find("\"" + path + "\":{\"class\":") != std::string::npos;
  };
  // Data: f5 and f4 by bytes, f0 and f1 by time; code: m5 and m4 by bytes
  // (no time at all: none is a top file by time); other: its one file.
  for (const char* path : {"/data/f5", "/data/f4", "/data/f0", "/data/f1",
                           "/env/site-packages/torch/m5.py", "/env/site-packages/torch/m4.py",
                           "/data/ff"}) {
    EXPECT_TRUE(listed(path)) << path << "\n" << json;
  }
  for (const char* path : {"/data/f2", "/data/f3", "/env/site-packages/torch/m0.py",
                           "/env/site-packages/torch/m1.py", "/env/site-packages/torch/m2.py",
                           "/data", "/env/site-packages/torch"}) {
    EXPECT_FALSE(listed(path)) << path << "\n" << json;
  }
  EXPECT_NE(json.find("\"/data/f5\":{\"class\":\"data\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"left_out\":{\"files\":6,\"never_read\":0,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"data\":{\"files\":6,\"directories\":0,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"code\":{\"files\":6,\"directories\":1,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"other\":{\"files\":1,\"directories\":1,"), std::string::npos) << json;
  // The directories were opened and never read, but are no files.
  EXPECT_EQ(NeverReadFiles(s), std::vector<std::string>{});
  SummaryJsonOptions details;
  details.details = true;
  const std::string all = SummaryJson(s, details);
  for (const auto& [path, st] : s.files) {
    const bool row = all.find("\"" + path + "\":{\"class\":") != std::string::npos;
    EXPECT_EQ(row, path != "/data" && path != "/env/site-packages/torch") << path;
  }
  EXPECT_NE(all.find("\"left_out\":{\"files\":0,"), std::string::npos) << all;
}

TEST(SummaryListsTest, StallSharesCallSitesAndTimelineSayWhatIsLeftOut) {
  Summary s;
  GpuDevice d;
  d.first_ns = 0;
  d.last_ns = 1000;
  s.gpus.push_back(d);
  s.gpu_last_ns = 1000;
  s.stall_by_file = {{"/data/a", 30}, {"/data/b", 20}};
  s.stall_files = 5;
  s.stall_by_process = {{"pid 1 (x)", 50}};
  s.stall_processes = 1;
  CallSiteStats site;
  site.site = "read_batch (libx.so)";
  site.time_ns = 10;
  s.sites_by_time = {site};
  s.sites_by_bytes = {site};
  s.site_functions = 4;
  s.per_second.resize(61);  // 61 s: rows of 3 s
  const std::string text = SummaryText(s, 2);
  EXPECT_NE(text.find("  stall by file:\n    0.000000 s  /data/a\n    0.000000 s  /data/b\n"
                      "  ... and 3 more (--top N)\n  stall by process:\n"
                      "    0.000000 s  pid 1 (x)\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("read_batch (libx.so)\n  ... and 3 more (--top N)\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("Bytes per second (read / written; each row the mean of 3 s)\n"),
            std::string::npos) << text;
}

TEST(SummaryListsTest, BandwidthIsOverTheRowsIoWindow) {
  Summary s;
  s.run_start_ns = 0;
  s.run_end_ns = 10'000'000'000;  // a 10 s run
  s.run.read.ops = 1;
  s.run.read.bytes = 1024 * 1024;
  s.run.read.time_ns = 500'000'000;
  s.run.first_ns = 4'000'000'000;  // I/O from 4 s to 6 s
  s.run.last_ns = 6'000'000'000;
  const std::string text = SummaryText(s, 20);
  EXPECT_NE(text.find("2.0 MiB/s in calls, 512.0 KiB/s over its I/O window 2.000000 s"),
            std::string::npos) << text;
}

}  // namespace
}  // namespace dlprof::dump
