// Column-wise encoding of a block payload (docs/FORMAT.md, "Block payload").
//
// Every column stores the difference between a value and what a predictor
// expected, which for the repetitive access patterns of training jobs is
// mostly zero and compresses to almost nothing. The encoder walks events one
// at a time (BlockPredictor); the decoder a column at a time, and shares the
// one prediction that needs other fields (OffsetPredictor) so the two sides
// cannot drift apart. The round-trip tests hold them to each other.
#ifndef DLPROF_LIB_FORMAT_BLOCK_CODEC_H_
#define DLPROF_LIB_FORMAT_BLOCK_CODEC_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dlprof/format.h"
#include "lib/format/tick_scale.h"

namespace dlprof::format {

// Per-block facts stored ahead of the events.
struct BlockInfo {
  uint64_t clock_mono_ns = 0;  // a (monotonic_raw, realtime) pair taken
  uint64_t clock_real_ns = 0;  //   together when the block was encoded
  int32_t rank = -1;
  uint64_t dropped_events = 0;  // lost since the previous block (drop mode)
  // The pair's error bound in ns (realtime was read within this of
  // clock_mono_ns); 0: unknown (older writers). Stored in the block header,
  // not the payload: BlockDecoder fills it. Last, so that initialisers that
  // list the fields above keep their meaning.
  uint32_t clock_error_ns = 0;
};

struct StringEntry {
  uint32_t id;
  std::string text;
};

// What a decoded block holds. `tids[i]` is the thread of `events[i]`.
struct DecodedBlock {
  BlockInfo info;
  std::vector<StringEntry> strings;
  std::vector<Event> events;
  std::vector<int32_t> tids;
  // Events stored in order of (start_ns, tid), as a block of one thread
  // usually is: a reader that needs that order has nothing to sort.
  bool in_start_order = true;

  // Noted while each event is decoded, so that no reader has to walk the
  // events again (a block of 256 Ki events is 16 MB, far out of cache):
  // the earliest start, the latest end, and whether an end wrapped past
  // 2^64 (all zero and false for a block of no events) ...
  uint64_t min_start_ns = 0;
  uint64_t max_end_ns = 0;
  bool end_wraps = false;
  // ... and the runs of events that name one file: where each run starts.
  // A reader checks each run's file once, not each event's.
  struct FileRun {
    uint32_t file;
    uint32_t first;  // index of its first event
  };
  std::vector<FileRun> file_runs;
};

// Where the next access to a file is expected to start: the end of the
// block's last access to it, else the previous event's offset.
struct OffsetPredictor {
  struct FileCursor {
    uint32_t file = 0;
    uint64_t next_offset = 0;
  };
  static constexpr int kCursors = 64;
  FileCursor cursors[kCursors];
  uint64_t prev_offset = 0;

  uint64_t Predict(uint32_t file) const {
    const FileCursor& c = cursors[file % kCursors];
    return c.file == file ? c.next_offset : prev_offset;
  }
  void Advance(uint32_t file, int64_t offset, uint64_t size) {
    if (offset >= 0) cursors[file % kCursors] = {file, static_cast<uint64_t>(offset) + size};
    prev_offset = static_cast<uint64_t>(offset);
  }
};

// What an event's gap (its start less the previous event's end) and its
// duration are expected to be, from format version 3: those of the block's
// last event of the same kind. Repeated calls take about the same time and
// follow each other at about the same distance, so the differences are
// small: one varint byte instead of two for most calls of a loop, and fewer
// bytes once compressed (a mix of kinds, as a DataLoader's open, fstat,
// read, close, is why the prediction is per kind and not the event before).
struct TimingPredictor {
  static constexpr int kSlots = 256;  // kinds share slot kind mod 256
  struct Last {
    uint64_t gap = 0;  // start_ns - prev_end (mod 2^64)
    uint64_t dur = 0;
  };
  Last last[kSlots];
  static int Slot(uint16_t kind) { return kind & (kSlots - 1); }
};

// Mirrors the state both sides keep while walking a block's events.
struct BlockPredictor {
  Event prev{};
  uint64_t prev_end_ns = 0;
  OffsetPredictor offsets;
  TimingPredictor timings;

