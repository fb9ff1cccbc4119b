// The table of asynchronous requests in flight (lib/intercept/
// async_requests.h): keys that share a home, the oldest of equal keys
// taken first, searches that pass freed slots, each home's search as long
// as its own claims went, and threads claiming and taking at once.
#include "lib/intercept/async_requests.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

namespace dlprof::intercept::async {
namespace {

class RequestTableTest : public ::testing::Test {
 protected:
  void Make(uint32_t count) {
    slots_.reset(new Request[count]());
    table_.Init(slots_.get(), count);
  }
  Request* ClaimPublished(uint64_t key) {
    Request* r = table_.Claim(key);
    if (r != nullptr) RequestTable::Publish(r);
    return r;
  }

  std::unique_ptr<Request[]> slots_;
  RequestTable table_;
};

TEST_F(RequestTableTest, EqualKeysAreTakenOldestFirstAndFreedSlotsEndNoSearch) {
  Make(8);
  std::vector<Request*> claimed;
  for (int i = 0; i < 5; ++i) claimed.push_back(ClaimPublished(42));
  for (Request* r : claimed) ASSERT_NE(r, nullptr);
  // Free the first two claims' slots (taken and recorded): the later ones,
  // further from home, are still found past them.
  for (int i = 0; i < 2; ++i) {
    Request* r = table_.Take(42);
    ASSERT_EQ(r, claimed[i]);
    RequestTable::Free(r);
  }
  for (int i = 2; i < 5; ++i) {
    Request* r = table_.Take(42);
    ASSERT_EQ(r, claimed[i]) << i;
    RequestTable::Free(r);
  }
  EXPECT_EQ(table_.Take(42), nullptr);
}

TEST_F(RequestTableTest, AFullTableClaimsNothingAndAMissingKeyIsNotFound) {
  Make(4);
  for (uint64_t k = 0; k < 4; ++k) ASSERT_NE(ClaimPublished(k * 977), nullptr);
  EXPECT_EQ(table_.Claim(5), nullptr);
  EXPECT_EQ(table_.Find(5), nullptr);
  for (uint64_t k = 0; k < 4; ++k) {
    Request* r = table_.Take(k * 977);
    ASSERT_NE(r, nullptr) << k;
    EXPECT_EQ(r->key.load(), k * 977);
  }
}

// A home's search is as long as its own claims went: six claims of one key
// lengthen its home's reach to 5 and no other slot's.
TEST_F(RequestTableTest, EachHomeSearchesAsFarAsItsOwnClaimsWent) {
  Make(64);
  std::vector<Request*> claimed;
  for (int i = 0; i < 6; ++i) claimed.push_back(ClaimPublished(7));
  const uint32_t home = table_.Index(claimed[0]);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(table_.Index(claimed[i]), (home + i) % 64);
  for (uint32_t i = 0; i < 64; ++i) EXPECT_EQ(slots_[i].reach.load(), i == home ? 5u : 0u) << i;
  EXPECT_EQ(table_.Find(7), claimed[0]);
}

// Threads claim, publish and take their own keys in a table twice as large
// as what is in flight (homes shared across threads): every request is
// taken exactly once, by key, and the table is empty at the end. (A
// completion is looked for after its own submission, as here: keys that
// threads share are the single-thread case above.)
TEST_F(RequestTableTest, ThreadsClaimAndTakeWithoutLosingAnyRequest) {
  Make(256);
  constexpr int kThreads = 4, kRounds = 20000, kDepth = 32;
  std::atomic<uint64_t> taken{0}, lost{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<Request*> mine;
      for (int i = 0; i < kRounds; ++i) {
        const uint64_t key = (static_cast<uint64_t>(t) << 32) | static_cast<uint64_t>(i);
        Request* r = table_.Claim(key);
        if (r == nullptr) {
          lost.fetch_add(1);
          continue;
        }
        r->position = key;
        RequestTable::Publish(r);
        mine.push_back(r);
        if (mine.size() == kDepth || i == kRounds - 1) {
          for (Request* m : mine) {
            const uint64_t k = m->position;
            Request* got = table_.Take(k);
            if (got != m) {
              lost.fetch_add(1);
              continue;
            }
            taken.fetch_add(1);
            RequestTable::Free(got);
          }
          mine.clear();
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(lost.load(), 0u);
  EXPECT_EQ(taken.load(), uint64_t{kThreads} * kRounds);
  uint32_t busy = 0;
  table_.ForEach(Request::kPending, [&](Request*) { ++busy; });
  EXPECT_EQ(busy, 0u);
}

}  // namespace
}  // namespace dlprof::intercept::async
