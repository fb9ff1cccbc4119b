#include "lib/core/path_filter.h"

#include <gtest/gtest.h>

#include <string>

#include "lib/core/config.h"

namespace dlprof::core {
namespace {

std::string Norm(const char* base, const char* path) {
  char out[4096];
  size_t n = NormalizePath(base, path, out, sizeof(out));
  return n ? std::string(out, n) : std::string("<too long>");
}

TEST(NormalizePathTest, AbsolutePathsCollapse) {
  EXPECT_EQ(Norm(nullptr, "/a//b/./c"), "/a/b/c");
  EXPECT_EQ(Norm(nullptr, "/a/b/../c/"), "/a/c");
  EXPECT_EQ(Norm(nullptr, "/../.."), "/");
  EXPECT_EQ(Norm(nullptr, "/"), "/");
}

TEST(NormalizePathTest, RelativePathsJoinTheBase) {
  EXPECT_EQ(Norm("/home/u", "data/x.bin"), "/home/u/data/x.bin");
  EXPECT_EQ(Norm("/home/u", "../v/./y"), "/home/v/y");
  EXPECT_EQ(Norm("/", "x"), "/x");
  EXPECT_EQ(Norm("/home/u", "/abs"), "/abs");
}

TEST(NormalizePathTest, TooLongIsRefused) {
  char out[8];
  EXPECT_EQ(NormalizePath(nullptr, "/abcdefghijk", out, sizeof(out)), 0u);
}

TEST(HasPathPrefixTest, MatchesWholeComponents) {
  auto has = [](const char* p, const char* prefix) {
    return HasPathPrefix(p, std::char_traits<char>::length(p), prefix);
  };
  EXPECT_TRUE(has("/usr", "/usr"));
  EXPECT_TRUE(has("/usr/lib/x", "/usr"));
  EXPECT_FALSE(has("/usrdata/x", "/usr"));
  EXPECT_TRUE(has("/data/x", "/data/"));
  EXPECT_TRUE(has("/anything", "/"));
}

TEST(PathFilterTest, DefaultExcludesSystemDirsAndTraceDir) {
  PathFilter f;
  f.Configure({}, DefaultExcludes(), {"/work/dlprof-traces"});
  auto traced = [&](const char* p) { return f.Traced(p, std::char_traits<char>::length(p)); };
  EXPECT_FALSE(traced("/usr/lib/python3/os.py"));
  EXPECT_FALSE(traced("/proc/self/maps"));
  EXPECT_FALSE(traced("/etc/passwd"));
  EXPECT_FALSE(traced("/work/dlprof-traces/x.dlprof"));
  EXPECT_TRUE(traced("/work/data/train.bin"));
  EXPECT_TRUE(traced("/tmp/a"));
  EXPECT_FALSE(traced("pipe:[1234]"));
  EXPECT_FALSE(traced("socket:[99]"));
}

TEST(PathFilterTest, IncludeWinsOverExclude) {
  PathFilter f;
  f.Configure({"/"}, DefaultExcludes(), {"/t", "/opt/lib/dlprof-python", ""});
  EXPECT_TRUE(f.Traced("/etc/passwd", 11));
  EXPECT_FALSE(f.Traced("/t/x", 4));  // never the trace directory
  // nor the Python bootstrap's, itself or below it (an empty one is none)
  EXPECT_FALSE(f.Traced("/opt/lib/dlprof-python", 22));
  EXPECT_FALSE(f.Traced("/opt/lib/dlprof-python/sitecustomize.py", 39));
  EXPECT_TRUE(f.Traced("/opt/lib/dlprof-python2", 23));
  f.Configure({"/usr/share/data"}, DefaultExcludes(), {"/t"});
  EXPECT_TRUE(f.Traced("/usr/share/data/a", 17));
  EXPECT_FALSE(f.Traced("/usr/share/doc/a", 16));
}

}  // namespace
}  // namespace dlprof::core
