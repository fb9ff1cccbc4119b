// The block encoder (block_codec.h): events of the flusher's rings into a
// payload's columns, one event at a time, and the cuts the compressor takes;
// the decoder is block_codec.cc.
#include <cstddef>
#include <cstring>

#include "lib/format/block_codec.h"
#include "lib/format/varint.h"

namespace dlprof::format {

uint32_t ContentFlag(uint16_t kind) {
  switch (static_cast<EventKind>(kind)) {
    case EventKind::AppRegion:
    case EventKind::AppMark:
    case EventKind::AppFlowStart:
    case EventKind::AppFlowFinish:
    case EventKind::NvtxRange:
    case EventKind::NvtxMark: return kBlockFlagRegions;
    case EventKind::CallStack:
    case EventKind::ModuleMap: return kBlockFlagStacks;
    case EventKind::CudaKernel:
    case EventKind::CudaMemcpy:
    case EventKind::CudaMemcpyP2P:
    case EventKind::CudaMemset: return kBlockFlagGpu;
    case EventKind::ClockOffset: return kBlockFlagClockOffset;
    default: return 0;
  }
}

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

// An event's first word (kind, flags, err) and its file-and-fd word, read
// as one load each: the encoder's test for a run's event compares words, not
// fields.
struct EventWords {
  static uint64_t Head(const Event& e) { return Word(&e.kind); }
  static uint64_t FileFd(const Event& e) { return Word(&e.file); }
  static uint64_t Word(const void* p) {
    uint64_t w;
    std::memcpy(&w, p, sizeof w);
    return w;
  }
};
static_assert(offsetof(Event, kind) == 0 && offsetof(Event, flags) == 2 &&
              offsetof(Event, err) == 4 && offsetof(Event, fd) == offsetof(Event, file) + 4);

// The first word an event continuing a run has after an event of `kind` and
// `flags` (as in the ring) at `offset`: the same kind and flags, err 0. No
// word at all (kNoRun: kind 0xffff is none) if the event before had no
// offset, or a kind or flags the run's one-byte fill cannot write.
constexpr uint64_t kNoRun = ~uint64_t{0};
inline uint64_t RunHead(uint16_t kind, uint16_t flags, int64_t offset) {
  const uint16_t on_disk = static_cast<uint16_t>(flags & ~kEventFlagTicks);
  if (offset < 0 || (kind | on_disk) >= 0x80) return kNoRun;
  Event e{};
  e.kind = kind;
  e.flags = flags;
  return EventWords::Head(e);
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
  span_.clock_error_ns = info.clock_error_ns;  // the block header carries it
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
  // Two passes over the events, the timings and then the other fields:
  // one loop holding the state of both spilled it to the stack.
  AddTimings(events, count, &w[static_cast<int>(Column::Start)],
             &w[static_cast<int>(Column::Dur)]);
  AddFields(events, count, w);
  for (int c = 0; c < kColumnCount; ++c) columns_[c].CommitTo(w[c]);
  event_count_ += count;
}

void BlockEncoder::AddTimings(const Event* events, size_t count, uint8_t** start_column,
                              uint8_t** dur_column) {
  uint8_t* start_at = *start_column;
  uint8_t* dur_at = *dur_column;
  uint64_t first = event_count_ == 0 ? UINT64_MAX : span_.first_start_ns;
  uint64_t last_end = span_.last_end_ns;
  uint64_t prev_end = predictor_.prev_end_ns;
  const TickLine ticks = ticks_;
  // Each event's prediction is the gap and duration the last event of its
  // kind had (TimingPredictor), read from the table and replaced there: no
  // more state in registers (keeping the kind's in locals while it did not
  // change cost more, in spills, than the table's loads and stores).
  TimingPredictor::Last* const last = predictor_.timings.last;
  for (size_t i = 0; i < count; ++i) {
    const Event& e = events[i];
    uint64_t start = e.start_ns, dur = e.dur_ns;
    if (e.flags & kEventFlagTicks) ticks.Times(start, dur, &start, &dur);  // to ns
    const uint64_t end = start + dur;
    first = start < first ? start : first;
    last_end = end > last_end ? end : last_end;
    TimingPredictor::Last& of_kind = last[TimingPredictor::Slot(e.kind)];
    const uint64_t gap = start - prev_end;
    const uint64_t gap_delta = Diff(gap, of_kind.gap), dur_delta = Diff(dur, of_kind.dur);
    of_kind = {gap, dur};
    start_at = Put(start_at, gap_delta);
    dur_at = Put(dur_at, dur_delta);
    prev_end = end;
  }
  predictor_.prev_end_ns = prev_end;
  span_.first_start_ns = first;
  span_.last_end_ns = last_end;
  *start_column = start_at;
  *dur_column = dur_at;
}

void BlockEncoder::AddFields(const Event* events, size_t count, uint8_t* (&w)[kColumnCount]) {
  auto at = [&w](Column c) -> uint8_t*& { return w[static_cast<int>(c)]; };
  // The predictor's state in locals for the loop (the previous event's
  // fields the deltas are taken from), stored back after it: copying each
  // 64-byte event into the predictor cost more than encoding its fields.
  Event& p = predictor_.prev;
  uint32_t prev_file = p.file;
  uint64_t prev_fd = static_cast<uint64_t>(static_cast<int64_t>(p.fd));
  uint64_t prev_size = p.size, prev_aux = p.aux;
  uint16_t prev_kind = p.kind, prev_flags = p.flags;
  // Where the next access to prev_file is predicted (PredictOffset), if the
  // event before had an offset.
  uint64_t prev_next = static_cast<uint64_t>(p.offset) + p.size;
  // What a run's event has in its first and its file-and-fd words
  // (EventWords): `run_head` is kNoRun when the event before cannot start one.
  uint64_t run_head = RunHead(p.kind, p.flags, p.offset);
  uint64_t prev_file_fd = EventWords::FileFd(p);
  uint32_t content = span_.content_flags;
  // A run of the loop's usual event, not yet written: the same one-byte kind
  // and flags, file, fd, size and aux as the event before, at an offset, read
  // in full without error. Its columns other than Start, Dur and Offset are
  // known: the kind and flags repeated and a zero delta in File, Fd, Size,
  // Ret, Err and Aux. They go in at the run's end, at most 8 as one store
  // (each column keeps 10 free bytes an event, these take 1). Within the run
  // the offset is predicted where the event before ended (PredictOffset's
  // answer for the same file after an access at an offset), and the
  // predictor, skipped, takes the run's last event at its end: one file's
  // accesses leave it as the last of them does.
  size_t run = 0;
  const Event* run_last = nullptr;
  auto end_run = [&] {
    if (run == 0) return;
    // 8 bytes a store, up to 7 past the run: the column has room for 9 more
    // an event. (memset's `rep stosb` on a long run is one instruction a
    // byte to callgrind, a cost bench/callgrind_pread.sh would count.)
    auto fill = [run](uint8_t*& column, uint8_t byte) {
      const uint64_t word = 0x0101010101010101ULL * byte;
      for (size_t k = 0; k < run; k += 8) std::memcpy(column + k, &word, sizeof word);
      column += run;
    };
    fill(at(Column::Kind), static_cast<uint8_t>(prev_kind));
    fill(at(Column::Flags), static_cast<uint8_t>(prev_flags));
    for (Column c : {Column::File, Column::Fd, Column::Size, Column::Ret, Column::Err,
                     Column::Aux}) {
      fill(at(c), 0);
    }
    predictor_.offsets.Advance(run_last->file, run_last->offset, run_last->size);
    run = 0;
  };
  for (size_t i = 0; i < count; ++i) {
    const Event& e = events[i];
    const uint64_t fd = static_cast<uint64_t>(static_cast<int64_t>(e.fd));
    if (EventWords::Head(e) == run_head && EventWords::FileFd(e) == prev_file_fd &&
        e.size == prev_size && static_cast<uint64_t>(e.ret) == e.size && e.aux == prev_aux &&
        e.offset >= 0) {
      at(Column::Offset) =
          Put(at(Column::Offset), Diff(static_cast<uint64_t>(e.offset), prev_next));
      prev_next = static_cast<uint64_t>(e.offset) + e.size;
      ++run;
      run_last = &e;
      continue;
    }
    end_run();
    // The kind's content flag: an event of the kind before it, in this
    // block, has set it already (the block's first "before" is kind None).
    if (e.kind != prev_kind || i == 0) content |= ContentFlag(e.kind);
    at(Column::Kind) = Put(at(Column::Kind), e.kind);
    const uint16_t flags = static_cast<uint16_t>(e.flags & ~kEventFlagTicks);
    at(Column::Flags) = Put(at(Column::Flags), flags);
    const uint64_t predicted_offset = predictor_.PredictOffset(e.file);
    at(Column::File) = Put(at(Column::File), Diff(e.file, prev_file));
    at(Column::Fd) = Put(at(Column::Fd), Diff(fd, prev_fd));
    at(Column::Offset) =
        Put(at(Column::Offset), Diff(static_cast<uint64_t>(e.offset), predicted_offset));
    at(Column::Size) = Put(at(Column::Size), Diff(e.size, prev_size));
    at(Column::Ret) = Put(at(Column::Ret), Diff(static_cast<uint64_t>(e.ret), e.size));
    at(Column::Err) = Put(at(Column::Err), ZigZag(e.err));
    uint64_t aux = e.aux;
    // (An asynchronous request's reaping delay is in ticks in the ring.)
    if (__builtin_expect((e.flags & kEventFlagTicks) != 0 && e.kind >= TickScale::kFirstAsyncKind,
                         0) &&
        TickScale::TicksInAux(e)) {
      aux = ticks_.scale().AsyncAux(aux);
    }
    at(Column::Aux) = Put(at(Column::Aux), Diff(aux, prev_aux));
    predictor_.offsets.Advance(e.file, e.offset, e.size);
    run_head = RunHead(e.kind, e.flags, e.offset);
    prev_file_fd = EventWords::FileFd(e);
    prev_next = static_cast<uint64_t>(e.offset) + e.size;
    prev_file = e.file;
    prev_fd = fd;
    prev_size = e.size;
    prev_aux = aux;
    prev_kind = e.kind;
    prev_flags = flags;
  }
  end_run();
  // What the next call's deltas start from (AddTimings keeps the timings').
  p = events[count - 1];
  p.flags = static_cast<uint16_t>(p.flags & ~kEventFlagTicks);
  p.aux = prev_aux;  // (as written: a run's last repeats the aux before it)
  span_.content_flags = content;
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
  // A segment for each of Start and Dur, one for the columns before them and
  // one for those after. The timings' bytes are left to Huffman coding
  // alone: looking for runs in them cost 16 instructions an event and saved
  // no bytes. A random read's offsets share the Huffman table of the columns
  // after Dur, whose few literals do not spoil it: a segment of their own
  // gave the same bytes and cost zstd a block's tables.
  cuts_ = PayloadCuts{};
  for (int c = 0; c < kColumnCount; ++c) {
    const ByteColumn& column = columns_[c];
    PutVarint(*raw, column.size());
    const Column which = static_cast<Column>(c);
    if (which == Column::Start || which == Column::Dur || which == Column::File) {
      cuts_.at[cuts_.count++] = static_cast<uint32_t>(raw->size());
      if (which == Column::Start || which == Column::Dur) {
        cuts_.literal_segments |= 1u << cuts_.count;  // the segment this cut begins
      }
    }
    raw->insert(raw->end(), column.data(), column.data() + column.size());
  }
}

}  // namespace dlprof::format
