// RunSequences and PayloadCompressor (lib/format/zstd_runs.h): the sequences
// cover every byte, each block ends with its delimiter and fits zstd's
// limit, every run of four or more is a match and nothing else is, and what
// zstd makes of them decompresses to the input, whatever the runs' lengths and
// places (at cuts, at word edges, at the ends).
#include "lib/format/zstd_runs.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "lib/format/block_codec.h"
#include "lib/format/trace_file.h"

namespace dlprof::format {
namespace {

// The runs of 4 or more of one byte within [begin, end): (first, length).
std::vector<std::pair<size_t, size_t>> RunsOf(const std::vector<uint8_t>& p, size_t begin,
                                              size_t end) {
  std::vector<std::pair<size_t, size_t>> runs;
  for (size_t i = begin; i < end;) {
    size_t j = i + 1;
    while (j < end && p[j] == p[i]) ++j;
    if (j - i >= 4) runs.emplace_back(i, j - i);
    i = j;
  }
  return runs;
}

// Checks `seqs` against the definition, block by block; `ends` are where
// the blocks must end.
void ExpectSequencesOf(const std::vector<uint8_t>& p, const std::vector<ZSTD_Sequence>& seqs,
                       const std::vector<size_t>& ends) {
  size_t at = 0, block = 0, begin = 0;
  std::vector<std::pair<size_t, size_t>> matches;
  for (const ZSTD_Sequence& s : seqs) {
    at += s.litLength;
    if (s.offset == 0 && s.matchLength == 0) {  // a delimiter
      ASSERT_LT(block, ends.size());
      EXPECT_EQ(at, ends[block]) << "block " << block;
      EXPECT_LE(at - begin, kRunBlockMaxBytes);
      // Each match is a run less its first byte, and every run is one.
      const auto runs = RunsOf(p, begin, at);
      ASSERT_EQ(matches.size(), runs.size()) << "block " << block;
      for (size_t r = 0; r < runs.size(); ++r) {
        EXPECT_EQ(matches[r].first, runs[r].first + 1);
        EXPECT_EQ(matches[r].second, runs[r].second - 1);
      }
      matches.clear();
      begin = at;
      ++block;
      continue;
    }
    ASSERT_EQ(s.offset, 1u);
    ASSERT_GE(s.matchLength, 3u);
    matches.emplace_back(at, s.matchLength);
    at += s.matchLength;
  }
  EXPECT_EQ(block, ends.size());
  EXPECT_EQ(at, p.size());
}

std::vector<uint8_t> Decompress(const uint8_t* frame, size_t size, size_t n) {
  std::vector<uint8_t> out(n + 1);
  const size_t r = ZSTD_decompress(out.data(), out.size(), frame, size);
  EXPECT_FALSE(ZSTD_isError(r)) << ZSTD_getErrorName(r);
  out.resize(ZSTD_isError(r) ? 0 : r);
  return out;
}

// Bytes with runs of every length from 1 to 20 and some long ones, the rest
// random, from a seed.
std::vector<uint8_t> Runny(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> p;
  while (p.size() < n) {
    const uint8_t b = static_cast<uint8_t>(rng() % 4 == 0 ? 0 : rng());
    size_t len = rng() % 8 == 0 ? 1 + rng() % 300 : 1 + rng() % 20;
    for (size_t k = 0; k < len && p.size() < n; ++k) p.push_back(b);
  }
  return p;
}

TEST(ZstdRuns, SequencesCoverEveryByteAndEveryRun) {
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    const size_t n = 1 + seed * 37 % 3000;
    const std::vector<uint8_t> p = Runny(n, seed);
    PayloadCuts cuts;
    std::vector<size_t> ends;
    for (size_t c = n / 5; c < n && cuts.count < 4; c += n / 5 + seed % 7) {
      cuts.at[cuts.count++] = static_cast<uint32_t>(c);
      ends.push_back(c);
    }
    ends.push_back(n);
    std::vector<ZSTD_Sequence> seqs;
    RunSequences(p.data(), p.size(), cuts, &seqs);
    SCOPED_TRACE("seed " + std::to_string(seed));
    ExpectSequencesOf(p, seqs, ends);
  }
}

TEST(ZstdRuns, EdgeCases) {
  std::vector<ZSTD_Sequence> seqs;
  // All one byte; a run that ends a block exactly at the cut and one that
  // starts at it; runs of exactly 3 and 4 at the end.
  const std::vector<std::vector<uint8_t>> cases = {
      std::vector<uint8_t>(1, 7),
      std::vector<uint8_t>(3, 7),
      std::vector<uint8_t>(4, 7),
      std::vector<uint8_t>(100, 0),
      {1, 2, 3, 4, 5, 5, 5},
      {1, 2, 3, 4, 5, 5, 5, 5},
      {9, 9, 9, 9, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2},
  };
  for (const auto& p : cases) {
    RunSequences(p.data(), p.size(), PayloadCuts{}, &seqs);
    ExpectSequencesOf(p, seqs, {p.size()});
    PayloadCuts mid;
    mid.at[mid.count++] = static_cast<uint32_t>(p.size() / 2);
    RunSequences(p.data(), p.size(), mid, &seqs);
    std::vector<size_t> ends{p.size() / 2, p.size()};
    if (p.size() / 2 == 0) ends.erase(ends.begin());  // an empty segment has no block
    ExpectSequencesOf(p, seqs, ends);
  }
}

TEST(ZstdRuns, LiteralSegmentsAreLeftWhole) {
  const std::vector<uint8_t> p(300, 5);
  PayloadCuts cuts;
  cuts.at[cuts.count++] = 100;
  cuts.at[cuts.count++] = 200;
  cuts.literal_segments = 1u << 1;  // [100, 200)
  std::vector<ZSTD_Sequence> seqs;
  RunSequences(p.data(), p.size(), cuts, &seqs);
  ASSERT_EQ(seqs.size(), 5u);  // a run and its delimiter, the literals, a run and its delimiter
  EXPECT_EQ(seqs[2].litLength, 100u);
  EXPECT_EQ(seqs[2].matchLength, 0u);
  EXPECT_EQ(seqs[2].offset, 0u);
  PayloadCompressor compressor(1);
  std::vector<uint8_t> frame(ZSTD_compressBound(p.size()));
  const size_t z = compressor.CompressRuns(p.data(), p.size(), cuts, frame.data(), frame.size());
  ASSERT_FALSE(ZSTD_isError(z)) << ZSTD_getErrorName(z);
  EXPECT_EQ(Decompress(frame.data(), z, p.size()), p);
}

TEST(ZstdRuns, LongSegmentsAreSplitAtTheBlockLimit) {
  constexpr size_t kMax = kRunBlockMaxBytes;
  const size_t n = 3 * kMax + 1000;
  std::vector<uint8_t> p = Runny(n, 99);
  std::fill(p.begin() + kMax - 50, p.begin() + kMax + 50, 3);
  std::vector<ZSTD_Sequence> seqs;
  RunSequences(p.data(), p.size(), PayloadCuts{}, &seqs);
  ExpectSequencesOf(p, seqs,
                    {kMax, 2 * kMax, 3 * kMax, n});
  PayloadCompressor compressor(1);
  std::vector<uint8_t> frame(ZSTD_compressBound(n));
  const size_t z = compressor.CompressRuns(p.data(), n, PayloadCuts{}, frame.data(), frame.size());
  ASSERT_FALSE(ZSTD_isError(z)) << ZSTD_getErrorName(z);
  EXPECT_EQ(Decompress(frame.data(), z, n), p);
}

TEST(ZstdRuns, CompressedFramesDecompressToTheInput) {
  PayloadCompressor compressor(1);
  for (uint32_t seed = 1; seed <= 100; ++seed) {
    const size_t n = 1 + seed * 131 % 20000;
    const std::vector<uint8_t> p = Runny(n, seed);
    PayloadCuts cuts;
    cuts.at[cuts.count++] = static_cast<uint32_t>(n / 3);
    cuts.at[cuts.count++] = static_cast<uint32_t>(n / 2);
    std::vector<uint8_t> frame(ZSTD_compressBound(n));
    const size_t z = compressor.CompressRuns(p.data(), n, cuts, frame.data(), frame.size());
    ASSERT_FALSE(ZSTD_isError(z)) << ZSTD_getErrorName(z);
    EXPECT_EQ(Decompress(frame.data(), z, n), p) << "seed " << seed;
  }
}

// The framer's one context, taken both ways in turn (each sets its own
// parameters): every frame still decompresses to its input.
TEST(ZstdRuns, BothWaysTakeTurnsOnOneContext) {
  PayloadCompressor compressor(1);
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    const size_t n = seed % 3 == 0 ? 500 : 3 * kRunBlockMaxBytes / 2 + seed;
    const std::vector<uint8_t> p = Runny(n, seed);
    std::vector<uint8_t> frame(ZSTD_compressBound(n));
    PayloadCuts cuts;
    cuts.at[cuts.count++] = static_cast<uint32_t>(n / 4);
    const size_t z =
        seed % 2 ? compressor.CompressRuns(p.data(), n, cuts, frame.data(), frame.size())
                 : compressor.CompressMatched(p.data(), n, frame.data(), frame.size());
    ASSERT_FALSE(ZSTD_isError(z)) << ZSTD_getErrorName(z) << ", seed " << seed;
    EXPECT_EQ(Decompress(frame.data(), z, n), p) << "seed " << seed;
  }
}