  uint64_t PredictOffset(uint32_t file) const { return offsets.Predict(file); }
};

// A growable byte buffer written through a raw pointer: the encoder's
// columns take one varint per event each, and std::vector::insert per value
// costs more than the encoding itself.
class ByteColumn {
 public:
  // Room for `n` more bytes; returns where to write them.
  uint8_t* Extend(size_t n) {
    if (capacity_ - size_ < n) Grow(n);
    return data_.get() + size_;
  }
  // Marks everything up to `end` (a pointer from Extend) as written.
  void CommitTo(const uint8_t* end) { size_ = static_cast<size_t>(end - data_.get()); }
  const uint8_t* data() const { return data_.get(); }
  size_t size() const { return size_; }
  void clear() { size_ = 0; }

 private:
  void Grow(size_t n);
  std::unique_ptr<uint8_t[]> data_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

// The block flag an event of `kind` sets (kBlockFlagRegions, ...), or 0.
uint32_t ContentFlag(uint16_t kind);

// What a block's header says about its events beyond their count.
struct BlockSpan {
  uint64_t first_start_ns = 0;  // 0/0 when the block has no events
  uint64_t last_end_ns = 0;
  uint32_t content_flags = 0;   // kBlockFlagRegions, kBlockFlagStacks, kBlockFlagGpu
  uint32_t clock_error_ns = 0;  // BlockInfo::clock_error_ns of the block
};

// Where a payload's bytes change character, ascending offsets into it: the
// compressor gives each segment between them a zstd block of its own
// (zstd_runs.h). Empty: one segment.
struct PayloadCuts {
  static constexpr int kMax = 8;
  uint32_t at[kMax] = {};
  int count = 0;
  uint32_t literal_segments = 0;  // bit k: segment k (before at[k]) has no runs
};

class BlockEncoder {
 public:
  BlockEncoder();
  void Begin(const BlockInfo& info);
  void AddString(uint32_t id, const char* text, size_t size);
  // Appends events of one thread; consecutive calls with the same tid merge.
  // Events in TSC ticks (kEventFlagTicks) go in as ns through the scale set
  // last (tick_scale.h).
  void AddEvents(int32_t tid, const Event* events, size_t count);
  void SetTickScale(const TickScale& scale) { ticks_ = TickLine(scale); }
  size_t event_count() const { return event_count_; }
  size_t string_bytes() const { return strings_.size(); }
  const BlockSpan& span() const { return span_; }
  // Writes the payload to `raw` (replacing its contents), and notes its cuts.
  void Finish(std::vector<uint8_t>* raw);
  // The last payload's cuts: around the timings' columns (Start, Dur), whose
  // literals want a Huffman table each, apart from the columns of runs.
  const PayloadCuts& cuts() const { return cuts_; }

 private:
  // AddEvents' two passes: the Start and Dur columns (and the block's span),
  // then the others.
  void AddTimings(const Event* events, size_t count, uint8_t** start_column,
                  uint8_t** dur_column);
  void AddFields(const Event* events, size_t count, uint8_t* (&w)[kColumnCount]);

  BlockInfo info_;
  BlockPredictor predictor_;
  ByteColumn columns_[kColumnCount];
  std::vector<uint8_t> strings_;
  uint64_t string_count_ = 0;
  std::vector<std::pair<int32_t, uint64_t>> runs_;
  size_t event_count_ = 0;
  BlockSpan span_;
  TickLine ticks_;
  PayloadCuts cuts_;
};

// Decodes a payload of a file of format `version` (kOldestFormatVersion to
// kFormatVersion). Returns false with a reason in `error` when the bytes are
// not a well-formed payload of `expected_events` events; never reads outside
// [raw, raw + size).
bool DecodeBlockPayload(const uint8_t* raw, size_t size, uint32_t expected_events,
                        uint32_t version, DecodedBlock* out, std::string* error);

}  // namespace dlprof::format

#endif  // DLPROF_LIB_FORMAT_BLOCK_CODEC_H_
