#include "lib/core/ring.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace dlprof::core {
namespace {

Event Numbered(uint64_t n) {
  Event e{};
  e.start_ns = n;
  e.size = n * 3;
  return e;
}

TEST(EventRingTest, PushDrainInOrder) {
  std::vector<Event> slots(8);
  EventRing ring;
  ring.Init(slots.data(), slots.size());
  for (uint64_t i = 0; i < 5; ++i) ASSERT_TRUE(ring.TryPush(Numbered(i)));
  EXPECT_EQ(ring.Readable(), 5u);
  std::vector<uint64_t> seen;
  ring.Drain([&](const Event* e, size_t n) {
    for (size_t i = 0; i < n; ++i) seen.push_back(e[i].start_ns);
  });
  EXPECT_EQ(seen, (std::vector<uint64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(ring.Readable(), 0u);
}

TEST(EventRingTest, FullRingRefusesUntilDrained) {
  std::vector<Event> slots(4);
  EventRing ring;
  ring.Init(slots.data(), slots.size());
  for (uint64_t i = 0; i < 4; ++i) ASSERT_TRUE(ring.TryPush(Numbered(i)));
  EXPECT_FALSE(ring.TryPush(Numbered(99)));
  ring.Drain([](const Event*, size_t) {});
  EXPECT_TRUE(ring.TryPush(Numbered(4)));
}

TEST(EventRingTest, DrainHandsWrappedContentInTwoPieces) {
  std::vector<Event> slots(4);
  EventRing ring;
  ring.Init(slots.data(), slots.size());
  for (uint64_t i = 0; i < 3; ++i) ring.TryPush(Numbered(i));
  ring.Drain([](const Event*, size_t) {});
  for (uint64_t i = 3; i < 7; ++i) ASSERT_TRUE(ring.TryPush(Numbered(i)));
  std::vector<size_t> pieces;
  std::vector<uint64_t> seen;
  ring.Drain([&](const Event* e, size_t n) {
    pieces.push_back(n);
    for (size_t i = 0; i < n; ++i) seen.push_back(e[i].start_ns);
  });
  EXPECT_EQ(pieces, (std::vector<size_t>{1, 3}));
  EXPECT_EQ(seen, (std::vector<uint64_t>{3, 4, 5, 6}));
}

// One producer and one consumer at full speed through a small ring: every
// event arrives exactly once and in order.
TEST(EventRingTest, ConcurrentStressKeepsEveryEventInOrder) {
  constexpr uint64_t kEvents = 2'000'000;
  std::vector<Event> slots(256);
  EventRing ring;
  ring.Init(slots.data(), slots.size());
  std::thread producer([&] {
    for (uint64_t i = 0; i < kEvents; ++i) {
      while (!ring.TryPush(Numbered(i))) std::this_thread::yield();
    }
  });
  uint64_t expected = 0;
  bool in_order = true;
  while (expected < kEvents) {
    ring.Drain([&](const Event* e, size_t n) {
      for (size_t i = 0; i < n; ++i) {
        if (e[i].start_ns != expected || e[i].size != expected * 3) in_order = false;
        ++expected;
      }
    });
  }
  producer.join();
  EXPECT_TRUE(in_order);
  EXPECT_EQ(expected, kEvents);
  EXPECT_EQ(ring.Readable(), 0u);
}

}  // namespace
}  // namespace dlprof::core
