// libFuzzer target: block framing -- block headers, their checksums, the
// resync after damage, torn last blocks, zstd frames and the time span
// check -- through both ways TraceReader walks a file (Next, and
// NextLocation with DecodeAt/DecodeWith in any order).
//
// The input is a list of records; the target turns it into a trace file
// behind a valid file header, so that the fuzzer spends its time in the
// framing and not on checksums it cannot guess:
//
//   k%4 == 0  a block header (48 bytes) as given, then the payload bytes it
//             claims (at most 64 KiB); its checksums are made right unless
//             bit 2 (header) or bit 3 (payload) of k is set
//   k%4 == 1  u32 events, u32 flags, u16 n, a span (two u64, or the widest
//             one when bit 2 of k is set), then n payload bytes: compressed
//             and framed as the writer does (BlockFramer)
//   k%4 == 2  u8 n, then n bytes as they are (junk between blocks)
//   k%4 == 3  u16 n: the file so far loses its last n bytes (a torn block)
//
// Invariants (a crash when broken): the two walks agree block by block
// (same events, same damage count, same end marker); a decoded block holds
// as many events as its header says, inside its stated time span; block
// locations lie inside the file, in increasing order.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "dlprof/format.h"
#include "lib/format/block_codec.h"
#include "lib/format/crc32c.h"
#include "lib/format/trace_file.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

namespace format = dlprof::format;
using format::TraceReader;

constexpr size_t kMaxRecords = 64;
constexpr size_t kMaxVerbatimPayload = 64 * 1024;

std::vector<uint8_t> BuildFile(const uint8_t* data, size_t size) {
  format::ProcessInfo info;
  info.pid = 4242;
  info.host = "fuzz";
  std::vector<uint8_t> file = format::EncodeFileHeader(info);
  const size_t header_size = file.size();
  static format::BlockFramer framer(1);
  dlprof::fuzz::Cursor in(data, size);
  for (size_t r = 0; r < kMaxRecords && !in.empty(); ++r) {
    const uint8_t k = in.Take<uint8_t>();
    size_t got = 0;
    switch (k % 4) {
      case 0: {
        dlprof::BlockHeader h{};
        const uint8_t* hb = in.Bytes(sizeof(h), &got);
        std::memcpy(&h, hb, got);
        const size_t want = h.compressed_size < kMaxVerbatimPayload ? h.compressed_size
                                                                    : kMaxVerbatimPayload;
        const uint8_t* payload = in.Bytes(want, &got);
        if (!(k & 8)) h.payload_crc = format::Crc32c(payload, got);
        if (!(k & 4)) h.header_crc = format::Crc32c(&h, offsetof(dlprof::BlockHeader, header_crc));
        const auto* p = reinterpret_cast<const uint8_t*>(&h);
        file.insert(file.end(), p, p + sizeof(h));
        file.insert(file.end(), payload, payload + got);
        break;
      }
      case 1: {
        const uint32_t events = in.Take<uint32_t>();
        const uint32_t flags = in.Take<uint32_t>();
        const uint16_t n = in.Take<uint16_t>();
        format::BlockSpan span;
        if (k & 4) {
          span.first_start_ns = 0;
          span.last_end_ns = UINT64_MAX;
        } else {
          span.first_start_ns = in.Take<uint64_t>();
          span.last_end_ns = in.Take<uint64_t>();
        }
        const uint8_t* raw = in.Bytes(n, &got);
        std::vector<uint8_t> framed;
        if (framer.Frame(std::vector<uint8_t>(raw, raw + got), events, flags, span, &framed)) {
          file.insert(file.end(), framed.begin(), framed.end());
        }
        break;
      }
      case 2: {
        const uint8_t* junk = in.Bytes(in.Take<uint8_t>(), &got);
        file.insert(file.end(), junk, junk + got);
        break;
      }
      case 3: {
        const size_t cut = in.Take<uint16_t>();
        file.resize(file.size() - cut > header_size && cut < file.size() ? file.size() - cut
                                                                          : header_size);
        break;
      }
    }
  }
  return file;
}

