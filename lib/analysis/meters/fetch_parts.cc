// FetchParts (fetch_parts.h): inside the loader's fetches, in one pass.
#include "lib/analysis/meters/fetch_parts.h"

#include <algorithm>

#include "lib/read/regions.h"

namespace dlprof::analysis {
namespace {

// The bootstrap's counter of a fetch's tensor bytes, at its end.
constexpr const char* kBatchBytesCounter = "batch_bytes";

bool SlowerThan(const SampleRecord& a, const SampleRecord& b) {
  return a.ns != b.ns ? a.ns > b.ns : a.start_ns < b.start_ns;
}

}  // namespace

FetchParts::FetchParts(const std::vector<ProcessTrace>& processes) : processes_(processes) {
  part_names_.push_back("dataset");
  part_ids_["dataset"] = kDatasetPart;
}

FetchParts::Stack& FetchParts::ThreadStack(const StreamEvent& e) {
  auto& [process, stack] = threads_[ThreadKey(e.process, e.tid)];
  process = e.process;
  return stack;
}

void FetchParts::Advance(uint64_t now) {
  if (now < next_close_) return;
  next_close_ = UINT64_MAX;
  for (auto& [key, entry] : threads_) {
    auto& [process, stack] = entry;
    while (!stack.empty() && stack.back().end <= now) Close(process, &stack);
    if (!stack.empty()) next_close_ = std::min(next_close_, stack.back().end);
  }
}

uint32_t FetchParts::PartOf(const StreamEvent& e) {
  auto [it, added] =
      region_parts_.try_emplace(ProcessStringKey(e.process, e.event->file), kDatasetPart);
  if (added) {
    const auto& strings = processes_[e.process].strings;
    auto s = strings.find(e.event->file);
    std::string name = s == strings.end() ? std::string() : s->second;
    // "transform GaussianBlur" is GaussianBlur's part.
    const std::string prefix = std::string(kTransformRegionPrefix) + " ";
    if (name.compare(0, prefix.size(), prefix) == 0) name = name.substr(prefix.size());
    if (!name.empty()) {
      auto [id, fresh] = part_ids_.try_emplace(name, static_cast<uint32_t>(part_names_.size()));
      if (fresh) part_names_.push_back(name);
      it->second = id->second;
    }
  }
  return it->second;
}

void FetchParts::AddFetch(const StreamEvent& e) {
  Stack& stack = ThreadStack(e);
  Open o(Kind::kFetch, e.event->start_ns, e.event->start_ns + e.event->dur_ns);
  o.fetch.process = e.process;
  o.fetch.start = o.start;
  o.fetch.end = o.end;
  stack.push_back(std::move(o));
  next_close_ = std::min(next_close_, stack.back().end);
}

void FetchParts::AddRegion(const StreamEvent& e, bool sample) {
  Stack& stack = ThreadStack(e);
  // Only inside a worker's fetch.
  if (std::none_of(stack.begin(), stack.end(),
                   [](const Open& o) { return o.kind == Kind::kFetch; })) {
    return;
  }
  Open o(sample ? Kind::kSample : Kind::kPart, e.event->start_ns,
         e.event->start_ns + e.event->dur_ns);
  if (sample) {
    o.sample.pass = pass_;
    o.sample.pid = processes_[e.process].info.pid;
    o.sample.start_ns = o.start;
  } else {
    o.part = PartOf(e);
    for (auto it = stack.rbegin(); it != stack.rend(); ++it) {
      if (it->kind == Kind::kPart) {
        it->nested_ns += o.end - o.start;  // a part inside another is its own
        break;
      }
    }
  }
  stack.push_back(std::move(o));
  next_close_ = std::min(next_close_, stack.back().end);
}

void FetchParts::AddCounter(const StreamEvent& e) {
  constexpr uint8_t kIndex = 1, kBytes = 2;
  auto [it, added] = counters_.try_emplace(ProcessStringKey(e.process, e.event->file), 0);
  if (added) {
    const auto& strings = processes_[e.process].strings;
    auto s = strings.find(e.event->file);
    if (s != strings.end() && s->second == kSampleRegion) it->second = kIndex;
    if (s != strings.end() && s->second == kBatchBytesCounter) it->second = kBytes;
  }
  if (it->second == 0) return;
  Stack& stack = ThreadStack(e);
  const Kind holder = it->second == kIndex ? Kind::kSample : Kind::kFetch;
  for (auto o = stack.rbegin(); o != stack.rend(); ++o) {
    if (o->kind != holder) continue;
    if (holder == Kind::kSample) {
      o->sample.index = static_cast<int64_t>(e.event->aux);
    } else {
      o->fetch.batch_bytes = e.event->aux;
    }
    return;
  }
}

void FetchParts::AddDataIo(const StreamEvent& e) {
  auto found = threads_.find(ThreadKey(e.process, e.tid));
  if (found == threads_.end()) return;
  Stack& stack = found->second.second;
  const uint64_t dur = e.event->dur_ns;
  bool in_part = false, in_sample = false;
  for (auto o = stack.rbegin(); o != stack.rend(); ++o) {
    if (o->kind == Kind::kPart && !in_part) {
      o->io_ns += dur;  // reading, not the part's own time
      in_part = true;
    } else if (o->kind == Kind::kSample && !in_sample) {
      in_sample = true;
      if (o->files.size() < kSampleFiles &&
          std::find(o->files.begin(), o->files.end(), e.event->file) == o->files.end()) {
        o->files.push_back(e.event->file);
      }
    } else if (o->kind == Kind::kFetch) {
      o->fetch.reading_ns += dur;
      return;
    }
  }
}

void FetchParts::Close(uint32_t process, Stack* stack) {
  Open o = std::move(stack->back());
  stack->pop_back();
  FetchRecord* fetch = nullptr;
  for (auto it = stack->rbegin(); it != stack->rend(); ++it) {
    if (it->kind == Kind::kFetch) {
      fetch = &it->fetch;
      break;
    }
  }
  const uint64_t dur = o.end - o.start;
  switch (o.kind) {
    case Kind::kPart: {
      const uint64_t used = std::min(dur, o.nested_ns + o.io_ns);
      if (fetch == nullptr) return;
      auto p = std::find_if(fetch->parts.begin(), fetch->parts.end(),
                            [&](const auto& x) { return x.first == o.part; });
      if (p == fetch->parts.end()) {
        fetch->parts.emplace_back(o.part, dur - used);
      } else {
        p->second += dur - used;
      }
      return;
    }
    case Kind::kSample: {
      o.sample.ns = dur;
      const auto& strings = processes_[process].strings;
      for (uint32_t id : o.files) {
        auto s = strings.find(id);
        if (s != strings.end()) o.sample.files.push_back(s->second);
      }
      KeepSample(o.sample);
      if (fetch != nullptr) {
        ++fetch->samples;
        if (SlowerThan(o.sample, fetch->slowest)) fetch->slowest = o.sample;
      }
      return;
    }
    case Kind::kFetch: {
      uint64_t named = 0;
      for (const auto& [part, ns] : o.fetch.parts) named += ns;
      const uint64_t busy = dur - std::min(dur, o.fetch.reading_ns);
      o.fetch.parts.emplace_back(kDatasetPart, busy - std::min(busy, named));
      records_.push_back(std::move(o.fetch));
      if (records_.size() > kKeptRecords) records_.pop_front();
      return;
    }
  }
}

bool FetchParts::Take(uint32_t process, uint64_t start, FetchRecord* out) {
  for (auto it = records_.rbegin(); it != records_.rend(); ++it) {
    if (it->process == process && it->start == start) {
      *out = std::move(*it);
      records_.erase(std::next(it).base());
      return true;
    }
  }
  return false;
}

void FetchParts::KeepSample(const SampleRecord& s) {
  auto cmp = [](const SampleRecord& a, const SampleRecord& b) { return SlowerThan(a, b); };
  if (slowest_.size() == kKeptSamples && !SlowerThan(s, slowest_.front())) return;
  slowest_.push_back(s);
  std::push_heap(slowest_.begin(), slowest_.end(), cmp);  // the fastest kept on top
  if (slowest_.size() > kKeptSamples) {
    std::pop_heap(slowest_.begin(), slowest_.end(), cmp);
    slowest_.pop_back();
  }
}

std::vector<SampleRecord> FetchParts::SlowestSamples() const {
  std::vector<SampleRecord> out = slowest_;
  std::sort(out.begin(), out.end(), SlowerThan);
  return out;
}

}  // namespace dlprof::analysis
