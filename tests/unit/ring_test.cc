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
  // Four slots hold three events: one stays free (ring.h).
  std::vector<Event> slots(4);
  EventRing ring;
  ring.Init(slots.data(), slots.size());
  for (uint64_t i = 0; i < 3; ++i) ASSERT_TRUE(ring.TryPush(Numbered(i)));
  EXPECT_FALSE(ring.TryPush(Numbered(99)));
  ring.Drain([](const Event*, size_t) {});
  EXPECT_TRUE(ring.TryPush(Numbered(3)));
}

TEST(EventRingTest, DrainHandsWrappedContentInTwoPieces) {
  std::vector<Event> slots(4);
  EventRing ring;
  ring.Init(slots.data(), slots.size());
  for (uint64_t i = 0; i < 3; ++i) ring.TryPush(Numbered(i));
  ring.Drain([](const Event*, size_t) {});
  for (uint64_t i = 3; i < 6; ++i) ASSERT_TRUE(ring.TryPush(Numbered(i)));
  std::vector<size_t> pieces;
  std::vector<uint64_t> seen;
  ring.Drain([&](const Event* e, size_t n) {
    pieces.push_back(n);
    for (size_t i = 0; i < n; ++i) seen.push_back(e[i].start_ns);
  });
  EXPECT_EQ(pieces, (std::vector<size_t>{1, 2}));
  EXPECT_EQ(seen, (std::vector<uint64_t>{3, 4, 5}));
}

// The rings sidecar's way (trace_sink.cc): events handed on by Peek keep
// their slots until Release; a producer finds the ring full meanwhile and
// never stores over one of them, nor into the slot of the oldest.
TEST(EventRingTest, PeekedEventsKeepTheirSlotsUntilReleased) {
  std::vector<Event> slots(8);
  EventRing ring;
  ring.Init(slots.data(), slots.size());
  for (uint64_t i = 0; i < 7; ++i) ASSERT_TRUE(ring.TryPush(Numbered(i)));
  EXPECT_FALSE(ring.TryPush(Numbered(99)));
  std::vector<uint64_t> seen;
  auto collect = [&](const Event* e, size_t n) {
    for (size_t i = 0; i < n; ++i) seen.push_back(e[i].start_ns);
  };
  EXPECT_EQ(ring.Peek(0, collect), 7u);
  EXPECT_EQ(ring.ReadableFrom(7), 0u);
  EXPECT_FALSE(ring.TryPush(Numbered(99)));  // peeked, not released: still full
  ring.Release(4);                            // the first four are safe elsewhere
  for (uint64_t i = 7; i < 11; ++i) ASSERT_TRUE(ring.TryPush(Numbered(i)));
  EXPECT_FALSE(ring.TryPush(Numbered(99)));
  // Events 4..6 were never overwritten; the peek goes on from 7, wrapping.
  EXPECT_EQ(ring.Peek(7, collect), 4u);
  EXPECT_EQ(seen, (std::vector<uint64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  EXPECT_EQ(slots[4].start_ns, 4u);
  EXPECT_EQ(slots[6].start_ns, 6u);
  ring.Release(11);
  EXPECT_EQ(ring.Readable(), 0u);
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