// What a decoded block holds, in a few words: a block may hold millions of
// events, and the walks must not keep copies of them all.
struct Fingerprint {
  size_t events = 0;
  uint64_t hash = 0;
  bool operator==(const Fingerprint& o) const { return events == o.events && hash == o.hash; }
};

Fingerprint Of(const format::DecodedBlock& b) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a
  auto mix = [&h](const void* p, size_t n) {
    const auto* c = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ c[i]) * 1099511628211ull;
  };
  mix(b.events.data(), b.events.size() * sizeof(dlprof::Event));
  mix(b.tids.data(), b.tids.size() * sizeof(int32_t));
  for (const auto& s : b.strings) {
    mix(&s.id, sizeof(s.id));
    mix(s.text.data(), s.text.size());
  }
  mix(&b.info, sizeof(b.info.clock_mono_ns) * 2);
  return {b.events.size(), h};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<uint8_t> file = BuildFile(data, size);
  dlprof::fuzz::MemFile mem(file.data(), file.size());
  if (!mem.ok()) return 0;
  std::string error;

  // Walk 1: Next, in file order.
  TraceReader seq;
  FUZZ_CHECK(seq.Open(mem.path(), &error));
  std::vector<Fingerprint> by_next;
  format::DecodedBlock block;
  size_t calls = 0;
  for (;; ++calls) {
    FUZZ_CHECK(calls <= file.size());  // each call moves forward
    const auto status = seq.Next(&block, &error);
    if (status == TraceReader::Status::kEnd) break;
    if (status == TraceReader::Status::kBlock) {
      FUZZ_CHECK(block.events.size() == block.tids.size());
      by_next.push_back(Of(block));
    }
  }

  // Walk 2: the headers first, then the payloads backwards, every other one
  // through a decoder of its own (as dlprof-dump's decoding threads do).
  TraceReader located;
  FUZZ_CHECK(located.Open(mem.path(), &error));
  std::vector<format::BlockLocation> where;
  format::BlockLocation loc;
  for (calls = 0;; ++calls) {
    FUZZ_CHECK(calls <= file.size());
    const auto status = located.NextLocation(&loc, &error);
    if (status == TraceReader::Status::kEnd) break;
    if (status == TraceReader::Status::kBlock) {
      FUZZ_CHECK(loc.offset + sizeof(dlprof::BlockHeader) <= file.size());
      FUZZ_CHECK(where.empty() || loc.offset > where.back().offset);
      where.push_back(loc);
    }
  }
  std::vector<Fingerprint> decoded(where.size());
  std::vector<bool> ok(where.size());
  format::BlockDecoder own;
  for (size_t i = where.size(); i-- > 0;) {
    format::DecodedBlock& b = block;
    if (i % 2 == 0) {
      ok[i] = located.DecodeAt(where[i], &b, &error);
    } else {
      std::string why;
      const bool d = located.DecodeWith(&own, where[i], &b, &why);
      ok[i] = located.Account(where[i], d, why, &error);
    }
    if (!ok[i]) continue;
    decoded[i] = Of(b);
    FUZZ_CHECK(b.events.size() == where[i].event_count);
    FUZZ_CHECK(b.tids.size() == b.events.size());
    if (!b.events.empty()) {
      FUZZ_CHECK(b.min_start_ns >= where[i].first_start_ns);
      FUZZ_CHECK(b.max_end_ns <= where[i].last_end_ns);
    }
  }

  // The two walks agree.
  size_t k = 0;
  for (size_t i = 0; i < where.size(); ++i) {
    if (!ok[i]) continue;
    FUZZ_CHECK(k < by_next.size() && by_next[k] == decoded[i]);
    ++k;
  }
  FUZZ_CHECK(k == by_next.size());
  FUZZ_CHECK(seq.damaged_blocks() == located.damaged_blocks());
  FUZZ_CHECK(seq.saw_final_block() == located.saw_final_block());
  return 0;
}