// A block as the runtime frames it (with the encoder's cuts) reads back as
// the events that went in: a loop of reads, broken now and then.
TEST(ZstdRuns, FramedBlocksOfEventsDecode) {
  std::vector<Event> events;
  std::mt19937_64 rng(5);
  int64_t offset = 0;
  uint64_t t = 1000000;
  for (int i = 0; i < 20000; ++i) {
    Event e{};
    e.kind = static_cast<uint16_t>(EventKind::Pread64);
    const bool jump = rng() % 97 == 0;
    e.file = jump ? 2 : 1;
    e.fd = jump ? 4 : 3;
    e.size = 4096;
    e.ret = 4096;
    e.offset = jump ? static_cast<int64_t>(rng() % 1000) * 4096 : offset;
    if (!jump) offset += 4096;
    e.start_ns = t += 100 + rng() % 50;
    e.dur_ns = 800 + rng() % 2000;
    t += e.dur_ns;
    events.push_back(e);
  }
  BlockEncoder enc;
  enc.Begin(BlockInfo{});
  enc.AddString(1, "/data/a", 7);
  enc.AddEvents(42, events.data(), events.size());
  std::vector<uint8_t> raw;
  enc.Finish(&raw);
  EXPECT_EQ(enc.cuts().count, 3);  // Start, Dur and the columns after them
  BlockFramer framer(1);
  std::vector<uint8_t> framed;
  ASSERT_TRUE(framer.Frame(raw, static_cast<uint32_t>(events.size()), 0, enc.span(), &framed,
                           &enc.cuts()));
  BlockHeader h;
  std::memcpy(&h, framed.data(), sizeof h);
  ASSERT_EQ(h.compressed_size, framed.size() - sizeof h);
  const std::vector<uint8_t> payload =
      Decompress(framed.data() + sizeof h, h.compressed_size, raw.size());
  ASSERT_EQ(payload, raw);
  DecodedBlock block;
  std::string error;
  ASSERT_TRUE(DecodeBlockPayload(payload.data(), payload.size(),
                                 static_cast<uint32_t>(events.size()), kFormatVersion, &block,
                                 &error))
      << error;
  ASSERT_EQ(block.events.size(), events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    ASSERT_EQ(std::memcmp(&block.events[i], &events[i], sizeof(Event)), 0) << "event " << i;
  }
}

}  // namespace
}  // namespace dlprof::format
