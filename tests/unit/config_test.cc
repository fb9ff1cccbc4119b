#include "lib/core/config.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace dlprof::core {
namespace {

struct Parsed {
  Config config;
  std::vector<std::string> warnings;
};

Parsed Parse(const std::map<std::string, std::string>& env) {
  Parsed p;
  p.config = ParseConfig(
      [&](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      [&](const std::string& w) { p.warnings.push_back(w); });
  return p;
}

TEST(ConfigTest, DefaultsWithEmptyEnvironment) {
  Parsed p = Parse({});
  EXPECT_TRUE(p.config.enabled);
  EXPECT_EQ(p.config.dir, "dlprof-traces");
  EXPECT_EQ(p.config.modules, static_cast<uint32_t>(kModuleAll));
  EXPECT_EQ(p.config.on_full, OnFull::kWait);
  EXPECT_EQ(p.config.exclude, DefaultExcludes());
  EXPECT_TRUE(p.config.include.empty());
  EXPECT_FALSE(p.config.quiet);
  EXPECT_TRUE(p.config.python);
  EXPECT_TRUE(p.warnings.empty());
}

TEST(ConfigTest, ParsesEveryVariable) {
  Parsed p = Parse({{"DLPROF_ENABLE", "1"},
                    {"DLPROF_DIR", "/scratch/t"},
                    {"DLPROF_TRACE", "posix,stdio"},
                    {"DLPROF_INCLUDE", "/data:/scratch"},
                    {"DLPROF_EXCLUDE", "/tmp"},
                    {"DLPROF_BUFFER_KB", "1024"},
                    {"DLPROF_FLUSH_MS", "50"},
                    {"DLPROF_ON_FULL", "drop"},
                    {"DLPROF_STACKS", "1"},
                    {"DLPROF_MPI_CLOCK", "0"},
                    {"DLPROF_QUIET", "1"},
                    {"DLPROF_PYTHON", "0"}});
  EXPECT_TRUE(p.warnings.empty());
  EXPECT_EQ(p.config.dir, "/scratch/t");
  EXPECT_EQ(p.config.modules, static_cast<uint32_t>(kModulePosix | kModuleStdio));
  EXPECT_EQ(p.config.include, (std::vector<std::string>{"/data", "/scratch"}));
  EXPECT_EQ(p.config.exclude, (std::vector<std::string>{"/tmp"}));
  EXPECT_EQ(p.config.buffer_kb, 1024u);
  EXPECT_EQ(p.config.flush_ms, 50u);
  EXPECT_EQ(p.config.on_full, OnFull::kDrop);
  EXPECT_TRUE(p.config.stacks);
  EXPECT_FALSE(p.config.mpi_clock);
  EXPECT_TRUE(p.config.quiet);
  EXPECT_FALSE(p.config.python);
}

// Asynchronous I/O is a module of its own (issue 52), and one of "all".
TEST(ConfigTest, AioIsAModule) {
  Parsed p = Parse({{"DLPROF_TRACE", "aio,posix"}});
  EXPECT_TRUE(p.warnings.empty());
  EXPECT_EQ(p.config.modules, static_cast<uint32_t>(kModuleAio | kModulePosix));
  EXPECT_NE(kModuleAll & kModuleAio, 0u);
}

TEST(ConfigTest, BadValuesWarnOnceEachAndKeepDefaults) {
  Parsed p = Parse({{"DLPROF_BUFFER_KB", "abc"},
                    {"DLPROF_FLUSH_MS", "-5"},
                    {"DLPROF_ON_FULL", "sometimes"},
                    {"DLPROF_ENABLE", "maybe"},
                    {"DLPROF_TRACE", "posix,floppy"},
                    {"DLPROF_MPI_CLOCK", "sometimes"},
                    {"DLPROF_PYTHON", "torch"}});
  Config defaults;
  EXPECT_EQ(p.config.buffer_kb, defaults.buffer_kb);
  EXPECT_EQ(p.config.flush_ms, defaults.flush_ms);
  EXPECT_EQ(p.config.on_full, OnFull::kWait);
  EXPECT_TRUE(p.config.enabled);
  EXPECT_EQ(p.config.modules, static_cast<uint32_t>(kModuleAll));
  EXPECT_TRUE(p.config.mpi_clock);
  EXPECT_TRUE(p.config.python);
  ASSERT_EQ(p.warnings.size(), 7u);
  EXPECT_NE(p.warnings[0].find("DLPROF_ENABLE"), std::string::npos);
  for (const std::string& w : p.warnings) EXPECT_NE(w.find("default"), std::string::npos) << w;
  EXPECT_EQ(p.warnings[6], "ignoring DLPROF_PYTHON='torch': expected 0 or 1; using the default (1)");
}

TEST(ConfigTest, OutOfRangeNumbersAreRejected) {
  Parsed p = Parse({{"DLPROF_BUFFER_KB", "1"}, {"DLPROF_FLUSH_MS", "99999999999"}});
  EXPECT_EQ(p.warnings.size(), 2u);
  EXPECT_EQ(p.config.buffer_kb, Config{}.buffer_kb);
}

TEST(ConfigTest, EmptyExcludeMeansExcludeNothing) {
  Parsed p = Parse({{"DLPROF_EXCLUDE", ""}});
  EXPECT_TRUE(p.config.exclude.empty());
}

TEST(ConfigTest, EmptyTraceListIsABadValue) {
  for (const char* v : {"", ","}) {
    Parsed p = Parse({{"DLPROF_TRACE", v}});
    EXPECT_EQ(p.config.modules, static_cast<uint32_t>(kModuleAll)) << v;
    ASSERT_EQ(p.warnings.size(), 1u) << v;
    EXPECT_NE(p.warnings[0].find("DLPROF_TRACE"), std::string::npos);
  }
}

TEST(ConfigTest, PathPrefixesAreAbsoluteAndNormalised) {
  Parsed p = Parse({{"DLPROF_EXCLUDE", "/tmp//data/../x:review:data.txt:/scratch/./a/"},
                    {"DLPROF_INCLUDE", "rel/dir:/data"}});
  EXPECT_EQ(p.config.exclude, (std::vector<std::string>{"/tmp/x", "/scratch/a"}));
  EXPECT_EQ(p.config.include, (std::vector<std::string>{"/data"}));
  ASSERT_EQ(p.warnings.size(), 3u);
  EXPECT_EQ(p.warnings[0],
            "ignoring DLPROF_INCLUDE entry 'rel/dir': expected an absolute path "
            "(paths are matched absolute)");
  EXPECT_NE(p.warnings[1].find("DLPROF_EXCLUDE entry 'review'"), std::string::npos);
  EXPECT_NE(p.warnings[2].find("'data.txt'"), std::string::npos);
}

// A list none of whose entries is a path is a bad value: the default stays
// (DLPROF_EXCLUDE=garbage once emptied the list, and /usr, /etc were traced).
TEST(ConfigTest, PrefixListOfNoPathKeepsTheDefault) {
  Parsed p = Parse({{"DLPROF_EXCLUDE", "garbage:rel/dir"}, {"DLPROF_INCLUDE", "data"}});
  EXPECT_EQ(p.config.exclude, DefaultExcludes());
  EXPECT_TRUE(p.config.include.empty());
  ASSERT_EQ(p.warnings.size(), 2u);
  EXPECT_EQ(p.warnings[0].rfind("ignoring DLPROF_INCLUDE='data': ", 0), 0u) << p.warnings[0];
  EXPECT_NE(p.warnings[0].find("using the default (none)"), std::string::npos);
  EXPECT_EQ(p.warnings[1].rfind("ignoring DLPROF_EXCLUDE='garbage:rel/dir': ", 0), 0u)
      << p.warnings[1];
  EXPECT_NE(p.warnings[1].find("using the default (/proc /sys /dev /etc /usr"),
            std::string::npos) << p.warnings[1];
}

TEST(ConfigTest, QuietAtExitOnly) {
  Parsed exit_only = Parse({{"DLPROF_QUIET", "exit"}});
  EXPECT_FALSE(exit_only.config.quiet);
  EXPECT_TRUE(exit_only.config.quiet_exit);
  Parsed all = Parse({{"DLPROF_QUIET", "1"}});
  EXPECT_TRUE(all.config.quiet && all.config.quiet_exit);
  EXPECT_TRUE(exit_only.warnings.empty() && all.warnings.empty());
}

TEST(ConfigTest, DisabledByEnable0) {
  EXPECT_FALSE(Parse({{"DLPROF_ENABLE", "0"}}).config.enabled);
}

TEST(ConfigTest, ClockSetting) {
  EXPECT_EQ(Parse({}).config.clock, ClockSetting::kAuto);
  EXPECT_EQ(Parse({{"DLPROF_CLOCK", "auto"}}).config.clock, ClockSetting::kAuto);
  EXPECT_EQ(Parse({{"DLPROF_CLOCK", "tsc"}}).config.clock, ClockSetting::kTsc);
  EXPECT_EQ(Parse({{"DLPROF_CLOCK", "clock_gettime"}}).config.clock, ClockSetting::kClockGettime);
  Parsed bad = Parse({{"DLPROF_CLOCK", "rdtsc"}});
  EXPECT_EQ(bad.config.clock, ClockSetting::kAuto);
  ASSERT_EQ(bad.warnings.size(), 1u);
  EXPECT_EQ(bad.warnings[0], "ignoring DLPROF_CLOCK='rdtsc': expected auto, tsc or clock_gettime; "
                             "using the default (auto)");
}

// DLPROF_MAP_FAULTS (lib/core/map_faults.h): page faults on mapped files.
TEST(ConfigTest, MapFaultsSetting) {
  EXPECT_EQ(Parse({}).config.map_faults, MapFaultsSetting::kEvents);
  EXPECT_EQ(Parse({{"DLPROF_MAP_FAULTS", "events"}}).config.map_faults, MapFaultsSetting::kEvents);
  EXPECT_EQ(Parse({{"DLPROF_MAP_FAULTS", "counts"}}).config.map_faults, MapFaultsSetting::kCounts);
  EXPECT_EQ(Parse({{"DLPROF_MAP_FAULTS", "off"}}).config.map_faults, MapFaultsSetting::kOff);
  EXPECT_EQ(Parse({{"DLPROF_MAP_FAULTS", "0"}}).config.map_faults, MapFaultsSetting::kOff);
  Parsed bad = Parse({{"DLPROF_MAP_FAULTS", "perf"}});
  EXPECT_EQ(bad.config.map_faults, MapFaultsSetting::kEvents);
  ASSERT_EQ(bad.warnings.size(), 1u);
  EXPECT_EQ(bad.warnings[0], "ignoring DLPROF_MAP_FAULTS='perf': expected events, counts or off; "
                             "using the default (events)");
}

// DLPROF_KEEP and DLPROF_KEEP_WHEN (lib/core/trace_segments.cc): bounded traces.
TEST(ConfigTest, KeepDuration) {
  EXPECT_EQ(Parse({}).config.keep_ms, 0u);
  EXPECT_EQ(Parse({{"DLPROF_KEEP", "5s"}}).config.keep_ms, 5000u);
  EXPECT_EQ(Parse({{"DLPROF_KEEP", "5"}}).config.keep_ms, 5000u);
  EXPECT_EQ(Parse({{"DLPROF_KEEP", "1500ms"}}).config.keep_ms, 1500u);
  EXPECT_EQ(Parse({{"DLPROF_KEEP", "10m"}}).config.keep_ms, 600000u);
  EXPECT_EQ(Parse({{"DLPROF_KEEP", "2h"}}).config.keep_ms, 7200000u);
  EXPECT_EQ(Parse({{"DLPROF_KEEP", "1d"}}).config.keep_ms, 86400000u);
  for (const char* v : {"", "s", "500ms", "5 s", "-5s", "5x", "31d", "99999999999s"}) {
    Parsed bad = Parse({{"DLPROF_KEEP", v}});
    EXPECT_EQ(bad.config.keep_ms, 0u) << v;
    ASSERT_EQ(bad.warnings.size(), 1u) << v;
    EXPECT_EQ(bad.warnings[0], std::string("ignoring DLPROF_KEEP='") + v +
                                   "': expected a duration from 1s to 30d (1500ms, 5s, 10m, 2h, "
                                   "1d); using the default (off: every event is kept)");
  }
}

TEST(ConfigTest, KeepWhen) {
  EXPECT_EQ(Parse({{"DLPROF_KEEP", "5s"}}).config.keep_when_batch_wait, -1);
  Parsed ok = Parse({{"DLPROF_KEEP", "5s"}, {"DLPROF_KEEP_WHEN", "batch_wait>25%"}});
  EXPECT_EQ(ok.config.keep_when_batch_wait, 25);
  EXPECT_TRUE(ok.warnings.empty());
  EXPECT_EQ(Parse({{"DLPROF_KEEP", "5s"}, {"DLPROF_KEEP_WHEN", "batch_wait>12.5"}})
                .config.keep_when_batch_wait,
            12.5);
  for (const char* v : {"batch_wait>0%", "batch_wait>100%", "batch_wait<25%", "io>3", "25%"}) {
    Parsed bad = Parse({{"DLPROF_KEEP", "5s"}, {"DLPROF_KEEP_WHEN", v}});
    EXPECT_EQ(bad.config.keep_when_batch_wait, -1) << v;
    ASSERT_EQ(bad.warnings.size(), 1u) << v;
    EXPECT_EQ(bad.warnings[0], std::string("ignoring DLPROF_KEEP_WHEN='") + v +
                                   "': expected batch_wait>N% with N above 0 and below 100; "
                                   "using the default (no rule)");
  }
  // A rule about windows of a trace that keeps every event means nothing.
  Parsed alone = Parse({{"DLPROF_KEEP_WHEN", "batch_wait>25%"}});
  EXPECT_EQ(alone.config.keep_when_batch_wait, -1);
  ASSERT_EQ(alone.warnings.size(), 1u);
  EXPECT_NE(alone.warnings[0].find("DLPROF_KEEP is not set"), std::string::npos);
}

TEST(SplitListTest, DropsEmptyItems) {
  EXPECT_EQ(SplitList("::a::b:", ':'), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(SplitList("", ':').empty());
}

}  // namespace
}  // namespace dlprof::core
