// trace_columns: where the bytes of a dlprof trace go.
//
//   trace_columns [--json] TRACE.dlprof
//
// Reads a trace block by block and prints: file size, header size, blocks,
// events, compressed bytes per event; then, per payload column, its raw bytes
// per event and what it costs compressed on its own (each column of each
// block zstd'ed separately at the runtime's level, so the attribution is an
// estimate: zstd of the whole payload can be a little smaller). Finally it
// re-encodes the same events in blocks of other sizes and at other zstd
// levels, to show what those choices would change.
//
// The per-column figures come from re-encoding each decoded block with the
// library's own BlockEncoder (deterministic, so it rebuilds the payload the
// runtime wrote) and splitting the payload into its columns.
#include <sys/stat.h>
#include <zstd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "dlprof/format.h"
#include "lib/format/block_codec.h"
#include "lib/format/trace_file.h"
#include "lib/format/varint.h"

using dlprof::Event;
using dlprof::kColumnCount;
using dlprof::format::BlockEncoder;
using dlprof::format::BlockFramer;
using dlprof::format::ByteReader;
using dlprof::format::DecodedBlock;
using dlprof::format::TraceReader;

namespace {

const char* kColumnNames[kColumnCount] = {"kind", "flags", "start", "dur",  "file", "fd",
                                          "offset", "size", "ret",  "err", "aux"};
constexpr int kRuntimeLevel = 3;

struct Span {
  const uint8_t* p;
  size_t n;
};

// Splits a payload into its parts (docs/FORMAT.md, "Block payload").
bool SplitPayload(const std::vector<uint8_t>& raw, size_t* prefix_bytes, Span cols[]) {
  ByteReader in(raw.data(), raw.size());
  for (int i = 0; i < 4; ++i) in.Varint();
  uint64_t strings = in.Varint();
  for (uint64_t i = 0; i < strings && in.ok(); ++i) {
    in.Varint();
    in.Bytes(in.Varint());
  }
  uint64_t runs = in.Varint();
  for (uint64_t i = 0; i < runs && in.ok(); ++i) {
    in.Varint();
    in.Varint();
  }
  *prefix_bytes = raw.size() - in.remaining();
  for (int c = 0; c < kColumnCount; ++c) {
    uint64_t len = in.Varint();
    const uint8_t* p = in.Bytes(len);
    cols[c] = {p, static_cast<size_t>(len)};
  }
  return in.ok() && in.at_end();
}

size_t ZstdSize(const uint8_t* p, size_t n, int level) {
  if (n == 0) return 0;
  std::vector<uint8_t> out(ZSTD_compressBound(n));
  size_t z = ZSTD_compress(out.data(), out.size(), p, n, level);
  return ZSTD_isError(z) ? n : z;
}

struct Tid {
  int32_t tid;
  Event e;
};

// Re-encodes `events` in blocks of `per_block` events at zstd `level`;
// returns the framed bytes (block headers included).
uint64_t Reencode(const std::vector<Tid>& events, size_t per_block, int level) {
  BlockEncoder enc;
  BlockFramer framer(level);
  std::vector<uint8_t> raw, framed;
  uint64_t total = 0;
  for (size_t i = 0; i < events.size(); i += per_block) {
    enc.Begin({});
    size_t end = std::min(events.size(), i + per_block);
    for (size_t k = i; k < end; ++k) enc.AddEvents(events[k].tid, &events[k].e, 1);
    enc.Finish(&raw);
    framer.Frame(raw, static_cast<uint32_t>(end - i), 0, enc.span(), &framed);
    total += framed.size();
  }
  return total;
}

// What-if for the offset column: the same deltas from the same predictor,
// divided by the largest power of two that divides every delta of the block
// (4 KiB-aligned random reads: 2^12), that shift stored once per block.
// Returns the zstd'd bytes of the column so coded, summed over `blocks`.
uint64_t AlignedOffsetColumn(const std::vector<std::vector<Event>>& blocks, int level) {
  uint64_t total = 0;
  for (const auto& evs : blocks) {
    dlprof::format::OffsetPredictor pred;
    std::vector<int64_t> deltas;
    deltas.reserve(evs.size());
    uint64_t all_bits = 0;
    for (const Event& e : evs) {
      int64_t d = static_cast<int64_t>(static_cast<uint64_t>(e.offset) - pred.Predict(e.file));
      deltas.push_back(d);
      all_bits |= static_cast<uint64_t>(d);
      pred.Advance(e.file, e.offset, e.size);
    }
    int shift = all_bits ? __builtin_ctzll(all_bits) : 0;
    std::vector<uint8_t> col;
    dlprof::format::PutVarint(col, static_cast<uint64_t>(shift));
    for (int64_t d : deltas) dlprof::format::PutVarint(col, dlprof::format::ZigZag(d >> shift));
    total += ZstdSize(col.data(), col.size(), level);
  }
  return total;
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  const char* path = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json")) json = true;
    else path = argv[i];
  }
  if (!path) {
    std::fprintf(stderr, "usage: trace_columns [--json] TRACE.dlprof\n");
    return 2;
  }
  TraceReader reader;
  std::string error;
  if (!reader.Open(path, &error)) {
    std::fprintf(stderr, "trace_columns: %s\n", error.c_str());
    return 1;
  }
  struct stat st;
  stat(path, &st);
  uint64_t header_bytes = 0;
  {
    FILE* f = std::fopen(path, "rb");
    dlprof::FileHeader h{};
    if (f && std::fread(&h, sizeof(h), 1, f) == 1) header_bytes = h.header_size;
    if (f) std::fclose(f);
  }

