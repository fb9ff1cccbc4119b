// Stand-ins for the runtime's string table and event rings, for tests of
// code that produces events through an interface (the CUPTI translator, any
// later plugin): strings get ids from 1 in order of first sight, events are
// kept in order, drops are summed.
#ifndef DLPROF_TESTS_HELPERS_FAKE_SINK_H_
#define DLPROF_TESTS_HELPERS_FAKE_SINK_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include <gtest/gtest.h>

#include "dlprof/format.h"

namespace dlprof::testing {

class FakeStrings {
 public:
  // The id of `text` (1-based); a new id for a string not seen before.
  uint32_t Intern(const char* text, size_t len);
  // The text of `id`; "<no string N>" for an id never handed out.
  std::string Text(uint32_t id) const;
  size_t distinct() const { return texts_.size(); }
  // Intern calls so far, repeated strings included: shows caching upstream.
  uint64_t calls() const { return calls_; }

 private:
  std::vector<std::string> texts_;
  std::unordered_map<std::string, uint32_t> ids_;
  uint64_t calls_ = 0;
};

class FakeEventSink {
 public:
  void Record(const Event& e) { events_.push_back(e); }
  void CountDropped(uint64_t n) { dropped_ += n; }

  const std::vector<Event>& events() const { return events_; }
  std::vector<Event> OfKind(EventKind kind) const;
  uint64_t dropped() const { return dropped_; }

 private:
  std::vector<Event> events_;
  uint64_t dropped_ = 0;
};

// Field-by-field equality with a readable failure message.
::testing::AssertionResult SameEvent(const Event& a, const Event& b);

}  // namespace dlprof::testing

#endif  // DLPROF_TESTS_HELPERS_FAKE_SINK_H_
