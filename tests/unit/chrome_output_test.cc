// The Chrome exporter's thread tracks (tools/dump/chrome_output.cc) on a
// trace built in memory: a slice that cuts across another of its thread's
// goes to an overlap lane of the thread's own (viewers draw a thread's
// slices as a stack), a slice that nests stays, and one that began in the
// same nanosecond as the open one and ends later holds it. And the
// bandwidth counter's MiB/s, rounded to the nearest thousandth.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "tests/helpers/output_to_string.h"
#include "tests/helpers/stream_order.h"
#include "tests/helpers/trace_builder.h"
#include "tools/dump/kinds.h"
#include "tools/dump/output.h"

namespace dlprof::dump {
namespace {

std::string WriteToString(const TraceSet& set) {
  return testing::OutputToString([&](OutBuffer* out) {
    TraceSetSource source(set);
    WriteChrome(source, out);
  });
}

// The number after `key` in `line`.
long long NumberAfter(const std::string& line, const std::string& key) {
  const size_t at = line.find(key);
  EXPECT_NE(at, std::string::npos) << key << " in " << line;
  return at == std::string::npos ? -1 : std::stoll(line.substr(at + key.size()));
}

TEST(ChromeOutput, SlicesThatCutAcrossOthersGoToOverlapLanes) {
  ProcessTrace p;
  p.info = testing::DefaultProcess();
  p.opened = true;
  // (start, duration) in microseconds, each a pread of a size that names it.
  const std::pair<uint64_t, uint64_t> spans[] = {
      {100, 100},  // 1: [100, 200)
      {150, 100},  // 2: [150, 250) cuts across 1
      {160, 10},   // 3: inside 1
      {300, 10},   // 4: after them all
      {1000, 10},  // 5: [1000, 1010)
      {1000, 50},  // 6: the same start, longer: holds 5
      {1020, 10},  // 7: inside 6
  };
  for (const auto& [start, dur] : spans) {
    Event e = testing::MakeEvent(EventKind::Pread, start * 1000, dur * 1000);
    e.fd = 3;
    e.size = p.events.size() + 1;
    e.ret = static_cast<int64_t>(e.size);
    p.events.push_back(e);
    p.tids.push_back(7);
    p.ranks.push_back(-1);
  }
  TraceSet set;
  set.processes.push_back(std::move(p));
  testing::MergeInStreamOrder(&set);
  const std::string json = WriteToString(set);

  std::map<long long, long long> tid_at;  // a slice's start (us) -> its track
  std::string names;
  for (size_t at = 0, end; at < json.size(); at = end + 1) {
    end = json.find('\n', at);
    if (end == std::string::npos) end = json.size();
    const std::string line = json.substr(at, end - at);
    if (line.find("\"ph\":\"X\"") != std::string::npos) {
      tid_at[NumberAfter(line, "\"ts\":")] = NumberAfter(line, "\"tid\":");
    } else if (line.find("\"thread_name\"") != std::string::npos) {
      names += line;
    }
  }
  const long long lane1 = OverlapTrack(7, 1);
  EXPECT_EQ(tid_at, (std::map<long long, long long>{
                        {100, 7}, {150, lane1}, {160, 7}, {300, 7}, {1000, 7}, {1020, 7}}));
  EXPECT_NE(names.find("\"thread 7 (overlap 1)\""), std::string::npos) << names;
}

// The bandwidth counter's MiB/s to the nearest thousandth: 1559 B read in a
// 100 ms bin is 0.01487 MiB/s, 0.015 (it was cut to 0.014).
TEST(ChromeOutput, BandwidthRoundsToTheNearestThousandth) {
  for (const uint64_t bytes : {1559ull, 1500ull, 52ull, 53ull, 104857ull, 1048576ull}) {
    Event e = testing::MakeEvent(EventKind::Pread64, 1000, 10);
    e.fd = 3;
    e.size = bytes;
    e.ret = static_cast<int64_t>(bytes);
    ProcessTrace p;
    p.info = testing::DefaultProcess();
    p.opened = true;
    p.events.push_back(e);
    p.tids.push_back(7);
    p.ranks.push_back(-1);
    TraceSet set;
    set.processes.push_back(std::move(p));
    testing::MergeInStreamOrder(&set);
    const std::string out = WriteToString(set);
    std::string read;  // the bin at 0
    const size_t at = out.find("{\"ph\":\"C\",\"name\":\"I/O bandwidth (MiB/s)\"");
    const size_t bin = out.find("\"ts\":0.000,\"args\":{\"read\":", at);
    if (at != std::string::npos && bin != std::string::npos) {
      const size_t from = out.find("\"read\":", bin) + 7;
      read = out.substr(from, out.find(',', from) - from);
    }
    // Bytes per 100 ms as MiB/s, in thousandths, to the nearest.
    const double thousandths = static_cast<double>(bytes) * 10 * 1000 / (1024 * 1024);
    const long long want = std::llround(thousandths);
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%lld.%03lld", want / 1000, want % 1000);
    EXPECT_EQ(read, buf) << bytes << " B: " << thousandths << " thousandths\n" << out;
  }
}

}  // namespace
}  // namespace dlprof::dump
