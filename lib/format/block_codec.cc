#include "lib/format/block_codec.h"

#include <algorithm>
#include <cstring>

#include "lib/format/varint.h"

namespace dlprof::format {
namespace {

inline uint64_t Diff(uint64_t a, uint64_t b) { return ZigZag(static_cast<int64_t>(a - b)); }

// LEB128 through a raw pointer; at most 10 bytes.
inline uint8_t* Put(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}
inline uint64_t Undiff(uint64_t base, uint64_t zz) {
  return base + static_cast<uint64_t>(UnZigZag(zz));
}

uint32_t ContentFlag(uint16_t kind) {
  switch (static_cast<EventKind>(kind)) {
    case EventKind::AppRegion:
    case EventKind::AppMark:
    case EventKind::NvtxRange:
    case EventKind::NvtxMark: return kBlockFlagRegions;
    case EventKind::CallStack:
    case EventKind::ModuleMap: return kBlockFlagStacks;
    default: return 0;
  }
}

}  // namespace

void ByteColumn::Grow(size_t n) {
  size_t cap = capacity_ ? capacity_ : 4096;
  while (cap - size_ < n) cap *= 2;
  std::unique_ptr<uint8_t[]> bigger(new uint8_t[cap]);
  if (size_) std::memcpy(bigger.get(), data_.get(), size_);
  data_ = std::move(bigger);
  capacity_ = cap;
}

BlockEncoder::BlockEncoder() { Begin(BlockInfo{}); }

void BlockEncoder::Begin(const BlockInfo& info) {
  info_ = info;
  predictor_ = BlockPredictor{};
  for (auto& c : columns_) c.clear();
  strings_.clear();
  string_count_ = 0;
  runs_.clear();
  event_count_ = 0;
  span_ = BlockSpan{};
}

void BlockEncoder::AddString(uint32_t id, const char* text, size_t size) {
  PutVarint(strings_, id);
  PutVarint(strings_, size);
  strings_.insert(strings_.end(), text, text + size);
  ++string_count_;
}

void BlockEncoder::AddEvents(int32_t tid, const Event* events, size_t count) {
  if (count == 0) return;
  if (!runs_.empty() && runs_.back().first == tid) {
    runs_.back().second += count;
  } else {
    runs_.emplace_back(tid, count);
  }
  constexpr size_t kMaxVarint = 10;
  uint8_t* w[kColumnCount];
  for (int c = 0; c < kColumnCount; ++c) w[c] = columns_[c].Extend(count * kMaxVarint);
  auto at = [&w](Column c) -> uint8_t*& { return w[static_cast<int>(c)]; };
  uint64_t first = event_count_ == 0 ? UINT64_MAX : span_.first_start_ns;
  uint64_t last = span_.last_end_ns;
  for (size_t i = 0; i < count; ++i) {
    const Event& e = events[i];
    first = e.start_ns < first ? e.start_ns : first;
    last = e.start_ns + e.dur_ns > last ? e.start_ns + e.dur_ns : last;
    span_.content_flags |= ContentFlag(e.kind);
    const Event& p = predictor_.prev;
    at(Column::Kind) = Put(at(Column::Kind), e.kind);
    at(Column::Flags) = Put(at(Column::Flags), e.flags);
    at(Column::Start) = Put(at(Column::Start), Diff(e.start_ns, predictor_.prev_end_ns));
    at(Column::Dur) = Put(at(Column::Dur), e.dur_ns);
    at(Column::File) = Put(at(Column::File), Diff(e.file, p.file));
    at(Column::Fd) = Put(at(Column::Fd), Diff(static_cast<uint64_t>(e.fd), static_cast<uint64_t>(p.fd)));
    at(Column::Offset) = Put(at(Column::Offset), Diff(static_cast<uint64_t>(e.offset),
                                                     predictor_.PredictOffset(e.file)));
    at(Column::Size) = Put(at(Column::Size), Diff(e.size, p.size));
    at(Column::Ret) = Put(at(Column::Ret), Diff(static_cast<uint64_t>(e.ret), e.size));
    at(Column::Err) = Put(at(Column::Err), ZigZag(e.err));
    at(Column::Aux) = Put(at(Column::Aux), Diff(e.aux, p.aux));
    predictor_.Advance(e);
  }
  for (int c = 0; c < kColumnCount; ++c) columns_[c].CommitTo(w[c]);
  event_count_ += count;
  span_.first_start_ns = first;
  span_.last_end_ns = last;
}

void BlockEncoder::Finish(std::vector<uint8_t>* raw) {
  raw->clear();
  PutVarint(*raw, info_.clock_mono_ns);
  PutVarint(*raw, info_.clock_real_ns);
  PutVarint(*raw, ZigZag(info_.rank));
  PutVarint(*raw, info_.dropped_events);
  PutVarint(*raw, string_count_);
  raw->insert(raw->end(), strings_.begin(), strings_.end());
  PutVarint(*raw, runs_.size());
  for (const auto& [tid, n] : runs_) {
    PutVarint(*raw, ZigZag(tid));
    PutVarint(*raw, n);
  }
  for (const auto& c : columns_) {
    PutVarint(*raw, c.size());
    raw->insert(raw->end(), c.data(), c.data() + c.size());
  }
}

bool DecodeBlockPayload(const uint8_t* raw, size_t size, uint32_t expected_events,
                        DecodedBlock* out, std::string* error) {
  ByteReader in(raw, size);
  out->info.clock_mono_ns = in.Varint();
  out->info.clock_real_ns = in.Varint();
  out->info.rank = static_cast<int32_t>(in.SignedVarint());
  out->info.dropped_events = in.Varint();

  out->strings.clear();
  uint64_t string_count = in.Varint();
  // Each string takes at least two bytes, so a larger count is a lie.
  if (string_count > in.remaining() / 2) {
    *error = "string count exceeds block size";
    return false;
  }
  for (uint64_t i = 0; i < string_count && in.ok(); ++i) {
    uint32_t id = static_cast<uint32_t>(in.Varint());
    uint64_t len = in.Varint();
    if (len > kMaxStringBytes) {
      *error = "string longer than the format allows";
      return false;
    }
    const uint8_t* s = in.Bytes(len);
    if (s) out->strings.push_back({id, std::string(reinterpret_cast<const char*>(s), len)});
  }

  out->tids.clear();
  uint64_t run_count = in.Varint();
  if (run_count > expected_events) {
    *error = "more thread runs than events";
    return false;
  }
  uint64_t in_runs = 0;
  std::vector<std::pair<int32_t, uint64_t>> runs;
  for (uint64_t i = 0; i < run_count && in.ok(); ++i) {
    int32_t tid = static_cast<int32_t>(in.SignedVarint());
    uint64_t n = in.Varint();
    if (n > expected_events - in_runs) {
      *error = "thread runs hold more events than the block";
      return false;
    }
    in_runs += n;
    runs.emplace_back(tid, n);
  }
  if (in.ok() && in_runs != expected_events) {
    *error = "thread runs do not add up to the event count";
    return false;
  }

  ByteReader cols[kColumnCount] = {
      ByteReader(nullptr, 0), ByteReader(nullptr, 0), ByteReader(nullptr, 0),
      ByteReader(nullptr, 0), ByteReader(nullptr, 0), ByteReader(nullptr, 0),
      ByteReader(nullptr, 0), ByteReader(nullptr, 0), ByteReader(nullptr, 0),
      ByteReader(nullptr, 0), ByteReader(nullptr, 0)};
  for (int c = 0; c < kColumnCount; ++c) {
    uint64_t len = in.Varint();
    const uint8_t* p = in.Bytes(len);
    if (!p) break;
    cols[c] = ByteReader(p, len);
  }
  if (!in.ok()) {
    *error = "payload ends early";
    return false;
  }
  if (!in.at_end()) {
    *error = "payload has trailing bytes";
    return false;
  }
  // Every event costs at least one byte in every column.
  if (expected_events > cols[0].remaining()) {
    *error = "event count exceeds the kind column";
    return false;
  }

  out->events.resize(expected_events);
  out->tids.resize(expected_events);
  BlockPredictor pred;
  // Reads the event's 11 values from `next(column)` and applies the
  // predictor: the one place that knows how a column maps to a field.
  auto decode = [&pred](auto&& next) {
    Event e;
    const Event& p = pred.prev;
    e.kind = static_cast<uint16_t>(next(0));
    e.flags = static_cast<uint16_t>(next(1));
    e.start_ns = Undiff(pred.prev_end_ns, next(2));
    e.dur_ns = next(3);
    e.file = static_cast<uint32_t>(Undiff(p.file, next(4)));
    e.fd = static_cast<int32_t>(Undiff(static_cast<uint64_t>(p.fd), next(5)));
    e.offset = static_cast<int64_t>(Undiff(pred.PredictOffset(e.file), next(6)));
    e.size = Undiff(p.size, next(7));
    e.ret = static_cast<int64_t>(Undiff(e.size, next(8)));
    e.err = static_cast<int32_t>(UnZigZag(next(9)));
    e.aux = Undiff(p.aux, next(10));
    pred.Advance(e);
    return e;
  };
  // Noted here, while each event is in the cache, not in a second pass.
  uint64_t prev_start = 0;
  int32_t prev_tid = INT32_MIN;
  bool in_order = true;
  uint64_t min_start = UINT64_MAX, max_end = 0;
  bool end_wraps = false;
  uint32_t run_file = 0;
  out->file_runs.clear();
  auto note = [&](const Event& e, int32_t tid, size_t idx) {
    in_order &= e.start_ns > prev_start || (e.start_ns == prev_start && tid >= prev_tid);
    prev_start = e.start_ns;
    prev_tid = tid;
    const uint64_t end = e.start_ns + e.dur_ns;
    min_start = e.start_ns < min_start ? e.start_ns : min_start;
    max_end = end > max_end ? end : max_end;
    end_wraps |= end < e.start_ns;
    if (idx == 0 || e.file != run_file) {
      run_file = e.file;
      out->file_runs.push_back({e.file, static_cast<uint32_t>(idx)});
    }
  };
  size_t idx = 0;
  for (const auto& [tid, n] : runs) {
    const size_t run_end = idx + n;
    while (idx < run_end) {
      // While every column has 10 bytes per event left (a varint's most),
      // no read can pass its end: decode those events without checks.
      size_t unchecked = run_end - idx;
      for (const ByteReader& c : cols) unchecked = std::min(unchecked, c.remaining() / 10);
      if (unchecked > 0) {
        const uint8_t* at[kColumnCount];
        for (int c = 0; c < kColumnCount; ++c) at[c] = cols[c].position();
        bool bad = false;
        for (const size_t stop = idx + unchecked; idx < stop; ++idx) {
          out->events[idx] = decode([&at, &bad](int c) { return UncheckedVarint(&at[c], &bad); });
          out->tids[idx] = tid;
          note(out->events[idx], tid, idx);
        }
        if (bad) {
          *error = "a column holds a varint longer than 10 bytes";
          return false;
        }
        for (int c = 0; c < kColumnCount; ++c) {
          cols[c].Skip(static_cast<size_t>(at[c] - cols[c].position()));
        }
        continue;
      }
      out->events[idx] = decode([&cols](int c) { return cols[c].Varint(); });
      out->tids[idx] = tid;
      note(out->events[idx], tid, idx);
      ++idx;
    }
  }
  out->in_start_order = in_order;
  out->min_start_ns = expected_events > 0 ? min_start : 0;
  out->max_end_ns = max_end;
  out->end_wraps = end_wraps;
  for (int c = 0; c < kColumnCount; ++c) {
    if (!cols[c].ok() || !cols[c].at_end()) {
      *error = "column " + std::to_string(c) + " does not match the event count";
      return false;
    }
  }
  return true;
}

}  // namespace dlprof::format
