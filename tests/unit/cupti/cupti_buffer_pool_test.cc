// The bounded pool of CUPTI activity buffers.
#include "lib/cupti/buffer_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

namespace dlprof::cupti {
namespace {

TEST(BufferPoolTest, RefusesPastTheLimitAndRecycles) {
  BufferPool pool(1000, 3);
  EXPECT_EQ(pool.buffer_bytes() % BufferPool::kAlignment, 0u);
  EXPECT_GE(pool.buffer_bytes(), 1000u);
  uint8_t* a = pool.Acquire();
  uint8_t* b = pool.Acquire();
  uint8_t* c = pool.Acquire();
  ASSERT_TRUE(a && b && c);
  for (uint8_t* p : {a, b, c}) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 8, 0u);  // CUPTI's requirement
    std::memset(p, 0xab, pool.buffer_bytes());          // the whole size is ours
  }
  EXPECT_EQ(pool.outstanding(), 3u);
  EXPECT_EQ(pool.Acquire(), nullptr);
  EXPECT_EQ(pool.refused(), 1u);
  pool.Release(b);
  EXPECT_EQ(pool.outstanding(), 2u);
  EXPECT_EQ(pool.Acquire(), b);  // reused, not reallocated
  pool.Release(nullptr);         // ignored
  EXPECT_EQ(pool.outstanding(), 3u);
  pool.Release(a);
  pool.Release(b);
  pool.Release(c);
  EXPECT_EQ(pool.outstanding(), 0u);
}

TEST(BufferPoolTest, ManyThreadsNeverExceedTheLimit) {
  // CUPTI requests buffers from its worker and from flushing threads at once.
  BufferPool pool(4096, 4);
  std::atomic<int> out{0};
  std::atomic<int> max_out{0};
  std::atomic<bool> overlap{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        uint8_t* b = pool.Acquire();
        if (b == nullptr) continue;
        int now = ++out;
        int seen = max_out.load();
        while (now > seen && !max_out.compare_exchange_weak(seen, now)) {
        }
        // Each buffer has one owner at a time.
        if (b[0] == 1) overlap = true;
        b[0] = 1;
        b[0] = 0;
        --out;
        pool.Release(b);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LE(max_out.load(), 4);
  EXPECT_FALSE(overlap.load());
  EXPECT_EQ(pool.outstanding(), 0u);
  std::set<uint8_t*> distinct;
  for (int i = 0; i < 4; ++i) distinct.insert(pool.Acquire());
  EXPECT_EQ(distinct.size(), 4u);
  EXPECT_EQ(distinct.count(nullptr), 0u);
  EXPECT_EQ(pool.Acquire(), nullptr);
  for (uint8_t* b : distinct) pool.Release(b);
}

}  // namespace
}  // namespace dlprof::cupti
