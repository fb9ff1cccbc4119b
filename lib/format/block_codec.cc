// The block decoder (block_codec.h): a payload's columns back into events,
// a column at a time; the encoder is block_encoder.cc.
#include "lib/format/block_codec.h"

#include <algorithm>
#include <cstring>

#include "lib/format/cpu_features.h"
#include "lib/format/varint.h"

namespace dlprof::format {
namespace {

inline uint64_t Undiff(uint64_t base, uint64_t zz) {
  return base + static_cast<uint64_t>(UnZigZag(zz));
}

// ---- Events, a column at a time ----
//
// Per chunk of kChunkEvents events (16 KB, so they stay in L1 between the
// passes):
//
//   1. copy the template: the fields of the columns that repeat one value
//   2. each other column: its varints into its field, raw or summed
//   3. one pass over the events: start, dur, offset and ret (the predictors need
//      other fields for those), and what DecodedBlock notes
//
// A column that repeats one value after the block's first event (the kind,
// flags and size of a loop of reads, a zero delta of its file and fd, a zero
// ret delta) costs no varint per event: training jobs' blocks are mostly
// such columns. The first event is decoded on its own, with checks, so that
// its deltas from zero do not stop a column from repeating.
constexpr size_t kChunkEvents = 256;

// The bits of a window's stop mask at and after byte `from`.
inline uint64_t StopsFrom(ptrdiff_t from) {
  return from <= 0 ? ~uint64_t{0} : from >= 64 ? 0 : ~uint64_t{0} << from;
}

// Up to `count` varints from `*p` (advanced), each to `store(i, value)`, while
// 80 bytes are left before `end`; returns how many. Where each varint ends
// comes from a mask of stop bytes, 64 bytes at a time, so it does not wait on
// the bytes of the one before (a column of 2- and 4-byte varints read one by
// one is a chain of dependent loads), and the lengths cost no branches.
template <bool kPext, typename Store>
inline size_t DecodeVarintsByMask(const uint8_t** p, const uint8_t* end, size_t count, bool* bad,
                                  Store& store) {
  const uint8_t* at = *p;
  size_t i = 0;
  for (const uint8_t* base = at; i < count && end - base >= 80; base += 64) {
    uint64_t mask = StopMask64(base);
    // A malformed varint may have been read past this window's start.
    mask &= StopsFrom(at - base);
    for (; mask != 0 && i < count; ++i) {
      const uint8_t* stop = base + __builtin_ctzll(mask);
      const size_t len = static_cast<size_t>(stop + 1 - at);
      uint64_t v;
      if (len <= 8) {
        uint64_t w;
        std::memcpy(&w, at, sizeof w);
        v = VarintFromWord<kPext>(w & ~uint64_t{0} >> (64 - 8 * len));
        at = stop + 1;
        mask &= mask - 1;
      } else {  // 9 or 10 bytes, or malformed
        v = UncheckedVarint<kPext>(&at, bad);
        mask &= StopsFrom(at - base);
      }
      store(i, v);
    }
  }
  *p = at;
  return i;
}

// `count` varints of `in`, each handed to `store(i, value)`. Unchecked while
// every varint has 10 bytes left (its most); a malformed one sets `*bad`.
// kPext: the processor has a fast PEXT (HasFastPext()). kByMask: through
// stop-byte masks (DecodeVarintsByMask), for a column of longer varints;
// one at a time, a column of one-byte varints costs a compare each.
template <bool kPext, bool kByMask, typename Store>
inline void DecodeVarints(ByteReader& in, size_t count, bool* bad, Store&& store) {
  size_t i = 0;
  if (kByMask) {
    const uint8_t* p = in.position();
    i = DecodeVarintsByMask<kPext>(&p, in.position() + in.remaining(), count, bad, store);
    in.Skip(static_cast<size_t>(p - in.position()));
  }
  for (size_t fast; (fast = std::min(count - i, in.remaining() / 10)) > 0;) {
    const uint8_t* p = in.position();
    for (const size_t stop = i + fast; i < stop; ++i) store(i, UncheckedVarint<kPext>(&p, bad));
    in.Skip(static_cast<size_t>(p - in.position()));
  }
  for (; i < count; ++i) store(i, in.Varint());
}

template <bool kPext, bool kByMask, typename T, typename Value>
inline void DecodeField(ByteReader& in, Event* ev, size_t count, bool* bad, T Event::*field,
                        Value value) {
  DecodeVarints<kPext, kByMask>(
      in, count, bad, [&](size_t i, uint64_t v) { ev[i].*field = static_cast<T>(value(v)); });
}

// The delta columns' running values (the previous event's field).
struct ColumnSums {
  uint64_t file = 0, fd = 0, size = 0, aux = 0;
};

// Column `c` of `count` events into their field: the one place that knows
// how a column maps to a field. Start, dur, offset and ret are left raw (zigzag
// deltas from a prediction) for EventFinisher.
template <bool kPext, bool kByMask>
void DecodeColumn(Column c, ByteReader& in, Event* ev, size_t count, ColumnSums* sums, bool* bad) {
  const auto raw = [](uint64_t v) { return v; };
  const auto zigzag = [](uint64_t v) { return UnZigZag(v); };
  const auto sum = [](uint64_t& s) { return [&s](uint64_t v) { return s += UnZigZag(v); }; };
  const auto into = [&](auto field, auto value) {
    DecodeField<kPext, kByMask>(in, ev, count, bad, field, value);
  };
  switch (c) {
    case Column::Kind: return into(&Event::kind, raw);
    case Column::Flags: return into(&Event::flags, raw);
    case Column::Start: return into(&Event::start_ns, raw);
    case Column::Dur: return into(&Event::dur_ns, raw);
    case Column::File: return into(&Event::file, sum(sums->file));
    case Column::Fd: return into(&Event::fd, sum(sums->fd));
    case Column::Offset: return into(&Event::offset, raw);
    case Column::Size: return into(&Event::size, sum(sums->size));
    case Column::Ret: return into(&Event::ret, raw);
    case Column::Err: return into(&Event::err, zigzag);
    case Column::Aux: return into(&Event::aux, sum(sums->aux));
    case Column::Count: break;
  }
}

// Walks the decoded events once: the fields predicted from others, and what
// the block notes about them (while each event is in the cache).
class EventFinisher {
 public:
  // `version`: the file's format version (format.h), which says how the
  // timings are predicted.
  EventFinisher(DecodedBlock* out, uint32_t version)
      : out_(out), timings_predicted_(version >= kFormatVersionKindTimings) {}

