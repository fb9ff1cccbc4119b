// The plugin's diagnostic settings (tuning.h) and the queue of completed
// buffers between CUPTI's callback and the translate thread
// (completed_queue.h).
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "lib/cupti/completed_queue.h"
#include "lib/cupti/tuning.h"

namespace dlprof::cupti {
namespace {

TEST(TuningTest, Defaults) {
  for (const char* empty : {static_cast<const char*>(nullptr), ""}) {
    PluginTuning t = ParseTuning(empty, empty, empty);
    EXPECT_EQ(t.buffer_bytes, size_t{2} << 20);
    EXPECT_EQ(t.max_buffers, 32u);
    EXPECT_EQ(t.flush_ms, 500u);
    EXPECT_TRUE(t.translate_thread);
    EXPECT_EQ(t.warning, "");
  }
}

TEST(TuningTest, ValuesInRange) {
  PluginTuning t = ParseTuning("8192", "100", "inline");
  EXPECT_EQ(t.buffer_bytes, size_t{8} << 20);
  EXPECT_EQ(t.max_buffers, 8u);  // the pool stays at 64 MiB
  EXPECT_EQ(t.flush_ms, 100u);
  EXPECT_FALSE(t.translate_thread);
  EXPECT_EQ(t.warning, "");
  t = ParseTuning("65536", "60000", "thread");
  EXPECT_EQ(t.max_buffers, 2u);  // one filling while one is translated
  EXPECT_TRUE(t.translate_thread);
  EXPECT_EQ(ParseTuning("64", nullptr, nullptr).max_buffers, 1024u);
}

TEST(TuningTest, BadValuesWarnAndKeepTheDefault) {
  PluginTuning t = ParseTuning("2m", "5", "later");
  EXPECT_EQ(t.buffer_bytes, size_t{2} << 20);
  EXPECT_EQ(t.flush_ms, 500u);
  EXPECT_TRUE(t.translate_thread);
  EXPECT_NE(t.warning.find("DLPROF_CUPTI_BUFFER_KB"), std::string::npos) << t.warning;
  EXPECT_NE(t.warning.find("DLPROF_CUPTI_FLUSH_MS"), std::string::npos) << t.warning;
  EXPECT_NE(t.warning.find("DLPROF_CUPTI_TRANSLATE"), std::string::npos) << t.warning;
  for (const char* bad : {"63", "65537", "-1", " 128", "99999999999999999999999"}) {
    EXPECT_NE(ParseTuning(bad, nullptr, nullptr).warning, "") << bad;
  }
}

CompletedBuffer Buf(uintptr_t n) {
  return CompletedBuffer{reinterpret_cast<uint8_t*>(n * 64), n, n % 3};
}

TEST(CompletedQueueTest, FifoBoundedAndClosed) {
  CompletedQueue q(3);
  CompletedBuffer out;
  EXPECT_FALSE(q.Pop(&out));
  for (uintptr_t i = 1; i <= 3; ++i) EXPECT_TRUE(q.Push(Buf(i)));
  EXPECT_FALSE(q.Push(Buf(4)));  // full: the caller translates it in place
  ASSERT_TRUE(q.Pop(&out));
  EXPECT_EQ(out.valid, 1u);
  EXPECT_TRUE(q.Push(Buf(5)));  // wraps around
  for (size_t want : {2u, 3u, 5u}) {
    ASSERT_TRUE(q.WaitForWork());
    ASSERT_TRUE(q.Pop(&out));
    EXPECT_EQ(out.valid, want);
    EXPECT_EQ(out.dropped, want % 3);
  }
  EXPECT_TRUE(q.Push(Buf(6)));
  q.Close();
  EXPECT_FALSE(q.Push(Buf(7)));
  EXPECT_TRUE(q.WaitForWork());  // closed, but one is left to drain
  ASSERT_TRUE(q.Pop(&out));
  EXPECT_EQ(out.valid, 6u);
  EXPECT_FALSE(q.WaitForWork());
}

TEST(CompletedQueueTest, ProducersAndOneConsumer) {
  // Two completing threads and the translate thread: nothing lost, each
  // producer's buffers in its order.
  CompletedQueue q(4);
  constexpr uintptr_t kEach = 20000;
  std::vector<uintptr_t> seen[2];
  std::thread consumer([&] {
    CompletedBuffer b;
    while (q.WaitForWork()) {
      while (q.Pop(&b)) seen[b.dropped].push_back(b.valid);
    }
  });
  std::vector<std::thread> producers;
  for (uint64_t p = 0; p < 2; ++p) {
    producers.emplace_back([&q, p] {
      for (uintptr_t i = 0; i < kEach; ++i) {
        while (!q.Push(CompletedBuffer{nullptr, i, p})) std::this_thread::yield();
      }
    });
  }
  for (auto& t : producers) t.join();
  q.Close();
  consumer.join();
  for (auto& s : seen) {
    ASSERT_EQ(s.size(), kEach);
    for (uintptr_t i = 0; i < kEach; ++i) ASSERT_EQ(s[i], i);
  }
}

}  // namespace
}  // namespace dlprof::cupti