  DecodedBlock block;
  BlockEncoder enc;
  std::vector<uint8_t> raw;
  std::vector<Tid> all;
  std::vector<std::vector<Event>> per_block;
  uint64_t blocks = 0, events = 0, raw_total = 0, prefix_total = 0, mismatched = 0;
  uint64_t col_raw[kColumnCount] = {}, col_z[kColumnCount] = {};
  uint64_t prefix_z = 0;
  for (;;) {
    TraceReader::Status s = reader.Next(&block, &error);
    if (s == TraceReader::Status::kEnd) break;
    if (s == TraceReader::Status::kDamaged) {
      std::fprintf(stderr, "trace_columns: %s\n", error.c_str());
      continue;
    }
    ++blocks;
    events += block.events.size();
    per_block.push_back(block.events);
    enc.Begin(block.info);
    for (const auto& str : block.strings) enc.AddString(str.id, str.text.data(), str.text.size());
    for (size_t i = 0; i < block.events.size(); ++i) {
      enc.AddEvents(block.tids[i], &block.events[i], 1);
      all.push_back({block.tids[i], block.events[i]});
    }
    enc.Finish(&raw);
    raw_total += raw.size();
    size_t prefix = 0;
    Span cols[kColumnCount];
    if (!SplitPayload(raw, &prefix, cols)) {
      ++mismatched;
      continue;
    }
    prefix_total += prefix;
    prefix_z += ZstdSize(raw.data(), prefix, kRuntimeLevel);
    for (int c = 0; c < kColumnCount; ++c) {
      col_raw[c] += cols[c].n;
      col_z[c] += ZstdSize(cols[c].p, cols[c].n, kRuntimeLevel);
    }
  }
  const uint64_t file_bytes = static_cast<uint64_t>(st.st_size);
  const uint64_t body = file_bytes - header_bytes;
  const double ev = events ? static_cast<double>(events) : 1.0;

  struct Variant {
    const char* name;
    size_t per_block;
    int level;
  };
  const Variant variants[] = {{"blocks of 1024 events, zstd 3", 1024, 3},
                              {"blocks of 4096 events, zstd 3", 4096, 3},
                              {"blocks of 16384 events, zstd 3", 16384, 3},
                              {"blocks of 65536 events, zstd 3", 65536, 3},
                              {"blocks of 262144 events, zstd 3", 262144, 3},
                              {"blocks of 65536 events, zstd 1", 65536, 1},
                              {"blocks of 65536 events, zstd 9", 65536, 9},
                              {"blocks of 65536 events, zstd 19", 65536, 19}};
  uint64_t variant_bytes[sizeof(variants) / sizeof(variants[0])];
  for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); ++i) {
    variant_bytes[i] = Reencode(all, variants[i].per_block, variants[i].level);
  }

  const uint64_t aligned_offset = AlignedOffsetColumn(per_block, kRuntimeLevel);
  const int offset_col = static_cast<int>(dlprof::Column::Offset);

  if (json) {
    std::printf("{\"file_bytes\":%llu,\"header_bytes\":%llu,\"blocks\":%llu,\"events\":%llu,"
                "\"bytes_per_event\":%.4f,\"raw_bytes_per_event\":%.4f,\"columns\":{",
                (unsigned long long)file_bytes, (unsigned long long)header_bytes,
                (unsigned long long)blocks, (unsigned long long)events, body / ev,
                raw_total / ev);
    for (int c = 0; c < kColumnCount; ++c) {
      std::printf("%s\"%s\":{\"raw\":%.4f,\"zstd\":%.4f}", c ? "," : "", kColumnNames[c],
                  col_raw[c] / ev, col_z[c] / ev);
    }
    std::printf("},\"prefix\":{\"raw\":%.4f,\"zstd\":%.4f},"
                "\"offset_in_alignment_units_zstd\":%.4f,\"variants\":{",
                prefix_total / ev, prefix_z / ev, aligned_offset / ev);
    for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); ++i) {
      std::printf("%s\"%s\":%.4f", i ? "," : "", variants[i].name, variant_bytes[i] / ev);
    }
    std::printf("},\"unparsed_blocks\":%llu}\n", (unsigned long long)mismatched);
    return mismatched ? 1 : 0;
  }

  std::printf("%s\n  file %llu bytes, header %llu, %llu blocks, %llu events (%.0f per block)\n",
              path, (unsigned long long)file_bytes, (unsigned long long)header_bytes,
              (unsigned long long)blocks, (unsigned long long)events, ev / (blocks ? blocks : 1));
  std::printf("  compressed: %.3f bytes/event (file minus header); raw payload %.3f bytes/event\n",
              body / ev, raw_total / ev);
  std::printf("  block framing (32-byte header each): %.3f bytes/event\n", 32.0 * blocks / ev);
  std::printf("\n  %-8s %12s %16s\n", "column", "raw B/event", "zstd'd alone B/ev");
  for (int c = 0; c < kColumnCount; ++c) {
    std::printf("  %-8s %12.3f %16.3f\n", kColumnNames[c], col_raw[c] / ev, col_z[c] / ev);
  }
  std::printf("  %-8s %12.3f %16.3f\n", "prefix", prefix_total / ev, prefix_z / ev);
  std::printf("  offset column with deltas in units of the block's common alignment: %.3f B/event "
              "zstd'd alone (now %.3f)\n",
              aligned_offset / ev, col_z[offset_col] / ev);
  std::printf("\n  same events re-encoded:\n");
  for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); ++i) {
    std::printf("    %-34s %.3f bytes/event\n", variants[i].name, variant_bytes[i] / ev);
  }
  if (mismatched) std::printf("  %llu blocks did not re-encode cleanly\n", (unsigned long long)mismatched);
  return mismatched ? 1 : 0;
}
