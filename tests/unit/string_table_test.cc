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

}  // namespace
}  // namespace dlprof::core