  // Events [first, first + count): start, dur, offset and ret still raw.
  void Finish(size_t first, size_t count) {
    Event* ev = &out_->events[first];
    for (size_t i = 0; i < count; ++i) {
      Event& e = ev[i];
      uint64_t gap;
      if (timings_predicted_) {  // from the last event of the kind
        TimingPredictor::Last& last = timings_.last[TimingPredictor::Slot(e.kind)];
        gap = Undiff(last.gap, e.start_ns);
        e.dur_ns = Undiff(last.dur, e.dur_ns);
        last = {gap, e.dur_ns};
      } else {  // version 2: the gap from zero, the duration as it is
        gap = Undiff(0, e.start_ns);
      }
      e.start_ns = prev_end_ + gap;
      prev_end_ = e.start_ns + e.dur_ns;
      e.ret = static_cast<int64_t>(Undiff(e.size, static_cast<uint64_t>(e.ret)));
      e.offset = static_cast<int64_t>(
          Undiff(offsets_.Predict(e.file), static_cast<uint64_t>(e.offset)));
      offsets_.Advance(e.file, e.offset, e.size);
      Note(e, first + i);
    }
  }

  // `runs`: the block's thread runs. Within a run the order is by start
  // alone (Note); where a run begins, a tie with the event before is in
  // order only if the tid does not go down.
  void Close(const std::vector<std::pair<int32_t, uint64_t>>& runs) {
    size_t at = 0;
    for (const auto& run : runs) {
      if (at > 0 && run.second > 0) {
        const auto& ev = out_->events;
        const auto& tids = out_->tids;
        in_order_ &= !(ev[at].start_ns == ev[at - 1].start_ns && tids[at] < tids[at - 1]);
      }
      at += run.second;
    }
    out_->in_start_order = in_order_;
    out_->min_start_ns = out_->events.empty() ? 0 : min_start_;
    out_->max_end_ns = max_end_;
    out_->end_wraps = end_wraps_;
  }

 private:
  void Note(const Event& e, size_t idx) {
    in_order_ &= e.start_ns >= prev_start_;
    prev_start_ = e.start_ns;
    const uint64_t end = e.start_ns + e.dur_ns;
    min_start_ = e.start_ns < min_start_ ? e.start_ns : min_start_;
    max_end_ = end > max_end_ ? end : max_end_;
    end_wraps_ |= end < e.start_ns;
    if (idx == 0 || e.file != run_file_) {
      run_file_ = e.file;
      out_->file_runs.push_back({e.file, static_cast<uint32_t>(idx)});
    }
  }

