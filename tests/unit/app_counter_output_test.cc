// App counters (dlprof_counter, dlprof_counter_double) in dlprof-dump's
// outputs (tools/dump): ret 1 says aux holds the bits of a double, which
// jsonl, text and the Chrome timeline print as the number it is, in the
// fewest digits that read back to it (they printed the bits as an int64:
// 0.5 came out as 4602678819172646912); Chrome draws each counter as a
// counter ("C") track of its process.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "tests/helpers/output_to_string.h"
#include "tests/helpers/stream_order.h"
#include "tests/helpers/trace_builder.h"
#include "tools/dump/output.h"

namespace dlprof::dump {
namespace {

// A sample as the runtime records it: the name's string id in file, the
// value in aux, ret 1 for a double.
Event IntSample(uint64_t at_ns, uint32_t name, int64_t v) {
  Event e = testing::MakeEvent(EventKind::AppCounter, at_ns);
  e.file = name;
  e.fd = -1;
  e.offset = -1;
  e.aux = static_cast<uint64_t>(v);
  e.ret = 0;
  return e;
}

Event DoubleSample(uint64_t at_ns, uint32_t name, double v) {
  Event e = IntSample(at_ns, name, 0);
  std::memcpy(&e.aux, &v, sizeof(v));
  e.ret = 1;
  return e;
}

// One process of the given events (one thread), its names 1 "loss", 2 "n".
TraceSet OneProcess(const std::vector<Event>& events) {
  ProcessTrace p;
  p.info = testing::DefaultProcess();
  p.opened = true;
  p.strings[1] = "loss";
  p.strings[2] = "n";
  for (const Event& e : events) {
    p.events.push_back(e);
    p.tids.push_back(7);
    p.ranks.push_back(-1);
  }
  TraceSet set;
  set.processes.push_back(std::move(p));
  testing::MergeInStreamOrder(&set);
  return set;
}

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  for (size_t at = 0, end; at < s.size(); at = end + 1) {
    end = s.find('\n', at);
    if (end == std::string::npos) end = s.size();
    out.push_back(s.substr(at, end - at));
  }
  return out;
}

// What follows `key` in `line`, up to the next ',' or '}'.
std::string After(const std::string& line, const std::string& key) {
  const size_t at = line.find(key);
  if (at == std::string::npos) return "<no " + key + ">";
  const size_t from = at + key.size();
  return line.substr(from, line.find_first_of(",}", from) - from);
}

const double kThird = 1.0 / 3.0;
const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// Samples 1 us apart, in this order.
std::vector<Event> Samples() {
  return {DoubleSample(1000, 1, 0.5),   DoubleSample(2000, 1, 0.1),
          DoubleSample(3000, 1, 1.0),   DoubleSample(4000, 1, kThird),
          DoubleSample(5000, 1, -2.5e300), DoubleSample(6000, 1, kNan),
          DoubleSample(7000, 1, -kInf), IntSample(8000, 2, 42),
          IntSample(9000, 2, -7),       IntSample(10000, 2, int64_t{1} << 62)};
}

TEST(AppCounterOutput, JsonlPrintsTheNumberEachSampleHolds) {
  const TraceSet set = OneProcess(Samples());
  const std::string out = testing::OutputToString([&](OutBuffer* o) {
    TraceSetSource source(set);
    WriteJsonl(source, o);
  });
  std::vector<std::string> values, rets;
  for (const std::string& line : Lines(out)) {
    if (line.empty()) continue;
    values.push_back(After(line, "\"value\":"));
    rets.push_back(After(line, "\"ret\":"));
  }
  EXPECT_EQ(values, (std::vector<std::string>{"0.5", "0.1", "1.0", values.at(3), "-2.5e+300",
                                              "\"NaN\"", "\"-Infinity\"", "42", "-7",
                                              "4611686018427387904"}));
  // 1/3 in the fewest digits that read back to the same double.
  EXPECT_EQ(std::strtod(values[3].c_str(), nullptr), kThird) << values[3];
  EXPECT_LE(values[3].size(), 19u) << values[3];
  EXPECT_EQ(rets, (std::vector<std::string>{"1", "1", "1", "1", "1", "1", "1", "0", "0", "0"}));
}

TEST(AppCounterOutput, TextPrintsTheNumberEachSampleHolds) {
  const TraceSet set = OneProcess(Samples());
  const std::string out = testing::OutputToString([&](OutBuffer* o) {
    TraceSetSource source(set);
    WriteText(source, o);
  });
  std::vector<std::string> calls;
  for (const std::string& line : Lines(out)) {
    const size_t at = line.find("counter(");
    if (at != std::string::npos) calls.push_back(line.substr(at, line.find(')', at) + 1 - at));
  }
  ASSERT_EQ(calls.size(), 10u) << out;
  EXPECT_EQ(calls[0], "counter(\"loss\", 0.5)");
  EXPECT_EQ(calls[1], "counter(\"loss\", 0.1)");
  EXPECT_EQ(calls[2], "counter(\"loss\", 1.0)");
  const std::string third = calls[3].substr(16, calls[3].size() - 17);
  EXPECT_EQ(std::strtod(third.c_str(), nullptr), kThird) << calls[3];
  EXPECT_EQ(calls[4], "counter(\"loss\", -2.5e+300)");
  EXPECT_EQ(calls[5], "counter(\"loss\", nan)");
  EXPECT_EQ(calls[6], "counter(\"loss\", -inf)");
  EXPECT_EQ(calls[7], "counter(\"n\", 42)");
  EXPECT_EQ(calls[8], "counter(\"n\", -7)");
  EXPECT_EQ(calls[9], "counter(\"n\", 4611686018427387904)");
}

TEST(AppCounterOutput, ChromeDrawsCounterTracksOfTheProcess) {
  const TraceSet set = OneProcess(Samples());
  const std::string out = testing::OutputToString([&](OutBuffer* o) {
    TraceSetSource source(set);
    WriteChrome(source, o);
  });
  std::vector<std::string> got;  // name @ ts = value
  for (const std::string& line : Lines(out)) {
    EXPECT_EQ(line.find("\"ph\":\"X\""), std::string::npos) << "a counter drawn as a slice: "
                                                             << line;
    if (line.find("\"ph\":\"C\"") == std::string::npos) continue;
    EXPECT_EQ(After(line, "\"pid\":"), std::to_string(set.processes[0].info.pid)) << line;
    got.push_back(After(line, "\"name\":") + " @ " + After(line, "\"ts\":") + " = " +
                  After(line, "\"value\":"));
  }
  // A NaN or an infinity has no place on a counter track: left out.
  const std::string third = got.size() > 3 ? got[3].substr(got[3].rfind(' ') + 1) : "";
  EXPECT_EQ(got, (std::vector<std::string>{
                     "\"loss\" @ 1.000 = 0.5", "\"loss\" @ 2.000 = 0.1", "\"loss\" @ 3.000 = 1.0",
                     "\"loss\" @ 4.000 = " + third, "\"loss\" @ 5.000 = -2.5e+300",
                     "\"n\" @ 8.000 = 42", "\"n\" @ 9.000 = -7",
                     "\"n\" @ 10.000 = 4611686018427387904"}));
  EXPECT_EQ(std::strtod(third.c_str(), nullptr), kThird) << third;
}

}  // namespace
}  // namespace dlprof::dump
