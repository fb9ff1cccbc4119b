#include "lib/core/string_table.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <thread>
#include <vector>

namespace dlprof::core {
namespace {

TEST(StringTableTest, SameStringSameId) {
  StringTable t;
  ASSERT_TRUE(t.Init());
  uint32_t a = t.Intern("/data/a", 7);
  uint32_t b = t.Intern("/data/b", 7);
  EXPECT_NE(a, 0u);
  EXPECT_NE(a, b);
  EXPECT_EQ(t.Intern("/data/a", 7), a);
  size_t len = 0;
  const char* text = t.Lookup(b, &len);
  ASSERT_NE(text, nullptr);
  EXPECT_EQ(std::string(text, len), "/data/b");
}

TEST(StringTableTest, EmitsEachStringOnceUntilReset) {
  StringTable t;
  ASSERT_TRUE(t.Init());
  t.Intern("x", 1);
  t.Intern("y", 1);
  std::map<uint32_t, std::string> emitted;
  auto collect = [&](uint32_t id, const char* s, size_t n) { emitted[id] = std::string(s, n); };
  t.EmitNew(collect);
  EXPECT_EQ(emitted.size(), 2u);
  emitted.clear();
  t.EmitNew(collect);
  EXPECT_TRUE(emitted.empty());
  t.Intern("z", 1);
  t.EmitNew(collect);
  EXPECT_EQ(emitted.size(), 1u);
  t.MarkAllUnemitted();  // as in a forked child
  emitted.clear();
  t.EmitNew(collect);
  EXPECT_EQ(emitted.size(), 3u);
}

// Threads interning overlapping sets agree on one id per string.
TEST(StringTableTest, ConcurrentInternAgrees) {
  StringTable t;
  ASSERT_TRUE(t.Init());
  constexpr int kThreads = 4, kStrings = 5000;
  std::vector<std::vector<uint32_t>> ids(kThreads, std::vector<uint32_t>(kStrings));
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&, th] {
      for (int i = 0; i < kStrings; ++i) {
        std::string s = "/file/" + std::to_string(i);
        ids[th][i] = t.Intern(s.data(), s.size());
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int i = 0; i < kStrings; ++i) {
    for (int th = 1; th < kThreads; ++th) ASSERT_EQ(ids[th][i], ids[0][i]) << i;
    size_t len = 0;
    const char* s = t.Lookup(ids[0][i], &len);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(std::string(s, len), "/file/" + std::to_string(i));
  }
}

// Past the first level (2^20 strings by default; 850 in all here, in levels
// of 10, 40, 160 and 640): ids go on contiguously, strings of earlier levels
// keep theirs, and a full table says so with 0 and counts what it lost.
TEST(StringTableTest, GrowsThroughLevelsThenRefuses) {
  StringTable t;
  ASSERT_TRUE(t.Init(850));
  std::vector<uint32_t> ids;
  for (int i = 0; i < 1000; ++i) {
    std::string s = "/p/" + std::to_string(i);
    ids.push_back(t.Intern(s.data(), s.size()));
  }
  for (int i = 0; i < 850; ++i) ASSERT_EQ(ids[i], static_cast<uint32_t>(i + 1)) << i;
  for (int i = 850; i < 1000; ++i) ASSERT_EQ(ids[i], 0u) << i;
  EXPECT_EQ(t.lost_strings(), 150u);
  for (int i = 0; i < 850; i += 7) {
    std::string s = "/p/" + std::to_string(i);
    ASSERT_EQ(t.Intern(s.data(), s.size()), ids[i]) << i;
  }
  std::map<uint32_t, std::string> emitted;
  t.EmitNew([&](uint32_t id, const char* s, size_t n) { emitted[id] = std::string(s, n); });
  ASSERT_EQ(emitted.size(), 850u);
  EXPECT_EQ(emitted[850], "/p/849");
}

// Threads crossing the levels together still agree on one id per string.
TEST(StringTableTest, ConcurrentInternAgreesAcrossLevels) {
  StringTable t;
  ASSERT_TRUE(t.Init(85 * 100));  // levels of 100, 400, 1600, 6400
  constexpr int kThreads = 4, kStrings = 2000;  // at most 4 ids each: all fit
  std::vector<std::vector<uint32_t>> ids(kThreads, std::vector<uint32_t>(kStrings));
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th) {
    threads.emplace_back([&, th] {
      for (int i = 0; i < kStrings; ++i) {
        std::string s = "/file/" + std::to_string(th % 2 ? i : kStrings - 1 - i);
        ids[th][th % 2 ? i : kStrings - 1 - i] = t.Intern(s.data(), s.size());
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int i = 0; i < kStrings; ++i) {
    ASSERT_NE(ids[0][i], 0u) << i;
    for (int th = 1; th < kThreads; ++th) ASSERT_EQ(ids[th][i], ids[0][i]) << i;
    size_t len = 0;
    const char* s = t.Lookup(ids[0][i], &len);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(std::string(s, len), "/file/" + std::to_string(i));
  }
}

}  // namespace
}  // namespace dlprof::core