  DecodedBlock* out_;
  const bool timings_predicted_;
  uint64_t prev_end_ = 0;
  TimingPredictor timings_;
  OffsetPredictor offsets_;
  uint64_t prev_start_ = 0;
  bool in_order_ = true;
  uint64_t min_start_ = UINT64_MAX, max_end_ = 0;
  bool end_wraps_ = false;
  uint32_t run_file_ = 0;
};

// Decodes out->events (sized, tids set) from the columns. Returns the first
// column that held a malformed varint, else -1; a column left unconsumed or
// overrun shows in its reader.
int DecodeEvents(ByteReader (&cols)[kColumnCount],
                 const std::vector<std::pair<int32_t, uint64_t>>& runs, uint32_t version,
                 DecodedBlock* out) {
  out->file_runs.clear();
  const size_t n = out->events.size();
  const bool pext = HasFastPext();
  EventFinisher finisher(out, version);
  ColumnSums sums;  // the predictor starts from zeros
  bool bad[kColumnCount] = {};  // a column held a malformed varint
  if (n > 0) {
    for (int c = 0; c < kColumnCount; ++c) {
      DecodeColumn<false, false>(static_cast<Column>(c), cols[c], &out->events[0], 1, &sums,
                                 &bad[c]);
    }
    finisher.Finish(0, 1);
  }
  // The columns that repeat one one-byte value for every later event, and so
  // one field value (a delta column: only the value zero), go into the
  // template; the others vary.
  Event tmpl{};
  Column varying[kColumnCount];
  bool by_mask[kColumnCount] = {};
  int varying_count = 0;
  for (int i = 0; i < kColumnCount; ++i) {
    const Column c = static_cast<Column>(i);
    ByteReader& in = cols[i];
    const uint8_t* bytes = in.position();
    const uint8_t b = n > 1 && in.remaining() == n - 1 ? bytes[0] : 0x80;
    // Every byte equals the one before it (memcmp, being vectorised, is
    // the quick way to say so), and the value read twice over gives the
    // same field both times (a delta column's sum moves unless it is 0).
    bool repeats = b < 0x80 && std::memcmp(bytes, bytes + 1, n - 2) == 0;
    if (repeats) {
      const uint8_t twice[2] = {b, b};
      ByteReader in_twice(twice, 2);
      ColumnSums unchanged = sums;
      bool never_bad = false;  // bytes under 0x80
      Event once = tmpl;
      DecodeColumn<false, false>(c, in_twice, &once, 1, &unchanged, &never_bad);
      Event again = once;
      DecodeColumn<false, false>(c, in_twice, &again, 1, &unchanged, &never_bad);
      repeats = std::memcmp(&once, &again, sizeof once) == 0;  // no padding in Event
      if (repeats) tmpl = once;
    }
    if (!repeats) {
      // Stop-byte masks pay for a column of longer varints (timings, random
      // offsets): from 1.25 bytes per varint on average.
      by_mask[i] = kLittleEndian && n > 1 && in.remaining() * 4 >= (n - 1) * 5;
      varying[varying_count++] = c;
      continue;
    }
    in.Skip(n - 1);
  }
  for (size_t base = 1; base < n; base += kChunkEvents) {
    const size_t count = std::min(kChunkEvents, n - base);
    Event* ev = &out->events[base];
    std::fill(ev, ev + count, tmpl);
    for (int v = 0; v < varying_count; ++v) {
      const Column c = varying[v];
      ByteReader& in = cols[static_cast<int>(c)];
      bool* column_bad = &bad[static_cast<int>(c)];
      if (by_mask[static_cast<int>(c)]) {
        (pext ? DecodeColumn<true, true> : DecodeColumn<false, true>)(c, in, ev, count, &sums,
                                                                       column_bad);
      } else {
        (pext ? DecodeColumn<true, false> : DecodeColumn<false, false>)(c, in, ev, count, &sums,
                                                                         column_bad);
      }
    }
    finisher.Finish(base, count);
  }
  finisher.Close(runs);
  for (int c = 0; c < kColumnCount; ++c) {
    if (bad[c]) return c;
  }
  return -1;
}

}  // namespace

bool DecodeBlockPayload(const uint8_t* raw, size_t size, uint32_t expected_events,
                        uint32_t version, DecodedBlock* out, std::string* error) {
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

  out->tids.resize(expected_events);
  size_t at = 0;
  for (const auto& [tid, n] : runs) {
    std::fill(out->tids.begin() + at, out->tids.begin() + at + n, tid);
    at += n;
  }
  out->events.resize(expected_events);
  const int malformed = DecodeEvents(cols, runs, version, out);
  for (int c = 0; c < kColumnCount; ++c) {
    if (c == malformed || !cols[c].ok() || !cols[c].at_end()) {
      *error = "column " + std::to_string(c) + " does not match the event count";
      return false;
    }
  }
  return true;
}

}  // namespace dlprof::format
