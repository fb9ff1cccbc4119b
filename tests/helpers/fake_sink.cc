#include "tests/helpers/fake_sink.h"

#include <gtest/gtest.h>

#include <sstream>

namespace dlprof::testing {

uint32_t FakeStrings::Intern(const char* text, size_t len) {
  ++calls_;
  std::string s(text, len);
  auto it = ids_.find(s);
  if (it != ids_.end()) return it->second;
  texts_.push_back(s);
  uint32_t id = static_cast<uint32_t>(texts_.size());
  ids_.emplace(std::move(s), id);
  return id;
}

std::string FakeStrings::Text(uint32_t id) const {
  if (id == 0 || id > texts_.size()) return "<no string " + std::to_string(id) + ">";
  return texts_[id - 1];
}

std::vector<Event> FakeEventSink::OfKind(EventKind kind) const {
  std::vector<Event> out;
  for (const Event& e : events_) {
    if (e.kind == static_cast<uint16_t>(kind)) out.push_back(e);
  }
  return out;
}

namespace {

std::string Describe(const Event& e) {
  std::ostringstream o;
  o << "{kind=" << e.kind << " flags=" << e.flags << " err=" << e.err
    << " start=" << e.start_ns << " dur=" << e.dur_ns << " ret=" << e.ret
    << " offset=" << e.offset << " size=" << e.size << " file=" << e.file << " fd=" << e.fd
    << " aux=" << e.aux << "}";
  return o.str();
}

}  // namespace

::testing::AssertionResult SameEvent(const Event& a, const Event& b) {
  if (a.kind == b.kind && a.flags == b.flags && a.err == b.err && a.start_ns == b.start_ns &&
      a.dur_ns == b.dur_ns && a.ret == b.ret && a.offset == b.offset && a.size == b.size &&
      a.file == b.file && a.fd == b.fd && a.aux == b.aux) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << Describe(a) << " != " << Describe(b);
}

}  // namespace dlprof::testing
